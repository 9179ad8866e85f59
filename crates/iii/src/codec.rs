//! The engine's WebSocket frames (reference §2.1; `iii-hq/iii` `engine/src/protocol.rs`).
//!
//! One text message is one JSON object whose `type` is the lowercased variant name. Optional
//! fields are omitted when absent, never written as `null` (the engine rejects
//! `namespace: null`). A frame of a type we do not know is kept whole as `Message::Unknown` so
//! the protocol log can show it; a known type with wrong fields is an error naming the type.
//! Frames over `FRAME_BYTES` are refused before parsing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest frame read or written: a page of 500 transcript entries fits, a flood does not.
pub const FRAME_BYTES: usize = 8 << 20;

/// Error codes of `registrationrejected` (reference §2.1).
pub const WORKER_NAMESPACE_CONFLICT: &str = "WORKER_NAMESPACE_CONFLICT";
pub const FUNCTION_NAMESPACE_CONFLICT: &str = "FUNCTION_NAMESPACE_CONFLICT";

/// `error` of an `invocationresult` / `triggerregistrationresult`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacktrace: Option<String>,
}

impl ErrorBody {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code: code.into(),
            message: message.into(),
            stacktrace: None,
        }
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// `action` of an `invokefunction`: absent = synchronous (a reply is expected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum TriggerAction {
    Enqueue { queue: String },
    Void,
}

/// Every frame of the engine protocol. Field names and order follow `protocol.rs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Message {
    RegisterTriggerType {
        id: String,
        description: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_request_format: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_request_format: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    RegisterTrigger {
        id: String,
        trigger_type: String,
        function_id: String,
        config: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_namespace: Option<String>,
    },
    TriggerRegistrationResult {
        id: String,
        trigger_type: String,
        function_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorBody>,
    },
    UnregisterTrigger {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_type: Option<String>,
    },
    RegisterFunction {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_format: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_format: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        /// Only for HTTP-invoked functions; kept as JSON (switchboard registers none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invocation: Option<Value>,
    },
    UnregisterFunction {
        id: String,
    },
    InvokeFunction {
        /// A UUID; absent for fire-and-forget (then no reply is sent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invocation_id: Option<String>,
        function_id: String,
        data: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traceparent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        baggage: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<TriggerAction>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    InvocationResult {
        invocation_id: String,
        function_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorBody>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traceparent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        baggage: Option<String>,
    },
    RegisterService {
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_service_id: Option<String>,
    },
    Ping,
    Pong,
    Reattach {
        previous_worker_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reattach_token: Option<String>,
    },
    WorkerRegistered {
        worker_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reattach_token: Option<String>,
    },
    RegistrationRejected {
        code: String,
        namespace: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worker_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        function_id: Option<String>,
        owner_worker_id: String,
    },
    /// E→W: the engine refuses the connection itself (RBAC authentication failed), then closes
    /// it. Not a variant of the engine's `Message` enum: `handle_worker` writes it by hand as
    /// `{"type":"error","error":{"code":"AUTH_ERROR","message":…}}` (`iii-hq/iii`
    /// `engine/src/engine/mod.rs`, v0.23.0-rc.4 at bacffa0; seen from the real engine by
    /// `tests/iii_wire.rs::real_engine_when_iii_engine_bin_is_set`). Additive: see
    /// `schema/CHANGELOG.iii.md`.
    Error {
        error: ErrorBody,
    },
    /// A frame whose `type` this build does not know, kept whole to be shown (never sent by
    /// the derive: `encode` writes the kept object back as it came).
    #[serde(skip)]
    Unknown(Value),
}

/// The `type` names `Message` knows.
pub const KNOWN_TYPES: [&str; 15] = [
    "registertriggertype",
    "registertrigger",
    "triggerregistrationresult",
    "unregistertrigger",
    "registerfunction",
    "unregisterfunction",
    "invokefunction",
    "invocationresult",
    "registerservice",
    "ping",
    "pong",
    "reattach",
    "workerregistered",
    "registrationrejected",
    "error",
];

#[derive(Debug, Clone, PartialEq)]
pub enum CodecError {
    /// Over `FRAME_BYTES`; never parsed.
    Oversize { bytes: usize },
    /// Not JSON at all (or nested deeper than serde_json's recursion limit).
    NotJson(String),
    /// JSON, but not an object with a string `type`.
    NoType,
    /// A known `type` whose fields do not fit.
    BadFrame { kind: String, why: String },
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodecError::Oversize { bytes } => write!(
                f,
                "engine frame of {bytes} bytes refused (the cap is {FRAME_BYTES})"
            ),
            CodecError::NotJson(e) => write!(f, "engine frame is not JSON: {e}"),
            CodecError::NoType => {
                write!(
                    f,
                    "engine frame is not a JSON object with a string \"type\""
                )
            }
            CodecError::BadFrame { kind, why } => {
                write!(f, "engine frame of type {kind:?} is malformed: {why}")
            }
        }
    }
}

impl std::error::Error for CodecError {}

/// Parse one text frame. Never panics; unknown types come back as `Message::Unknown`.
pub fn decode(text: &str) -> Result<Message, CodecError> {
    if text.len() > FRAME_BYTES {
        return Err(CodecError::Oversize { bytes: text.len() });
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| CodecError::NotJson(e.to_string()))?;
    decode_value(value)
}

/// `decode` for a frame already parsed as JSON.
pub fn decode_value(value: Value) -> Result<Message, CodecError> {
    let kind = match value.get("type") {
        Some(Value::String(s)) if value.is_object() => s.clone(),
        _ => return Err(CodecError::NoType),
    };
    if !KNOWN_TYPES.contains(&kind.as_str()) {
        return Ok(Message::Unknown(value));
    }
    serde_json::from_value(value).map_err(|e| CodecError::BadFrame {
        kind,
        why: e.to_string(),
    })
}

/// Serialize one frame (compact, field order as declared). Refuses frames over the cap.
pub fn encode(msg: &Message) -> Result<String, CodecError> {
    let text = match msg {
        Message::Unknown(v) => serde_json::to_string(v),
        m => serde_json::to_string(m),
    }
    .map_err(|e| CodecError::NotJson(e.to_string()))?;
    if text.len() > FRAME_BYTES {
        return Err(CodecError::Oversize { bytes: text.len() });
    }
    Ok(text)
}

impl Message {
    /// The wire `type` of this frame.
    pub fn kind(&self) -> &str {
        match self {
            Message::RegisterTriggerType { .. } => "registertriggertype",
            Message::RegisterTrigger { .. } => "registertrigger",
            Message::TriggerRegistrationResult { .. } => "triggerregistrationresult",
            Message::UnregisterTrigger { .. } => "unregistertrigger",
            Message::RegisterFunction { .. } => "registerfunction",
            Message::UnregisterFunction { .. } => "unregisterfunction",
            Message::InvokeFunction { .. } => "invokefunction",
            Message::InvocationResult { .. } => "invocationresult",
            Message::RegisterService { .. } => "registerservice",
            Message::Ping => "ping",
            Message::Pong => "pong",
            Message::Reattach { .. } => "reattach",
            Message::WorkerRegistered { .. } => "workerregistered",
            Message::RegistrationRejected { .. } => "registrationrejected",
            Message::Error { .. } => "error",
            Message::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or("?"),
        }
    }

    /// A synchronous call: `invokefunction` with an id and no action.
    pub fn invoke(invocation_id: &str, function_id: &str, data: Value) -> Message {
        Message::InvokeFunction {
            invocation_id: Some(invocation_id.to_string()),
            function_id: function_id.to_string(),
            data,
            traceparent: None,
            baggage: None,
            action: None,
            metadata: None,
            namespace: None,
        }
    }

    /// A reply to an `invokefunction`: a result or an error.
    pub fn result(
        invocation_id: &str,
        function_id: &str,
        outcome: Result<Value, ErrorBody>,
    ) -> Message {
        let (result, error) = match outcome {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        Message::InvocationResult {
            invocation_id: invocation_id.to_string(),
            function_id: function_id.to_string(),
            result,
            error,
            traceparent: None,
            baggage: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_unknown_and_broken_frames() {
        assert_eq!(decode(r#"{"type":"ping"}"#).unwrap(), Message::Ping);
        let u = decode(r#"{"type":"heartbeat2","x":[1]}"#).unwrap();
        assert_eq!(u.kind(), "heartbeat2");
        assert_eq!(encode(&u).unwrap(), r#"{"type":"heartbeat2","x":[1]}"#);
        assert!(matches!(
            decode(r#"{"type":"invocationresult","invocation_id":5}"#),
            Err(CodecError::BadFrame { .. })
        ));
        assert_eq!(decode("[1]"), Err(CodecError::NoType));
        assert_eq!(decode(r#"{"type":7}"#), Err(CodecError::NoType));
        assert!(matches!(decode("{nope"), Err(CodecError::NotJson(_))));
    }

    #[test]
    fn hostile_inputs_are_errors_not_panics() {
        let deep = "[".repeat(100_000);
        assert!(matches!(decode(&deep), Err(CodecError::NotJson(_))));
        let deep_obj = format!(
            r#"{{"type":"invokefunction","function_id":"f","data":{}{}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        );
        assert!(decode(&deep_obj).is_err());
        let huge = r#"{"type":"workerregistered","worker_id":1e999999}"#;
        assert!(decode(huge).is_err());
        let big_int = format!(
            r#"{{"type":"invokefunction","function_id":"f","data":{}}}"#,
            "9".repeat(30)
        );
        // Past u64 in free-form data: a float, not a crash; past f64: an error.
        assert!(decode(&big_int).is_ok());
        assert!(decode(&big_int.replace(&"9".repeat(30), &"9".repeat(400))).is_err());
        let over = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(FRAME_BYTES));
        assert!(matches!(decode(&over), Err(CodecError::Oversize { .. })));
        assert!(decode("").is_err());
        assert!(decode("\u{0}").is_err());
    }

    #[test]
    fn absent_options_are_omitted_never_null() {
        let m = Message::RegisterTrigger {
            id: "b".into(),
            trigger_type: "t".into(),
            function_id: "f".into(),
            config: serde_json::json!({}),
            metadata: None,
            namespace: None,
            trigger_namespace: None,
        };
        let s = encode(&m).unwrap();
        assert!(!s.contains("null"), "{s}");
        assert_eq!(
            s,
            r#"{"type":"registertrigger","id":"b","trigger_type":"t","function_id":"f","config":{}}"#
        );
    }
}
