//! One stdout line of an ACP agent, classified by its JSON-RPC envelope. Typed parsing of the
//! payloads (stage two) happens in the mapping, with the official schema types.

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_core::text::{sanitize, truncate};

/// The official ACP v1 types (pinned exactly in Cargo.toml); used only inside `backend::acp`.
pub(crate) use agent_client_protocol_schema::v1 as schema;

/// Invalid request (here: a request whose id is neither an integer nor a string).
pub const INVALID_REQUEST: i64 = -32600;
/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Request cancelled.
pub const REQUEST_CANCELLED: i64 = -32800;
/// A request the human (or the cwd rule) refused.
pub const REFUSED: i64 = -32000;

#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// How much of an error's message, and of its data, a row shows.
const SHOWN_ERROR: usize = 400;

impl RpcError {
    /// `error -32603: Internal error — {"details":"Cannot enable …"}`: the code, the message and
    /// the data, each on one line, sanitized and bounded. Agents often put the reason only in
    /// `data` (the TypeScript SDK's `internalError(details)` does), so it is never left out.
    pub fn describe(&self) -> String {
        let flat = |t: &str| {
            let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
            truncate(&sanitize(&t), SHOWN_ERROR)
        };
        let mut s = format!("error {}: {}", self.code, flat(&self.message));
        let data = match &self.data {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(d) => Some(d.to_string()),
        };
        if let Some(d) = data.filter(|d| d.trim() != self.message.trim() && !d.trim().is_empty()) {
            s.push_str(" — ");
            s.push_str(&flat(&d));
        }
        s
    }
}

/// One line, by envelope.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
    /// JSON, but not a JSON-RPC 2.0 message.
    NoEnvelope {
        reason: String,
    },
    /// Not JSON at all.
    NotJson {
        error: String,
    },
}

/// JSON-RPC ids are strings or integers (a fraction, an object, an array or a bool is not one).
fn valid_id(id: &Value) -> bool {
    match id {
        Value::Number(n) => n.is_i64() || n.is_u64(),
        Value::String(_) => true,
        _ => false,
    }
}

/// The id of a line that is a request but whose id is neither an integer nor a string: such a
/// request is answered with an error whose id is `null` (JSON-RPC 2.0, section 5).
pub fn invalid_request_id(line: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line).ok()?;
    let obj = v.as_object()?;
    obj.get("method").and_then(Value::as_str)?;
    let id = obj.get("id").filter(|i| !i.is_null())?;
    (!valid_id(id)).then(|| id.clone())
}

/// The answer to a request with an unusable id.
pub fn invalid_request_answer(id: &Value) -> String {
    error(
        &Value::Null,
        INVALID_REQUEST,
        &format!("Invalid Request: id {id} is neither an integer nor a string"),
        None,
    )
}

pub fn parse(line: &str) -> Frame {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Frame::NotJson {
                error: e.to_string(),
            };
        }
    };
    // Owned: the params and the result are moved out of the line's tree, never copied.
    let Value::Object(mut obj) = v else {
        return Frame::NoEnvelope {
            reason: "not a JSON object".into(),
        };
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Frame::NoEnvelope {
            reason: "no \"jsonrpc\":\"2.0\"".into(),
        };
    }
    let id = obj.get("id").filter(|i| !i.is_null()).cloned();
    let params = obj.remove("params").unwrap_or(Value::Null);
    match (obj.get("method").and_then(Value::as_str), id) {
        (Some(m), Some(id)) if valid_id(&id) => Frame::Request {
            id,
            method: m.to_string(),
            params,
        },
        (Some(_), Some(_)) => Frame::NoEnvelope {
            reason: "request id is neither a number nor a string".into(),
        },
        (Some(m), None) => Frame::Notification {
            method: m.to_string(),
            params,
        },
        (None, Some(id)) => {
            if let Some(e) = obj.get("error") {
                Frame::Response {
                    id,
                    outcome: Err(RpcError {
                        code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: e
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        data: e.get("data").cloned(),
                    }),
                }
            } else if let Some(r) = obj.remove("result") {
                Frame::Response { id, outcome: Ok(r) }
            } else {
                Frame::NoEnvelope {
                    reason: "response without result or error".into(),
                }
            }
        }
        // An error for a request whose id could not be read carries `"id": null`.
        (None, None) if obj.get("id").is_some_and(Value::is_null) && obj.get("error").is_some() => {
            let e = &obj["error"];
            Frame::Response {
                id: Value::Null,
                outcome: Err(RpcError {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    data: e.get("data").cloned(),
                }),
            }
        }
        (None, None) => Frame::NoEnvelope {
            reason: match obj.get("error") {
                Some(e) => format!("error without a request id: {e}"),
                None => "neither a method nor an id".into(),
            },
        },
    }
}

/// Stage two: the typed payload, or why it does not parse.
pub fn typed<T: DeserializeOwned>(v: &Value) -> Result<T, String> {
    T::deserialize(v).map_err(|e| e.to_string())
}

/// The key of a JSON-RPC id in our tables (`1` and `"1"` differ).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

pub fn request(id: u64, method: &str, params: Value) -> String {
    serde_json::json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

pub fn notification(method: &str, params: Value) -> String {
    serde_json::json!({"jsonrpc":"2.0","method":method,"params":params}).to_string()
}

pub fn result(id: &Value, result: Value) -> String {
    serde_json::json!({"jsonrpc":"2.0","id":id,"result":result}).to_string()
}

pub fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    let mut e = serde_json::json!({"code":code,"message":message});
    if let Some(d) = data {
        e["data"] = d;
    }
    serde_json::json!({"jsonrpc":"2.0","id":id,"error":e}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#),
            Frame::Request { .. }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Frame::Notification { .. }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}"#),
            Frame::Response {
                outcome: Err(_),
                ..
            }
        ));
        assert!(matches!(
            parse(r#"{"sessionId":"s","update":{}}"#),
            Frame::NoEnvelope { .. }
        ));
        assert!(matches!(parse("hello"), Frame::NotJson { .. }));
    }

    #[test]
    fn request_ids_must_be_integers_or_strings() {
        for bad in [r#"{"a":1}"#, "[1]", "true", "1.5"] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{bad},"method":"fs/read_text_file","params":{{}}}}"#
            );
            assert!(matches!(parse(&line), Frame::NoEnvelope { .. }), "{line}");
            assert_eq!(
                invalid_request_id(&line),
                Some(serde_json::from_str(bad).unwrap())
            );
        }
        for good in ["7", r#""a""#, "-1"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{good},"method":"m","params":{{}}}}"#);
            assert!(matches!(parse(&line), Frame::Request { .. }), "{line}");
            assert_eq!(invalid_request_id(&line), None);
        }
        let answer: Value =
            serde_json::from_str(&invalid_request_answer(&serde_json::json!({"a":1}))).unwrap();
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], INVALID_REQUEST);
        // Such an answer reads back as a response to no id.
        assert!(matches!(
            parse(&answer.to_string()),
            Frame::Response {
                id: Value::Null,
                outcome: Err(_)
            }
        ));
    }
}
