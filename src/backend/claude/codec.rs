//! Typed parse of one stdout line of the Claude CLI. Unknown kinds keep their raw text.

use serde::Deserialize;
use serde_json::Value;

/// One stdout line, classified. Short-lived (parsed, mapped, dropped), so variant sizes
/// do not matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Inbound {
    ControlRequest(ControlRequest),
    ControlResponse(ControlResponse),
    ControlCancel {
        request_id: Option<String>,
    },
    KeepAlive,
    Assistant(Assistant),
    User(User),
    Result(TurnResult),
    StreamEvent(StreamEvent),
    System(System),
    RateLimit(RateLimit),
    ToolProgress,
    /// A JSON object with a `type` we do not know (or none).
    Unknown {
        kind: String,
    },
    /// A known `type` whose fields are not what we expect.
    Malformed {
        kind: String,
        error: String,
    },
    /// Not JSON at all.
    NotJson {
        error: String,
    },
}

#[derive(Debug, Deserialize)]
pub struct ControlRequest {
    pub request_id: Option<Value>,
    pub request: Value,
}

#[derive(Debug, Deserialize)]
pub struct ControlResponse {
    pub response: ResponseEnvelope,
}

#[derive(Debug, Deserialize)]
pub struct ResponseEnvelope {
    pub subtype: String,
    #[serde(default)]
    pub request_id: Option<String>,
    #[serde(default)]
    pub response: Option<Value>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub content: Content,
    #[serde(default)]
    pub model: Option<String>,
}

/// Message content: a string or a list of content blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<AnyBlock>),
}

/// A block we know, or one we do not (kept whole so it can be shown, never dropped).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum AnyBlock {
    Known(Block),
    Unknown(Value),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

/// A Messages API content block; unknown block types keep their type name.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {},
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        #[serde(default)]
        tool_use_id: String,
        #[serde(default)]
        content: Option<Value>,
        #[serde(default)]
        is_error: Option<bool>,
    },
    Image {},
    Document {},
}

#[derive(Debug, Deserialize)]
pub struct Assistant {
    pub message: Message,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    #[serde(default)]
    pub aborted: Option<bool>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct User {
    pub message: Message,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    #[serde(default)]
    pub tool_use_result: Option<Value>,
    #[serde(default, rename = "isSynthetic")]
    pub is_synthetic: Option<bool>,
    #[serde(default, rename = "isReplay")]
    pub is_replay: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct TurnResult {
    #[serde(default)]
    pub subtype: String,
    #[serde(default)]
    pub is_error: Option<bool>,
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub errors: Option<Vec<Value>>,
    #[serde(default)]
    pub terminal_reason: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

#[derive(Debug, Deserialize)]
pub struct StreamEvent {
    pub event: StreamPayload,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamPayload {
    MessageStart {
        message: StreamMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {},
    MessageDelta {},
    MessageStop {},
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub struct StreamMessage {
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StartBlock {
    Text {},
    Thinking {},
    RedactedThinking {},
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {},
    SignatureDelta {},
    #[serde(other)]
    Other,
}

/// `system/*` lines: one struct holding the fields of every subtype we read.
#[derive(Debug, Deserialize)]
pub struct System {
    pub subtype: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default, rename = "permissionMode")]
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub claude_code_version: Option<String>,
    #[serde(default)]
    pub status: Option<Value>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub parent_task_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub subagent_type: Option<String>,
    #[serde(default)]
    pub task_type: Option<String>,
    #[serde(default)]
    pub usage: Option<TaskUsage>,
    #[serde(default)]
    pub last_tool_name: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub patch: Option<TaskPatch>,
    #[serde(default)]
    pub compact_metadata: Option<Value>,
    #[serde(default)]
    pub attempt: Option<u64>,
    #[serde(default)]
    pub max_retries: Option<u64>,
    #[serde(default)]
    pub retry_delay_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default)]
    pub error_status: Option<Value>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub message: Option<Value>,
    #[serde(default)]
    pub hook_name: Option<String>,
    #[serde(default)]
    pub hook_event: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub output: Option<Value>,
    /// `background_tasks_changed`: the live background tasks.
    #[serde(default)]
    pub tasks: Option<Vec<Value>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct TaskUsage {
    #[serde(default)]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub tool_uses: Option<u64>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct TaskPatch {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct RateLimit {
    #[serde(default)]
    pub rate_limit_info: Option<Value>,
}

#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: Option<Value>,
}

/// Classify and parse one stdout line. Never panics; never loses the line (the caller keeps
/// the raw text for unknown and malformed kinds).
pub fn parse(line: &str) -> Inbound {
    let head: TypeOnly = match serde_json::from_str(line) {
        Ok(h) => h,
        Err(e) => {
            return Inbound::NotJson {
                error: e.to_string(),
            };
        }
    };
    let kind = match head.kind {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Inbound::Unknown {
                kind: other.to_string(),
            };
        }
        None => {
            return Inbound::Unknown {
                kind: "(no type)".into(),
            };
        }
    };
    fn typed<T: for<'de> Deserialize<'de>>(
        line: &str,
        kind: &str,
        wrap: impl FnOnce(T) -> Inbound,
    ) -> Inbound {
        match serde_json::from_str::<T>(line) {
            Ok(v) => wrap(v),
            Err(e) => Inbound::Malformed {
                kind: kind.to_string(),
                error: e.to_string(),
            },
        }
    }
    match kind.as_str() {
        "control_request" => typed(line, &kind, Inbound::ControlRequest),
        "control_response" => typed(line, &kind, Inbound::ControlResponse),
        "control_cancel_request" => {
            #[derive(Deserialize)]
            struct C {
                request_id: Option<Value>,
            }
            typed(line, &kind, |c: C| Inbound::ControlCancel {
                request_id: c.request_id.and_then(|v| v.as_str().map(str::to_string)),
            })
        }
        "keep_alive" => Inbound::KeepAlive,
        "assistant" => typed(line, &kind, Inbound::Assistant),
        "user" => typed(line, &kind, Inbound::User),
        "result" => typed(line, &kind, Inbound::Result),
        "stream_event" => typed(line, &kind, Inbound::StreamEvent),
        "system" => typed(line, &kind, Inbound::System),
        "rate_limit_event" => typed(line, &kind, Inbound::RateLimit),
        "tool_progress" => Inbound::ToolProgress,
        _ => Inbound::Unknown { kind },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_lines() {
        assert!(matches!(parse("not json"), Inbound::NotJson { .. }));
        assert!(matches!(parse("{}"), Inbound::Unknown { .. }));
        assert!(matches!(
            parse(r#"{"type":"mystery","x":1}"#),
            Inbound::Unknown { kind } if kind == "mystery"
        ));
        assert!(matches!(
            parse(r#"{"type":"assistant","message":7}"#),
            Inbound::Malformed { .. }
        ));
        assert!(matches!(
            parse(r#"{"type":"keep_alive"}"#),
            Inbound::KeepAlive
        ));
        let a = parse(
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"},{"type":"server_tool_use","id":"x"}]},"parent_tool_use_id":null}"#,
        );
        let Inbound::Assistant(a) = a else {
            panic!("not assistant")
        };
        let Content::Blocks(b) = a.message.content else {
            panic!("no blocks")
        };
        assert!(
            matches!(&b[1], AnyBlock::Unknown(v) if v["type"] == "server_tool_use"),
            "an unknown block is kept whole"
        );
        assert!(matches!(&b[0], AnyBlock::Known(Block::Text { .. })));
    }

    #[test]
    fn stream_deltas() {
        let e = parse(
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"En"}},"parent_tool_use_id":null}"#,
        );
        let Inbound::StreamEvent(e) = e else { panic!() };
        assert!(matches!(
            e.event,
            StreamPayload::ContentBlockDelta {
                index: 0,
                delta: Delta::TextDelta { .. }
            }
        ));
    }
}
