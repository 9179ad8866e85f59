//! A scripted fake of the Anthropic Messages API for end-to-end tests of the real `claude` CLI.
//!
//! Use it from an integration test with
//! `#[path = "support/fake_model.rs"] mod fake_model;` (or `mod support;` + `support::fake_model`).
//!
//! The server is HTTP/1.1 on `127.0.0.1:<ephemeral port>`. It runs on its **own thread with its own
//! tokio runtime**, so it keeps answering even when the test blocks its own thread (std::process,
//! blocking reads, a current-thread `#[tokio::test]` runtime busy elsewhere).
//!
//! # Endpoints
//!
//! * `POST /v1/messages` (the CLI appends `?beta=true`): `"stream": true` gets an SSE reply
//!   (`message_start`, `content_block_start`, `content_block_delta` with `text_delta` /
//!   `input_json_delta` / `thinking_delta`, `content_block_stop`, `message_delta`, `message_stop`),
//!   otherwise a plain JSON message.
//! * `POST /v1/messages/count_tokens` → `{"input_tokens": N}`.
//! * anything else → `404` with an Anthropic-style JSON error, recorded as **unexpected**
//!   (`FakeModel::assert_no_unexpected` panics and shows it). A `/v1/messages` call that no rule
//!   matches (and no `default`) → `400` JSON error, also recorded as unexpected.
//!
//! Keep-alive connections and `Content-Length` / `Transfer-Encoding: chunked` request bodies are
//! handled. Streamed replies use chunked transfer encoding so the connection can be reused.
//!
//! # Scenario format (`fixtures/scenarios/<name>.json`, see also `fixtures/scenarios/README.md`)
//!
//! ```json
//! {
//!   "description": "free text",
//!   "rules": [
//!     {
//!       "name": "ask",                          // shows up in RecordedRequest::rule
//!       "when": {                               // every given condition must hold (AND)
//!         "last_user_text_contains": "ASK",     // text blocks of the last role=user message
//!         "last_user_contains": "x",            // ... incl. tool_result contents
//!         "first_user_contains": "SUB_A",       // first role=user message (a sub-agent's prompt)
//!         "conversation_contains": "x",         // any text/tool input/result in any message
//!         "system_contains": "x",               // `system` (string or blocks) + role=system messages
//!         "tool_result": false,                 // last user message holds no tool_result
//!         "tool_result": true,                  // ... holds at least one
//!         "tool_result": {"tool_name": "Bash", "contains": "hi", "is_error": false},
//!                                               // ... holds one matching all given fields
//!                                               //     (tool_name resolved via the tool_use id)
//!         "assistant_turns": 0,                 // number of role=assistant messages so far
//!         "main": true,                         // true: request offers tools (agent loop);
//!                                               // false: a side call without tools
//!         "has_tool": "Agent", "lacks_tool": "Agent",  // by name in the request's `tools`
//!         "stream": true                        // request asked for streaming
//!       },
//!       "once": true,                           // the rule fires at most once
//!       "reply": { ... }
//!     }
//!   ],
//!   "default": { "text": "done" },              // when no rule matches (optional)
//!   "side_default": { "text": "ok" }            // for side calls (no tools) nothing matched
//! }
//! ```
//!
//! First matching rule wins (in file order). A side call (request without `tools`) that matches
//! no rule gets `side_default`, else a built-in short text reply; it is never "unexpected".
//!
//! A reply:
//!
//! ```json
//! {
//!   "text": "shorthand for one text block",
//!   "content": [
//!     {"type": "text", "text": "streamed in several deltas", "chunks": 4},
//!     {"type": "text", "text_repeat": {"text": "word ", "count": 200}, "chunks": 200},
//!     {"type": "thinking", "thinking": "hmm", "signature": "sig"},
//!     {"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {"command": "ls"}}
//!   ],
//!   "stop_reason": "tool_use",     // default: tool_use if a tool_use block exists, else end_turn
//!   "chunks": 3,                   // default number of deltas per text block (default 3)
//!   "delay_ms": 0,                 // wait before the response head (simulates a slow model)
//!   "delta_delay_ms": 0,           // wait before every content_block_delta (slow stream)
//!   "error": {"status": 529, "type": "overloaded_error", "message": "busy"}
//!                                  // reply with an HTTP error instead (no content)
//! }
//! ```
//!
//! `text` (if any) comes first, then `content`. Several `tool_use` blocks in one reply are
//! parallel tool calls. A `tool_use` without `id` gets a generated one; an explicit `id` is used
//! verbatim the first time the rule fires and gets an `r2`, `r3`, … suffix on later firings so ids
//! stay unique. Avoid explicit ids of the form `<another id>_<n>` (e.g. `toolu_a` and `toolu_a_2`):
//! CLI 2.1.332 then replaces the real tool_result with "[Tool result missing due to internal
//! error]" in what it sends to the model. Strings in replies may contain `${var}` placeholders, filled from
//! `Scenario::with_var` (e.g. `${cwd}` for absolute file paths).
//!
//! # Side traffic of CLI 2.1.332
//!
//! With `claude_env` (which sets `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`) the CLI sends only
//! agent-loop `/v1/messages` calls in `-p` stream-json mode — no title generation, no quota probe,
//! no `count_tokens` were observed. Sub-agents are ordinary agent-loop calls (with a smaller tool
//! list and the dispatch prompt as their first user message). The matcher still tolerates side
//! calls (see above), and the CLI's own `<system-reminder>` text blocks inside user messages do not
//! disturb `*_contains` conditions.
#![allow(dead_code)]

// Each test binary includes the fakes it needs on their own, so a binary with both has the
// reader twice (identical code, no types shared between the two).
#[allow(clippy::duplicate_mod)]
#[path = "http_read.rs"]
mod http_read;
use http_read::{Request, read_request};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------------
// Scenario
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    description: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    default: Option<Reply>,
    #[serde(default)]
    side_default: Option<Reply>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    when: When,
    #[serde(default)]
    once: bool,
    reply: Reply,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct When {
    last_user_text_contains: Option<String>,
    last_user_contains: Option<String>,
    first_user_contains: Option<String>,
    conversation_contains: Option<String>,
    system_contains: Option<String>,
    tool_result: Option<ToolResultCond>,
    assistant_turns: Option<usize>,
    main: Option<bool>,
    has_tool: Option<String>,
    lacks_tool: Option<String>,
    stream: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ToolResultCond {
    Present(bool),
    Match {
        #[serde(default)]
        tool_name: Option<String>,
        #[serde(default)]
        contains: Option<String>,
        #[serde(default)]
        is_error: Option<bool>,
    },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    content: Vec<BlockSpec>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    chunks: Option<usize>,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    delta_delay_ms: u64,
    #[serde(default)]
    error: Option<ErrorSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorSpec {
    status: u16,
    #[serde(default = "default_error_type", rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

fn default_error_type() -> String {
    "api_error".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum BlockSpec {
    Text {
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        text_repeat: Option<Repeat>,
        #[serde(default)]
        chunks: Option<usize>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        name: String,
        #[serde(default)]
        input: Value,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Repeat {
    text: String,
    count: usize,
}

/// A loaded scenario: rules deciding what the fake model answers to each call.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    file: ScenarioFile,
    vars: Vec<(String, String)>,
}

impl Scenario {
    /// Load `fixtures/scenarios/<name>.json` (relative to `CARGO_MANIFEST_DIR`). Panics on error.
    pub fn load(name: &str) -> Scenario {
        let path = scenarios_dir().join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("fake_model: cannot read scenario {}: {e}", path.display()));
        Scenario::from_json_str(name, &text)
            .unwrap_or_else(|e| panic!("fake_model: bad scenario {}: {e}", path.display()))
    }

    /// Parse a scenario from JSON text (same format as the files).
    pub fn from_json_str(name: &str, text: &str) -> Result<Scenario, String> {
        let file: ScenarioFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for (i, r) in file.rules.iter().enumerate() {
            validate_reply(&r.reply).map_err(|e| format!("rule {i} ({:?}): {e}", r.name))?;
        }
        if let Some(d) = &file.default {
            validate_reply(d).map_err(|e| format!("default: {e}"))?;
        }
        Ok(Scenario {
            name: name.to_string(),
            description: file.description.clone(),
            file,
            vars: vec![],
        })
    }

    /// Parse a scenario from a `serde_json::Value`.
    pub fn from_value(name: &str, v: &Value) -> Result<Scenario, String> {
        Scenario::from_json_str(name, &v.to_string())
    }

    /// A scenario with only a default reply (plain text, `end_turn`).
    pub fn text_only(text: &str) -> Scenario {
        Scenario::from_value("text_only", &json!({"default": {"text": text}})).unwrap()
    }

    /// Set a `${key}` placeholder used in reply strings (e.g. `with_var("cwd", dir)`).
    pub fn with_var(mut self, key: &str, value: impl AsRef<str>) -> Scenario {
        self.vars.retain(|(k, _)| k != key);
        self.vars
            .push((key.to_string(), value.as_ref().to_string()));
        self
    }

    /// Names of the rules, in order (unnamed rules are `rule<index>`).
    pub fn rule_names(&self) -> Vec<String> {
        self.file
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| rule_name(i, r))
            .collect()
    }
}

fn rule_name(i: usize, r: &Rule) -> String {
    r.name.clone().unwrap_or_else(|| format!("rule{i}"))
}

fn validate_reply(r: &Reply) -> Result<(), String> {
    for b in &r.content {
        if let BlockSpec::Text {
            text, text_repeat, ..
        } = b
            && text.is_some() == text_repeat.is_some()
        {
            return Err("a text block needs exactly one of `text` / `text_repeat`".into());
        }
    }
    if r.error.is_none() && r.text.is_none() && r.content.is_empty() {
        return Err("a reply needs `text`, `content` or `error`".into());
    }
    Ok(())
}

/// `<CARGO_MANIFEST_DIR>/fixtures/scenarios`.
pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("scenarios")
}

// ---------------------------------------------------------------------------------------------
// Recorded traffic
// ---------------------------------------------------------------------------------------------

/// One HTTP request the fake received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Arrival order, from 0.
    pub index: usize,
    pub method: String,
    /// Full request target including the query (`/v1/messages?beta=true`).
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Parsed JSON body (None if empty or not JSON).
    pub body: Option<Value>,
    /// Name of the rule that answered (`default`, `side_default`, `side_builtin`, `count_tokens`).
    pub rule: Option<String>,
    /// Set when the request was answered with an error because nothing handles it.
    pub unexpected: Option<String>,
    /// The client closed the connection before a streamed reply was complete (e.g. interrupt).
    pub aborted: bool,
    /// Seconds since the server started.
    pub at: f64,
}

impl RecordedRequest {
    /// Path without the query string.
    pub fn route(&self) -> &str {
        http_read::route(&self.path)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        http_read::header(&self.headers, name)
    }
    /// A `POST /v1/messages` call (not count_tokens).
    pub fn is_messages(&self) -> bool {
        self.method == "POST" && self.route() == "/v1/messages"
    }
    /// The `messages` array of the body (empty if none).
    pub fn messages(&self) -> Vec<Value> {
        self.body
            .as_ref()
            .and_then(|b| b.get("messages"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
    /// Tool names offered in the request.
    pub fn tool_names(&self) -> Vec<String> {
        self.body
            .as_ref()
            .and_then(|b| b.get("tools"))
            .and_then(Value::as_array)
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str).map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Text of the first user message (a sub-agent's prompt for sub-agent calls).
    pub fn first_user_text(&self) -> String {
        let msgs = self.messages();
        msgs.iter()
            .find(|m| role(m) == "user")
            .map(|m| all_text(m, true))
            .unwrap_or_default()
    }
    /// Text blocks of the last user message.
    pub fn last_user_text(&self) -> String {
        let msgs = self.messages();
        msgs.iter()
            .rev()
            .find(|m| role(m) == "user")
            .map(|m| all_text(m, false))
            .unwrap_or_default()
    }
    /// tool_result blocks of the last user message.
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        let msgs = self.messages();
        let names = tool_names_by_id(&msgs);
        msgs.iter()
            .rev()
            .find(|m| role(m) == "user")
            .map(|m| tool_results_of(m, &names))
            .unwrap_or_default()
    }
    /// One-line description for panic messages.
    pub fn summary(&self) -> String {
        let mut s = format!("#{} {} {}", self.index, self.method, self.path);
        if let Some(r) = &self.rule {
            s.push_str(&format!(" rule={r}"));
        }
        if let Some(u) = &self.unexpected {
            s.push_str(&format!(" UNEXPECTED({u})"));
        }
        if self.aborted {
            s.push_str(" aborted");
        }
        if self.is_messages() {
            let first: String = self.first_user_text().chars().take(60).collect();
            let last: String = self
                .last_user_text()
                .chars()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let trs: Vec<String> = self
                .last_tool_results()
                .iter()
                .map(|t| {
                    format!(
                        "{}:{}{}",
                        t.tool_name.as_deref().unwrap_or("?"),
                        if t.is_error { "ERR:" } else { "" },
                        t.text.chars().take(40).collect::<String>()
                    )
                })
                .collect();
            s.push_str(&format!(
                " first_user={first:?} last_user_tail={last:?} tool_results={trs:?}"
            ));
        }
        s
    }
}

/// A tool_result block the CLI sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// Resolved from the tool_use block with that id in the same conversation.
    pub tool_name: Option<String>,
    /// Text content (string content, or the text blocks joined with "\n").
    pub text: String,
    pub is_error: bool,
    /// The raw block.
    pub raw: Value,
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

fn blocks(m: &Value) -> Vec<Value> {
    match m.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => vec![],
    }
}

fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

fn tool_result_text(b: &Value) -> String {
    match b.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter(|x| block_type(x) == "text")
            .filter_map(|x| x.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Text of a message: text blocks, and (if `with_results`) tool_result texts and tool_use inputs.
fn all_text(m: &Value, with_results: bool) -> String {
    let mut out = vec![];
    for b in blocks(m) {
        match block_type(&b) {
            "text" => out.push(
                b.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            "tool_result" if with_results => out.push(tool_result_text(&b)),
            "tool_use" if with_results => {
                out.push(b.get("input").map(|i| i.to_string()).unwrap_or_default())
            }
            _ => {}
        }
    }
    out.join("\n")
}

fn tool_names_by_id(msgs: &[Value]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for m in msgs.iter().filter(|m| role(m) == "assistant") {
        for b in blocks(m) {
            if block_type(&b) == "tool_use"
                && let (Some(id), Some(n)) = (
                    b.get("id").and_then(Value::as_str),
                    b.get("name").and_then(Value::as_str),
                )
            {
                names.insert(id.to_string(), n.to_string());
            }
        }
    }
    names
}

fn tool_results_of(m: &Value, names: &HashMap<String, String>) -> Vec<ToolResult> {
    blocks(m)
        .into_iter()
        .filter(|b| block_type(b) == "tool_result")
        .map(|b| {
            let id = b
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            ToolResult {
                tool_name: names.get(&id).cloned(),
                text: tool_result_text(&b),
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                tool_use_id: id,
                raw: b,
            }
        })
        .collect()
}

fn system_text(body: &Value) -> String {
    let mut out = vec![];
    match body.get("system") {
        Some(Value::String(s)) => out.push(s.clone()),
        Some(Value::Array(a)) => out.extend(
            a.iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str).map(String::from)),
        ),
        _ => {}
    }
    if let Some(msgs) = body.get("messages").and_then(Value::as_array) {
        out.extend(
            msgs.iter()
                .filter(|m| role(m) == "system")
                .map(|m| all_text(m, false)),
        );
    }
    out.join("\n")
}

fn is_side_call(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_none_or(|t| t.is_empty())
}

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

fn matches(w: &When, body: &Value) -> bool {
    let msgs = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let first_user = msgs.iter().find(|m| role(m) == "user");
    let last_user = msgs.iter().rev().find(|m| role(m) == "user");
    if let Some(main) = w.main
        && main == is_side_call(body)
    {
        return false;
    }
    if let Some(s) = w.stream
        && s != body.get("stream").and_then(Value::as_bool).unwrap_or(false)
    {
        return false;
    }
    let tools: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if let Some(t) = &w.has_tool
        && !tools.contains(&t.as_str())
    {
        return false;
    }
    if let Some(t) = &w.lacks_tool
        && tools.contains(&t.as_str())
    {
        return false;
    }
    if let Some(x) = &w.last_user_text_contains
        && !last_user.is_some_and(|m| all_text(m, false).contains(x.as_str()))
    {
        return false;
    }
    if let Some(x) = &w.last_user_contains
        && !last_user.is_some_and(|m| all_text(m, true).contains(x.as_str()))
    {
        return false;
    }
    if let Some(x) = &w.first_user_contains
        && !first_user.is_some_and(|m| all_text(m, true).contains(x.as_str()))
    {
        return false;
    }
    if let Some(x) = &w.conversation_contains
        && !msgs.iter().any(|m| all_text(m, true).contains(x.as_str()))
    {
        return false;
    }
    if let Some(x) = &w.system_contains
        && !system_text(body).contains(x.as_str())
    {
        return false;
    }
    if let Some(n) = w.assistant_turns
        && msgs.iter().filter(|m| role(m) == "assistant").count() != n
    {
        return false;
    }
    if let Some(cond) = &w.tool_result {
        let names = tool_names_by_id(&msgs);
        let trs = last_user
            .map(|m| tool_results_of(m, &names))
            .unwrap_or_default();
        match cond {
            ToolResultCond::Present(p) => {
                if *p == trs.is_empty() {
                    return false;
                }
            }
            ToolResultCond::Match {
                tool_name,
                contains,
                is_error,
            } => {
                let ok = trs.iter().any(|t| {
                    tool_name
                        .as_ref()
                        .is_none_or(|n| t.tool_name.as_deref() == Some(n.as_str()))
                        && contains
                            .as_ref()
                            .is_none_or(|c| t.text.contains(c.as_str()))
                        && is_error.is_none_or(|e| e == t.is_error)
                });
                if !ok {
                    return false;
                }
            }
        }
    }
    true
}

/// A reply ready to be sent.
struct Built {
    content: Vec<Value>,
    /// Per text block: number of deltas.
    chunks: Vec<usize>,
    stop_reason: String,
    delay_ms: u64,
    delta_delay_ms: u64,
    error: Option<ErrorSpec>,
}

fn substitute(v: &Value, vars: &[(String, String)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (k, x) in vars {
                s = s.replace(&format!("${{{k}}}"), x);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), substitute(x, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn subst_str(s: &str, vars: &[(String, String)]) -> String {
    substitute(&Value::String(s.to_string()), vars)
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn build_reply(r: &Reply, firing: usize, vars: &[(String, String)], next_id: &mut usize) -> Built {
    let default_chunks = r.chunks.unwrap_or(3).max(1);
    let mut content = vec![];
    let mut chunks = vec![];
    if let Some(t) = &r.text {
        content.push(json!({"type": "text", "text": subst_str(t, vars)}));
        chunks.push(default_chunks);
    }
    for b in &r.content {
        match b {
            BlockSpec::Text {
                text,
                text_repeat,
                chunks: c,
            } => {
                let t = match (text, text_repeat) {
                    (Some(t), _) => subst_str(t, vars),
                    (None, Some(rep)) => subst_str(&rep.text, vars).repeat(rep.count),
                    (None, None) => String::new(),
                };
                content.push(json!({"type": "text", "text": t}));
                chunks.push(c.unwrap_or(default_chunks).max(1));
            }
            BlockSpec::Thinking {
                thinking,
                signature,
            } => {
                content.push(json!({"type": "thinking", "thinking": subst_str(thinking, vars), "signature": signature.clone().unwrap_or_else(|| "fake-signature".into())}));
                chunks.push(default_chunks);
            }
            BlockSpec::ToolUse { id, name, input } => {
                *next_id += 1;
                let id = match id {
                    Some(id) if firing <= 1 => id.clone(),
                    // Not `{id}_{n}`: CLI 2.1.332 pairs a tool_result for `<x>_<n>` with an
                    // earlier tool_use `<x>` and sends "[Tool result missing due to internal
                    // error]" to the model instead of the real result.
                    Some(id) => format!("{id}r{firing}"),
                    None => format!("toolu_fake{:04}", *next_id),
                };
                let input = if input.is_null() {
                    json!({})
                } else {
                    substitute(input, vars)
                };
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                chunks.push(2);
            }
        }
    }
    let has_tool = content.iter().any(|b| block_type(b) == "tool_use");
    let stop_reason = r.stop_reason.clone().unwrap_or_else(|| {
        if has_tool {
            "tool_use".into()
        } else {
            "end_turn".into()
        }
    });
    Built {
        content,
        chunks,
        stop_reason,
        delay_ms: r.delay_ms,
        delta_delay_ms: r.delta_delay_ms,
        error: r.error.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

struct State {
    requests: Vec<RecordedRequest>,
    used_once: HashSet<usize>,
    firings: HashMap<String, usize>,
    next_id: usize,
    next_msg: usize,
}

struct Shared {
    scenario: Scenario,
    state: Mutex<State>,
    started: Instant,
}

/// The running fake model server. Dropping it shuts the server down.
pub struct FakeModel {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeModel {
    /// Start the server for `scenario` on 127.0.0.1 with an ephemeral port.
    pub async fn start(scenario: Scenario) -> FakeModel {
        FakeModel::start_blocking(scenario)
    }

    /// Same as `start`, usable from synchronous code.
    pub fn start_blocking(scenario: Scenario) -> FakeModel {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("fake_model: bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("fake_model: set_nonblocking");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            scenario,
            state: Mutex::new(State {
                requests: vec![],
                used_once: HashSet::new(),
                firings: HashMap::new(),
                next_id: 0,
                next_msg: 0,
            }),
            started: Instant::now(),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fake-model".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake_model: runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("fake_model: listener");
                    let mut conns = tokio::task::JoinSet::new();
                    tokio::pin!(stop_rx);
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            acc = listener.accept() => {
                                if let Ok((sock, _)) = acc {
                                    let sh = sh.clone();
                                    conns.spawn(async move { let _ = serve_conn(sock, sh).await; });
                                }
                            }
                            Some(_) = conns.join_next(), if !conns.is_empty() => {}
                        }
                    }
                    conns.abort_all();
                });
            })
            .expect("fake_model: spawn thread");
        FakeModel {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>` — the value for ANTHROPIC_BASE_URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn scenario(&self) -> &Scenario {
        &self.shared.scenario
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.state.lock().unwrap().requests.clone()
    }

    /// Only the `POST /v1/messages` calls.
    pub fn message_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_messages())
            .collect()
    }

    /// Rule names that answered the `/v1/messages` calls, in order.
    pub fn fired_rules(&self) -> Vec<String> {
        self.message_requests()
            .into_iter()
            .filter_map(|r| r.rule)
            .collect()
    }

    /// Requests answered with an error because nothing handles them.
    pub fn unexpected(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.unexpected.is_some())
            .collect()
    }

    /// Panics (listing the offending requests) if any request was unexpected.
    #[track_caller]
    pub fn assert_no_unexpected(&self) {
        let u = self.unexpected();
        if !u.is_empty() {
            let mut msg = format!("fake_model: {} unexpected request(s):\n", u.len());
            for r in &u {
                msg.push_str(&format!("  {}\n", r.summary()));
                if let Some(b) = &r.body {
                    let s = b.to_string();
                    msg.push_str(&format!(
                        "    body: {}\n",
                        s.chars().take(1500).collect::<String>()
                    ));
                }
            }
            panic!("{msg}");
        }
    }

    /// Every distinct tool_result block the CLI sent to the model (deduplicated by tool_use_id,
    /// across all conversations incl. sub-agents), in the order first seen.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        collect_tool_results(&self.requests())
    }

    /// A human-readable dump of all requests (for failure messages).
    pub fn dump(&self) -> String {
        self.requests()
            .iter()
            .map(|r| r.summary())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Wait until `pred(&requests)` holds; panics with a dump of the requests on timeout.
    #[track_caller]
    pub fn wait_for<F>(
        &self,
        pred: F,
        timeout: Duration,
    ) -> impl std::future::Future<Output = ()> + '_
    where
        F: Fn(&[RecordedRequest]) -> bool + 'static,
    {
        let caller = std::panic::Location::caller();
        async move {
            if !self.try_wait_for(pred, timeout).await {
                panic!(
                    "fake_model: wait_for timed out after {timeout:?} (called at {caller}); requests:\n{}",
                    self.dump()
                );
            }
        }
    }

    /// Like `wait_for` but returns false on timeout.
    pub async fn try_wait_for<F>(&self, pred: F, timeout: Duration) -> bool
    where
        F: Fn(&[RecordedRequest]) -> bool,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.shared.state.lock().unwrap().requests) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Blocking variant of `try_wait_for` for synchronous tests.
    pub fn wait_for_blocking<F>(&self, pred: F, timeout: Duration) -> bool
    where
        F: Fn(&[RecordedRequest]) -> bool,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.shared.state.lock().unwrap().requests) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stop the server (also done on drop).
    pub async fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// All distinct tool_result blocks in the given requests (see `FakeModel::tool_results`).
pub fn collect_tool_results(reqs: &[RecordedRequest]) -> Vec<ToolResult> {
    let mut seen = HashSet::new();
    let mut out = vec![];
    for r in reqs.iter().filter(|r| r.is_messages()) {
        let msgs = r.messages();
        let names = tool_names_by_id(&msgs);
        for m in msgs.iter().filter(|m| role(m) == "user") {
            for t in tool_results_of(m, &names) {
                if seen.insert(t.tool_use_id.clone()) {
                    out.push(t);
                }
            }
        }
    }
    out
}

async fn serve_conn(sock: TcpStream, sh: Arc<Shared>) -> std::io::Result<()> {
    let _ = sock.set_nodelay(true);
    let (rd, mut wr) = sock.into_split();
    let mut rd = BufReader::new(rd);
    while let Some(req) = read_request(&mut rd).await? {
        let close = req
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        handle(req, &sh, &mut wr).await?;
        if close {
            break;
        }
    }
    let _ = wr.shutdown().await;
    Ok(())
}

fn record(
    sh: &Shared,
    req: &Request,
    body: Option<Value>,
    rule: Option<String>,
    unexpected: Option<String>,
) -> usize {
    let mut st = sh.state.lock().unwrap();
    let index = st.requests.len();
    st.requests.push(RecordedRequest {
        index,
        method: req.method.clone(),
        path: req.path.clone(),
        headers: req.headers.clone(),
        body,
        rule,
        unexpected,
        aborted: false,
        at: sh.started.elapsed().as_secs_f64(),
    });
    index
}

async fn write_json(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    status: u16,
    v: &Value,
) -> std::io::Result<()> {
    let body = v.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Status",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nrequest-id: req_fake\r\nconnection: keep-alive\r\n\r\n",
        body.len()
    );
    wr.write_all(head.as_bytes()).await?;
    wr.write_all(body.as_bytes()).await?;
    wr.flush().await
}

fn api_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

async fn handle(
    req: Request,
    sh: &Arc<Shared>,
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
) -> std::io::Result<()> {
    let route = req.path.split('?').next().unwrap_or("").to_string();
    let body: Option<Value> = if req.body.is_empty() {
        None
    } else {
        serde_json::from_slice(&req.body).ok()
    };
    if req
        .headers
        .iter()
        .any(|(k, v)| k == "content-encoding" && v != "identity")
    {
        let msg = "fake_model: compressed request bodies are not supported".to_string();
        record(sh, &req, body, None, Some(msg.clone()));
        return write_json(wr, 400, &api_error("invalid_request_error", &msg)).await;
    }
    if req.method == "POST" && route == "/v1/messages/count_tokens" {
        let n = body
            .as_ref()
            .map(|b| b.to_string().len() / 4)
            .unwrap_or(0)
            .max(1);
        record(sh, &req, body, Some("count_tokens".into()), None);
        return write_json(wr, 200, &json!({"input_tokens": n})).await;
    }
    if req.method != "POST" || route != "/v1/messages" {
        let msg = format!("fake_model: unexpected request {} {}", req.method, req.path);
        let raw = body.clone().or_else(|| {
            (!req.body.is_empty())
                .then(|| Value::String(String::from_utf8_lossy(&req.body).into_owned()))
        });
        record(sh, &req, raw, None, Some(msg.clone()));
        return write_json(wr, 404, &api_error("not_found_error", &msg)).await;
    }
    let Some(body) = body else {
        let msg = "fake_model: /v1/messages body is not JSON".to_string();
        let raw = Some(Value::String(
            String::from_utf8_lossy(&req.body).into_owned(),
        ));
        record(sh, &req, raw, None, Some(msg.clone()));
        return write_json(wr, 400, &api_error("invalid_request_error", &msg)).await;
    };

    // Choose a reply (under the lock, so `once` and firing counters are consistent).
    let chosen = {
        let mut st = sh.state.lock().unwrap();
        let sc = &sh.scenario;
        let mut found: Option<(String, Reply)> = None;
        for (i, r) in sc.file.rules.iter().enumerate() {
            if r.once && st.used_once.contains(&i) {
                continue;
            }
            if matches(&r.when, &body) {
                if r.once {
                    st.used_once.insert(i);
                }
                found = Some((rule_name(i, r), r.reply.clone()));
                break;
            }
        }
        if found.is_none() {
            if is_side_call(&body) {
                found = Some(match &sc.file.side_default {
                    Some(r) => ("side_default".into(), r.clone()),
                    None => (
                        "side_builtin".into(),
                        Reply {
                            text: Some("OK".into()),
                            ..Default::default()
                        },
                    ),
                });
            } else if let Some(d) = &sc.file.default {
                found = Some(("default".into(), d.clone()));
            }
        }
        found.map(|(name, reply)| {
            let firing = {
                let c = st.firings.entry(name.clone()).or_insert(0);
                *c += 1;
                *c
            };
            let mut next_id = st.next_id;
            let built = build_reply(&reply, firing, &sc.vars, &mut next_id);
            st.next_id = next_id;
            st.next_msg += 1;
            (name, built, st.next_msg)
        })
    };
    let Some((rule, built, msg_no)) = chosen else {
        let msg = format!(
            "fake_model: no rule of scenario {:?} matched and it has no default",
            sh.scenario.name
        );
        record(sh, &req, Some(body), None, Some(msg.clone()));
        return write_json(wr, 400, &api_error("invalid_request_error", &msg)).await;
    };
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-test")
        .to_string();
    let idx = record(sh, &req, Some(body), Some(rule), None);

    if built.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(built.delay_ms)).await;
    }
    if let Some(e) = &built.error {
        return write_json(wr, e.status, &api_error(&e.kind, &e.message)).await;
    }
    let msg_id = format!("msg_fake_{msg_no:04}");
    let usage = json!({"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    if !streaming {
        let v = json!({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": built.content, "stop_reason": built.stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        });
        return write_json(wr, 200, &v).await;
    }
    let res = stream_reply(wr, &built, &msg_id, &model, usage).await;
    if res.is_err() {
        sh.state.lock().unwrap().requests[idx].aborted = true;
    }
    res
}

async fn send_event(wr: &mut tokio::net::tcp::OwnedWriteHalf, data: Value) -> std::io::Result<()> {
    let name = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
        .to_string();
    let ev = format!("event: {name}\ndata: {data}\n\n");
    let chunk = format!("{:x}\r\n{ev}\r\n", ev.len());
    wr.write_all(chunk.as_bytes()).await?;
    wr.flush().await
}

/// Split `s` into at most `n` pieces on char boundaries.
fn split_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![];
    }
    let n = n.clamp(1, chars.len());
    let step = chars.len().div_ceil(n);
    chars.chunks(step).map(|c| c.iter().collect()).collect()
}

async fn stream_reply(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    b: &Built,
    msg_id: &str,
    model: &str,
    usage: Value,
) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nrequest-id: req_fake\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n";
    wr.write_all(head.as_bytes()).await?;
    send_event(
        wr,
        json!({"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )
    .await?;
    let delay = Duration::from_millis(b.delta_delay_ms);
    for (i, block) in b.content.iter().enumerate() {
        let n = b.chunks.get(i).copied().unwrap_or(3);
        let mut deltas: Vec<Value> = vec![];
        let start = match block_type(block) {
            "text" => {
                let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                deltas.extend(
                    split_chunks(t, n)
                        .into_iter()
                        .map(|c| json!({"type": "text_delta", "text": c})),
                );
                json!({"type": "text", "text": ""})
            }
            "thinking" => {
                let t = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                deltas.extend(
                    split_chunks(t, n)
                        .into_iter()
                        .map(|c| json!({"type": "thinking_delta", "thinking": c})),
                );
                deltas.push(json!({"type": "signature_delta", "signature": block.get("signature").cloned().unwrap_or(json!(""))}));
                json!({"type": "thinking", "thinking": "", "signature": ""})
            }
            _ => {
                let js = block.get("input").cloned().unwrap_or(json!({})).to_string();
                deltas.extend(
                    split_chunks(&js, n)
                        .into_iter()
                        .map(|c| json!({"type": "input_json_delta", "partial_json": c})),
                );
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
            }
        };
        send_event(
            wr,
            json!({"type": "content_block_start", "index": i, "content_block": start}),
        )
        .await?;
        for d in deltas {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            send_event(
                wr,
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            )
            .await?;
        }
        send_event(wr, json!({"type": "content_block_stop", "index": i})).await?;
    }
    send_event(wr, json!({"type": "message_delta", "delta": {"stop_reason": b.stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 20}})).await?;
    send_event(wr, json!({"type": "message_stop"})).await?;
    wr.write_all(b"0\r\n\r\n").await?;
    wr.flush().await
}

// ---------------------------------------------------------------------------------------------
// Running the real CLI
// ---------------------------------------------------------------------------------------------

/// The pinned CLI binary in `tests/peers/node_modules`, if installed. A test that needs it passes
/// this through `common::require_or_skip` (which fails it on CI).
pub fn claude_bin() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("peers")
        .join("node_modules");
    let candidates = [
        root.join("@anthropic-ai/claude-code/bin/claude.exe"),
        root.join("@anthropic-ai/claude-code-linux-x64/claude"),
        root.join(".bin/claude"),
    ];
    for c in &candidates {
        if c.is_file() {
            return Some(c.clone());
        }
    }
    None
}

/// Environment variables to remove from the child (inherited values that would leak the
/// developer's real account/session into the test).
pub const CLAUDE_ENV_REMOVE: &[&str] = &[
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_CONFIG_DIR",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Environment for a hermetic, fast run of the CLI against the fake model.
/// `home` should be a fresh temporary directory per test (the CLI writes `~/.claude/…` there).
pub fn claude_env(home: &Path, base_url: &str) -> Vec<(String, String)> {
    let tmp = home.join("tmp");
    let _ = std::fs::create_dir_all(&tmp);
    let v = |k: &str, x: &str| (k.to_string(), x.to_string());
    vec![
        v("ANTHROPIC_BASE_URL", base_url),
        v("ANTHROPIC_API_KEY", "sk-ant-fake-test-key"),
        v("HOME", &home.display().to_string()),
        v(
            "XDG_CONFIG_HOME",
            &home.join(".config").display().to_string(),
        ),
        v("XDG_CACHE_HOME", &home.join(".cache").display().to_string()),
        v(
            "XDG_DATA_HOME",
            &home.join(".local/share").display().to_string(),
        ),
        v(
            "XDG_STATE_HOME",
            &home.join(".local/state").display().to_string(),
        ),
        // Task output files and sockets go under $CLAUDE_CODE_TMPDIR (default /tmp/claude-<uid>).
        v("CLAUDE_CODE_TMPDIR", &tmp.display().to_string()),
        v("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        v("DISABLE_AUTOUPDATER", "1"),
        v("DISABLE_TELEMETRY", "1"),
        v("DISABLE_ERROR_REPORTING", "1"),
        v("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "1"),
        v("CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL", "1"),
        v("NO_COLOR", "1"),
    ]
}

/// The standard supervised command line (§2.1 of the protocol reference), for direct use.
pub const CLAUDE_ARGS: &[&str] = &[
    "-p",
    "--verbose",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool",
    "stdio",
    "--include-partial-messages",
];

/// A ready `tokio::process::Command` for the real CLI: standard flags, hermetic env, given cwd,
/// piped stdio, `kill_on_drop`. Append more args as needed.
pub fn claude_command(
    bin: &Path,
    cwd: &Path,
    home: &Path,
    base_url: &str,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(CLAUDE_ARGS).current_dir(cwd);
    for k in CLAUDE_ENV_REMOVE {
        cmd.env_remove(k);
    }
    cmd.envs(claude_env(home, base_url));
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// A unique fresh directory under the system temp dir (not removed automatically; the name
/// includes `tag`, the pid and a counter).
pub fn temp_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let d = std::env::temp_dir().join(format!("sb-{tag}-{}-{n}-{nanos:x}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}
