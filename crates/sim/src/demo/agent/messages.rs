//! Streaming assistant messages: begin/end, prose and thinking deltas, tool uses.

use serde_json::{Value, json};

use super::helpers::{compact, tokens_of};
use super::{Agent, Ctx, Msg, Step, Stop};

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn begin(&mut self, ctx: &Ctx) -> Msg {
        if ctx.parent.is_none() {
            self.status(Some("requesting"));
            self.stats.num_turns += 1;
        }
        self.stats.input_tokens += 4;
        self.stats.cache_read += 18_200;
        let msg = Msg {
            id: self.msg_id(),
            ctx: ctx.clone(),
            index: 0,
            visible: self.cfg.partial && (ctx.parent.is_none() || self.forward_sub),
            out_tokens: 1,
        };
        if msg.visible {
            let ttft = self.range(600, 2400);
            let uuid = self.uuid();
            self.emit(json!({
                "type": "stream_event",
                "event": {"type": "message_start", "message": {
                    "model": self.model, "id": msg.id, "type": "message", "role": "assistant",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 18_200, "output_tokens": 1, "service_tier": "standard"},
                }},
                "session_id": self.session_id,
                "parent_tool_use_id": ctx.parent,
                "uuid": uuid,
                "ttft_ms": ttft,
            }));
        }
        msg
    }

    pub(super) fn end(&mut self, msg: &mut Msg, stop_reason: &str) {
        if msg.visible {
            let ctx = msg.ctx.clone();
            self.stream_event(
                &ctx,
                json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": msg.out_tokens}}),
            );
            self.stream_event(&ctx, json!({"type": "message_stop"}));
        }
        self.stats.output_tokens += msg.out_tokens;
        if let Some(agent) = &msg.ctx.agent_id
            && let Some(t) = self.tasks.iter_mut().find(|t| &t.task_id == agent)
        {
            t.tokens += msg.out_tokens + 1_200;
        }
    }

    pub(super) fn word_chunks(&mut self, text: &str) -> Vec<String> {
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let n = 1 + (self.rand() % 3) as usize;
            let end = (i + n).min(words.len());
            out.push(words[i..end].concat());
            i = end;
        }
        out
    }

    /// Streams a text or thinking block. Sub-agent text is only forwarded with
    /// `forwardSubagentText: true`, like the real CLI.
    pub(super) fn stream_prose(&mut self, msg: &mut Msg, text: &str, thinking: bool) -> Step<()> {
        if msg.ctx.parent.is_some() && !self.forward_sub {
            msg.out_tokens += tokens_of(text);
            return self.pause(100, 300);
        }
        let ctx = msg.ctx.clone();
        let index = msg.index;
        msg.index += 1;
        let (kind, delta_kind) = if thinking {
            ("thinking", "thinking_delta")
        } else {
            ("text", "text_delta")
        };
        let signature = if thinking {
            format!("Eu{}", self.base62(64))
        } else {
            String::new()
        };
        let block_of = |t: &str| {
            if thinking {
                json!({"type": "thinking", "thinking": t, "signature": signature})
            } else {
                json!({"type": "text", "text": t})
            }
        };
        if msg.visible {
            let start = if thinking {
                json!({"type": "thinking", "thinking": "", "signature": ""})
            } else {
                json!({"type": "text", "text": ""})
            };
            self.stream_event(
                &ctx,
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            );
        }
        let mut acc = String::new();
        for chunk in self.word_chunks(text) {
            acc.push_str(&chunk);
            msg.out_tokens += tokens_of(&chunk);
            if msg.visible {
                self.stream_event(
                    &ctx,
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": delta_kind, kind: chunk}}),
                );
            }
            if let Err(stop) = self.pause(30, 80) {
                if matches!(stop, Stop::Interrupt) {
                    self.assistant_line(msg, block_of(&acc), true);
                }
                return Err(stop);
            }
        }
        if thinking && msg.visible {
            self.stream_event(
                &ctx,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
            );
        }
        self.assistant_line(msg, block_of(text), false);
        if msg.visible {
            self.stream_event(&ctx, json!({"type": "content_block_stop", "index": index}));
        }
        Ok(())
    }

    pub(super) fn text(&mut self, msg: &mut Msg, text: &str) -> Step<()> {
        self.stream_prose(msg, text, false)
    }

    pub(super) fn thinking(&mut self, msg: &mut Msg, text: &str) -> Step<()> {
        self.stream_prose(msg, text, true)
    }

    pub(super) fn tool_use(
        &mut self,
        msg: &mut Msg,
        id: &str,
        name: &str,
        input: &Value,
    ) -> Step<()> {
        let ctx = msg.ctx.clone();
        let index = msg.index;
        msg.index += 1;
        if msg.visible {
            self.stream_event(
                &ctx,
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}, "caller": {"type": "direct"}}}),
            );
            self.stream_event(
                &ctx,
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            );
        }
        let serialized = compact(input);
        let chars: Vec<char> = serialized.chars().collect();
        let mut pos = 0;
        while pos < chars.len() {
            self.pause(20, 50)?;
            let n = self.range(18, 40) as usize;
            let end = (pos + n).min(chars.len());
            let piece: String = chars[pos..end].iter().collect();
            pos = end;
            if msg.visible {
                self.stream_event(
                    &ctx,
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
        }
        msg.out_tokens += tokens_of(&serialized);
        self.assistant_line(
            msg,
            json!({"type": "tool_use", "id": id, "name": name, "input": input, "caller": {"type": "direct"}}),
            false,
        );
        self.open_tools.push((id.to_string(), ctx.parent.clone()));
        if msg.visible {
            self.stream_event(&ctx, json!({"type": "content_block_stop", "index": index}));
        }
        Ok(())
    }

    /// A whole one-block text message.
    pub(super) fn say(&mut self, ctx: &Ctx, text: &str, stop_reason: &str) -> Step<()> {
        let mut m = self.begin(ctx);
        self.text(&mut m, text)?;
        self.end(&mut m, stop_reason);
        Ok(())
    }

    // ---- sub-agent tasks
}
