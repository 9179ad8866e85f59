//! `stream_event` lines: the streamed message events and their deltas, whose text borrows
//! from the line when it holds no escapes.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

#[derive(Debug, Deserialize)]
pub struct StreamEvent<'a> {
    /// Borrows its text from the line when it holds no escapes.
    #[serde(borrow)]
    pub event: StreamPayload<'a>,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

#[derive(Debug)]
pub enum StreamPayload<'a> {
    MessageStart {
        message: StreamMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta<'a>,
    },
    ContentBlockStop {},
    MessageDelta {},
    MessageStop {},
    Other,
}

#[derive(Debug, Deserialize)]
pub struct StreamMessage {
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Debug)]
pub enum StartBlock {
    Text {},
    Thinking {},
    RedactedThinking {},
    ToolUse { id: String, name: String },
    Other,
}

#[derive(Debug)]
pub enum Delta<'a> {
    TextDelta { text: Cow<'a, str> },
    ThinkingDelta { thinking: Cow<'a, str> },
    InputJsonDelta {},
    SignatureDelta {},
    Other,
}

/// The fields of every stream event type, read in one pass (unknown fields are skipped
/// without being kept).
#[derive(Deserialize)]
struct PayloadFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u32>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    content_block: Option<StartBlock>,
    message: Option<StreamMessage>,
}

impl<'de: 'a, 'a> Deserialize<'de> for StreamPayload<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f: PayloadFields<'a> = PayloadFields::deserialize(d)?;
        let index = || f.index.ok_or_else(|| de::Error::missing_field("index"));
        Ok(match &*f.kind {
            "message_start" => StreamPayload::MessageStart {
                message: f
                    .message
                    .ok_or_else(|| de::Error::missing_field("message"))?,
            },
            "content_block_start" => StreamPayload::ContentBlockStart {
                index: index()?,
                content_block: f
                    .content_block
                    .ok_or_else(|| de::Error::missing_field("content_block"))?,
            },
            "content_block_delta" => StreamPayload::ContentBlockDelta {
                index: index()?,
                delta: f.delta.ok_or_else(|| de::Error::missing_field("delta"))?,
            },
            "content_block_stop" => StreamPayload::ContentBlockStop {},
            "message_delta" => StreamPayload::MessageDelta {},
            "message_stop" => StreamPayload::MessageStop {},
            _ => StreamPayload::Other,
        })
    }
}

#[derive(Deserialize)]
struct StartFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    id: Option<String>,
    name: Option<String>,
}

impl<'de> Deserialize<'de> for StartBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = StartFields::deserialize(d)?;
        Ok(match &*f.kind {
            "text" => StartBlock::Text {},
            "thinking" => StartBlock::Thinking {},
            "redacted_thinking" => StartBlock::RedactedThinking {},
            "tool_use" => StartBlock::ToolUse {
                id: f.id.ok_or_else(|| de::Error::missing_field("id"))?,
                name: f.name.ok_or_else(|| de::Error::missing_field("name"))?,
            },
            _ => StartBlock::Other,
        })
    }
}

#[derive(Deserialize)]
struct DeltaFields<'a> {
    /// Absent in `message_delta`'s delta (a stop reason), which shares the field name.
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(borrow)]
    thinking: Option<Text<'a>>,
}

/// A string borrowed from the line when it has no escapes (serde's own `Cow` support does not
/// borrow inside an `Option`).
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v))
            }
        }
        d.deserialize_str(V).map(Text)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f: DeltaFields<'a> = DeltaFields::deserialize(d)?;
        Ok(match f.kind.as_deref().unwrap_or("") {
            "text_delta" => Delta::TextDelta {
                text: f.text.ok_or_else(|| de::Error::missing_field("text"))?.0,
            },
            "thinking_delta" => Delta::ThinkingDelta {
                thinking: f
                    .thinking
                    .ok_or_else(|| de::Error::missing_field("thinking"))?
                    .0,
            },
            "input_json_delta" => Delta::InputJsonDelta {},
            "signature_delta" => Delta::SignatureDelta {},
            _ => Delta::Other,
        })
    }
}
