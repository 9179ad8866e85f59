//! The messages of `assistant` and `user` lines and their content blocks (a string or a list
//! of blocks, each known or kept whole).

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};

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
#[derive(Debug)]
pub enum Content {
    Text(String),
    Blocks(Vec<AnyBlock>),
}

/// A block we know, or one we do not (kept whole so it can be shown, never dropped).
#[derive(Debug)]
pub enum AnyBlock {
    Known(Block),
    Unknown(Value),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

/// A Messages API content block.
#[derive(Debug)]
pub enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {},
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: Option<Value>,
        is_error: Option<bool>,
    },
    Image {},
    Document {},
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
                while let Some(v) = seq.next_element::<Value>()? {
                    blocks.push(AnyBlock::from_value(v));
                }
                Ok(Content::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

impl AnyBlock {
    /// Classify one parsed block; a block of an unknown type, or of a known type with fields
    /// of the wrong shape, is kept whole.
    pub fn from_value(v: Value) -> AnyBlock {
        let Value::Object(mut map) = v else {
            return AnyBlock::Unknown(v);
        };
        match Block::from_map(&mut map) {
            Some(b) => AnyBlock::Known(b),
            None => AnyBlock::Unknown(Value::Object(map)),
        }
    }
}

impl Block {
    /// Move the fields out of `map` (left untouched when the block is not one we know).
    fn from_map(map: &mut Map<String, Value>) -> Option<Block> {
        fn string(map: &Map<String, Value>, k: &str) -> Option<bool> {
            // Some(true): a string; Some(false): absent or null; None: wrong shape.
            match map.get(k) {
                None | Some(Value::Null) => Some(false),
                Some(Value::String(_)) => Some(true),
                Some(_) => None,
            }
        }
        fn take(map: &mut Map<String, Value>, k: &str) -> String {
            match map.remove(k) {
                Some(Value::String(s)) => s,
                _ => String::new(),
            }
        }
        let kind = map.get("type")?.as_str()?;
        Some(match kind {
            "text" => {
                string(map, "text")?;
                Block::Text {
                    text: take(map, "text"),
                }
            }
            "thinking" => {
                string(map, "thinking")?;
                string(map, "signature")?;
                Block::Thinking {
                    thinking: take(map, "thinking"),
                    signature: take(map, "signature"),
                }
            }
            "redacted_thinking" => Block::RedactedThinking {},
            "tool_use" => {
                if !(string(map, "id")? && string(map, "name")?) {
                    return None;
                }
                Block::ToolUse {
                    id: take(map, "id"),
                    name: take(map, "name"),
                    input: map.remove("input").unwrap_or(Value::Null),
                }
            }
            "tool_result" => {
                string(map, "tool_use_id")?;
                let is_error = match map.get("is_error") {
                    None | Some(Value::Null) => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(_) => return None,
                };
                Block::ToolResult {
                    tool_use_id: take(map, "tool_use_id"),
                    content: map.remove("content").filter(|c| !c.is_null()),
                    is_error,
                }
            }
            "image" => Block::Image {},
            "document" => Block::Document {},
            _ => return None,
        })
    }
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
