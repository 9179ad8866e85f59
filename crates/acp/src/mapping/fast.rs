//! The hot path of every ACP session: a message or thought chunk of plain text, most of the
//! lines an agent writes. Read straight from the line with borrowed fields, instead of a
//! `serde_json::Value` tree, a clone of its params and a second, typed parse.
//!
//! Only the exact shape is taken: the envelope, `sessionId`, the update with its kind, a text
//! content and an optional `messageId`, nothing else (`deny_unknown_fields` everywhere, so
//! `_meta`, annotations, an `id`, a duplicate key, anything unusual goes the general way).
//! Whatever is taken maps to what the general path would make of it (tested in
//! `fast_tests.rs` line by line against it).

use std::borrow::Cow;

use serde::Deserialize;

use crate::codec::schema;

/// The notification envelope, exactly: nothing but these three keys (an `id`, or anything
/// else, and the line goes the general way).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Note<'a, P> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: P,
}

impl<P> Note<'_, P> {
    fn is_session_update(&self) -> bool {
        self.jsonrpc == "2.0" && self.method == "session/update"
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Params<'a> {
    #[serde(borrow, rename = "sessionId")]
    _session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    #[serde(borrow)]
    content: Content<'a>,
    #[serde(default, borrow)]
    message_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Content<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// A text chunk read off the fast path.
pub(super) struct Chunk<'a> {
    pub thinking: bool,
    pub text: Cow<'a, str>,
    pub message_id: Option<Cow<'a, str>>,
}

/// The chunk `line` carries, when it is exactly a plain text message or thought chunk.
pub(super) fn chunk(line: &str) -> Option<Chunk<'_>> {
    // Most other lines are told apart without parsing.
    if !line.contains("_chunk\"") {
        return None;
    }
    let n: Note<Params> = serde_json::from_str(line).ok()?;
    if !n.is_session_update() || n.params.update.content.kind != "text" {
        return None;
    }
    let thinking = match &*n.params.update.session_update {
        "agent_message_chunk" => false,
        "agent_thought_chunk" => true,
        _ => return None,
    };
    Some(Chunk {
        thinking,
        text: n.params.update.content.text,
        message_id: n.params.update.message_id,
    })
}

/// The update `line` carries when it is exactly a `session/update` notification of a tool
/// call, a tool call update or a plan (`Mapper::tool_or_plan` maps them): those are most of
/// what is not a chunk, and the largest lines. Anything else (an `id`, an unknown envelope
/// key, a duplicate key, a shape the schema refuses) goes the general way, which reads the
/// same typed params from its `Value` tree.
pub(super) fn tool_update(line: &str) -> Option<schema::SessionUpdate> {
    if !line.contains("\"tool_call") && !line.contains("\"plan\"") {
        return None;
    }
    // Read straight into its typed params (no `Value` tree first).
    let n: Note<schema::SessionNotification> = serde_json::from_str(line).ok()?;
    if !n.is_session_update() {
        return None;
    }
    use schema::SessionUpdate as U;
    match n.params.update {
        u @ (U::ToolCall(_) | U::ToolCallUpdate(_) | U::Plan(_)) => Some(u),
        _ => None,
    }
}
