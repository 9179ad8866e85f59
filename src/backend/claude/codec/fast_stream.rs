//! The fast path for `stream_event` lines, about 90% of a stream: read with the scanner
//! instead of serde's derived visitors (which cost more than the bytes: field-name matching,
//! `IgnoredAny` for `session_id`/`uuid`, `Option` plumbing).
//!
//! It reads exactly the fields the serde structs in `codec.rs` read, with the same rules (a
//! known field twice, a field of the wrong type, a missing required field, a key with escapes
//! or an odd shape all give `None`), and skips the rest checked. `None` sends the line to the
//! general path, which classifies it; a `Some` is what the general path would have returned
//! (`tests/claude_codec_fast.rs` and the `claude_codec` fuzz target compare them).

use std::borrow::Cow;

use super::scan::{Scan, once};
use super::{Delta, StartBlock, StreamEvent, StreamMessage, StreamPayload};

/// The whole line as a `stream_event`, or `None` for the general path.
pub(super) fn stream_event(line: &str) -> Option<StreamEvent<'_>> {
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
