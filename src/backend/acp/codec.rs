//! One stdout line of an ACP agent, classified by its JSON-RPC envelope. Typed parsing of the
//! payloads (stage two) happens in the mapping, with the official schema types.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The official ACP v1 types (pinned exactly in Cargo.toml); used only inside `backend::acp`.
pub(crate) use agent_client_protocol_schema::v1 as schema;

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

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::Number(_) | Value::String(_))
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
    let Some(obj) = v.as_object() else {
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
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
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
            } else if let Some(r) = obj.get("result") {
                Frame::Response {
                    id,
                    outcome: Ok(r.clone()),
                }
            } else {
                Frame::NoEnvelope {
                    reason: "response without result or error".into(),
                }
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
}
