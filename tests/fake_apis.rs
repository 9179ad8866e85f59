//! The fakes of the model APIs themselves (`tests/support/http_fake.rs`, `fake_script.rs`,
//! `fake_gemini.rs`, `fake_openai.rs`), spoken to with a plain HTTP/1.1 client: the streams
//! parse as the real APIs' server-sent events, a tool call makes the round trip, requests no
//! one expects are recorded as unexpected, and every agent scenario file loads.

#[path = "support/fake_gemini.rs"]
mod fake_gemini;
#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/fake_openai.rs"]
mod fake_openai;
#[path = "support/fake_script.rs"]
mod fake_script;
#[path = "support/http_fake.rs"]
mod http_fake;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};

use fake_gemini::FakeGemini;
use fake_openai::FakeOpenAi;
use fake_script::Script;

/// One HTTP response: status, lower-cased headers, the body (chunked encoding undone).
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    /// The server-sent events of the body: (event name, data).
    fn events(&self) -> Vec<(Option<String>, Value)> {
        assert_eq!(self.header("content-type"), Some("text/event-stream"));
        self.body
            .replace("\r\n", "\n")
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .map(|block| {
                let field = |f: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(f).map(|v| v.trim().to_string()))
                };
                let data = field("data:").expect("every event has data");
                (
                    field("event:"),
                    serde_json::from_str(&data).expect("data is JSON"),
                )
            })
            .collect()
    }
}

/// A keep-alive connection to a fake.
struct Conn {
    rd: BufReader<TcpStream>,
}

impl Conn {
    fn open(base: &str) -> Conn {
        let addr = base.strip_prefix("http://").unwrap();
        Conn {
            rd: BufReader::new(TcpStream::connect(addr).unwrap()),
        }
    }

    /// POST `body` to `path`, as one piece or (when `chunked`) in chunked encoding.
    fn post(&mut self, path: &str, body: &Value, chunked: bool) -> Response {
        let b = body.to_string();
        let mut req =
            format!("POST {path} HTTP/1.1\r\nhost: fake\r\ncontent-type: application/json\r\n");
        if chunked {
            let (x, y) = b.split_at(b.len() / 2);
            req.push_str("transfer-encoding: chunked\r\n\r\n");
            for part in [x, y] {
                req.push_str(&format!("{:x}\r\n{part}\r\n", part.len()));
            }
            req.push_str("0\r\n\r\n");
        } else {
            req.push_str(&format!("content-length: {}\r\n\r\n{b}", b.len()));
        }
        self.rd.get_mut().write_all(req.as_bytes()).unwrap();
        self.read_response()
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.rd.read_line(&mut l).unwrap();
        l.trim_end_matches(['\r', '\n']).to_string()
    }

    fn read_response(&mut self) -> Response {
        let status = self
            .line()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut headers = Vec::new();
        loop {
            let h = self.line();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let mut body = Vec::new();
        let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        if get("transfer-encoding").as_deref() == Some("chunked") {
            loop {
                let n = usize::from_str_radix(&self.line(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                self.rd.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            let n: usize = get("content-length").unwrap().parse().unwrap();
            body.resize(n, 0);
            self.rd.read_exact(&mut body).unwrap();
        }
        Response {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }
}

fn script(v: Value) -> Script {
    Script::parse("inline", &v.to_string()).unwrap()
}

/// A shell call on `RUN`, text after its result.
fn shell_script(tool: &str, args: Value) -> Script {
    script(json!({
        "rules": [
            {"name": "run", "when": {"last_user_text_contains": "RUN", "tool_result": false},
             "reply": {"text": "Running it now.", "chunks": 4,
                       "calls": [{"name": tool, "args": args}]}},
            {"name": "after", "when": {"tool_result": {"tool_name": tool, "contains": "ok"}},
             "reply": {"text": "All done."}}
        ],
        "side_default": {"text": "side"}
    }))
}

const GEMINI_STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

fn gemini_user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn gemini_tools() -> Value {
    json!([{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}])
}

#[test]
fn gemini_stream_is_sse_of_chunks_then_a_function_call_and_its_result_round_trips() {
    let args = json!({"command": "touch x", "description": "d"});
    let fake = FakeGemini::start(shell_script("run_shell_command", args.clone()));
    let mut c = Conn::open(&fake.base_url());
    let first = json!({"contents": [gemini_user("please RUN it")], "tools": gemini_tools()});
    let r = c.post(GEMINI_STREAM, &first, false);
    assert_eq!(r.status, 200);
    let events = r.events();
    assert!(
        events.len() >= 3,
        "the text in chunks, then the call: {events:?}"
    );
    let parts: Vec<Value> = events
        .iter()
        .flat_map(|(name, e)| {
            assert!(name.is_none(), "Gemini events carry no names");
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(text, "Running it now.");
    let call = parts.iter().find_map(|p| p.get("functionCall")).unwrap();
    assert_eq!(call["name"], "run_shell_command");
    assert_eq!(call["args"], args);
    let last = &events.last().unwrap().1;
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert!(last["usageMetadata"]["totalTokenCount"].is_u64());
    assert!(
        events[0].1.get("usageMetadata").is_none(),
        "usage comes last"
    );

    // The result goes back as a functionResponse on the same connection (keep-alive).
    let model_turn = json!({"role": "model", "parts": [{"functionCall": call}]});
    let response = json!({"name": "run_shell_command", "response": {"output": "ok"}});
    let result = json!({"role": "user", "parts": [{"functionResponse": response}]});
    let contents = json!([gemini_user("please RUN it"), model_turn, result]);
    let second = json!({"contents": contents, "tools": gemini_tools()});
    let r = c.post(GEMINI_STREAM, &second, true);
    let text: String = r
        .events()
        .iter()
        .flat_map(|(_, e)| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .clone()
        })
        .filter_map(|p| p["text"].as_str().map(String::from))
        .collect();
    assert_eq!(text, "All done.");
    let rules: Vec<_> = fake.turns().into_iter().map(|r| r.rule.unwrap()).collect();
    assert_eq!(rules, ["run", "after"]);
    fake.http.assert_no_unexpected();
}

#[test]
fn gemini_side_calls_count_tokens_and_unknown_routes() {
    let fake = FakeGemini::start(shell_script("run_shell_command", json!({})));
    let mut c = Conn::open(&fake.base_url());
    let r = c.post(
        "/v1beta/models/gemini-2.5-flash:countTokens",
        &json!({"contents": []}),
        false,
    );
    assert!(r.json()["totalTokens"].is_u64());
    // A call without tools is a side call: one JSON response from `side_default`.
    let side = json!({"contents": [gemini_user("title?")]});
    let r = c.post(
        "/v1beta/models/gemini-2.5-flash:generateContent",
        &side,
        false,
    );
    assert_eq!(
        r.json()["candidates"][0]["content"]["parts"][0]["text"],
        "side"
    );
    // A main call nothing answers (no default) and an unknown route: errors, recorded.
    let main = json!({"contents": [gemini_user("hello")], "tools": gemini_tools()});
    assert_eq!(c.post(GEMINI_STREAM, &main, false).status, 400);
    let r = c.post("/v1/models", &json!({}), false);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["status"], "NOT_FOUND");
    assert_eq!(fake.http.unexpected().len(), 2, "{}", fake.http.dump());
}

fn openai_request(input: Vec<Value>) -> Value {
    json!({"model": "gpt-5.5", "stream": true, "input": input,
           "tools": [{"type": "function", "name": "exec_command"},
                     {"type": "custom", "name": "apply_patch"}]})
}

fn openai_user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

#[test]
fn openai_stream_has_the_responses_events_in_order_and_a_function_call_round_trips() {
    let args = json!({"cmd": "touch x", "workdir": "/tmp"});
    let fake = FakeOpenAi::start(shell_script("exec_command", args.clone()));
    let mut c = Conn::open(&fake.base_url());
    let r = c.post(
        "/v1/responses",
        &openai_request(vec![openai_user("RUN")]),
        false,
    );
    let events = r.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    for (n, (name, data)) in events.iter().enumerate() {
        assert_eq!(
            data["type"],
            name.as_deref().unwrap(),
            "the event name is its type"
        );
        assert_eq!(data["sequence_number"], n);
    }
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"));
    let deltas: String = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.output_text.delta"))
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Running it now.");
    assert!(names.contains(&"response.function_call_arguments.delta"));
    let done: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.output_item.done"))
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(done.len(), 2, "the message, then the call");
    let call = done[1];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "exec_command");
    let parsed: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, args);
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"].as_array().unwrap().len(), 2);
    assert!(completed["usage"]["total_tokens"].is_u64());

    let output =
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "ok"});
    let input = vec![openai_user("RUN"), call.clone(), output];
    let r = c.post("/v1/responses", &openai_request(input), true);
    let done = r.events().last().unwrap().1.clone();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        "All done."
    );
    let ids: Vec<String> = fake
        .turns()
        .iter()
        .map(|t| t.rule.clone().unwrap())
        .collect();
    assert_eq!(ids, ["run", "after"]);
    fake.http.assert_no_unexpected();
}

#[test]
fn openai_free_form_tool_is_a_custom_tool_call_with_its_input_streamed() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
    let fake = FakeOpenAi::start(script(json!({
        "rules": [{"when": {"last_user_text_contains": "PATCH"},
                   "reply": {"calls": [{"name": "apply_patch", "args": patch}]}}]
    })));
    let mut c = Conn::open(&fake.base_url());
    let events = c
        .post(
            "/v1/responses",
            &openai_request(vec![openai_user("PATCH")]),
            false,
        )
        .events();
    let input: String = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.custom_tool_call_input.delta"))
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(input, patch);
    let item = events
        .iter()
        .find(|(n, _)| n.as_deref() == Some("response.output_item.done"))
        .map(|(_, d)| d["item"].clone())
        .unwrap();
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["input"], patch);
    // Nothing answers a second main call: a 400, recorded as unexpected.
    let again = c.post(
        "/v1/responses",
        &openai_request(vec![openai_user("other")]),
        false,
    );
    assert_eq!(again.status, 400);
    assert_eq!(fake.http.unexpected().len(), 1);
}

#[test]
fn script_rules_once_vars_errors_and_defaults() {
    let s = script(json!({
        "rules": [
            {"name": "first", "once": true, "when": {"conversation_contains": "GO"},
             "reply": {"calls": [{"name": "write_file", "args": {"file_path": "${cwd}/a.txt"}}]}},
            {"name": "busy", "when": {"last_user_text_contains": "BUSY"},
             "reply": {"error": {"status": 429, "message": "slow down"}}}
        ],
        "default": {"text": "default"}
    }))
    .with_var("cwd", "/w");
    let c = |text: &str| fake_script::Convo {
        last_user_text: text.into(),
        all_text: text.into(),
        tools: vec!["write_file".into()],
        ..Default::default()
    };
    let (rule, turn) = s.choose(&c("GO")).unwrap();
    assert_eq!(rule, "first");
    assert_eq!(turn.calls[0].args["file_path"], "/w/a.txt");
    assert_eq!(s.choose(&c("GO")).unwrap().0, "default", "once fired");
    let (_, turn) = s.choose(&c("BUSY")).unwrap();
    assert_eq!(turn.error.unwrap().status, 429);
    assert!(Script::parse("bad", r#"{"rules":[{"reply":{}}]}"#).is_err());
    assert!(Script::parse("bad", r#"{"rules":[],"surprise":1}"#).is_err());

    // Through the Gemini fake, the error is Google's error shape with its status.
    let fake = FakeGemini::start(script(
        json!({"rules": [{"reply": {"error": {"status": 503, "message": "down"}}}]}),
    ));
    let body = json!({"contents": [gemini_user("x")], "tools": gemini_tools()});
    let r = Conn::open(&fake.base_url()).post(GEMINI_STREAM, &body, false);
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["message"], "down");
}

#[test]
fn every_agent_scenario_loads() {
    for name in ["agent_gemini", "agent_codex"] {
        let s = Script::load(name);
        assert!(!s.description().is_empty(), "{name}");
    }
    for name in ["agent_opencode", "agent_claude"] {
        let s = fake_model::Scenario::load(name);
        assert!(
            s.rule_names().contains(&"shell_allow".to_string()),
            "{name}"
        );
    }
}
