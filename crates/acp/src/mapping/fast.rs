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

use switchboard_record::obj::Obj;

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
    params: Obj<P>,
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
    update: Obj<Update<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    #[serde(borrow)]
    content: Obj<Content<'a>>,
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

pub(super) use super::chunk_scan::Chunk;

/// The chunk `line` carries, when it is exactly a plain text message or thought chunk.
pub(super) fn chunk(line: &str) -> Option<Chunk<'_>> {
    super::chunk_scan::chunk(line).or_else(|| serde_chunk(line))
}

/// `chunk` by serde's typed read: the reference `chunk_scan` agrees with, and the reader of
/// every shape it leaves.
pub(super) fn serde_chunk(line: &str) -> Option<Chunk<'_>> {
    // Most other lines are told apart without parsing.
    if !line.contains("_chunk\"") {
        return None;
    }
    let Obj(n) = serde_json::from_str::<Obj<Note<Params>>>(line).ok()?;
    if !n.is_session_update() {
        return None;
    }
    let update = n.params.0.update.0;
    let content = update.content.0;
    if content.kind != "text" {
        return None;
    }
    let thinking = match &*update.session_update {
        "agent_message_chunk" => false,
        "agent_thought_chunk" => true,
        _ => return None,
    };
    Some(Chunk {
        thinking,
        text: content.text,
        message_id: update.message_id,
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
    plain_tool(line).or_else(|| schema_tool_update(line))
}

/// `tool_update` by the schema's own types. The schema reads `sessionUpdate` as an internal
/// tag and every optional field through `DefaultOnError`, each of which first copies what it
/// reads into a buffer: a tool's output of tens of kilobytes was copied three times before
/// it was read. `plain_tool` takes the usual shapes without that and leaves the rest here.
pub(super) fn schema_tool_update(line: &str) -> Option<schema::SessionUpdate> {
    // Read straight into its typed params (no `Value` tree first).
    let Obj(n) = serde_json::from_str::<Obj<Note<schema::SessionNotification>>>(line).ok()?;
    if !n.is_session_update() {
        return None;
    }
    use schema::SessionUpdate as U;
    match n.params.0.update {
        u @ (U::ToolCall(_) | U::ToolCallUpdate(_) | U::Plan(_)) => Some(u),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ToolParams<'a> {
    #[serde(borrow, rename = "sessionId")]
    _session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Obj<Tool<'a>>,
}

/// A tool call or its update, every field the two may carry and nothing else. Each field is
/// read as what the schema makes of a well-formed value; a value it would have defaulted
/// (a status it does not know, say) fails this read and the line goes the schema's way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Tool<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    tool_call_id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    kind: Option<schema::ToolKind>,
    #[serde(default)]
    status: Option<schema::ToolCallStatus>,
    #[serde(default, borrow)]
    content: Option<Vec<Obj<Item<'a>>>>,
    #[serde(default)]
    locations: Option<Vec<schema::ToolCallLocation>>,
    #[serde(default)]
    raw_input: Option<serde_json::Value>,
    #[serde(default)]
    raw_output: Option<serde_json::Value>,
    /// Claude's adapter names the tool here on every call and update.
    #[serde(default, rename = "_meta")]
    meta: Option<schema::Meta>,
}

/// One content item: text, a terminal or a diff, by its `type` (checked in `item`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<Obj<Content<'a>>>,
    #[serde(default)]
    terminal_id: Option<String>,
    #[serde(default)]
    path: Option<std::path::PathBuf>,
    #[serde(default)]
    old_text: Option<String>,
    #[serde(default)]
    new_text: Option<String>,
}

fn item(i: Item<'_>) -> Option<schema::ToolCallContent> {
    use schema::ToolCallContent as C;
    match (&*i.kind, i.content, i.terminal_id, i.path, i.new_text) {
        ("content", Some(Obj(c)), None, None, None) if c.kind == "text" && i.old_text.is_none() => {
            let text = schema::TextContent::new(c.text.into_owned());
            Some(C::Content(schema::Content::new(
                schema::ContentBlock::Text(text),
            )))
        }
        ("terminal", None, Some(id), None, None) if i.old_text.is_none() => {
            Some(C::Terminal(schema::Terminal::new(id)))
        }
        ("diff", None, None, Some(path), Some(new)) => {
            Some(C::Diff(schema::Diff::new(path, new).old_text(i.old_text)))
        }
        _ => None,
    }
}

/// A tool call or its update in the shapes agents send, read in one pass into the schema's
/// types; `None` for anything else.
pub(super) fn plain_tool(line: &str) -> Option<schema::SessionUpdate> {
    let Obj(n) = serde_json::from_str::<Obj<Note<ToolParams>>>(line).ok()?;
    if !n.is_session_update() {
        return None;
    }
    let t = n.params.0.update.0;
    let content = match t.content {
        Some(items) => Some(
            items
                .into_iter()
                .map(|Obj(i)| item(i))
                .collect::<Option<Vec<_>>>()?,
        ),
        None => None,
    };
    match &*t.session_update {
        "tool_call" => {
            let mut c = schema::ToolCall::new(t.tool_call_id, t.title?)
                .name(t.name)
                .content(content.unwrap_or_default())
                .locations(t.locations.unwrap_or_default())
                .raw_input(t.raw_input)
                .raw_output(t.raw_output)
                .meta(t.meta);
            if let Some(k) = t.kind {
                c = c.kind(k);
            }
            if let Some(s) = t.status {
                c = c.status(s);
            }
            Some(schema::SessionUpdate::ToolCall(c))
        }
        "tool_call_update" => {
            let fields = schema::ToolCallUpdateFields::new()
                .kind(t.kind)
                .status(t.status)
                .title(t.title)
                .name(t.name)
                .content(content)
                .locations(t.locations)
                .raw_input(t.raw_input)
                .raw_output(t.raw_output);
            Some(schema::SessionUpdate::ToolCallUpdate(
                schema::ToolCallUpdate::new(t.tool_call_id, fields).meta(t.meta),
            ))
        }
        _ => None,
    }
}
