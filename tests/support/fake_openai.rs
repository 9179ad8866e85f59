//! A scripted fake of the OpenAI Responses API for codex-acp, on `http_fake`'s server:
//!
//! * `POST /v1/responses` (`"stream": true`): server-sent events as the real API streams them —
//!   `response.created`, `response.in_progress`; for the text an `output_item.added` message,
//!   `content_part.added`, several `output_text.delta`, `output_text.done`, `content_part.done`,
//!   `output_item.done`; for each call an `output_item.added`, argument deltas
//!   (`function_call_arguments.delta` / `.done` for a function tool such as codex's
//!   `exec_command`, `custom_tool_call_input.delta` / `.done` for a free-form tool such as
//!   `apply_patch`), `output_item.done`; then `response.completed` with the output and usage;
//! * anything else: 404, recorded as unexpected.
//!
//! Point codex at it with a `[model_providers.<id>]` whose `base_url` is `<base_url>/v1` and
//! `wire_api = "responses"` (`agents.rs`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::fake_script::{Convo, Script, ToolOutput, Turn, split_chunks};
use super::http_fake::{Answer, Handler, HttpFake, Reply, Request, SseEvent};

pub struct FakeOpenAi {
    pub http: HttpFake,
}

impl FakeOpenAi {
    pub fn start(script: Script) -> FakeOpenAi {
        FakeOpenAi {
            http: HttpFake::start(
                "openai",
                OpenAi {
                    script,
                    served: AtomicUsize::new(0),
                },
            ),
        }
    }

    pub fn base_url(&self) -> String {
        self.http.base_url()
    }

    /// The `/v1/responses` calls so far, as recorded.
    pub fn turns(&self) -> Vec<super::http_fake::Recorded> {
        self.http.requests_to(|r| r == "/v1/responses")
    }
}

struct OpenAi {
    script: Script,
    /// Responses streamed so far (each gets its own id).
    served: AtomicUsize,
}

fn item_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What a request asks, in the terms of the script.
pub fn convo(body: &Value) -> Convo {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let names: HashMap<&str, &str> = input
        .iter()
        .filter(|i| i["type"] == "function_call" || i["type"] == "custom_tool_call")
        .filter_map(|i| Some((i["call_id"].as_str()?, i["name"].as_str()?)))
        .collect();
    let last_user_text = input
        .iter()
        .rev()
        .find(|i| i["type"] == "message" && i["role"] == "user")
        .map(item_text)
        .unwrap_or_default();
    let tool_results = input
        .iter()
        .rev()
        .take_while(|i| i["type"].as_str().is_some_and(|t| t.ends_with("_output")))
        .map(|i| ToolOutput {
            name: i["call_id"]
                .as_str()
                .and_then(|id| names.get(id))
                .unwrap_or(&"")
                .to_string(),
            text: match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let all_text = input
        .iter()
        .map(|i| match i["type"].as_str() {
            Some("message") => item_text(i),
            _ => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    Convo {
        last_user_text,
        tool_results,
        all_text,
        tools,
    }
}

/// The events of one streamed response.
fn events(turn: &Turn, id: &str, model: &str) -> Vec<SseEvent> {
    let mut out: Vec<Value> = Vec::new();
    let response = |status: &str, output: &[Value]| {
        json!({"id": id, "object": "response", "created_at": 1_790_000_000u64, "status": status,
               "model": model, "output": output})
    };
    out.push(json!({"type": "response.created", "response": response("in_progress", &[])}));
    out.push(json!({"type": "response.in_progress", "response": response("in_progress", &[])}));
    let mut done_items = Vec::new();
    if let Some(text) = &turn.text {
        let idx = done_items.len();
        let item_id = format!("msg_{id}");
        let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": []});
        out.push(
            json!({"type": "response.output_item.added", "output_index": idx,
            "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant",
                     "content": []}}),
        );
        out.push(
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": idx,
            "content_index": 0, "part": part("")}),
        );
        for d in split_chunks(text, turn.chunks) {
            out.push(
                json!({"type": "response.output_text.delta", "item_id": item_id,
                "output_index": idx, "content_index": 0, "delta": d}),
            );
        }
        out.push(
            json!({"type": "response.output_text.done", "item_id": item_id, "output_index": idx,
            "content_index": 0, "text": text}),
        );
        out.push(
            json!({"type": "response.content_part.done", "item_id": item_id, "output_index": idx,
            "content_index": 0, "part": part(text)}),
        );
        let item = json!({"id": item_id, "type": "message", "status": "completed",
            "role": "assistant",
            "content": [part(text)]});
        out.push(json!({"type": "response.output_item.done", "output_index": idx, "item": item}));
        done_items.push(item);
    }
    for c in &turn.calls {
        let idx = done_items.len();
        let (item, delta_kind, full) = match &c.args {
            // A free-form tool: its input is the text itself.
            Value::String(input) => (
                json!({"id": format!("ctc_{}", c.id), "type": "custom_tool_call",
                       "status": "completed",
                       "call_id": c.id, "name": c.name, "input": input}),
                "custom_tool_call_input",
                input.clone(),
            ),
            args => (
                json!({"id": format!("fc_{}", c.id), "type": "function_call", "status": "completed",
                       "call_id": c.id, "name": c.name, "arguments": args.to_string()}),
                "function_call_arguments",
                args.to_string(),
            ),
        };
        let item_id = item["id"].clone();
        let field = if delta_kind == "custom_tool_call_input" {
            "input"
        } else {
            "arguments"
        };
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        added[field] = json!("");
        out.push(json!({"type": "response.output_item.added", "output_index": idx, "item": added}));
        for d in split_chunks(&full, turn.chunks) {
            out.push(
                json!({"type": format!("response.{delta_kind}.delta"), "item_id": item_id,
                "output_index": idx, "delta": d}),
            );
        }
        out.push(
            json!({"type": format!("response.{delta_kind}.done"), "item_id": item_id,
            "output_index": idx, field: full}),
        );
        out.push(json!({"type": "response.output_item.done", "output_index": idx, "item": item}));
        done_items.push(item);
    }
    let mut completed = response("completed", &done_items);
    completed["usage"] = json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 19});
    out.push(json!({"type": "response.completed", "response": completed}));
    out.into_iter()
        .enumerate()
        .map(|(n, mut data)| {
            data["sequence_number"] = json!(n);
            SseEvent {
                event: data["type"].as_str().map(String::from),
                data,
            }
        })
        .collect()
}

fn api_error(status: u16, message: &str) -> Value {
    let kind = if status == 429 {
        "rate_limit_exceeded"
    } else {
        "server_error"
    };
    json!({"error": {"message": message, "type": kind, "code": null}})
}

impl Handler for OpenAi {
    fn answer(&self, req: &Request) -> Answer {
        if req.method != "POST" || req.route() != "/v1/responses" {
            let why = format!("{} {}", req.method, req.path);
            return Answer::unexpected(404, why.clone(), api_error(404, &why));
        }
        let body = req.json().unwrap_or(Value::Null);
        let Some((rule, turn)) = self.script.choose(&convo(&body)) else {
            let why = format!("no rule of {} answers this call", self.script.name);
            return Answer::unexpected(400, why.clone(), api_error(400, &why));
        };
        let reply = match &turn.error {
            Some(e) => Reply::Json {
                status: e.status,
                body: api_error(e.status, &e.message),
            },
            None => {
                let model = body["model"].as_str().unwrap_or("gpt-fake");
                let n = self.served.fetch_add(1, Ordering::SeqCst) + 1;
                let id = format!("resp_fake{n:03}");
                Reply::Sse {
                    events: events(&turn, &id, model),
                    delay: Duration::from_millis(turn.delay_ms),
                    gap: Duration::from_millis(turn.delta_delay_ms),
                }
            }
        };
        Answer {
            reply,
            rule: Some(rule),
            unexpected: None,
        }
    }
}
