//! The channel's three frames (`ready`, `call`, `result`) as typed values, and the MCP-style
//! result bodies switchboard answers with (reference §9: the spec has no error frame).
//!
//! Nothing here trusts a frame: a call's fields are kept as received and judged by
//! `validate`; a frame of another type is kept raw so it can be logged and recorded.

use serde_json::{Map, Value, json};

/// The one protocol version this side speaks.
pub const PROTOCOL: u64 = 1;
/// Largest frame in either direction (spec `limits.frameBytes`).
pub const FRAME_BYTES: usize = 2_097_152;
/// Longest call id accepted (reference §4 step 2).
pub const ID_BYTES: usize = 256;

/// One inbound frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// B's `ready`, with whatever `protocol` it named.
    Ready {
        protocol: Value,
    },
    Call(Call),
    /// Any other JSON object: kept for the log, never answered.
    Other(Value),
}

/// A call as it arrived. `args` is the raw value: an object, or a string that encodes one.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub protocol: Value,
    pub id: String,
    pub workspace_id: Option<String>,
    pub session_id: Option<String>,
    pub intention: Option<String>,
    pub tool: Option<String>,
    pub args: Option<Value>,
}

/// Why a frame could not be read at all (nothing to answer: it is logged and dropped).
#[derive(Debug, Clone, PartialEq)]
pub enum FrameError {
    TooLarge(usize),
    NotJson(String),
    NotObject,
    /// A `call` without a usable `id`: there is nothing to answer it under.
    NoId,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge(n) => write!(f, "frame of {n} bytes exceeds {FRAME_BYTES}"),
            FrameError::NotJson(e) => write!(f, "frame is not JSON: {e}"),
            FrameError::NotObject => f.write_str("frame is not a JSON object"),
            FrameError::NoId => {
                f.write_str("call without a usable id (empty, not a string or over 256 bytes)")
            }
        }
    }
}

/// A value from B quoted back in a message, at most 200 characters.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(200) {
        // Sized once (`format!` grows to twice the length): results' rows keep these.
        Some((i, _)) => [&s[..i], "…"].concat(),
        None => s.to_string(),
    }
}

/// Read one text frame.
pub fn decode(text: &str) -> Result<Inbound, FrameError> {
    if text.len() > FRAME_BYTES {
        return Err(FrameError::TooLarge(text.len()));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| FrameError::NotJson(e.to_string()))?;
    let Value::Object(mut o) = v else {
        return Err(FrameError::NotObject);
    };
    match o.get("type").and_then(Value::as_str) {
        Some("ready") => Ok(Inbound::Ready {
            protocol: o.remove("protocol").unwrap_or(Value::Null),
        }),
        Some("call") => {
            let id = match o.get("id") {
                Some(Value::String(s)) if !s.is_empty() && s.len() <= ID_BYTES => s.clone(),
                _ => return Err(FrameError::NoId),
            };
            let s = |o: &mut Map<String, Value>, k: &str| match o.remove(k) {
                Some(Value::String(s)) => Some(s),
                _ => None,
            };
            Ok(Inbound::Call(Call {
                protocol: o.remove("protocol").unwrap_or(Value::Null),
                id,
                workspace_id: s(&mut o, "workspaceId"),
                session_id: s(&mut o, "sessionId"),
                intention: s(&mut o, "intention"),
                tool: s(&mut o, "tool"),
                args: o.remove("args"),
            }))
        }
        _ => Ok(Inbound::Other(Value::Object(o))),
    }
}

/// `{"type":"ready","protocol":1}`.
pub fn ready_frame() -> String {
    r#"{"type":"ready","protocol":1}"#.to_string()
}

/// A result frame around an already serialized result body. Built from the stored bytes so a
/// replayed answer is byte for byte the first one.
pub fn result_frame(id: &str, session_id: &str, result_json: &str) -> String {
    format!(
        r#"{{"type":"result","id":{},"sessionId":{},"result":{}}}"#,
        Value::String(id.to_string()),
        Value::String(session_id.to_string()),
        result_json
    )
}

/// The error codes of reference §9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidFrame,
    UnknownTool,
    SchemaViolation,
    WorkspaceMismatch,
    SessionUnknown,
    IntentionMismatch,
    PermissionDenied,
    DeniedByOwner,
    PathOutsideRoot,
    NotFound,
    NotUtf8,
    StaleRevision,
    AmbiguousPatch,
    NotRegularFile,
    CommandNotOwned,
    Busy,
    UncertainEffect,
    IdConflict,
    Cancelled,
    TooLarge,
    /// Not in §9's list: an IO failure on our side (disk full, a tool that would not start).
    Failed,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidFrame => "invalid_frame",
            Code::UnknownTool => "unknown_tool",
            Code::SchemaViolation => "schema_violation",
            Code::WorkspaceMismatch => "workspace_mismatch",
            Code::SessionUnknown => "session_unknown",
            Code::IntentionMismatch => "intention_mismatch",
            Code::PermissionDenied => "permission_denied",
            Code::DeniedByOwner => "denied_by_owner",
            Code::PathOutsideRoot => "path_outside_root",
            Code::NotFound => "not_found",
            Code::NotUtf8 => "not_utf8",
            Code::StaleRevision => "stale_revision",
            Code::AmbiguousPatch => "ambiguous_patch",
            Code::NotRegularFile => "not_regular_file",
            Code::CommandNotOwned => "command_not_owned",
            Code::Busy => "busy",
            Code::UncertainEffect => "uncertain_effect",
            Code::IdConflict => "id_conflict",
            Code::Cancelled => "cancelled",
            Code::TooLarge => "too_large",
            Code::Failed => "failed",
        }
    }
}

/// A refusal: the code and a message for the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

impl Refusal {
    pub fn new(code: Code, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

/// `{"content":[{"type":"text","text":msg}],"isError":true,"structuredContent":{"code":..}}`.
pub fn error_body(r: &Refusal) -> String {
    // Bounded: a schema message can quote a megabyte argument, and every refusal body is
    // kept (the seen-id table, the receipts) to answer a re-send byte for byte.
    let message = match r.message.char_indices().nth(REFUSAL_CHARS) {
        Some((i, _)) => format!("{}…", &r.message[..i]),
        None => r.message.clone(),
    };
    json!({
        "content": [{"type": "text", "text": message}],
        "isError": true,
        "structuredContent": {"code": r.code.as_str(), "message": message},
    })
    .to_string()
}

/// Characters of a refusal's message kept in its body.
pub const REFUSAL_CHARS: usize = 1000;

/// A success: the structured value, and the same as JSON text for clients that read `content`.
pub fn ok_body(structured: &Value) -> String {
    json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    })
    .to_string()
}

/// A success whose content is not only text (an image).
pub fn ok_body_with(content: Vec<Value>, structured: &Value) -> String {
    json!({"content": content, "structuredContent": structured}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_fields_are_kept_as_received() {
        let f = r#"{"type":"call","protocol":1,"id":"c1","workspaceId":"w","sessionId":"s","intention":"i","tool":"workspace_info","args":"{}"}"#;
        let Inbound::Call(c) = decode(f).unwrap() else {
            panic!()
        };
        assert_eq!(c.id, "c1");
        assert_eq!(c.args, Some(Value::String("{}".into())));
        assert_eq!(c.workspace_id.as_deref(), Some("w"));
    }

    #[test]
    fn unusable_ids_and_oversize_frames_are_dropped() {
        assert_eq!(decode(r#"{"type":"call","id":""}"#), Err(FrameError::NoId));
        assert_eq!(decode(r#"{"type":"call","id":7}"#), Err(FrameError::NoId));
        let long = format!(r#"{{"type":"call","id":"{}"}}"#, "x".repeat(257));
        assert_eq!(decode(&long), Err(FrameError::NoId));
        let big = " ".repeat(FRAME_BYTES + 1);
        assert!(matches!(decode(&big), Err(FrameError::TooLarge(_))));
        assert_eq!(decode("[1]"), Err(FrameError::NotObject));
        assert!(matches!(
            decode(r#"{"type":"hello"}"#),
            Ok(Inbound::Other(_))
        ));
    }

    #[test]
    fn result_frame_is_json_with_the_body_verbatim() {
        let body = error_body(&Refusal::new(Code::Busy, "later"));
        let f = result_frame("a\"b", "s", &body);
        let v: Value = serde_json::from_str(&f).unwrap();
        assert_eq!(v["id"], "a\"b");
        assert_eq!(v["result"]["structuredContent"]["code"], "busy");
        assert_eq!(v["result"]["isError"], true);
        assert!(f.ends_with(&format!("{body}}}")));
    }
}
