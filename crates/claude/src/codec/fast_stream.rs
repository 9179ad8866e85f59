//! The fast path for `stream_event` lines, about 90% of a stream: read with the scanner
//! instead of serde's derived visitors (which cost more than the bytes: field-name matching,
//! `IgnoredAny` for `session_id`/`uuid`, `Option` plumbing).
//!
//! It reads exactly the fields the serde structs in `stream.rs` read, with the same rules (a
//! known field twice, a field of the wrong type, a missing required field, a key with escapes
//! or an odd shape all give `None`), and skips the rest checked. `None` sends the line to the
//! general path, which classifies it; a `Some` is what the general path would have returned
//! (`tests/claude_codec_fast.rs` and the `claude_codec` fuzz target compare them).

use std::borrow::Cow;

use super::scan::{Scan, once};
use super::{Delta, StartBlock, StreamEvent, StreamMessage, StreamPayload};

/// The whole line as a `stream_event`, or `None` for the general path.
pub(super) fn stream_event(line: &str) -> Option<StreamEvent<'_>> {
    cli_delta(line).or_else(|| any_stream_event(line))
}

/// What the CLI writes before a text delta's index, byte for byte.
const DELTA_HEAD: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":"#;

/// A text or thinking delta (seven lines in ten) laid out exactly as the CLI writes it: the
/// event's fixed parts are compared as text rather than scanned key by key, and the rest of
/// the line is scanned as usual. Any other layout (key order, spacing, extra fields, escapes
/// in a fixed part) is `None` here and goes to `any_stream_event`, so this path only ever
/// reads what that one would read the same way.
fn cli_delta(line: &str) -> Option<StreamEvent<'_>> {
    if !line.starts_with(DELTA_HEAD) {
        return None;
    }
    let mut s = Scan::inside(line, DELTA_HEAD.len());
    let index = s.u32()?;
    let thinking = if s.eat(r#","delta":{"type":"text_delta","text":"#) {
        false
    } else if s.eat(r#","delta":{"type":"thinking_delta","thinking":"#) {
        true
    } else {
        return None;
    };
    let text = s.string()?;
    // The delta object, then the event object, end here.
    if !s.eat("}}") {
        return None;
    }
    let mut parent = None;
    s.rest_of_document(|s, key| match key {
        // A second `event` is serde's duplicate-field error: the general path says so.
        "event" => None,
        "parent_tool_use_id" => once(&mut parent, s.opt_string()?),
        _ => s.skip(),
    })?;
    let delta = if thinking {
        Delta::ThinkingDelta { thinking: text }
    } else {
        Delta::TextDelta { text }
    };
    Some(StreamEvent {
        event: StreamPayload::ContentBlockDelta { index, delta },
        parent_tool_use_id: parent.flatten(),
    })
}

/// A `stream_event` line of any layout, scanned member by member.
fn any_stream_event(line: &str) -> Option<StreamEvent<'_>> {
    let mut event = None;
    let mut parent = None;
    Scan::document(line, |s, key| match key {
        "event" => once(&mut event, payload(s)?),
        "parent_tool_use_id" => once(&mut parent, s.opt_string()?),
        _ => s.skip(),
    })?;
    Some(StreamEvent {
        event: event?,
        parent_tool_use_id: parent.flatten(),
    })
}

/// `PayloadFields` and `StreamPayload`'s choice by `type`.
fn payload<'a>(s: &mut Scan<'a>) -> Option<StreamPayload<'a>> {
    let mut kind: Option<Cow<'a, str>> = None;
    let mut index: Option<Option<u32>> = None;
    let mut delta: Option<Option<Delta<'a>>> = None;
    let mut block: Option<Option<StartBlock>> = None;
    let mut message: Option<Option<StreamMessage>> = None;
    s.object(|s, key| match key {
        "type" => once(&mut kind, s.string()?),
        "index" => once(&mut index, s.nullable(Scan::u32)?),
        "delta" => once(&mut delta, s.nullable(delta_of)?),
        "content_block" => once(&mut block, s.nullable(start_block)?),
        "message" => once(&mut message, s.nullable(stream_message)?),
        _ => s.skip(),
    })?;
    Some(match &*kind? {
        "message_start" => StreamPayload::MessageStart {
            message: message.flatten()?,
        },
        "content_block_start" => StreamPayload::ContentBlockStart {
            index: index.flatten()?,
            content_block: block.flatten()?,
        },
        "content_block_delta" => StreamPayload::ContentBlockDelta {
            index: index.flatten()?,
            delta: delta.flatten()?,
        },
        "content_block_stop" => StreamPayload::ContentBlockStop {},
        "message_delta" => StreamPayload::MessageDelta {},
        "message_stop" => StreamPayload::MessageStop {},
        _ => StreamPayload::Other,
    })
}

/// `DeltaFields` and `Delta`'s choice by `type`.
fn delta_of<'a>(s: &mut Scan<'a>) -> Option<Delta<'a>> {
    let mut kind: Option<Option<Cow<'a, str>>> = None;
    let mut text: Option<Option<Cow<'a, str>>> = None;
    let mut thinking: Option<Option<Cow<'a, str>>> = None;
    s.object(|s, key| {
        let slot = match key {
            "type" => &mut kind,
            "text" => &mut text,
            "thinking" => &mut thinking,
            _ => return s.skip(),
        };
        let v = s.nullable(Scan::string)?;
        once(slot, v)
    })?;
    Some(match kind.flatten().as_deref().unwrap_or("") {
        "text_delta" => Delta::TextDelta {
            text: text.flatten()?,
        },
        "thinking_delta" => Delta::ThinkingDelta {
            thinking: thinking.flatten()?,
        },
        "input_json_delta" => Delta::InputJsonDelta {},
        "signature_delta" => Delta::SignatureDelta {},
        _ => Delta::Other,
    })
}

/// `StartFields` and `StartBlock`'s choice by `type`.
fn start_block(s: &mut Scan<'_>) -> Option<StartBlock> {
    let mut kind = None;
    let mut id: Option<Option<String>> = None;
    let mut name: Option<Option<String>> = None;
    s.object(|s, key| match key {
        "type" => once(&mut kind, s.string()?),
        "id" => once(&mut id, s.opt_string()?),
        "name" => once(&mut name, s.opt_string()?),
        _ => s.skip(),
    })?;
    Some(match &*kind? {
        "text" => StartBlock::Text {},
        "thinking" => StartBlock::Thinking {},
        "redacted_thinking" => StartBlock::RedactedThinking {},
        "tool_use" => StartBlock::ToolUse {
            id: id.flatten()?,
            name: name.flatten()?,
        },
        _ => StartBlock::Other,
    })
}

/// `StreamMessage`: only its `id`.
fn stream_message(s: &mut Scan<'_>) -> Option<StreamMessage> {
    let mut id: Option<Option<String>> = None;
    s.object(|s, key| match key {
        "id" => once(&mut id, s.opt_string()?),
        _ => s.skip(),
    })?;
    Some(StreamMessage { id: id.flatten() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text delta as CLI 2.1 writes it (from `fixtures/recordings/claude`).
    const CLI: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I need two d"}},"session_id":"f4c893fe-aeb1-4523-93e2-006354afcca0","parent_tool_use_id":null,"uuid":"d3560097-0dfa-4db6-9233-0c0eb5b97784","api_message_id":"msg_fake_0001"}"#;

    fn shown(e: Option<StreamEvent<'_>>) -> String {
        format!("{e:?}")
    }

    #[test]
    fn the_cli_layout_is_read_by_fixed_text_and_agrees_with_the_scan() {
        let thinking = CLI.replace(
            r#""type":"text_delta","text""#,
            r#""type":"thinking_delta","thinking""#,
        );
        let cases = [
            CLI.to_string(),
            thinking,
            CLI.replace(r#""index":0"#, r#""index":4294967295"#),
            // Whitespace before a value the scanner reads, as serde allows.
            CLI.replace(r#""index":0"#, r#""index": 0"#),
            CLI.replace("I need two d", r#"a \"quoted\"\n line \u00e9"#),
            CLI.replace("I need two d", ""),
            CLI.replace(
                r#""parent_tool_use_id":null"#,
                r#""parent_tool_use_id":"toolu_1""#,
            ),
            CLI.replace(r#","api_message_id":"msg_fake_0001""#, ""),
            format!("{CLI} \n"),
        ];
        for line in &cases {
            let fast = cli_delta(line);
            assert!(
                fast.is_some(),
                "the CLI layout takes the fixed-text path: {line}"
            );
            assert_eq!(shown(fast), shown(any_stream_event(line)), "{line}");
            // And what serde reads, not only what the other fast path reads.
            assert_eq!(
                format!(
                    "{:?}",
                    super::super::Inbound::StreamEvent(cli_delta(line).unwrap())
                ),
                format!("{:?}", super::super::parse_reference(line)),
                "{line}"
            );
        }
    }

    #[test]
    fn any_other_layout_steps_aside_to_the_scan() {
        let cases = [
            // Spacing, key order and extra fields in the fixed parts.
            CLI.replace(r#""delta":{"#, r#""delta": {"#),
            CLI.replace(
                r#"{"type":"text_delta","text":"I need two d"}"#,
                r#"{"text":"I need two d","type":"text_delta"}"#,
            ),
            CLI.replace(r#""I need two d"}"#, r#""I need two d","x":1}"#),
            CLI.replace(r#""I need two d"}}"#, r#""I need two d"},"x":1}"#),
            // Other delta kinds, null text, an index serde refuses.
            CLI.replace("text_delta", "input_json_delta"),
            CLI.replace(r#""text":"I need two d""#, r#""text":null"#),
            CLI.replace(r#""index":0"#, r#""index":4294967296"#),
            CLI.replace(r#""index":0"#, r#""index":01"#),
            CLI.replace(r#""index":0"#, r#""index":1.0"#),
        ];
        for line in &cases {
            assert!(cli_delta(line).is_none(), "{line}");
        }
        // Still read by the member-by-member scan where serde reads them.
        assert!(any_stream_event(&cases[0]).is_some());
        assert!(any_stream_event(&cases[1]).is_some());
    }

    #[test]
    fn what_the_rest_of_the_line_breaks_is_refused_not_guessed() {
        let cases = [
            // A second `event` (serde: duplicate field), a second parent.
            CLI.replace(r#","uuid""#, r#","event":{},"uuid""#),
            CLI.replace(r#","uuid""#, r#","parent_tool_use_id":null,"uuid""#),
            // A raw control character, a bad escape, trailing text, a cut line.
            CLI.replace("f4c893fe", "f4c\u{1}893fe"),
            CLI.replace("f4c893fe", r"f4c\x893fe"),
            format!("{CLI}x"),
            CLI[..CLI.len() - 1].to_string(),
            CLI.replace(r#""parent_tool_use_id":null"#, r#""parent_tool_use_id":7"#),
        ];
        for line in &cases {
            assert!(cli_delta(line).is_none(), "{line}");
            assert!(any_stream_event(line).is_none(), "{line}");
        }
    }
}
