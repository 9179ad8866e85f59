//! A scripted fake of the Gemini API (v1beta) for gemini-cli, on `http_fake`'s server:
//!
//! * `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`: server-sent events, each a
//!   `GenerateContentResponse` (the text in several chunks, then the `functionCall` parts;
//!   the last chunk carries `finishReason` and `usageMetadata`), as the real API streams;
//! * `POST …:generateContent`: the same turn as one JSON response (gemini-cli's side calls);
//! * `POST …:countTokens`: `{"totalTokens": n}`;
//! * anything else: 404, recorded as unexpected.
//!
//! Point gemini-cli at it with `GOOGLE_GEMINI_BASE_URL=<base_url>` and any `GEMINI_API_KEY`.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

use super::fake_script::{Convo, Script, ToolOutput, Turn, split_chunks};
use super::http_fake::{Answer, Handler, HttpFake, Reply, Request, SseEvent};

pub struct FakeGemini {
    pub http: HttpFake,
}

impl FakeGemini {
    pub fn start(script: Script) -> FakeGemini {
        FakeGemini {
            http: HttpFake::start("gemini", Gemini { script }),
        }
    }

    pub fn base_url(&self) -> String {
        self.http.base_url()
    }

    /// The `:streamGenerateContent` calls so far, as recorded.
    pub fn turns(&self) -> Vec<super::http_fake::Recorded> {
        self.http
            .requests_to(|r| r.ends_with(":streamGenerateContent"))
    }
}

struct Gemini {
    script: Script,
}

/// What a request asks, in the terms of the script.
pub fn convo(body: &Value) -> Convo {
    let contents = body["contents"].as_array().cloned().unwrap_or_default();
    let parts = |c: &Value| c["parts"].as_array().cloned().unwrap_or_default();
    let texts = |c: &Value| -> Vec<String> {
        parts(c)
            .iter()
            .filter(|p| p.get("thought").is_none())
            .filter_map(|p| p["text"].as_str().map(String::from))
            .collect()
    };
    let last_user_text = contents
        .iter()
        .rev()
        .filter(|c| c["role"] == "user")
        .map(texts)
        .find(|t| !t.is_empty())
        .unwrap_or_default()
        .join("\n");
    let tool_results = contents
        .last()
        .filter(|c| c["role"] == "user")
        .map(|c| {
            parts(c)
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .map(|f| ToolOutput {
                    name: f["name"].as_str().unwrap_or("").into(),
                    text: f["response"].to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    let all_text = contents
        .iter()
        .flat_map(parts)
        .map(|p| match p.get("text") {
            Some(Value::String(t)) => t.clone(),
            _ => p.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|f| f["name"].as_str().map(String::from))
        .collect();
    Convo {
        last_user_text,
        tool_results,
        all_text,
        tools,
    }
}

fn usage() -> Value {
    json!({"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19})
}

fn chunk(model: &str, parts: Vec<Value>, last: bool) -> Value {
    let mut cand = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut v = json!({"modelVersion": model, "responseId": "fake-response"});
    if last {
        cand["finishReason"] = json!("STOP");
        v["usageMetadata"] = usage();
    }
    v["candidates"] = json!([cand]);
    v
}

/// The turn's parts: its text (in `chunks` pieces when streamed), then its calls.
fn part_groups(t: &Turn, streamed: bool) -> Vec<Vec<Value>> {
    let mut groups: Vec<Vec<Value>> = match &t.text {
        Some(text) if streamed => split_chunks(text, t.chunks)
            .into_iter()
            .map(|c| vec![json!({"text": c})])
            .collect(),
        Some(text) => vec![vec![json!({"text": text})]],
        None => vec![],
    };
    if !t.calls.is_empty() {
        groups.push(
            t.calls
                .iter()
                .map(|c| json!({"functionCall": {"name": c.name, "args": c.args}}))
                .collect(),
        );
    }
    groups
}

fn google_error(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

impl Handler for Gemini {
    fn answer(&self, req: &Request) -> Answer {
        let route = req.route().to_string();
        let (model, verb) = route
            .strip_prefix("/v1beta/models/")
            .and_then(|r| r.split_once(':'))
            .unwrap_or(("", ""));
        let body = req.json().unwrap_or(Value::Null);
        if req.method != "POST" || model.is_empty() {
            let why = format!("{} {}", req.method, req.path);
            return Answer::unexpected(404, why.clone(), google_error(404, &why));
        }
        match verb {
            "countTokens" => {
                let n = (body.to_string().len() / 4).max(1);
                Answer::json("count_tokens", json!({"totalTokens": n}))
            }
            "streamGenerateContent" | "generateContent" => {
                let streamed = verb == "streamGenerateContent";
                let Some((rule, turn)) = self.script.choose(&convo(&body)) else {
                    let why = format!("no rule of {} answers this call", self.script.name);
                    return Answer::unexpected(400, why.clone(), google_error(400, &why));
                };
                let reply = if let Some(e) = &turn.error {
                    Reply::Json {
                        status: e.status,
                        body: google_error(e.status, &e.message),
                    }
                } else if streamed {
                    let groups = part_groups(&turn, true);
                    let n = groups.len();
                    Reply::Sse {
                        events: groups
                            .into_iter()
                            .enumerate()
                            .map(|(i, parts)| SseEvent {
                                event: None,
                                data: chunk(model, parts, i + 1 == n),
                            })
                            .collect(),
                        delay: Duration::from_millis(turn.delay_ms),
                        gap: Duration::from_millis(turn.delta_delay_ms),
                    }
                } else {
                    let parts = part_groups(&turn, false).concat();
                    Reply::Json {
                        status: 200,
                        body: chunk(model, parts, true),
                    }
                };
                Answer {
                    reply,
                    rule: Some(rule),
                    unexpected: None,
                }
            }
            _ => {
                let why = format!("unknown method :{verb}");
                Answer::unexpected(404, why.clone(), google_error(404, &why))
            }
        }
    }
}
