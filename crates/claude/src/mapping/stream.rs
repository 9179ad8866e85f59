//! Partial-message `stream_event` deltas, shown live until the settling line arrives.

use serde_json::json;

use super::{BlockKind, Mapper, OpenBlock, Out, StreamBlock, block_key};
use crate::codec;
use crate::codec::{Delta, StartBlock, StreamPayload};
use switchboard_core::text::sanitize_owned;
use switchboard_core::transcript::ItemOp;

impl Mapper {
    pub(super) fn stream_event(&mut self, e: codec::StreamEvent<'_>, out: &mut Out) {
        let parent = e.parent_tool_use_id;
        let node = self.node_for(parent.as_deref(), out);
        match e.event {
            StreamPayload::MessageStart { message } => {
                if let Some(id) = message.id {
                    match parent {
                        None => self.root_msg = Some(id),
                        Some(p) => {
                            self.current_msg.insert(p, id);
                        }
                    }
                }
            }
            StreamPayload::ContentBlockStart {
                index,
                content_block,
            } => {
                let Some(msg) = self.current(parent.as_deref()).cloned() else {
                    return;
                };
                let kind = match content_block {
                    StartBlock::Text {} => BlockKind::Text,
                    StartBlock::Thinking {} | StartBlock::RedactedThinking {} => {
                        BlockKind::Thinking
                    }
                    StartBlock::ToolUse { id, name } => {
                        if !self.tool_names.contains_key(&id) {
                            self.tool_use(node, &id, &name, &json!({}), out);
                        }
                        BlockKind::ToolUse
                    }
                    StartBlock::Other => return,
                };
                self.stream_blocks(msg).push(StreamBlock {
                    index,
                    kind,
                    settled: false,
                });
            }
            StreamPayload::ContentBlockDelta { index, delta } => {
                let (thinking, text) = match delta {
                    Delta::TextDelta { text } => (false, text),
                    Delta::ThinkingDelta { thinking } => (true, thinking),
                    _ => return,
                };
                let memo_on = self.memo_on();
                // Fields, not `current()`: `open_block` is set while `msg` is borrowed.
                let msg = match parent.as_deref() {
                    None => self.root_msg.as_ref(),
                    Some(p) => self.current_msg.get(p),
                };
                let Some(msg) = msg else {
                    return;
                };
                // Only `settle_key` settles a block (and bumps `settle_gen`); a block pushed
                // or forgotten since is unsettled either way, so the memo stays true.
                let memo = self.open_block.as_ref().filter(|o| {
                    memo_on && o.generation == self.settle_gen && o.index == index && o.msg == *msg
                });
                let key = match memo {
                    Some(o) => o.key.clone(),
                    None => {
                        // A delta for a block already settled by its assistant line is stale.
                        let settled = self
                            .stream
                            .get(msg)
                            .and_then(|b| b.iter().find(|b| b.index == index))
                            .is_some_and(|b| b.settled);
                        if settled {
                            return;
                        }
                        let key = block_key(msg, index);
                        if memo_on {
                            self.open_block = Some(OpenBlock {
                                msg: msg.clone(),
                                index,
                                generation: self.settle_gen,
                                key: key.clone(),
                            });
                        }
                        key
                    }
                };
                out.item(
                    node,
                    ItemOp::AppendText {
                        key,
                        thinking,
                        delta: sanitize_owned(text),
                    },
                );
            }
            StreamPayload::MessageStop {} => {
                if let Some(msg) = self.current(parent.as_deref()) {
                    out.item(
                        node,
                        ItemOp::EndStreaming {
                            key_prefix: [msg.as_str(), "#"].concat(),
                            aborted: false,
                        },
                    );
                }
            }
            StreamPayload::ContentBlockStop {}
            | StreamPayload::MessageDelta {}
            | StreamPayload::Other => {}
        }
    }
}
