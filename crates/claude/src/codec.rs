//! Typed parse of one stdout line of the Claude CLI. Unknown kinds keep their raw text.
//!
//! Each line is parsed once: the `type` is read first (from the line's head, where the CLI
//! always writes it), then only that variant is deserialized. No internally tagged or
//! untagged serde enums: those buffer every object into serde's `Content` before choosing a
//! variant, which cost more than the parse itself on the `content_block_delta` lines that
//! make up most of a stream. Tagged shapes are read as one flat struct and classified.
//!
//! The kinds that make up nearly all of a stream (`stream_event`, `assistant`, `user`) first
//! take a fast path (`fast_stream.rs`, `fast_message.rs` on the validating scanner in
//! `scan.rs`) that reads the same fields by the same rules without serde's machinery, and steps
//! aside to the serde path on anything it is unsure of, so answers and error texts are the
//! serde path's (`tests/claude_codec_fast.rs`, fuzz target `claude_codec`).
//!
//! The message shapes are in `message.rs` (`assistant` and `user` lines: messages and their
//! content blocks) and `stream.rs` (`stream_event` lines); the others, the classification and
//! the general path are here.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

mod fast_message;
mod fast_stream;
mod message;
mod scan;
mod stream;

pub use message::{AnyBlock, Assistant, Block, Content, Message, User};
pub use stream::{Delta, StartBlock, StreamEvent, StreamMessage, StreamPayload};

/// One stdout line, classified. Short-lived (parsed, mapped, dropped), so variant sizes
/// do not matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Inbound<'a> {
    ControlRequest(ControlRequest),
    ControlResponse(ControlResponse),
    ControlCancel {
        request_id: Option<String>,
    },
    KeepAlive,
    Assistant(Assistant),
    User(User),
    Result(TurnResult),
    StreamEvent(StreamEvent<'a>),
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

/// The `type` of a line that starts `{"type":"<plain word>"`, as the CLI writes every line:
/// read without parsing, so the line is then parsed once, as its variant. Anything else
/// (other key order, escapes, spaces) takes the general path.
fn head_type(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(r#"{"type":""#)?;
    // A byte loop, not `find`: the word is short and a search's setup cost more than it.
    let end = rest
        .bytes()
        .position(|b| !(b.is_ascii_lowercase() || b == b'_'))?;
    (rest.as_bytes()[end] == b'"').then(|| &rest[..end])
}

/// Classify and parse one stdout line. Never panics; never loses the line (the caller keeps
/// the raw text for unknown and malformed kinds).
pub fn parse(line: &str) -> Inbound<'_> {
    parse_fast(line).unwrap_or_else(|| parse_reference(line))
}

/// The fast paths alone: `Some` when one of them read the line (then it is what
/// `parse_reference` gives), `None` when the line is for the general path.
pub fn parse_fast(line: &str) -> Option<Inbound<'_>> {
    match head_type(line)? {
        "stream_event" => fast_stream::stream_event(line).map(Inbound::StreamEvent),
        "assistant" => fast_message::assistant(line).map(Inbound::Assistant),
        "user" => fast_message::user(line).map(Inbound::User),
        _ => None,
    }
}

/// `parse` on the general serde path alone: the reference the fast paths are tested against
/// (`tests/claude_codec_fast.rs`, the `claude_codec` fuzz target).
pub fn parse_reference(line: &str) -> Inbound<'_> {
    let owned;
    let kind: &str = match head_type(line) {
        Some(k) => k,
        None => {
            let head: TypeOnly = match serde_json::from_str(line) {
                Ok(h) => h,
                Err(e) => {
                    return Inbound::NotJson {
                        error: e.to_string(),
                    };
                }
            };
            owned = match head.kind {
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
            &owned
        }
    };
    fn typed<'a, T: Deserialize<'a>>(
        line: &'a str,
        kind: &str,
        wrap: impl FnOnce(T) -> Inbound<'a>,
    ) -> Inbound<'a> {
        match serde_json::from_str::<T>(line) {
            Ok(v) => wrap(v),
            // Read from the head, the type does not prove the line is JSON at all.
            Err(e) if e.is_syntax() || e.is_eof() => Inbound::NotJson {
                error: e.to_string(),
            },
            Err(e) => Inbound::Malformed {
                kind: kind.to_string(),
                error: e.to_string(),
            },
        }
    }
    /// Kinds whose fields we do not read are still checked to be JSON.
    fn bare<'a>(line: &str, inbound: Inbound<'a>) -> Inbound<'a> {
        match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => inbound,
            Err(e) => Inbound::NotJson {
                error: e.to_string(),
            },
        }
    }
    match kind {
        "control_request" => typed(line, kind, Inbound::ControlRequest),
        "control_response" => typed(line, kind, Inbound::ControlResponse),
        "control_cancel_request" => {
            #[derive(Deserialize)]
            struct C {
                request_id: Option<Value>,
            }
            typed(line, kind, |c: C| Inbound::ControlCancel {
                request_id: c.request_id.and_then(|v| v.as_str().map(str::to_string)),
            })
        }
        "keep_alive" => bare(line, Inbound::KeepAlive),
        "assistant" => typed(line, kind, Inbound::Assistant),
        "user" => typed(line, kind, Inbound::User),
        "result" => typed(line, kind, Inbound::Result),
        "stream_event" => typed(line, kind, Inbound::StreamEvent),
        "system" => typed(line, kind, Inbound::System),
        "rate_limit_event" => typed(line, kind, Inbound::RateLimit),
        "tool_progress" => bare(line, Inbound::ToolProgress),
        _ => bare(
            line,
            Inbound::Unknown {
                kind: kind.to_string(),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

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
    fn type_is_read_from_the_head_or_anywhere() {
        // The CLI's own order: read from the head, parsed once.
        assert_eq!(
            head_type(r#"{"type":"stream_event","x":1}"#),
            Some("stream_event")
        );
        // Another order or an escape takes the general path and still classifies.
        assert_eq!(head_type(r#"{"uuid":"u","type":"user"}"#), None);
        assert_eq!(head_type(r#"{"type":"us\u0065r"}"#), None);
        assert!(matches!(
            parse(r#"{"session_id":"s","type":"keep_alive"}"#),
            Inbound::KeepAlive
        ));
        assert!(matches!(
            parse(r#"{"message":{"content":"hi"},"type":"us\u0065r"}"#),
            Inbound::User(_)
        ));
        // A head that looks right does not make a line JSON.
        assert!(matches!(
            parse(r#"{"type":"assistant","message":{"#),
            Inbound::NotJson { .. }
        ));
        assert!(matches!(
            parse(r#"{"type":"keep_alive""#),
            Inbound::NotJson { .. }
        ));
        assert!(matches!(
            parse(r#"{"type":"mystery",}"#),
            Inbound::NotJson { .. }
        ));
    }

    #[test]
    fn blocks_of_the_wrong_shape_are_kept_whole() {
        let a = parse(
            r#"{"type":"user","message":{"content":[{"type":"tool_use","name":"Bash"},{"type":"text","text":7},{"type":"tool_result","tool_use_id":"t","content":null,"is_error":true},"bare"]}}"#,
        );
        let Inbound::User(u) = a else {
            panic!("not user")
        };
        let Content::Blocks(b) = u.message.content else {
            panic!("no blocks")
        };
        assert!(matches!(&b[0], AnyBlock::Unknown(v) if v["name"] == "Bash"));
        assert!(matches!(&b[1], AnyBlock::Unknown(v) if v["text"] == 7));
        assert!(matches!(
            &b[2],
            AnyBlock::Known(Block::ToolResult {
                content: None,
                is_error: Some(true),
                ..
            })
        ));
        assert!(matches!(&b[3], AnyBlock::Unknown(Value::String(_))));
        let e = parse(
            r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}"#,
        );
        assert!(
            matches!(e, Inbound::Malformed { .. }),
            "a delta without its index is malformed"
        );
        let e = parse(
            r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}}"#,
        );
        assert!(matches!(
            e,
            Inbound::StreamEvent(StreamEvent {
                event: StreamPayload::MessageDelta {},
                ..
            })
        ));
        let e = parse(
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}}"#,
        );
        assert!(matches!(
            e,
            Inbound::StreamEvent(StreamEvent {
                event: StreamPayload::ContentBlockDelta {
                    index: 1,
                    delta: Delta::Other
                },
                ..
            })
        ));
    }

    /// Every line the real CLI wrote in our recordings decodes (none malformed), and the
    /// head-read type agrees with a full parse.
    #[test]
    fn every_recorded_line_decodes() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/recordings/claude"
        );
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            for rec in std::fs::read_to_string(&path).unwrap().lines().skip(1) {
                let v: Value = serde_json::from_str(rec).unwrap();
                let (Some("in"), Some(line)) = (v["dir"].as_str(), v["line"].as_str()) else {
                    continue;
                };
                let full: Value = serde_json::from_str(line).unwrap();
                if let Some(k) = head_type(line) {
                    assert_eq!(Some(k), full["type"].as_str());
                }
                let parsed = parse(line);
                assert!(
                    !matches!(parsed, Inbound::Malformed { .. } | Inbound::NotJson { .. }),
                    "{}: {parsed:?}\n{line}",
                    path.display()
                );
                n += 1;
            }
        }
        assert!(n > 500, "only {n} lines read");
    }

    /// A delta's text is borrowed from the line unless it holds escapes.
    #[test]
    fn delta_text_is_borrowed() {
        let plain = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"plain"}},"parent_tool_use_id":null}"#;
        let escaped = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a\nb"}},"parent_tool_use_id":null}"#;
        let Inbound::StreamEvent(e) = parse(plain) else {
            panic!()
        };
        assert!(matches!(
            e.event,
            StreamPayload::ContentBlockDelta {
                delta: Delta::TextDelta {
                    text: Cow::Borrowed("plain")
                },
                ..
            }
        ));
        let Inbound::StreamEvent(e) = parse(escaped) else {
            panic!()
        };
        assert!(matches!(
            e.event,
            StreamPayload::ContentBlockDelta {
                delta: Delta::ThinkingDelta { thinking: Cow::Owned(t) },
                ..
            } if t == "a\nb"
        ));
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
