//! The fast path for `assistant` and `user` lines (settled messages and tool results): read
//! with the scanner, each content block straight into its `Block` instead of through a
//! `serde_json::Value` map first; the skipped fields (`usage`, `uuid`, ...) are checked, not
//! kept.
//!
//! Same contract as `fast_stream.rs`: the serde structs' fields with their rules, and `None`
//! (the general path decides) on a known field twice, a wrong type, a key with escapes or
//! anything odd. A block is sorted exactly as `Block::from_map` sorts it; one it does not know
//! is kept whole as the `Value` serde_json parses from its text.

use super::scan::{Field, Scan, once};
use super::{AnyBlock, Assistant, Block, Content, Message, User};

/// The whole line as an `assistant` message, or `None` for the general path.
pub(super) fn assistant(line: &str) -> Option<Assistant> {
    let (mut message, mut parent, mut aborted, mut error) = (None, None, None, None);
    Scan::document(line, |s, key| match key {
        "message" => once(&mut message, message_of(s)?),
        "parent_tool_use_id" => once(&mut parent, s.opt_string()?),
        "aborted" => once(&mut aborted, s.opt_bool()?),
        "error" => once(&mut error, s.opt_value()?),
        _ => s.skip(),
    })?;
    Some(Assistant {
        message: message?,
        parent_tool_use_id: parent.flatten(),
        aborted: aborted.flatten(),
        error: error.flatten(),
    })
}

/// The whole line as a `user` message, or `None` for the general path.
pub(super) fn user(line: &str) -> Option<User> {
    let (mut message, mut parent, mut result) = (None, None, None);
    let (mut synthetic, mut replay) = (None, None);
    Scan::document(line, |s, key| match key {
        "message" => once(&mut message, message_of(s)?),
        "parent_tool_use_id" => once(&mut parent, s.opt_string()?),
        "tool_use_result" => once(&mut result, s.opt_value()?),
        "isSynthetic" => once(&mut synthetic, s.opt_bool()?),
        "isReplay" => once(&mut replay, s.opt_bool()?),
        _ => s.skip(),
    })?;
    Some(User {
        message: message?,
        parent_tool_use_id: parent.flatten(),
        tool_use_result: result.flatten(),
        is_synthetic: synthetic.flatten(),
        is_replay: replay.flatten(),
    })
}

/// `Message`: its `id`, `content` and `model`.
fn message_of(s: &mut Scan<'_>) -> Option<Message> {
    let (mut id, mut content, mut model) = (None, None, None);
    s.object(|s, key| match key {
        "id" => once(&mut id, s.opt_string()?),
        "model" => once(&mut model, s.opt_string()?),
        "content" => once(&mut content, content_of(s)?),
        _ => s.skip(),
    })?;
    Some(Message {
        id: id.flatten(),
        content: content.unwrap_or_default(),
        model: model.flatten(),
    })
}

/// `Content`: a string or a list of blocks (anything else, `null` too, is serde's error).
fn content_of(s: &mut Scan<'_>) -> Option<Content> {
    match s.peek()? {
        b'"' => Some(Content::Text(s.string()?.into_owned())),
        b'[' => {
            let mut blocks = Vec::new();
            s.items(|s| {
                blocks.push(block(s)?);
                Some(())
            })?;
            Some(Content::Blocks(blocks))
        }
        _ => None,
    }
}

/// The fields `Block::from_map` looks at.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<Field<'a>>,
    text: Option<Field<'a>>,
    thinking: Option<Field<'a>>,
    signature: Option<Field<'a>>,
    id: Option<Field<'a>>,
    name: Option<Field<'a>>,
    input: Option<Field<'a>>,
    tool_use_id: Option<Field<'a>>,
    content: Option<Field<'a>>,
    is_error: Option<Field<'a>>,
}

/// One element of a content list. `None` only for the general path; a block we do not know
/// (or of the wrong shape) is `AnyBlock::Unknown`, as on the general path.
fn block(s: &mut Scan<'_>) -> Option<AnyBlock> {
    let start = s.mark();
    if s.peek()? != b'{' {
        return Some(AnyBlock::Unknown(s.value()?));
    }
    let mut f = Fields::default();
    s.object(|s, key| {
        let slot = match key {
            "type" => &mut f.kind,
            "text" => &mut f.text,
            "thinking" => &mut f.thinking,
            "signature" => &mut f.signature,
            "id" => &mut f.id,
            "name" => &mut f.name,
            "input" => &mut f.input,
            "tool_use_id" => &mut f.tool_use_id,
            "content" => &mut f.content,
            "is_error" => &mut f.is_error,
            // serde_json parses the whole block into a `Value`: checked as it would.
            _ => return s.skip_strict(),
        };
        let v = s.field()?;
        once(slot, v)
    })?;
    match known(f) {
        Known::Block(b) => Some(AnyBlock::Known(b)),
        Known::No => Some(AnyBlock::Unknown(
            serde_json::from_str(s.since(start)?).ok()?,
        )),
        Known::GeneralPath => None,
    }
}

enum Known {
    Block(Block),
    /// Not a block we know: kept whole.
    No,
    /// A value serde_json refuses inside a block we know.
    GeneralPath,
}

/// `Block::from_map`'s rules, on the fields as read.
fn known(f: Fields<'_>) -> Known {
    /// Some(true): a string; Some(false): absent or null; None: wrong shape.
    fn string(v: &Option<Field>) -> Option<bool> {
        match v {
            None | Some(Field::Null) => Some(false),
            Some(Field::Str(_)) => Some(true),
            Some(_) => None,
        }
    }
    fn take(v: Option<Field>) -> String {
        match v {
            Some(Field::Str(s)) => s.into_owned(),
            _ => String::new(),
        }
    }
    let kind = match &f.kind {
        Some(Field::Str(k)) => k.as_ref(),
        _ => return Known::No,
    };
    // serde_json reads the whole block into a `Value` first: a number, list or object in a
    // field this kind does not use was only checked as JSON text here, so it must still be
    // one a `Value` can hold (a number in range, no lone surrogate), or serde gives its
    // verdict. Strings were already checked by `unescape`; used fields are read below.
    let used: &[&str] = match kind {
        "text" => &["text"],
        "thinking" => &["thinking", "signature"],
        "tool_use" => &["id", "name", "input"],
        "tool_result" => &["tool_use_id", "content", "is_error"],
        _ => &[],
    };
    let slots = [
        ("text", &f.text),
        ("thinking", &f.thinking),
        ("signature", &f.signature),
        ("id", &f.id),
        ("name", &f.name),
        ("input", &f.input),
        ("tool_use_id", &f.tool_use_id),
        ("content", &f.content),
        ("is_error", &f.is_error),
    ];
    // Raw fields are rare (a tool's input, a result's content): test for one first.
    if slots.iter().any(|(name, v)| {
        matches!(v, Some(Field::Raw(r))
            if !used.contains(name) && serde_json::from_str::<serde_json::Value>(r).is_err())
    }) {
        return Known::GeneralPath;
    }
    let block = match kind {
        "text" => {
            if string(&f.text).is_none() {
                return Known::No;
            }
            Block::Text { text: take(f.text) }
        }
        "thinking" => {
            if string(&f.thinking).is_none() || string(&f.signature).is_none() {
                return Known::No;
            }
            Block::Thinking {
                thinking: take(f.thinking),
                signature: take(f.signature),
            }
        }
        "redacted_thinking" => Block::RedactedThinking {},
        "tool_use" => {
            if string(&f.id) != Some(true) || string(&f.name) != Some(true) {
                return Known::No;
            }
            let input = match f.input {
                None => serde_json::Value::Null,
                Some(v) => match v.into_value() {
                    Some(v) => v,
                    None => return Known::GeneralPath,
                },
            };
            Block::ToolUse {
                id: take(f.id),
                name: take(f.name),
                input,
            }
        }
        "tool_result" => {
            if string(&f.tool_use_id).is_none() {
                return Known::No;
            }
            let is_error = match f.is_error {
                None | Some(Field::Null) => None,
                Some(Field::Bool(b)) => Some(b),
                Some(_) => return Known::No,
            };
            let content = match f.content {
                None | Some(Field::Null) => None,
                Some(v) => match v.into_value() {
                    Some(v) => Some(v),
                    None => return Known::GeneralPath,
                },
            };
            Block::ToolResult {
                tool_use_id: take(f.tool_use_id),
                content,
                is_error,
            }
        }
        "image" => Block::Image {},
        "document" => Block::Document {},
        _ => return Known::No,
    };
    Known::Block(block)
}
