//! The scenario rules the Gemini and OpenAI Responses fakes share (`fake_gemini.rs`,
//! `fake_openai.rs`). Each fake reads its own wire format into a [`Convo`] (what the user said
//! last, which tool results came back, which tools the request offers), lets the [`Script`]
//! choose a [`Turn`] (text and tool calls), and writes that turn back in its own wire format.
//!
//! Scenario files: `fixtures/scenarios/<name>.json` (format in `fixtures/scenarios/README.md`):
//!
//! ```json
//! {
//!   "description": "…",
//!   "rules": [
//!     {"name": "allow", "when": {"last_user_text_contains": "SHELL_ALLOW", "tool_result": false},
//!      "reply": {"calls": [{"name": "run_shell_command", "args": {"command": "touch allowed.txt"}}]}},
//!     {"name": "after", "when": {"tool_result": true}, "reply": {"text": "Tool finished."}}
//!   ],
//!   "default": {"text": "done"},
//!   "side_default": {"text": "ok"}
//! }
//! ```
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

/// A request read into the terms rules speak.
#[derive(Clone, Debug, Default)]
pub struct Convo {
    /// Text of the last message the user wrote (tool results are not such messages).
    pub last_user_text: String,
    /// The results the request ends with (empty when it ends with the user's text).
    pub tool_results: Vec<ToolOutput>,
    /// Every text, call and result of the conversation, for `conversation_contains`.
    pub all_text: String,
    /// Tool names the request offers (empty: a side call, e.g. a title or a check).
    pub tools: Vec<String>,
}

/// A tool result the client sent back to the model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    pub name: String,
    pub text: String,
}

/// What the model answers: text first, then the tool calls (several = parallel calls).
#[derive(Clone, Debug, Default)]
pub struct Turn {
    pub text: Option<String>,
    /// Deltas the text is streamed in.
    pub chunks: usize,
    pub calls: Vec<Call>,
    pub delay_ms: u64,
    pub delta_delay_ms: u64,
    pub error: Option<ErrorSpec>,
}

/// One tool call; `args` is an object for a function tool, a string for a free-form tool
/// (OpenAI `custom_tool_call`, e.g. codex's `apply_patch`).
#[derive(Clone, Debug)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub args: Value,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub status: u16,
    #[serde(default)]
    pub message: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    description: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    default: Option<ReplySpec>,
    #[serde(default)]
    side_default: Option<ReplySpec>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    when: When,
    #[serde(default)]
    once: bool,
    reply: ReplySpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct When {
    last_user_text_contains: Option<String>,
    conversation_contains: Option<String>,
    tool_result: Option<ResultCond>,
    main: Option<bool>,
    has_tool: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum ResultCond {
    Present(bool),
    Match {
        #[serde(default)]
        tool_name: Option<String>,
        #[serde(default)]
        contains: Option<String>,
    },
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplySpec {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    chunks: Option<usize>,
    #[serde(default)]
    calls: Vec<CallSpec>,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    delta_delay_ms: u64,
    #[serde(default)]
    error: Option<ErrorSpec>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSpec {
    name: String,
    #[serde(default)]
    args: Value,
}

/// A loaded scenario and what it has fired so far.
pub struct Script {
    pub name: String,
    file: File,
    vars: Vec<(String, String)>,
    state: Mutex<Fired>,
}

#[derive(Default)]
struct Fired {
    once: HashSet<usize>,
    calls: usize,
}

impl Script {
    /// `fixtures/scenarios/<name>.json`; panics on a missing or malformed file.
    pub fn load(name: &str) -> Script {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/scenarios")
            .join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("scenario {}: {e}", path.display()));
        Script::parse(name, &text).unwrap_or_else(|e| panic!("scenario {}: {e}", path.display()))
    }

    pub fn parse(name: &str, text: &str) -> Result<Script, String> {
        let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let replies = file
            .rules
            .iter()
            .map(|r| &r.reply)
            .chain(&file.default)
            .chain(&file.side_default);
        for r in replies {
            if r.text.is_none() && r.calls.is_empty() && r.error.is_none() {
                return Err("a reply needs `text`, `calls` or `error`".into());
            }
        }
        Ok(Script {
            name: name.into(),
            file,
            vars: vec![],
            state: Mutex::new(Fired::default()),
        })
    }

    pub fn description(&self) -> &str {
        &self.file.description
    }

    /// Fill `${key}` in reply strings (e.g. `${cwd}`, the absolute session directory).
    pub fn with_var(mut self, key: &str, value: impl AsRef<str>) -> Script {
        self.vars.retain(|(k, _)| k != key);
        self.vars.push((key.into(), value.as_ref().into()));
        self
    }

    /// The first rule that holds for `c` (then `default`, or for a side call `side_default`
    /// or a short built-in text): its name and the turn it answers. `None`: nothing answers a
    /// main call (the fake reports it as unexpected).
    pub fn choose(&self, c: &Convo) -> Option<(String, Turn)> {
        let mut st = self.state.lock().unwrap();
        let mut found = None;
        for (i, r) in self.file.rules.iter().enumerate() {
            if r.once && st.once.contains(&i) {
                continue;
            }
            if holds(&r.when, c) {
                if r.once {
                    st.once.insert(i);
                }
                found = Some((
                    r.name.clone().unwrap_or(format!("rule{i}")),
                    r.reply.clone(),
                ));
                break;
            }
        }
        if found.is_none() {
            found = if c.tools.is_empty() {
                Some(match &self.file.side_default {
                    Some(r) => ("side_default".into(), r.clone()),
                    None => (
                        "side_builtin".into(),
                        ReplySpec {
                            text: Some("ok".into()),
                            ..ReplySpec::default()
                        },
                    ),
                })
            } else {
                self.file.default.clone().map(|r| ("default".into(), r))
            };
        }
        let (name, spec) = found?;
        let calls = spec
            .calls
            .iter()
            .map(|c| {
                st.calls += 1;
                Call {
                    id: format!("call_fake{:03}", st.calls),
                    name: c.name.clone(),
                    args: subst(&c.args, &self.vars),
                }
            })
            .collect();
        Some((
            name,
            Turn {
                text: spec.text.as_deref().map(|t| subst_str(t, &self.vars)),
                chunks: spec.chunks.unwrap_or(3).max(1),
                calls,
                delay_ms: spec.delay_ms,
                delta_delay_ms: spec.delta_delay_ms,
                error: spec.error.clone(),
            },
        ))
    }
}

fn holds(w: &When, c: &Convo) -> bool {
    let contains = |hay: &str, x: &Option<String>| x.as_ref().is_none_or(|x| hay.contains(x));
    if w.main.is_some_and(|m| m == c.tools.is_empty()) {
        return false;
    }
    if w.has_tool.as_ref().is_some_and(|t| !c.tools.contains(t)) {
        return false;
    }
    if !contains(&c.last_user_text, &w.last_user_text_contains)
        || !contains(&c.all_text, &w.conversation_contains)
    {
        return false;
    }
    match &w.tool_result {
        None => true,
        Some(ResultCond::Present(p)) => *p != c.tool_results.is_empty(),
        Some(ResultCond::Match {
            tool_name,
            contains: text,
        }) => c
            .tool_results
            .iter()
            .any(|t| tool_name.as_ref().is_none_or(|n| *n == t.name) && contains(&t.text, text)),
    }
}

fn subst(v: &Value, vars: &[(String, String)]) -> Value {
    match v {
        Value::String(s) => Value::String(subst_str(s, vars)),
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, vars)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), subst(x, vars))).collect())
        }
        other => other.clone(),
    }
}

fn subst_str(s: &str, vars: &[(String, String)]) -> String {
    vars.iter().fold(s.to_string(), |s, (k, v)| {
        s.replace(&format!("${{{k}}}"), v)
    })
}

/// Split `s` into at most `n` pieces on character boundaries (streamed deltas).
pub fn split_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![];
    }
    let step = chars.len().div_ceil(n.clamp(1, chars.len()));
    chars.chunks(step).map(|c| c.iter().collect()).collect()
}
