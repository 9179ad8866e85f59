//! The scripted agent behind `switchboard demo`.
//!
//! `switchboard demo` re-executes the switchboard binary as this agent, exactly as if it were the
//! `claude` CLI in stream-json mode: stream-json lines in on stdin, stream-json lines out on
//! stdout, with the same frame shapes as CLI 2.1.332 (see
//! `shared/reference/claude-stream-json.md`). Nothing here touches the disk or the network:
//! every tool result is simulated.
//!
//! Structure:
//! - [`run`] wires stdin (a reader thread feeding an mpsc channel) and stdout (one writer, flushed
//!   per line) to [`run_with`], the headless core used by the tests.
//! - `Agent` is the single script thread. Whenever it pauses (pacing) or waits for a gate it
//!   drains the input channel, so host control requests (`interrupt`, `set_permission_mode`, …)
//!   are answered while the script streams. Script steps return `Step<T>`; an interrupt, a
//!   "deny and stop" answer or the end of stdin unwinds the script with `?`, and the turn is
//!   closed by `finish_aborted` (cancels pending gates, kills running sub-agents, closes open
//!   tool uses, writes the aborted `result`).
//! - Gates are sent with `send_gate` (unique UUID request ids) and collected with `wait_any`,
//!   so two gates can be outstanding at once (the fan-out's Edit permission and Grep hook).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

/// Run the scripted demo agent on this process's stdin/stdout. `args` are the CLI-style
/// arguments it was started with (e.g. "-p --verbose --output-format stream-json ...
/// --permission-mode default --model X"); unknown ones are ignored.
///
/// Pacing sleeps are skipped when `SWITCHBOARD_DEMO_FAST=1`. Returns the exit status (0 once
/// stdin closes).
pub fn run(args: &[String]) -> i32 {
    let fast = std::env::var("SWITCHBOARD_DEMO_FAST").is_ok_and(|v| v == "1");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        let stdin = io::stdin();
        let mut lock = stdin.lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send(line).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    eprintln!("demo agent: stdin read failed: {e}");
                    break;
                }
            }
        }
    });
    let mut out = io::stdout().lock();
    run_with(args, fast, rx, move |line| {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
            // The host is gone; stdin will close too and end the loop.
        }
    })
}

/// Headless core of [`run`]: reads host lines from `input` (a disconnected channel means stdin
/// closed) and hands every stdout line, without its newline, to `output`. `fast` disables all
/// pacing sleeps.
pub fn run_with(
    args: &[String],
    fast: bool,
    input: Receiver<String>,
    output: impl FnMut(String),
) -> i32 {
    let cfg = Config::from_args(args, fast);
    let mut agent = Agent::new(cfg, input, output);
    agent.main_loop()
}

// ---------------------------------------------------------------------------------------------
// Configuration

#[derive(Clone, Debug)]
struct Config {
    fast: bool,
    partial: bool,
    permission_mode: String,
    model: String,
    session_id: Option<String>,
}

const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
];

impl Config {
    fn from_args(args: &[String], fast: bool) -> Self {
        let mut cfg = Config {
            fast,
            partial: false,
            permission_mode: "default".into(),
            model: "claude-sonnet-5".into(),
            session_id: None,
        };
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg, None),
            };
            let takes_value = matches!(
                flag,
                "--permission-mode" | "--model" | "--session-id" | "--resume"
            );
            let value = if !takes_value {
                None
            } else if inline.is_some() {
                inline
            } else {
                i += 1;
                args.get(i).cloned()
            };
            match (flag, value) {
                ("--include-partial-messages", _) => cfg.partial = true,
                ("--permission-mode", Some(v)) if PERMISSION_MODES.contains(&v.as_str()) => {
                    cfg.permission_mode = v;
                }
                ("--model", Some(v)) if !v.is_empty() => cfg.model = v,
                ("--session-id" | "--resume", Some(v)) if !v.is_empty() => {
                    cfg.session_id = Some(v);
                }
                _ => {}
            }
            i += 1;
        }
        cfg
    }
}

// ---------------------------------------------------------------------------------------------
// Script state

/// Why the script stopped early.
#[derive(Debug)]
enum Stop {
    /// The host sent `interrupt`.
    Interrupt,
    /// A permission was denied with `interrupt: true`.
    Halt(String),
    /// stdin closed: exit without writing anything more.
    Eof,
}

type Step<T> = Result<T, Stop>;

/// The body of a control_response to one of our gates.
#[derive(Debug, Clone)]
enum Answer {
    Ok(Value),
    Err(String),
}

/// Who is speaking: the main agent (`parent == None`) or a sub-agent.
#[derive(Clone, Default, Debug)]
struct Ctx {
    parent: Option<String>,
    agent_id: Option<String>,
    agent_type: Option<String>,
}

#[derive(Clone, Debug)]
struct Task {
    task_id: String,
    tool_use_id: String,
    /// parent_tool_use_id of the line that carried the dispatching Agent tool_use.
    parent: Option<String>,
    description: String,
    subagent_type: String,
    prompt: String,
    started: Instant,
    tool_uses: u32,
    tokens: u64,
}

impl Task {
    fn ctx(&self) -> Ctx {
        Ctx {
            parent: Some(self.tool_use_id.clone()),
            agent_id: Some(self.task_id.clone()),
            agent_type: Some(self.subagent_type.clone()),
        }
    }

    fn input(&self) -> Value {
        json!({
            "description": self.description,
            "prompt": self.prompt,
            "subagent_type": self.subagent_type,
        })
    }
}

/// One assistant message being streamed.
struct Msg {
    id: String,
    ctx: Ctx,
    index: usize,
    visible: bool,
    out_tokens: u64,
}

#[derive(Default, Debug)]
struct HookVerdict {
    fired: bool,
    block: Option<String>,
    allow: bool,
    ask: bool,
    updated_input: Option<Value>,
}

#[derive(Debug, Clone)]
enum PermOutcome {
    Allowed {
        input: Value,
        edited: bool,
        remembered: Option<Value>,
        auto: Option<String>,
    },
    Denied {
        message: String,
        interrupt: bool,
    },
}

struct PendingPerm {
    id: String,
    tool: String,
    tool_use_id: String,
    input: Value,
}

enum PermStart {
    Done(PermOutcome),
    Pending(PendingPerm),
}

/// Copy of a permission prompt's display fields.
struct Prompt {
    title: String,
    description: String,
    decision_reason: Option<String>,
    blocked_path: Option<String>,
    suggestions: Value,
}

struct TurnStats {
    start: Instant,
    num_turns: u32,
    input_tokens: u64,
    output_tokens: u64,
    cache_read: u64,
}

impl TurnStats {
    fn new() -> Self {
        TurnStats {
            start: Instant::now(),
            num_turns: 0,
            input_tokens: 0,
            output_tokens: 0,
            cache_read: 0,
        }
    }
}

struct Agent<O: FnMut(String)> {
    cfg: Config,
    rx: Receiver<String>,
    out: O,
    rng: u64,
    session_id: String,
    cwd: String,
    mode: String,
    model: String,
    hooks: Vec<(String, Vec<String>)>,
    dialog_kinds: Vec<String>,
    forward_sub: bool,
    /// Our outstanding gates, in the order they were sent.
    pending: Vec<String>,
    /// Pending gates that wait for a human (everything but hook callbacks).
    user_gates: HashSet<String>,
    answers: HashMap<String, Answer>,
    cancelled: HashSet<String>,
    answered: HashSet<String>,
    queued: VecDeque<Value>,
    in_turn: bool,
    interrupt_requested: bool,
    turn_count: usize,
    open_tools: Vec<(String, Option<String>)>,
    tasks: Vec<Task>,
    rules: Vec<(String, Option<String>)>,
    decisions: Vec<String>,
    denials: Vec<Value>,
    stats: TurnStats,
}

// ---------------------------------------------------------------------------------------------
// Small helpers

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn compact(v: &Value) -> String {
    v.to_string()
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-08-21T11:25:55.970Z`
fn iso_now() -> String {
    let ms = epoch_ms();
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

fn tokens_of(text: &str) -> u64 {
    (text.len() as u64 / 4).max(1)
}

fn user_text(turn: &Value) -> String {
    match turn.pointer("/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| str_of(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn matcher_matches(matcher: &str, tool: &str) -> bool {
    let m = matcher.trim();
    if m.is_empty() || m == "*" || m == ".*" {
        return true;
    }
    m.split('|')
        .map(str::trim)
        .any(|alt| alt == tool || (tool == "Agent" && alt == "Task"))
}

fn hook_verdict(answers: Vec<Answer>) -> HookVerdict {
    let mut v = HookVerdict {
        fired: !answers.is_empty(),
        ..HookVerdict::default()
    };
    for answer in answers {
        let body = match answer {
            Answer::Ok(body) => body,
            Answer::Err(e) => {
                // A failing hook is a non-blocking error for the CLI.
                eprintln!("demo agent: hook callback failed: {e}");
                continue;
            }
        };
        match str_of(&body, "decision") {
            Some("block") => {
                let reason = str_of(&body, "reason").unwrap_or("blocked by hook");
                v.block.get_or_insert_with(|| reason.to_string());
            }
            Some("approve") => v.allow = true,
            _ => {}
        }
        if body.get("continue") == Some(&Value::Bool(false)) {
            let reason = str_of(&body, "stopReason").unwrap_or("a hook asked to stop");
            v.block.get_or_insert_with(|| reason.to_string());
        }
        if let Some(h) = body.get("hookSpecificOutput") {
            match str_of(h, "permissionDecision") {
                Some("deny") => {
                    let reason = str_of(h, "permissionDecisionReason").unwrap_or("denied by hook");
                    v.block.get_or_insert_with(|| reason.to_string());
                }
                Some("allow") => v.allow = true,
                Some("ask") => v.ask = true,
                _ => {}
            }
            if let Some(ui) = h.get("updatedInput").filter(|u| u.is_object()) {
                v.updated_input = Some(ui.clone());
            }
        }
    }
    v
}

const THINKING: &str = "The user wants audit logging around authentication. I should look at the \
layout first, ask before writing anything, and let two sub-agents explore and draft in parallel.";

const LS_OUTPUT: &str = "admin.rs\nauth.rs\nbilling.rs\nlib.rs\nmain.rs\nsearch.rs\nsession.rs";

const AUTH_RS: &str = "use crate::session::Session;\n\
use crate::store::UserStore;\n\
\n\
pub struct AuthError(pub String);\n\
\n\
/// Checks a password and opens a session.\n\
pub fn authenticate(store: &UserStore, name: &str, password: &str) -> Result<Session, AuthError> {\n\
    let user = store\n\
        .find(name)\n\
        .ok_or_else(|| AuthError(format!(\"unknown user {name}\")))?;\n\
    if !user.verify(password) {\n\
        return Err(AuthError(\"bad password\".into()));\n\
    }\n\
    let session = Session::start(&user)?;\n\
    Ok(session)\n\
}\n";

const EDIT_OLD: &str = "    let session = Session::start(&user)?;\n    Ok(session)";
const EDIT_NEW: &str = "    let session = Session::start(&user)?;\n    audit::record(AuditEvent::Login {\n        user: user.id,\n        session: session.id(),\n    });\n    Ok(session)";

const GREP_OUTPUT: &str = "src/auth.rs:7:pub fn authenticate(store: &UserStore, name: &str, password: &str) -> Result<Session, AuthError> {\nsrc/admin.rs:31:    let session = auth::authenticate(&store, &name, &pw)?;";

const Q1: &str = "Which modules should get audit logging?";
const Q2: &str = "How should we roll it out?";

// ---------------------------------------------------------------------------------------------
// The agent

impl<O: FnMut(String)> Agent<O> {
    fn new(cfg: Config, rx: Receiver<String>, out: O) -> Self {
        let seed = epoch_ms() ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
        let mut agent = Agent {
            mode: cfg.permission_mode.clone(),
            model: cfg.model.clone(),
            cfg,
            rx,
            out,
            rng: seed | 1,
            session_id: String::new(),
            cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "/".into()),
            hooks: Vec::new(),
            dialog_kinds: Vec::new(),
            forward_sub: false,
            pending: Vec::new(),
            user_gates: HashSet::new(),
            answers: HashMap::new(),
            cancelled: HashSet::new(),
            answered: HashSet::new(),
            queued: VecDeque::new(),
            in_turn: false,
            interrupt_requested: false,
            turn_count: 0,
            open_tools: Vec::new(),
            tasks: Vec::new(),
            rules: Vec::new(),
            decisions: Vec::new(),
            denials: Vec::new(),
            stats: TurnStats::new(),
        };
        agent.session_id = match agent.cfg.session_id.clone() {
            Some(id) => id,
            None => agent.uuid(),
        };
        agent
    }

    // ---- randomness and ids

    fn rand(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn uuid(&mut self) -> String {
        let a = self.rand();
        let b = self.rand();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            8 | ((b >> 62) & 3),
            (b >> 48) & 0xfff,
            b & 0xffff_ffff_ffff
        )
    }

    fn base62(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        (0..n)
            .map(|_| ALPHABET[(self.rand() % 62) as usize] as char)
            .collect()
    }

    fn tool_id(&mut self) -> String {
        format!("toolu_01{}", self.base62(22))
    }

    fn msg_id(&mut self) -> String {
        format!("msg_01{}", self.base62(22))
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rand() % (hi - lo + 1)
    }

    // ---- output

    fn emit(&mut self, v: Value) {
        (self.out)(v.to_string());
    }

    /// `{"type":kind, ...fields, "uuid", "session_id"}`
    fn emit_typed(&mut self, kind: &str, subtype: Option<&str>, fields: Value) {
        let mut m = Map::new();
        m.insert("type".into(), json!(kind));
        if let Some(s) = subtype {
            m.insert("subtype".into(), json!(s));
        }
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        m.insert("uuid".into(), json!(self.uuid()));
        m.insert("session_id".into(), json!(self.session_id));
        self.emit(Value::Object(m));
    }

    fn sys(&mut self, subtype: &str, fields: Value) {
        self.emit_typed("system", Some(subtype), fields);
    }

    fn state(&mut self, state: &str) {
        self.sys("session_state_changed", json!({ "state": state }));
    }

    fn status(&mut self, status: Option<&str>) {
        let mode = self.mode.clone();
        self.sys(
            "status",
            json!({ "status": status, "permissionMode": mode }),
        );
    }

    fn stream_event(&mut self, ctx: &Ctx, event: Value) {
        let uuid = self.uuid();
        let line = json!({
            "type": "stream_event",
            "event": event,
            "session_id": self.session_id,
            "parent_tool_use_id": ctx.parent,
            "uuid": uuid,
        });
        self.emit(line);
    }

    fn assistant_line(&mut self, msg: &Msg, block: Value, aborted: bool) {
        let uuid = self.uuid();
        let req = format!("req_011C{}", self.base62(20));
        let mut line = json!({
            "type": "assistant",
            "message": {
                "model": self.model,
                "id": msg.id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 18_200,
                    "output_tokens": msg.out_tokens.max(1),
                    "service_tier": "standard",
                },
            },
            "parent_tool_use_id": msg.ctx.parent,
            "session_id": self.session_id,
            "uuid": uuid,
            "timestamp": iso_now(),
            "request_id": req,
        });
        if aborted {
            line["aborted"] = json!(true);
        }
        self.emit(line);
    }

    fn user_line(&mut self, ctx: &Ctx, content: Value, tool_use_result: Option<Value>) {
        let uuid = self.uuid();
        let mut line = json!({
            "type": "user",
            "message": { "role": "user", "content": content },
            "parent_tool_use_id": ctx.parent,
            "session_id": self.session_id,
            "uuid": uuid,
            "timestamp": iso_now(),
        });
        if let Some(r) = tool_use_result {
            line["tool_use_result"] = r;
        }
        self.emit(line);
    }

    fn tool_result(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        content: Value,
        is_error: bool,
        tool_use_result: Option<Value>,
    ) {
        let mut block = json!({
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        });
        if is_error {
            block["is_error"] = json!(true);
        }
        let tur = tool_use_result.or_else(|| {
            is_error.then(|| json!(format!("Error: {}", content.as_str().unwrap_or(""))))
        });
        self.user_line(ctx, json!([block]), tur);
        self.open_tools.retain(|(id, _)| id != tool_use_id);
        if let Some(agent) = &ctx.agent_id
            && let Some(t) = self.tasks.iter_mut().find(|t| &t.task_id == agent)
        {
            t.tool_uses += 1;
        }
    }

    // ---- input

    /// Processes host lines until `deadline` (or only those already queued when `None`).
    fn pump(&mut self, deadline: Option<Instant>) -> Step<()> {
        loop {
            let line = match deadline {
                None => match self.rx.try_recv() {
                    Ok(l) => l,
                    Err(TryRecvError::Empty) => return Ok(()),
                    Err(TryRecvError::Disconnected) => return Err(Stop::Eof),
                },
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(l) => l,
                        Err(RecvTimeoutError::Timeout) => return Ok(()),
                        Err(RecvTimeoutError::Disconnected) => return Err(Stop::Eof),
                    }
                }
            };
            self.handle_line(&line);
            if self.interrupt_requested {
                return Err(Stop::Interrupt);
            }
        }
    }

    fn pause(&mut self, lo: u64, hi: u64) -> Step<()> {
        if self.cfg.fast {
            return self.pump(None);
        }
        let ms = self.range(lo, hi);
        self.pump(Some(Instant::now() + Duration::from_millis(ms)))
    }

    fn pause_step(&mut self) -> Step<()> {
        self.pause(300, 600)
    }

    fn handle_line(&mut self, raw: &str) {
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            return;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("demo agent: ignoring malformed stdin line ({e}): {line}");
                return;
            }
        };
        match str_of(&v, "type") {
            Some("control_request") => self.handle_host_request(&v),
            Some("control_response") => self.handle_response(&v),
            Some("user") => self.queued.push_back(v),
            Some("control_cancel_request" | "keep_alive") => {}
            Some(other) => eprintln!("demo agent: ignoring stdin line of type {other:?}"),
            None => eprintln!("demo agent: ignoring stdin line without a type: {line}"),
        }
    }

    fn respond(&mut self, request_id: &str, body: Value) {
        self.emit(json!({
            "type": "control_response",
            "response": { "subtype": "success", "request_id": request_id, "response": body },
        }));
    }

    fn respond_error(&mut self, request_id: &str, error: &str) {
        self.emit(json!({
            "type": "control_response",
            "response": { "subtype": "error", "request_id": request_id, "error": error },
        }));
    }

    fn handle_host_request(&mut self, v: &Value) {
        let Some(id) = str_of(v, "request_id").filter(|s| !s.is_empty()) else {
            eprintln!("demo agent: control_request without request_id ignored");
            return;
        };
        let id = id.to_string();
        let req = v.get("request").cloned().unwrap_or_else(|| json!({}));
        match str_of(&req, "subtype").unwrap_or("") {
            "initialize" => {
                self.apply_initialize(&req);
                let body = self.init_body();
                self.emit(json!({
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": id,
                        "response": body,
                        "pending_permission_requests": [],
                        "pending_user_dialog_requests": [],
                    },
                }));
            }
            "interrupt" => {
                let still: Vec<Value> = self
                    .queued
                    .iter()
                    .filter_map(|q| q.get("uuid").cloned())
                    .collect();
                let body = if req.get("cancel_queued") == Some(&Value::Bool(true)) {
                    self.queued.clear();
                    json!({ "still_queued": [], "cancelled": still })
                } else {
                    json!({ "still_queued": still })
                };
                self.respond(&id, body);
                if self.in_turn {
                    self.interrupt_requested = true;
                }
            }
            "set_permission_mode" => match str_of(&req, "mode") {
                Some(mode) if PERMISSION_MODES.contains(&mode) => {
                    self.mode = mode.to_string();
                    self.respond(&id, json!({}));
                    self.status(None);
                }
                other => {
                    let msg = format!("invalid permission mode {other:?}");
                    self.respond_error(&id, &msg);
                }
            },
            "set_model" => {
                self.model = str_of(&req, "model")
                    .map(str::to_string)
                    .unwrap_or_else(|| self.cfg.model.clone());
                self.respond(&id, json!({}));
            }
            _ => self.respond(&id, json!({})),
        }
    }

    fn handle_response(&mut self, v: &Value) {
        let resp = v.get("response").cloned().unwrap_or(Value::Null);
        let Some(id) = str_of(&resp, "request_id").map(str::to_string) else {
            eprintln!("demo agent: control_response without request_id ignored");
            return;
        };
        if let Some(pos) = self.pending.iter().position(|p| *p == id) {
            self.pending.remove(pos);
            let answer = match str_of(&resp, "subtype") {
                Some("success") => Answer::Ok(resp.get("response").cloned().unwrap_or(json!({}))),
                Some("error") => Answer::Err(match resp.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => compact(other),
                    None => "error".into(),
                }),
                other => Answer::Err(format!("unexpected control_response subtype {other:?}")),
            };
            self.answered.insert(id.clone());
            self.answers.insert(id.clone(), answer);
            if self.user_gates.remove(&id) && self.user_gates.is_empty() && self.in_turn {
                self.state("running");
            }
        } else if self.cancelled.contains(&id) {
            eprintln!("demo agent: ignoring late answer to withdrawn request {id}");
        } else if self.answered.contains(&id) {
            eprintln!("demo agent: ignoring second answer to request {id}");
        } else {
            eprintln!("demo agent: ignoring answer to unknown request {id}");
        }
    }

    fn apply_initialize(&mut self, req: &Value) {
        self.hooks.clear();
        if let Some(list) = req.pointer("/hooks/PreToolUse").and_then(Value::as_array) {
            for h in list {
                let matcher = str_of(h, "matcher").unwrap_or("").to_string();
                let ids: Vec<String> = h
                    .get("hookCallbackIds")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                if !ids.is_empty() {
                    self.hooks.push((matcher, ids));
                }
            }
        }
        self.dialog_kinds = req
            .get("supportedDialogKinds")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.forward_sub = req.get("forwardSubagentText") == Some(&Value::Bool(true));
    }

    fn init_body(&self) -> Value {
        json!({
            "commands": [
                {"name": "compact", "description": "Free up context by summarizing the conversation so far", "argumentHint": "<optional custom summarization instructions>"},
                {"name": "review", "description": "Review a pull request", "argumentHint": "[pr-number]"},
                {"name": "init", "description": "Initialize a new CLAUDE.md file with codebase documentation", "argumentHint": ""},
                {"name": "context", "description": "Show current context usage", "argumentHint": ""},
                {"name": "clear", "description": "Start a new session with empty context", "argumentHint": "[name]", "aliases": ["reset", "new"]},
            ],
            "agents": [
                {"name": "general-purpose", "description": "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks."},
                {"name": "Explore", "description": "Fast read-only search agent for locating code."},
                {"name": "code-reviewer", "description": "Reviews a change for correctness, style and missing tests."},
                {"name": "Plan", "description": "Software architect agent for designing implementation plans."},
            ],
            "output_style": "default",
            "available_output_styles": ["default", "Explanatory", "Learning"],
            "models": [
                {"value": "default", "resolvedModel": self.cfg.model, "displayName": "Default (recommended)", "description": "Use the default model · demo pricing", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high"], "supportsAdaptiveThinking": true, "supportsFastMode": false, "supportsAutoMode": true},
                {"value": "opus", "resolvedModel": "claude-opus-5", "displayName": "Opus", "description": "Opus 5 · Best for complex tasks · $5/$25 per Mtok", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high", "xhigh", "max"], "supportsAdaptiveThinking": true, "supportsFastMode": true, "supportsAutoMode": true},
                {"value": "sonnet", "resolvedModel": "claude-sonnet-5", "displayName": "Sonnet", "description": "Sonnet 5 · Efficient for routine tasks · $3/$15 per Mtok", "supportsEffort": true, "supportedEffortLevels": ["low", "medium", "high"], "supportsAdaptiveThinking": true, "supportsAutoMode": true},
                {"value": "haiku", "resolvedModel": "claude-haiku-4-5-20251001", "displayName": "Haiku", "description": "Haiku 4.5 · Fastest for quick answers · $1/$5 per Mtok"},
            ],
            "account": {"tokenSource": "none", "apiKeySource": "none", "apiProvider": "firstParty"},
            "pid": std::process::id(),
            "current_permission_mode": self.mode,
            "session_state": "idle",
            "hooks_applied": !self.hooks.is_empty(),
            "claude_code_version": "demo",
            "fast_mode_state": "off",
            "fast_mode_disabled_reason": "sdk_opt_in_required",
        })
    }

    // ---- gates

    fn send_gate(&mut self, request: Value) -> String {
        let id = self.uuid();
        if str_of(&request, "subtype") != Some("hook_callback") {
            if self.user_gates.is_empty() {
                self.state("requires_action");
            }
            self.user_gates.insert(id.clone());
        }
        self.pending.push(id.clone());
        self.emit(json!({ "type": "control_request", "request_id": id, "request": request }));
        id
    }

    /// Blocks until one of `ids` is answered.
    fn wait_any(&mut self, ids: &[String]) -> Step<(String, Answer)> {
        loop {
            for id in ids {
                if let Some(a) = self.answers.remove(id) {
                    return Ok((id.clone(), a));
                }
            }
            match self.rx.recv() {
                Ok(line) => {
                    self.handle_line(&line);
                    if self.interrupt_requested {
                        return Err(Stop::Interrupt);
                    }
                }
                Err(_) => return Err(Stop::Eof),
            }
        }
    }

    fn wait_one(&mut self, id: &str) -> Step<Answer> {
        self.wait_any(&[id.to_string()]).map(|(_, a)| a)
    }

    // ---- hooks

    fn hook_ids(&self, tool: &str) -> Vec<String> {
        self.hooks
            .iter()
            .filter(|(m, _)| matcher_matches(m, tool))
            .flat_map(|(_, ids)| ids.iter().cloned())
            .collect()
    }

    /// Sends one `hook_callback` per matching registered callback id; returns the request ids.
    fn send_hooks(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Vec<String> {
        let ids = self.hook_ids(tool);
        let mut sent = Vec::new();
        for callback_id in ids {
            let mut hook_input = json!({
                "session_id": self.session_id,
                "cwd": self.cwd,
                "permission_mode": self.mode,
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": input,
                "tool_use_id": tool_use_id,
            });
            if let Some(a) = &ctx.agent_id {
                hook_input["agent_id"] = json!(a);
            }
            if let Some(t) = &ctx.agent_type {
                hook_input["agent_type"] = json!(t);
            }
            sent.push(self.send_gate(json!({
                "subtype": "hook_callback",
                "callback_id": callback_id,
                "input": hook_input,
                "tool_use_id": tool_use_id,
            })));
        }
        sent
    }

    fn collect_hooks(&mut self, mut ids: Vec<String>) -> Step<HookVerdict> {
        let mut answers = Vec::new();
        while !ids.is_empty() {
            let (id, a) = self.wait_any(&ids)?;
            ids.retain(|x| *x != id);
            answers.push(a);
        }
        Ok(hook_verdict(answers))
    }

    fn pre_tool(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Step<HookVerdict> {
        let ids = self.send_hooks(ctx, tool, input, tool_use_id);
        self.collect_hooks(ids)
    }

    // ---- permissions

    fn auto_decision(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Option<PermOutcome> {
        let command = str_of(input, "command").unwrap_or("");
        let allowed = |reason: &str| PermOutcome::Allowed {
            input: input.clone(),
            edited: false,
            remembered: None,
            auto: Some(reason.to_string()),
        };
        let rule_hit = self
            .rules
            .iter()
            .any(|(t, content)| t == tool && content.as_deref().is_none_or(|c| c == command));
        let is_edit = matches!(tool, "Edit" | "Write" | "MultiEdit")
            || (tool == "Bash" && (command.starts_with("touch ") || command.starts_with("mkdir ")));
        match self.mode.as_str() {
            "bypassPermissions" => Some(allowed("bypassPermissions mode")),
            _ if rule_hit => Some(allowed("an allow rule you added earlier")),
            "acceptEdits" if is_edit => Some(allowed("acceptEdits mode")),
            "dontAsk" => {
                let message = format!(
                    "Permission to use {tool} has been denied because Claude Code is running in don't ask mode."
                );
                let mut fields = json!({
                    "tool_name": tool,
                    "tool_use_id": tool_use_id,
                    "decision_reason_type": "mode",
                    "decision_reason": "dontAsk mode",
                    "message": message,
                });
                if let Some(a) = &ctx.agent_id {
                    fields["agent_id"] = json!(a);
                }
                self.sys("permission_denied", fields);
                Some(PermOutcome::Denied {
                    message,
                    interrupt: false,
                })
            }
            _ => None,
        }
    }

    fn permission_start(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        prompt: Prompt,
        hook: &HookVerdict,
    ) -> PermStart {
        if hook.allow {
            return PermStart::Done(PermOutcome::Allowed {
                input: input.clone(),
                edited: false,
                remembered: None,
                auto: Some("your PreToolUse hook allowed it".into()),
            });
        }
        if !hook.ask
            && let Some(outcome) = self.auto_decision(ctx, tool, input, tool_use_id)
        {
            if let PermOutcome::Denied { .. } = &outcome {
                self.denials.push(json!({
                    "tool_name": tool, "tool_use_id": tool_use_id, "tool_input": input,
                }));
            }
            return PermStart::Done(outcome);
        }
        let mut req = json!({
            "subtype": "can_use_tool",
            "tool_name": tool,
            "display_name": tool,
            "input": input,
            "tool_use_id": tool_use_id,
        });
        if let Some(a) = &ctx.agent_id {
            req["agent_id"] = json!(a);
        }
        req["title"] = json!(prompt.title);
        req["description"] = json!(prompt.description);
        if let Some(r) = prompt.decision_reason {
            req["decision_reason"] = json!(r);
        }
        if let Some(p) = prompt.blocked_path {
            req["blocked_path"] = json!(p);
        }
        req["permission_suggestions"] = prompt.suggestions;
        let id = self.send_gate(req);
        PermStart::Pending(PendingPerm {
            id,
            tool: tool.to_string(),
            tool_use_id: tool_use_id.to_string(),
            input: input.clone(),
        })
    }

    fn permission_finish(&mut self, p: &PendingPerm, answer: Answer) -> PermOutcome {
        let outcome = match answer {
            Answer::Err(e) => PermOutcome::Denied {
                message: format!("The permission request failed: {e}"),
                interrupt: false,
            },
            Answer::Ok(body) => match str_of(&body, "behavior") {
                Some("allow") => {
                    let used = body
                        .get("updatedInput")
                        .filter(|u| u.is_object())
                        .cloned()
                        .unwrap_or_else(|| p.input.clone());
                    let remembered = body
                        .get("updatedPermissions")
                        .filter(|u| u.as_array().is_some_and(|a| !a.is_empty()))
                        .cloned();
                    if let Some(updates) = &remembered {
                        self.apply_permission_updates(updates);
                    }
                    PermOutcome::Allowed {
                        edited: used != p.input,
                        input: used,
                        remembered,
                        auto: None,
                    }
                }
                Some("deny") => PermOutcome::Denied {
                    message: str_of(&body, "message")
                        .filter(|m| !m.is_empty())
                        .unwrap_or("The user denied this tool use.")
                        .to_string(),
                    interrupt: body.get("interrupt") == Some(&Value::Bool(true)),
                },
                _ => PermOutcome::Denied {
                    message: format!("Unrecognised permission answer: {}", compact(&body)),
                    interrupt: false,
                },
            },
        };
        if let PermOutcome::Denied { .. } = &outcome {
            self.denials.push(json!({
                "tool_name": p.tool, "tool_use_id": p.tool_use_id, "tool_input": p.input,
            }));
        }
        outcome
    }

    fn apply_permission_updates(&mut self, updates: &Value) {
        for u in updates.as_array().into_iter().flatten() {
            match str_of(u, "type") {
                Some("addRules" | "replaceRules") if str_of(u, "behavior") == Some("allow") => {
                    for r in u
                        .get("rules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(tool) = str_of(r, "toolName") {
                            let content = str_of(r, "ruleContent").map(str::to_string);
                            self.rules.push((tool.to_string(), content));
                        }
                    }
                }
                Some("setMode") => {
                    if let Some(mode) = str_of(u, "mode").filter(|m| PERMISSION_MODES.contains(m)) {
                        self.mode = mode.to_string();
                        self.status(None);
                    }
                }
                _ => {}
            }
        }
    }

    fn permission(
        &mut self,
        ctx: &Ctx,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        prompt: Prompt,
        hook: &HookVerdict,
    ) -> Step<PermOutcome> {
        match self.permission_start(ctx, tool, input, tool_use_id, prompt, hook) {
            PermStart::Done(o) => Ok(o),
            PermStart::Pending(p) => {
                let answer = self.wait_one(&p.id)?;
                Ok(self.permission_finish(&p, answer))
            }
        }
    }

    fn allow_phrase(outcome: &PermOutcome) -> String {
        match outcome {
            PermOutcome::Allowed {
                input,
                edited,
                remembered,
                auto,
            } => {
                let mut s = match (auto, remembered) {
                    (Some(reason), _) => format!("It was approved automatically ({reason})."),
                    (None, Some(updates)) => format!(
                        "You allowed it and sent updatedPermissions: {}",
                        compact(updates)
                    ),
                    (None, None) => "You allowed it once.".to_string(),
                };
                if *edited {
                    s.push_str(&format!(
                        " You changed the input before allowing it, so I used yours: {}",
                        compact(input)
                    ));
                }
                s
            }
            PermOutcome::Denied { message, .. } => format!("You denied it: {message}"),
        }
    }

    // ---- streaming

    fn begin(&mut self, ctx: &Ctx) -> Msg {
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

    fn end(&mut self, msg: &mut Msg, stop_reason: &str) {
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

    fn word_chunks(&mut self, text: &str) -> Vec<String> {
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
    fn stream_prose(&mut self, msg: &mut Msg, text: &str, thinking: bool) -> Step<()> {
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

    fn text(&mut self, msg: &mut Msg, text: &str) -> Step<()> {
        self.stream_prose(msg, text, false)
    }

    fn thinking(&mut self, msg: &mut Msg, text: &str) -> Step<()> {
        self.stream_prose(msg, text, true)
    }

    fn tool_use(&mut self, msg: &mut Msg, id: &str, name: &str, input: &Value) -> Step<()> {
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
    fn say(&mut self, ctx: &Ctx, text: &str, stop_reason: &str) -> Step<()> {
        let mut m = self.begin(ctx);
        self.text(&mut m, text)?;
        self.end(&mut m, stop_reason);
        Ok(())
    }

    // ---- sub-agent tasks

    fn new_task(
        &mut self,
        parent: Option<String>,
        description: &str,
        subagent_type: &str,
        prompt: &str,
    ) -> Task {
        Task {
            task_id: format!("a{:016x}", self.rand()),
            tool_use_id: self.tool_id(),
            parent,
            description: description.into(),
            subagent_type: subagent_type.into(),
            prompt: prompt.into(),
            started: Instant::now(),
            tool_uses: 0,
            tokens: 0,
        }
    }

    fn start_task(&mut self, task: &Task, parent_task_id: Option<&str>) -> Step<()> {
        let mut t = task.clone();
        t.started = Instant::now();
        self.tasks.push(t);
        let mut fields = json!({
            "task_id": task.task_id,
            "tool_use_id": task.tool_use_id,
            "description": task.description,
            "subagent_type": task.subagent_type,
            "task_type": "local_agent",
            "prompt": task.prompt,
        });
        if let Some(p) = parent_task_id {
            fields["parent_task_id"] = json!(p);
            fields["spawn_depth"] = json!(2);
        } else {
            fields["spawn_depth"] = json!(1);
        }
        self.sys("task_started", fields);
        let ctx = task.ctx();
        self.user_line(&ctx, json!([{"type": "text", "text": task.prompt}]), None);
        self.pause(150, 300)
    }

    fn task_usage(&self, task_id: &str) -> Value {
        match self.tasks.iter().find(|t| t.task_id == task_id) {
            Some(t) => json!({
                "total_tokens": t.tokens,
                "tool_uses": t.tool_uses,
                "duration_ms": t.started.elapsed().as_millis() as u64,
            }),
            None => json!({"total_tokens": 0, "tool_uses": 0, "duration_ms": 0}),
        }
    }

    fn progress(&mut self, task: &Task, last_tool: &str) {
        let usage = self.task_usage(&task.task_id);
        self.sys(
            "task_progress",
            json!({
                "task_id": task.task_id,
                "tool_use_id": task.tool_use_id,
                "description": task.description,
                "usage": usage,
                "last_tool_name": last_tool,
            }),
        );
    }

    fn complete_task(&mut self, task: &Task, summary: &str, final_text: &str) -> Step<()> {
        self.pause(150, 300)?;
        let usage = self.task_usage(&task.task_id);
        self.sys(
            "task_updated",
            json!({"task_id": task.task_id, "patch": {"status": "completed", "end_time": epoch_ms()}}),
        );
        self.sys(
            "task_notification",
            json!({
                "task_id": task.task_id,
                "tool_use_id": task.tool_use_id,
                "status": "completed",
                "output_file": "",
                "summary": summary,
                "usage": usage,
            }),
        );
        let content = json!([{"type": "text", "text": final_text}]);
        let result = json!({
            "status": "completed",
            "prompt": task.prompt,
            "agentId": task.task_id,
            "agentType": task.subagent_type,
            "resolvedModel": self.model,
            "content": content,
            "totalDurationMs": usage["duration_ms"],
            "totalTokens": usage["total_tokens"],
            "totalToolUseCount": usage["tool_uses"],
            "usage": {"input_tokens": 12, "output_tokens": usage["total_tokens"]},
        });
        self.tasks.retain(|t| t.task_id != task.task_id);
        let ctx = Ctx {
            parent: task.parent.clone(),
            ..Ctx::default()
        };
        self.tool_result(&ctx, &task.tool_use_id, content, false, Some(result));
        Ok(())
    }

    // ---- turns

    fn main_loop(&mut self) -> i32 {
        loop {
            if let Some(turn) = self.queued.pop_front() {
                match self.run_turn(&turn) {
                    Ok(final_text) => self.finish_ok(&final_text),
                    Err(Stop::Eof) => return 0,
                    Err(stop) => self.finish_aborted(stop),
                }
                continue;
            }
            match self.rx.recv() {
                Ok(line) => self.handle_line(&line),
                Err(_) => return 0,
            }
        }
    }

    fn begin_turn(&mut self) {
        self.in_turn = true;
        self.interrupt_requested = false;
        self.open_tools.clear();
        self.tasks.clear();
        self.decisions.clear();
        self.denials.clear();
        self.answers.clear();
        self.user_gates.clear();
        self.stats = TurnStats::new();
        self.turn_count += 1;
        let uuid = self.uuid();
        self.emit(json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.cwd,
            "session_id": self.session_id,
            "tools": ["Agent", "AskUserQuestion", "Bash", "Edit", "Glob", "Grep", "Read", "TodoWrite", "WebFetch", "Write", "mcp__tickets__create_ticket"],
            "mcp_servers": [{"name": "tickets", "status": "connected"}],
            "model": self.model,
            "permissionMode": self.mode,
            "slash_commands": ["compact", "review", "init", "context", "clear"],
            "apiKeySource": "none",
            "claude_code_version": "demo",
            "output_style": "default",
            "agents": ["general-purpose", "Explore", "code-reviewer", "Plan"],
            "skills": [],
            "plugins": [],
            "capabilities": ["interrupt_receipt_v1", "interrupt_cancel_queued_v1", "msg_lifecycle_v1"],
            "uuid": uuid,
            "fast_mode_state": "off",
        }));
        self.state("running");
    }

    fn run_turn(&mut self, turn: &Value) -> Step<String> {
        self.begin_turn();
        let text = user_text(turn);
        let lower = text.to_lowercase();
        if self.turn_count == 1 || lower.contains("replay") {
            self.first_turn()
        } else {
            self.later_turn(&text)
        }
    }

    fn cost(&self) -> f64 {
        let (inp, out) = match self.model.as_str() {
            m if m.contains("opus") => (5.0, 25.0),
            m if m.contains("haiku") => (1.0, 5.0),
            _ => (3.0, 15.0),
        };
        (self.stats.input_tokens as f64 * inp
            + self.stats.output_tokens as f64 * out
            + self.stats.cache_read as f64 * inp * 0.1)
            / 1_000_000.0
    }

    fn result_fields(&self) -> Value {
        let duration = self.stats.start.elapsed().as_millis() as u64;
        let cost = self.cost();
        json!({
            "duration_ms": duration,
            "duration_api_ms": duration * 4 / 5,
            "num_turns": self.stats.num_turns,
            "session_id": self.session_id,
            "total_cost_usd": cost,
            "usage": {
                "input_tokens": self.stats.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": self.stats.cache_read,
                "output_tokens": self.stats.output_tokens,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {
                self.model.clone(): {
                    "inputTokens": self.stats.input_tokens,
                    "outputTokens": self.stats.output_tokens,
                    "cacheReadInputTokens": self.stats.cache_read,
                    "cacheCreationInputTokens": 0,
                    "webSearchRequests": 0,
                    "costUSD": cost,
                    "contextWindow": 200_000,
                    "maxOutputTokens": 32_000,
                },
            },
            "permission_denials": self.denials,
        })
    }

    fn finish_ok(&mut self, final_text: &str) {
        let mut fields = json!({"subtype": "success", "is_error": false, "result": final_text, "stop_reason": "end_turn"});
        if let (Value::Object(f), Value::Object(extra)) = (&mut fields, self.result_fields()) {
            f.extend(extra);
        }
        fields["terminal_reason"] = json!("completed");
        fields["uuid"] = json!(self.uuid());
        fields["type"] = json!("result");
        self.emit(fields);
        self.state("idle");
        self.in_turn = false;
    }

    fn finish_aborted(&mut self, stop: Stop) {
        let reason = if !self.pending.is_empty() || matches!(stop, Stop::Halt(_)) {
            "aborted_tools"
        } else {
            "aborted_streaming"
        };
        for id in std::mem::take(&mut self.pending) {
            self.emit(json!({"type": "control_cancel_request", "request_id": id}));
            self.cancelled.insert(id);
        }
        self.answers.clear();
        self.user_gates.clear();
        let running: Vec<Task> = self.tasks.iter().rev().cloned().collect();
        for t in &running {
            self.sys(
                "task_updated",
                json!({"task_id": t.task_id, "patch": {"status": "killed", "end_time": epoch_ms()}}),
            );
            let usage = self.task_usage(&t.task_id);
            self.sys(
                "task_notification",
                json!({"task_id": t.task_id, "tool_use_id": t.tool_use_id, "status": "stopped", "output_file": "", "summary": "Interrupted by the user", "usage": usage}),
            );
        }
        self.tasks.clear();
        let open: Vec<(String, Option<String>)> = self.open_tools.iter().rev().cloned().collect();
        for (id, parent) in open {
            let ctx = Ctx {
                parent,
                ..Ctx::default()
            };
            self.tool_result(
                &ctx,
                &id,
                json!("[Request interrupted by user for tool use]"),
                true,
                None,
            );
        }
        let error = match &stop {
            Stop::Halt(message) => {
                format!("The user denied a tool use and asked to stop: {message}")
            }
            _ => "Request interrupted by user".to_string(),
        };
        let mut fields =
            json!({"subtype": "error_during_execution", "is_error": true, "stop_reason": null});
        if let (Value::Object(f), Value::Object(extra)) = (&mut fields, self.result_fields()) {
            f.extend(extra);
        }
        fields["errors"] = json!([error]);
        fields["terminal_reason"] = json!(reason);
        fields["uuid"] = json!(self.uuid());
        fields["type"] = json!("result");
        self.emit(fields);
        self.state("idle");
        self.in_turn = false;
        self.interrupt_requested = false;
    }

    // ---- script pieces

    /// A Bash command that needs permission (hook → can_use_tool → simulated result).
    /// Returns the text that reacts to the human's answer.
    fn gated_bash(
        &mut self,
        ctx: &Ctx,
        tool_use_id: &str,
        input: &Value,
        file: &str,
    ) -> Step<String> {
        let command = str_of(input, "command").unwrap_or("").to_string();
        let hook = self.pre_tool(ctx, "Bash", input, tool_use_id)?;
        if let Some(reason) = &hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions.push(format!(
                "`{command}`: blocked by your PreToolUse hook ({reason})"
            ));
            return Ok(format!("Your hook blocked `{command}`: {reason}"));
        }
        let input = hook.updated_input.clone().unwrap_or_else(|| input.clone());
        let prompt = Prompt {
            title: format!("Claude wants to run {command}"),
            description: str_of(&input, "description")
                .unwrap_or("Run a shell command")
                .to_string(),
            decision_reason: Some(format!(
                "`{command}` writes to the working directory and needs your approval"
            )),
            blocked_path: Some(format!("{}/{file}", self.cwd)),
            suggestions: json!([
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}], "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            ]),
        };
        let outcome = self.permission(ctx, "Bash", &input, tool_use_id, prompt, &hook)?;
        let phrase = Self::allow_phrase(&outcome);
        match &outcome {
            PermOutcome::Allowed {
                input: used,
                edited,
                ..
            } => {
                let used_cmd = str_of(used, "command").unwrap_or(&command).to_string();
                let out = if *edited && used_cmd != command {
                    format!("(simulated) ran `{used_cmd}` — nothing was written to disk")
                } else {
                    format!("(simulated) created {file}")
                };
                self.tool_result(
                    ctx,
                    tool_use_id,
                    json!(out),
                    false,
                    Some(json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false})),
                );
                self.decisions.push(format!("`{command}`: {phrase}"));
                Ok(phrase)
            }
            PermOutcome::Denied { message, interrupt } => {
                self.tool_result(ctx, tool_use_id, json!(message), true, None);
                self.decisions.push(format!("`{command}`: {phrase}"));
                if *interrupt {
                    return Err(Stop::Halt(message.clone()));
                }
                Ok(phrase)
            }
        }
    }

    fn first_turn(&mut self) -> Step<String> {
        let main = Ctx::default();

        // 1–2: think, talk, run a read-only command.
        let mut m = self.begin(&main);
        self.thinking(&mut m, THINKING)?;
        self.text(&mut m, "I'll look around the repository first.")?;
        let ls_id = self.tool_id();
        let ls_input = json!({"command": "ls src", "description": "List source files"});
        self.tool_use(&mut m, &ls_id, "Bash", &ls_input)?;
        self.end(&mut m, "tool_use");
        let hook = self.pre_tool(&main, "Bash", &ls_input, &ls_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                &main,
                &ls_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
        } else {
            self.pause(200, 400)?;
            self.tool_result(
                &main,
                &ls_id,
                json!(LS_OUTPUT),
                false,
                Some(json!({"stdout": LS_OUTPUT, "stderr": "", "interrupted": false, "isImage": false})),
            );
        }
        self.pause_step()?;
        self.sys(
            "api_retry",
            json!({"attempt": 1, "max_retries": 10, "retry_delay_ms": 600, "error_status": 529, "error": "overloaded_error"}),
        );
        self.pause(500, 800)?;

        // 3: a command that needs permission.
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            "There's an auth.rs. Before changing anything I'll create a scratch file for my notes.",
        )?;
        let touch_id = self.tool_id();
        let touch_input = json!({"command": "touch demo-output.txt", "description": "Create a scratch file for notes"});
        self.tool_use(&mut m, &touch_id, "Bash", &touch_input)?;
        self.end(&mut m, "tool_use");
        let reaction = self.gated_bash(&main, &touch_id, &touch_input, "demo-output.txt")?;
        self.pause_step()?;

        // 4: fan-out to two sub-agents.
        let explorer = self.new_task(
            None,
            "Map the auth code",
            "Explore",
            "Find where authentication happens in src/ and who calls it. Report file:line locations.",
        );
        let reviewer = self.new_task(
            None,
            "Draft the audit-log change",
            "code-reviewer",
            "Read src/auth.rs and propose adding an audit log call after a successful login.",
        );
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            &format!("{reaction}\n\nNow I'll split the work: an explorer maps the auth code while a reviewer drafts the change."),
        )?;
        self.tool_use(&mut m, &explorer.tool_use_id, "Agent", &explorer.input())?;
        self.tool_use(&mut m, &reviewer.tool_use_id, "Agent", &reviewer.input())?;
        self.end(&mut m, "tool_use");
        let fan = self.fan_out(&explorer, &reviewer)?;
        self.pause_step()?;

        // A compaction between steps.
        self.status(Some("compacting"));
        self.pause(400, 700)?;
        self.sys(
            "compact_boundary",
            json!({"compact_metadata": {"trigger": "auto", "pre_tokens": 167_204, "post_tokens": 21_388, "duration_ms": 2_810}}),
        );
        self.status(None);
        self.pause_step()?;

        // 5: AskUserQuestion with two questions.
        let ask_id = self.tool_id();
        let questions = json!([
            {"question": Q1, "header": "Modules", "multiSelect": true, "options": [
                {"label": "Auth", "description": "Logins, sessions and tokens"},
                {"label": "Billing", "description": "Payments, invoices and refunds"},
                {"label": "Search", "description": "Queries and index updates"},
                {"label": "Admin", "description": "Back-office user management"},
            ]},
            {"question": Q2, "header": "Rollout", "multiSelect": false, "options": [
                {"label": "Behind a flag", "description": "Ship dark, enable per environment"},
                {"label": "Everywhere at once", "description": "Enable for all traffic in one deploy"},
            ]},
        ]);
        let ask_input = json!({"questions": questions});
        let mut m = self.begin(&main);
        self.text(
            &mut m,
            &format!("{fan}\n\nBefore I wire this in everywhere, two questions."),
        )?;
        self.tool_use(&mut m, &ask_id, "AskUserQuestion", &ask_input)?;
        self.end(&mut m, "tool_use");
        let answers_text = self.ask_questions(&main, &ask_id, &ask_input)?;
        self.pause_step()?;

        // 6: a dialog, only if the host declared it.
        let mut m = self.begin(&main);
        self.text(&mut m, &answers_text)?;
        self.end(&mut m, "end_turn");
        if self
            .dialog_kinds
            .iter()
            .any(|k| k == "refusal_fallback_prompt")
        {
            self.pause_step()?;
            let dialog_text = self.fallback_dialog()?;
            self.say(&main, &dialog_text, "end_turn")?;
        }
        self.pause_step()?;

        // 7: an MCP tool whose server asks for a form.
        let mcp_id = self.tool_id();
        let mcp_input = json!({"summary": "Add audit logging", "labels": ["security", "audit"]});
        let mut m = self.begin(&main);
        self.text(&mut m, "I'll file a ticket so the rollout is tracked.")?;
        self.tool_use(&mut m, &mcp_id, "mcp__tickets__create_ticket", &mcp_input)?;
        self.end(&mut m, "tool_use");
        let ticket_text = self.ticket(&main, &mcp_id, &mcp_input)?;
        self.pause_step()?;

        // 8: lines the host does not know.
        self.emit_typed(
            "future_event",
            None,
            json!({"detail": "shown, never dropped"}),
        );
        self.sys(
            "demo_notice",
            json!({"message": "An unknown system subtype: hosts show it as a generic row."}),
        );
        let resets = epoch_ms() / 1000 + 3 * 3600;
        self.emit_typed(
            "rate_limit_event",
            None,
            json!({"rate_limit_info": {"status": "allowed_warning", "resetsAt": resets, "rateLimitType": "five_hour", "utilization": 0.82, "isUsingOverage": false}}),
        );
        self.pause_step()?;

        // 9: summary.
        let mut summary = format!("{ticket_text}\n\nHere is everything you decided:\n");
        for d in &self.decisions {
            summary.push_str(&format!("- {d}\n"));
        }
        summary.push_str("\nNothing on disk changed: every tool in this demo is simulated.");
        self.say(&main, &summary, "end_turn")?;
        Ok(summary)
    }

    fn fan_out(&mut self, ex: &Task, rv: &Task) -> Step<String> {
        let main = Ctx::default();
        let mut notes: Vec<String> = Vec::new();
        let mut grep_note = String::new();
        let mut active = [true, true];
        for (i, t) in [ex, rv].into_iter().enumerate() {
            let hook = self.pre_tool(&main, "Agent", &t.input(), &t.tool_use_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &main,
                    &t.tool_use_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                notes.push(format!(
                    "Your hook blocked the {} sub-agent: {reason}.",
                    t.subagent_type
                ));
                self.decisions.push(format!(
                    "{} sub-agent: blocked by your hook ({reason})",
                    t.subagent_type
                ));
                active[i] = false;
            }
        }
        let [ex_on, rv_on] = active;
        if ex_on {
            self.start_task(ex, None)?;
        }
        if rv_on {
            self.start_task(rv, None)?;
        }
        let exc = ex.ctx();
        let rvc = rv.ctx();

        // Explorer dispatches a nested helper.
        let mut grep: Option<Task> = None;
        if ex_on {
            let g = self.new_task(
                Some(ex.tool_use_id.clone()),
                "Grep for authenticate",
                "general-purpose",
                "Search src/ for `fn authenticate` and list every match with its line number.",
            );
            let mut m = self.begin(&exc);
            self.text(&mut m, "I'll find where authentication lives; a helper can run the search while I read the module layout.")?;
            self.tool_use(&mut m, &g.tool_use_id, "Agent", &g.input())?;
            self.end(&mut m, "tool_use");
            self.progress(ex, "Agent");
            let hook = self.pre_tool(&exc, "Agent", &g.input(), &g.tool_use_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &exc,
                    &g.tool_use_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                grep_note = format!("My grep-helper was blocked by your hook: {reason}.");
            } else {
                grep = Some(g);
            }
        }

        // Reviewer reads the file (read-only, no permission).
        if rv_on {
            let read_id = self.tool_id();
            let read_input = json!({"file_path": "src/auth.rs"});
            let mut m = self.begin(&rvc);
            self.text(&mut m, "Reading src/auth.rs before proposing a change.")?;
            self.tool_use(&mut m, &read_id, "Read", &read_input)?;
            self.end(&mut m, "tool_use");
            let hook = self.pre_tool(&rvc, "Read", &read_input, &read_id)?;
            if let Some(reason) = hook.block {
                self.tool_result(
                    &rvc,
                    &read_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
            } else {
                let numbered: String = AUTH_RS
                    .lines()
                    .enumerate()
                    .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
                    .collect();
                let total = AUTH_RS.lines().count();
                self.tool_result(
                    &rvc,
                    &read_id,
                    json!(numbered),
                    false,
                    Some(json!({"type": "text", "file": {"filePath": format!("{}/src/auth.rs", self.cwd), "content": AUTH_RS, "numLines": total, "startLine": 1, "totalLines": total}})),
                );
            }
            self.progress(rv, "Read");
        }

        if let Some(g) = &grep {
            self.start_task(g, Some(&ex.task_id))?;
        }

        // Reviewer asks to edit (the gate stays open while the helper works).
        let edit_id = self.tool_id();
        let edit_input = json!({"file_path": "src/auth.rs", "old_string": EDIT_OLD, "new_string": EDIT_NEW, "replace_all": false});
        let mut edit: Option<Result<PermOutcome, PendingPerm>> = None;
        let mut rv_done = !rv_on;
        if rv_on {
            let mut m = self.begin(&rvc);
            self.text(
                &mut m,
                "I'll add an audit log call right after a successful login.",
            )?;
            self.tool_use(&mut m, &edit_id, "Edit", &edit_input)?;
            self.end(&mut m, "tool_use");
            let hook = self.pre_tool(&rvc, "Edit", &edit_input, &edit_id)?;
            if let Some(reason) = &hook.block {
                self.tool_result(
                    &rvc,
                    &edit_id,
                    json!(format!("Blocked by hook: {reason}")),
                    true,
                    None,
                );
                self.decisions.push(format!(
                    "Reviewer's edit of src/auth.rs: blocked by your hook ({reason})"
                ));
                let text =
                    format!("A hook blocked my edit ({reason}); src/auth.rs stays as it was.");
                self.say(&rvc, &text, "end_turn")?;
                self.complete_task(rv, &text, &text)?;
                notes.push(format!("Reviewer: {text}"));
                rv_done = true;
            } else {
                let input = hook
                    .updated_input
                    .clone()
                    .unwrap_or_else(|| edit_input.clone());
                let prompt = Prompt {
                    title: "Claude wants to edit src/auth.rs".into(),
                    description: "Add an audit log call after a successful login".into(),
                    decision_reason: None,
                    blocked_path: Some(format!("{}/src/auth.rs", self.cwd)),
                    suggestions: json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
                };
                edit = Some(
                    match self.permission_start(&rvc, "Edit", &input, &edit_id, prompt, &hook) {
                        PermStart::Done(o) => Ok(o),
                        PermStart::Pending(p) => Err(p),
                    },
                );
            }
        }

        // The helper wants to Grep; a matching PreToolUse hook holds it.
        let grep_id = self.tool_id();
        let grep_input = json!({"pattern": "fn authenticate", "path": "src"});
        let mut grep_hooks: Vec<String> = Vec::new();
        if let Some(g) = &grep {
            let gc = g.ctx();
            let mut m = self.begin(&gc);
            self.text(&mut m, "Searching src/ for `fn authenticate`.")?;
            self.tool_use(&mut m, &grep_id, "Grep", &grep_input)?;
            self.end(&mut m, "tool_use");
            self.progress(g, "Grep");
            grep_hooks = self.send_hooks(&gc, "Grep", &grep_input, &grep_id);
        }
        let hooks_fired = !grep_hooks.is_empty();

        // Settle both branches in the order the human answers.
        let mut grep_answers: Vec<Answer> = Vec::new();
        let mut grep_open = grep.is_some();
        let mut ex_open = ex_on;
        loop {
            if grep_open && grep_hooks.is_empty() {
                grep_open = false;
                let mut verdict = hook_verdict(std::mem::take(&mut grep_answers));
                verdict.fired = hooks_fired;
                if let Some(g) = &grep {
                    grep_note = self.finish_grep(g, &grep_id, &grep_input, verdict)?;
                }
                continue;
            }
            if ex_open && !grep_open {
                ex_open = false;
                let text = format!(
                    "Authentication lives in src/auth.rs (`authenticate`), sessions in src/session.rs. {grep_note}"
                );
                self.say(&exc, &text, "end_turn")?;
                self.complete_task(ex, "Mapped the auth code", &text)?;
                notes.push(format!("Explorer: {text}"));
                continue;
            }
            match edit.take() {
                Some(Ok(outcome)) => {
                    let note = self.finish_review(rv, &edit_id, outcome)?;
                    notes.push(format!("Reviewer: {note}"));
                    rv_done = true;
                    continue;
                }
                other => edit = other,
            }
            let mut waiting = grep_hooks.clone();
            if let Some(Err(p)) = &edit {
                waiting.push(p.id.clone());
            }
            if waiting.is_empty() {
                break;
            }
            let (id, answer) = self.wait_any(&waiting)?;
            if grep_hooks.contains(&id) {
                grep_hooks.retain(|x| *x != id);
                grep_answers.push(answer);
            } else if let Some(Err(p)) = edit.take() {
                let outcome = self.permission_finish(&p, answer);
                if let PermOutcome::Denied {
                    message,
                    interrupt: true,
                } = &outcome
                {
                    self.tool_result(&rvc, &edit_id, json!(message), true, None);
                    self.decisions.push(format!(
                        "Reviewer's edit of src/auth.rs: you denied it and stopped ({message})"
                    ));
                    return Err(Stop::Halt(message.clone()));
                }
                edit = Some(Ok(outcome));
            }
        }
        debug_assert!(rv_done);
        let mut text = String::from("Both sub-agents are done.");
        for n in notes {
            text.push(' ');
            text.push_str(&n);
        }
        Ok(text)
    }

    fn finish_grep(
        &mut self,
        g: &Task,
        grep_id: &str,
        input: &Value,
        verdict: HookVerdict,
    ) -> Step<String> {
        let gc = g.ctx();
        let text = if let Some(reason) = &verdict.block {
            self.tool_result(
                &gc,
                grep_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions.push(format!(
                "grep-helper's Grep: blocked by your hook ({reason})"
            ));
            format!(
                "The search was blocked by a PreToolUse hook ({reason}), so I could not confirm where `fn authenticate` lives."
            )
        } else {
            let used = verdict
                .updated_input
                .clone()
                .unwrap_or_else(|| input.clone());
            let pattern = str_of(&used, "pattern").unwrap_or("fn authenticate");
            self.pause(200, 400)?;
            self.tool_result(
                &gc,
                grep_id,
                json!(GREP_OUTPUT),
                false,
                Some(json!({"mode": "content", "numFiles": 2, "filenames": ["src/auth.rs", "src/admin.rs"], "content": GREP_OUTPUT, "numLines": 2})),
            );
            if verdict.fired {
                self.decisions
                    .push("grep-helper's Grep: your hook let it run".into());
            }
            let via = if verdict.fired {
                " (your hook let the search through)"
            } else {
                ""
            };
            format!("Found `{pattern}` at src/auth.rs:7, called from src/admin.rs:31{via}.")
        };
        self.progress(g, "Grep");
        self.say(&gc, &text, "end_turn")?;
        self.complete_task(g, &text, &text)?;
        Ok(text)
    }

    fn finish_review(&mut self, rv: &Task, edit_id: &str, outcome: PermOutcome) -> Step<String> {
        let rvc = rv.ctx();
        let phrase = Self::allow_phrase(&outcome);
        let text = match &outcome {
            PermOutcome::Allowed { input, edited, .. } => {
                let new = str_of(input, "new_string").unwrap_or(EDIT_NEW).to_string();
                self.tool_result(
                    &rvc,
                    edit_id,
                    json!("The file src/auth.rs has been updated successfully. (simulated — nothing was written)"),
                    false,
                    Some(json!({
                        "filePath": format!("{}/src/auth.rs", self.cwd),
                        "oldString": EDIT_OLD,
                        "newString": new,
                        "originalFile": AUTH_RS,
                        "structuredPatch": [{"oldStart": 14, "oldLines": EDIT_OLD.lines().count(), "newStart": 14, "newLines": new.lines().count(),
                            "lines": EDIT_OLD.lines().map(|l| format!("-{l}")).chain(new.lines().map(|l| format!("+{l}"))).collect::<Vec<_>>()}],
                        "userModified": edited,
                        "replaceAll": false,
                    })),
                );
                format!("Edit applied to src/auth.rs (simulated). {phrase}")
            }
            PermOutcome::Denied { message, .. } => {
                self.tool_result(&rvc, edit_id, json!(message), true, None);
                format!("{phrase} I left src/auth.rs unchanged.")
            }
        };
        self.decisions
            .push(format!("Reviewer's edit of src/auth.rs: {phrase}"));
        self.progress(rv, "Edit");
        self.say(&rvc, &text, "end_turn")?;
        self.complete_task(rv, &text, &text)?;
        Ok(text)
    }

    fn ask_questions(&mut self, ctx: &Ctx, tool_use_id: &str, input: &Value) -> Step<String> {
        let hook = self.pre_tool(ctx, "AskUserQuestion", input, tool_use_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions
                .push(format!("Questions: blocked by your hook ({reason})"));
            return Ok(format!(
                "Your hook blocked my questions ({reason}); I'll assume Auth only, behind a flag."
            ));
        }
        let mut req = json!({
            "subtype": "can_use_tool",
            "tool_name": "AskUserQuestion",
            "display_name": "AskUserQuestion",
            "input": input,
            "tool_use_id": tool_use_id,
            "requires_user_interaction": true,
        });
        if let Some(a) = &ctx.agent_id {
            req["agent_id"] = json!(a);
        }
        let id = self.send_gate(req);
        let answer = self.wait_one(&id)?;
        let body = match answer {
            Answer::Ok(b) => b,
            Answer::Err(e) => {
                json!({"behavior": "deny", "message": format!("the question request failed: {e}")})
            }
        };
        if str_of(&body, "behavior") != Some("allow") {
            let message = str_of(&body, "message")
                .unwrap_or("The user declined to answer.")
                .to_string();
            self.tool_result(ctx, tool_use_id, json!(message), true, None);
            self.denials.push(json!({"tool_name": "AskUserQuestion", "tool_use_id": tool_use_id, "tool_input": input}));
            self.decisions
                .push(format!("Questions: you declined to answer ({message})"));
            return Ok(format!("You declined to answer: {message}"));
        }
        let updated = body.get("updatedInput").cloned().unwrap_or(Value::Null);
        let Some(questions) = updated.get("questions").and_then(Value::as_array).cloned() else {
            let err = "Error: the answer has no updatedInput.questions (echo the request's questions verbatim next to answers)";
            self.tool_result(ctx, tool_use_id, json!(err), true, None);
            self.decisions
                .push("Questions: the answer was malformed (no questions)".into());
            return Ok(
                "Your answer arrived without the questions, so the CLI could not read it.".into(),
            );
        };
        let answers = updated.get("answers").cloned().unwrap_or_else(|| json!({}));
        let mut pairs = Vec::new();
        let mut echo = Vec::new();
        for q in &questions {
            let Some(text) = str_of(q, "question") else {
                continue;
            };
            let value = match answers.get(text) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => compact(other),
                None => continue,
            };
            pairs.push(format!("\"{text}\"=\"{value}\""));
            let header = str_of(q, "header").unwrap_or(text);
            echo.push(format!("{header}: {value}"));
        }
        let content = if pairs.is_empty() {
            "The user did not answer any question.".to_string()
        } else {
            format!(
                "Your questions have been answered: {}. You can now continue with these answers in mind.",
                pairs.join(", ")
            )
        };
        self.tool_result(
            ctx,
            tool_use_id,
            json!(content),
            false,
            Some(json!({"questions": questions, "answers": answers})),
        );
        let echoed = if echo.is_empty() {
            "nothing".to_string()
        } else {
            echo.join("; ")
        };
        self.decisions.push(format!("Questions: {echoed}"));
        Ok(format!("Got it — {echoed}."))
    }

    fn fallback_dialog(&mut self) -> Step<String> {
        let id = self.send_gate(json!({
            "subtype": "request_user_dialog",
            "dialog_kind": "refusal_fallback_prompt",
            "payload": {
                "title": "Use a fallback model?",
                "message": format!("{} declined to draft the audit-log retention policy. Retry that request with a fallback model?", self.model),
                "options": [
                    {"value": "retry", "label": "Retry with claude-opus-5"},
                    {"value": "skip", "label": "Skip the retention policy"},
                ],
                "default": "skip",
            },
        }));
        let text = match self.wait_one(&id)? {
            Answer::Ok(body) => match str_of(&body, "behavior") {
                Some("completed" | "ok") => {
                    let choice = body
                        .get("result")
                        .or_else(|| body.get("choice"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    let shown = match &choice {
                        Value::String(s) => s.clone(),
                        other => compact(other),
                    };
                    self.decisions
                        .push(format!("Fallback dialog: you chose {shown}"));
                    format!("You chose: {shown}.")
                }
                Some("cancelled") => {
                    self.decisions
                        .push("Fallback dialog: you dismissed it (default: skip)".into());
                    "You dismissed the dialog, so the default applies: I skip the retention policy."
                        .into()
                }
                _ => {
                    self.decisions.push(format!(
                        "Fallback dialog: unrecognised answer {}",
                        compact(&body)
                    ));
                    format!("I could not read the dialog answer: {}", compact(&body))
                }
            },
            Answer::Err(e) => {
                self.decisions.push(format!("Fallback dialog: error ({e})"));
                format!("The dialog failed: {e}")
            }
        };
        Ok(text)
    }

    fn ticket(&mut self, ctx: &Ctx, tool_use_id: &str, input: &Value) -> Step<String> {
        let hook = self.pre_tool(ctx, "mcp__tickets__create_ticket", input, tool_use_id)?;
        if let Some(reason) = hook.block {
            self.tool_result(
                ctx,
                tool_use_id,
                json!(format!("Blocked by hook: {reason}")),
                true,
                None,
            );
            self.decisions
                .push(format!("Ticket: blocked by your hook ({reason})"));
            return Ok(format!("Your hook blocked the ticket tool ({reason})."));
        }
        let id = self.send_gate(json!({
            "subtype": "elicitation",
            "mcp_server_name": "tickets",
            "message": "Create a ticket for the audit work?",
            "mode": "form",
            "requested_schema": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "title": "Title"},
                    "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                    "estimate": {"type": "number", "title": "Estimate (days)"},
                    "notify": {"type": "boolean", "title": "Notify the team"},
                },
                "required": ["title"],
            },
        }));
        let body = match self.wait_one(&id)? {
            Answer::Ok(b) => b,
            Answer::Err(e) => {
                eprintln!("demo agent: elicitation failed: {e}");
                json!({"action": "decline"})
            }
        };
        let (result, is_error, text) = match str_of(&body, "action") {
            Some("accept") => {
                let content = body.get("content").cloned().unwrap_or_else(|| json!({}));
                let title = str_of(&content, "title")
                    .unwrap_or("(untitled)")
                    .to_string();
                self.decisions
                    .push(format!("Ticket form: accepted with {}", compact(&content)));
                (
                    format!("Created ticket TCK-1042 \"{title}\" (simulated)."),
                    false,
                    format!(
                        "Ticket TCK-1042 created with your values: {}.",
                        compact(&content)
                    ),
                )
            }
            Some("cancel") => {
                self.decisions.push("Ticket form: cancelled".into());
                (
                    "The user cancelled the ticket form.".into(),
                    true,
                    "You cancelled the ticket form; no ticket.".into(),
                )
            }
            _ => {
                self.decisions.push("Ticket form: declined".into());
                (
                    "The user declined to create a ticket.".into(),
                    true,
                    "You declined the ticket; I won't file one.".into(),
                )
            }
        };
        self.tool_result(
            ctx,
            tool_use_id,
            json!([{"type": "text", "text": result}]),
            is_error,
            None,
        );
        Ok(text)
    }

    fn later_turn(&mut self, user: &str) -> Step<String> {
        let main = Ctx::default();
        let shown: String = user.chars().take(300).collect();
        let echo = format!("You said: {shown}");
        if !user.to_lowercase().contains("bash") {
            self.say(&main, &echo, "end_turn")?;
            return Ok(echo);
        }
        let id = self.tool_id();
        let input =
            json!({"command": "touch again.txt", "description": "Create another scratch file"});
        let mut m = self.begin(&main);
        self.text(&mut m, &format!("{echo}\n\nLet me run one more command."))?;
        self.tool_use(&mut m, &id, "Bash", &input)?;
        self.end(&mut m, "tool_use");
        let reaction = self.gated_bash(&main, &id, &input, "again.txt")?;
        self.pause_step()?;
        self.say(&main, &reaction, "end_turn")?;
        Ok(reaction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::Sender;
    use std::thread::JoinHandle;

    struct Host {
        tx: Option<Sender<String>>,
        rx: Receiver<String>,
        lines: Vec<Value>,
        handle: Option<JoinHandle<i32>>,
    }

    impl Host {
        fn start(args: &[&str], preload: &[Value]) -> Host {
            let (in_tx, in_rx) = mpsc::channel::<String>();
            let (out_tx, out_rx) = mpsc::channel::<String>();
            for l in preload {
                in_tx.send(l.to_string()).unwrap();
            }
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let handle = std::thread::spawn(move || {
                run_with(&args, true, in_rx, move |l| {
                    let _ = out_tx.send(l);
                })
            });
            Host {
                tx: Some(in_tx),
                rx: out_rx,
                lines: Vec::new(),
                handle: Some(handle),
            }
        }

        fn send(&self, v: Value) {
            self.tx.as_ref().unwrap().send(v.to_string()).unwrap();
        }

        fn send_raw(&self, s: &str) {
            self.tx.as_ref().unwrap().send(s.to_string()).unwrap();
        }

        fn next(&mut self) -> Value {
            let line = self
                .rx
                .recv_timeout(Duration::from_secs(10))
                .expect("agent produced no line in time");
            assert!(!line.contains('\n'), "one line per message: {line}");
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("invalid JSON {e}: {line}"));
            self.lines.push(v.clone());
            v
        }

        fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
            loop {
                let v = self.next();
                if pred(&v) {
                    return v;
                }
            }
        }

        fn quiet(&mut self) -> bool {
            self.rx.recv_timeout(Duration::from_millis(200)).is_err()
        }

        fn close(mut self) -> (i32, Vec<Value>) {
            self.tx.take();
            let code = self.handle.take().unwrap().join().unwrap();
            while let Ok(l) = self.rx.try_recv() {
                self.lines.push(serde_json::from_str(&l).unwrap());
            }
            (code, self.lines)
        }
    }

    fn init_req(hooks: Value, kinds: Value) -> Value {
        json!({"type": "control_request", "request_id": "sb-init-1", "request": {
            "subtype": "initialize", "hooks": hooks, "supportedDialogKinds": kinds, "forwardSubagentText": true}})
    }

    fn user(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null, "session_id": "default"})
    }

    fn ok(id: &str, body: Value) -> Value {
        json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": body}})
    }

    fn is_result(v: &Value) -> bool {
        v["type"] == "result"
    }

    fn texts(lines: &[Value]) -> String {
        let mut s = String::new();
        for l in lines {
            if l["type"] == "assistant" {
                for b in l["message"]["content"].as_array().unwrap() {
                    if let Some(t) = b["text"].as_str() {
                        s.push_str(t);
                        s.push('\n');
                    }
                }
            }
        }
        s
    }

    fn tool_results(lines: &[Value]) -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "user")
            .flat_map(|l| {
                l["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    const ARGS: &[&str] = &[
        "-p",
        "--verbose",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--include-partial-messages",
        "--permission-mode",
        "default",
        "--model",
        "claude-test",
    ];

    fn common_checks(lines: &[Value]) {
        // Unique gate ids.
        let ids: Vec<&str> = lines
            .iter()
            .filter(|l| l["type"] == "control_request")
            .map(|l| l["request_id"].as_str().unwrap())
            .collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(ids.len(), unique.len(), "duplicate request ids");
        // Every tool_use gets exactly one tool_result.
        let mut uses = Vec::new();
        for l in lines.iter().filter(|l| l["type"] == "assistant") {
            for b in l["message"]["content"].as_array().unwrap() {
                if b["type"] == "tool_use" {
                    uses.push(b["id"].as_str().unwrap().to_string());
                }
            }
        }
        let results: Vec<String> = tool_results(lines)
            .iter()
            .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
            .collect();
        for u in &uses {
            assert_eq!(
                results.iter().filter(|r| *r == u).count(),
                1,
                "tool_use {u} needs one result"
            );
        }
        for l in lines {
            let t = l["type"].as_str().unwrap();
            if matches!(
                t,
                "assistant" | "user" | "stream_event" | "system" | "result"
            ) {
                assert!(l["session_id"].is_string(), "{l}");
                assert!(l["uuid"].is_string(), "{l}");
            }
        }
    }

    #[test]
    fn full_script_allow_path() {
        let mut h = Host::start(ARGS, &[]);
        h.send_raw("this is not json");
        h.send(init_req(
            json!({"PreToolUse": [{"matcher": "Read|Grep", "hookCallbackIds": ["sb-hook-grep"]}]}),
            json!(["refusal_fallback_prompt"]),
        ));
        let init = h.next();
        assert_eq!(init["response"]["request_id"], "sb-init-1");
        assert!(
            init["response"]["response"]["models"]
                .as_array()
                .unwrap()
                .len()
                >= 3
        );
        h.send(user("Add audit logging to the auth module"));

        let mut edit_gate: Option<String> = None;
        let mut saw_two_gates = false;
        let mut mode_sent = false;
        loop {
            let v = h.next();
            if is_result(&v) {
                break;
            }
            if v["type"] != "control_request" {
                continue;
            }
            let id = v["request_id"].as_str().unwrap().to_string();
            let req = &v["request"];
            match (req["subtype"].as_str().unwrap(), req["tool_name"].as_str()) {
                ("can_use_tool", Some("Bash")) => {
                    assert_eq!(req["title"], "Claude wants to run touch demo-output.txt");
                    assert_eq!(req["permission_suggestions"].as_array().unwrap().len(), 2);
                    if !mode_sent {
                        mode_sent = true;
                        h.send(json!({"type": "control_request", "request_id": "sb-mode-1", "request": {"subtype": "set_permission_mode", "mode": "plan"}}));
                        let r = h.until(|l| l["type"] == "control_response");
                        assert_eq!(r["response"]["request_id"], "sb-mode-1");
                        let s = h.next();
                        assert_eq!(s["subtype"], "status");
                        assert_eq!(s["permissionMode"], "plan");
                        h.send(json!({"type": "control_request", "request_id": "sb-mode-2", "request": {"subtype": "set_permission_mode", "mode": "default"}}));
                    }
                    let rule = json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch demo-output.txt"}], "behavior": "allow", "destination": "session"}]);
                    h.send(ok(&id, json!({"behavior": "allow", "updatedInput": req["input"], "updatedPermissions": rule})));
                }
                ("can_use_tool", Some("Edit")) => {
                    assert!(req["agent_id"].is_string());
                    assert_eq!(req["input"]["file_path"], "src/auth.rs");
                    edit_gate = Some(id);
                }
                ("hook_callback", _) => {
                    assert_eq!(req["callback_id"], "sb-hook-grep");
                    let tool = req["input"]["tool_name"].as_str().unwrap();
                    assert!(req["input"]["agent_id"].is_string());
                    if tool == "Grep" {
                        assert_eq!(req["input"]["tool_input"]["pattern"], "fn authenticate");
                        assert!(edit_gate.is_some(), "Edit permission must still be open");
                        saw_two_gates = true;
                        h.send(ok(&id, json!({})));
                        let edit = edit_gate.take().unwrap();
                        let mut input = json!({"file_path": "src/auth.rs", "old_string": EDIT_OLD, "new_string": EDIT_NEW, "replace_all": false});
                        input["new_string"] = json!(
                            "    let session = Session::start(&user)?;\n    audit::login(&user);\n    Ok(session)"
                        );
                        h.send(ok(
                            &edit,
                            json!({"behavior": "allow", "updatedInput": input}),
                        ));
                    } else {
                        assert_eq!(tool, "Read");
                        h.send(ok(&id, json!({})));
                    }
                }
                ("can_use_tool", Some("AskUserQuestion")) => {
                    assert_eq!(req["requires_user_interaction"], true);
                    let qs = req["input"]["questions"].clone();
                    assert_eq!(qs.as_array().unwrap().len(), 2);
                    h.send(ok(&id, json!({"behavior": "allow", "updatedInput": {"questions": qs, "answers": {Q1: "Auth, Search", Q2: "Behind a flag"}}})));
                }
                ("request_user_dialog", _) => {
                    assert_eq!(req["dialog_kind"], "refusal_fallback_prompt");
                    h.send(ok(&id, json!({"behavior": "completed", "result": "retry"})));
                }
                ("elicitation", _) => {
                    assert_eq!(req["mcp_server_name"], "tickets");
                    h.send(ok(&id, json!({"action": "accept", "content": {"title": "Audit logging", "priority": "high", "estimate": 3, "notify": true}})));
                }
                other => panic!("unexpected gate {other:?}"),
            }
        }
        assert!(saw_two_gates);
        let (code, lines) = h.close();
        if std::env::var_os("SWITCHBOARD_DEMO_DUMP").is_some() {
            for l in &lines {
                println!("{l}");
            }
        }
        assert_eq!(code, 0);
        common_checks(&lines);

        let results: Vec<&Value> = lines.iter().filter(|l| is_result(l)).collect();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["subtype"], "success");
        assert_eq!(results[0]["is_error"], false);
        assert!(results[0]["usage"]["output_tokens"].as_u64().unwrap() > 0);

        // Fan-out: three sub-agents, one nested.
        let started: Vec<&Value> = lines
            .iter()
            .filter(|l| l["subtype"] == "task_started")
            .collect();
        assert_eq!(started.len(), 3);
        let nested: Vec<&&Value> = started
            .iter()
            .filter(|s| s["parent_task_id"].is_string())
            .collect();
        assert_eq!(nested.len(), 1);
        let explorer = started
            .iter()
            .find(|s| s["subagent_type"] == "Explore")
            .unwrap();
        assert_eq!(nested[0]["parent_task_id"], explorer["task_id"]);
        for s in &started {
            let tid = &s["task_id"];
            assert!(lines.iter().any(|l| l["subtype"] == "task_updated"
                && l["task_id"] == *tid
                && l["patch"]["status"] == "completed"));
            assert!(lines.iter().any(|l| l["subtype"] == "task_notification"
                && l["task_id"] == *tid
                && l["status"] == "completed"));
            assert!(
                lines
                    .iter()
                    .any(|l| l["type"] == "user" && l["tool_use_result"]["agentId"] == *tid)
            );
        }
        // The nested Agent tool_use is carried by an explorer line; its result too.
        let grep_tu = &nested[0]["tool_use_id"];
        let carrier = lines
            .iter()
            .find(|l| l["type"] == "assistant" && l["message"]["content"][0]["id"] == *grep_tu)
            .unwrap();
        assert_eq!(carrier["parent_tool_use_id"], explorer["tool_use_id"]);
        // Stream events inside sub-agents carry the parent.
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "stream_event" && l["parent_tool_use_id"] == *grep_tu)
        );

        let all = texts(&lines);
        assert!(
            all.contains("You allowed it and sent updatedPermissions"),
            "{all}"
        );
        assert!(
            all.contains("You changed the input before allowing it"),
            "{all}"
        );
        assert!(all.contains("Modules: Auth, Search"), "{all}");
        assert!(all.contains("Rollout: Behind a flag"), "{all}");
        assert!(all.contains("You chose: retry"), "{all}");
        assert!(all.contains("Audit logging"), "{all}");
        let trs = tool_results(&lines);
        assert!(
            trs.iter()
                .any(|b| b["content"] == "(simulated) created demo-output.txt")
        );
        assert!(trs.iter().any(|b| b["content"]
            == format!("Your questions have been answered: \"{Q1}\"=\"Auth, Search\", \"{Q2}\"=\"Behind a flag\". You can now continue with these answers in mind.")));
        assert!(lines.iter().any(|l| l["type"] == "future_event"));
        assert!(lines.iter().any(|l| l["type"] == "rate_limit_event"));
        assert!(lines.iter().any(|l| l["subtype"] == "compact_boundary"));
        assert!(lines.iter().any(|l| l["subtype"] == "api_retry"));
        assert!(
            lines
                .iter()
                .any(|l| l["subtype"] == "session_state_changed" && l["state"] == "idle")
        );
        assert!(lines.iter().any(
            |l| l["type"] == "stream_event" && l["event"]["delta"]["type"] == "thinking_delta"
        ));
        // Sharing message ids across blocks.
        let first_msg =
            lines.iter().find(|l| l["type"] == "assistant").unwrap()["message"]["id"].clone();
        assert!(
            lines
                .iter()
                .filter(|l| l["type"] == "assistant" && l["message"]["id"] == first_msg)
                .count()
                >= 3
        );
    }

    #[test]
    fn deny_paths_and_hook_block() {
        let mut h = Host::start(ARGS, &[]);
        h.send(init_req(
            json!({"PreToolUse": [{"matcher": "Grep", "hookCallbackIds": ["g1"]}]}),
            Value::Null,
        ));
        h.next();
        h.send(user("go"));
        loop {
            let v = h.next();
            if is_result(&v) {
                break;
            }
            if v["type"] != "control_request" {
                continue;
            }
            let id = v["request_id"].as_str().unwrap().to_string();
            let req = &v["request"];
            match (req["subtype"].as_str().unwrap(), req["tool_name"].as_str()) {
                ("can_use_tool", Some("Bash")) => h.send(ok(
                    &id,
                    json!({"behavior": "deny", "message": "not in my repo"}),
                )),
                ("can_use_tool", Some("Edit")) => h.send(ok(
                    &id,
                    json!({"behavior": "deny", "message": "log via tracing instead"}),
                )),
                ("hook_callback", _) => h.send(ok(
                    &id,
                    json!({"decision": "block", "reason": "no searching today"}),
                )),
                ("can_use_tool", Some("AskUserQuestion")) => h.send(ok(
                    &id,
                    json!({"behavior": "deny", "message": "ask me later"}),
                )),
                ("elicitation", _) => h.send(ok(&id, json!({"action": "decline"}))),
                other => panic!("unexpected gate {other:?}"),
            }
        }
        let (_, lines) = h.close();
        common_checks(&lines);
        assert!(
            !lines
                .iter()
                .any(|l| l["request"]["subtype"] == "request_user_dialog")
        );
        let all = texts(&lines);
        assert!(all.contains("You denied it: not in my repo"), "{all}");
        assert!(
            all.contains("You declined to answer: ask me later"),
            "{all}"
        );
        assert!(all.contains("log via tracing instead"), "{all}");
        assert!(all.contains("no searching today"), "{all}");
        let trs = tool_results(&lines);
        assert!(trs.iter().any(
            |b| b["content"] == "Blocked by hook: no searching today" && b["is_error"] == true
        ));
        assert!(
            trs.iter()
                .any(|b| b["content"] == "not in my repo" && b["is_error"] == true)
        );
        let result = lines.iter().find(|l| is_result(l)).unwrap();
        assert_eq!(result["subtype"], "success");
        assert!(result["permission_denials"].as_array().unwrap().len() >= 3);
    }

    #[test]
    fn interrupt_while_gated_cancels_and_next_turn_echoes() {
        let mut h = Host::start(ARGS, &[]);
        h.send(init_req(Value::Null, json!([])));
        h.next();
        h.send(user("start"));
        let gate = h.until(|l| l["type"] == "control_request");
        let gate_id = gate["request_id"].as_str().unwrap().to_string();
        h.send(json!({"type": "control_request", "request_id": "sb-int-1", "request": {"subtype": "interrupt"}}));
        let r = h.until(|l| l["type"] == "control_response");
        assert_eq!(r["response"]["request_id"], "sb-int-1");
        assert_eq!(r["response"]["response"], json!({"still_queued": []}));
        let cancel = h.until(|l| l["type"] == "control_cancel_request");
        assert_eq!(cancel["request_id"], gate_id.as_str());
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_tools");
        assert_eq!(result["subtype"], "error_during_execution");
        h.until(|l| l["state"] == "idle");
        // A late answer to the withdrawn gate is ignored.
        h.send(ok(
            &gate_id,
            json!({"behavior": "allow", "updatedInput": {}}),
        ));
        assert!(h.quiet());
        // Next turn echoes and asks again for bash.
        h.send(user("please run bash"));
        let gate = h.until(|l| l["type"] == "control_request");
        assert_eq!(gate["request"]["input"]["command"], "touch again.txt");
        let id = gate["request_id"].as_str().unwrap().to_string();
        h.send(ok(
            &id,
            json!({"behavior": "allow", "updatedInput": gate["request"]["input"]}),
        ));
        let result = h.until(is_result);
        assert_eq!(result["subtype"], "success");
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        common_checks(&lines);
        let all = texts(&lines);
        assert!(all.contains("You said: please run bash"), "{all}");
        assert!(all.contains("You allowed it once."), "{all}");
        assert_eq!(lines.iter().filter(|l| is_result(l)).count(), 2);
    }

    #[test]
    fn interrupt_while_streaming_marks_partial_line_aborted() {
        let preload = [
            init_req(Value::Null, json!([])),
            user("hello"),
            json!({"type": "control_request", "request_id": "sb-int-9", "request": {"subtype": "interrupt"}}),
        ];
        let mut h = Host::start(ARGS, &preload);
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_streaming");
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "assistant" && l["aborted"] == true)
        );
        assert!(
            lines
                .iter()
                .any(|l| l["response"]["request_id"] == "sb-int-9")
        );
        assert!(!lines.iter().any(|l| l["type"] == "control_request"));
    }

    #[test]
    fn deny_with_interrupt_ends_turn() {
        let mut h = Host::start(ARGS, &[]);
        h.send(init_req(Value::Null, json!([])));
        h.next();
        h.send(user("go"));
        let gate = h.until(|l| l["type"] == "control_request");
        let id = gate["request_id"].as_str().unwrap().to_string();
        h.send(ok(
            &id,
            json!({"behavior": "deny", "message": "stop right there", "interrupt": true}),
        ));
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_tools");
        let (_, lines) = h.close();
        common_checks(&lines);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l["type"] == "control_request")
                .count(),
            1
        );
        assert!(!lines.iter().any(|l| l["subtype"] == "task_started"));
    }

    #[test]
    fn eof_exits_promptly_mid_gate() {
        let mut h = Host::start(ARGS, &[]);
        h.send(init_req(Value::Null, json!([])));
        h.next();
        h.send(user("go"));
        h.until(|l| l["type"] == "control_request");
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        assert!(!lines.iter().any(is_result));
    }

    #[test]
    fn bypass_mode_skips_permission_gates() {
        let args = ["-p", "--permission-mode=bypassPermissions"];
        let mut h = Host::start(&args, &[]);
        h.send(init_req(Value::Null, json!([])));
        h.next();
        h.send(user("go"));
        loop {
            let v = h.next();
            if is_result(&v) {
                break;
            }
            if v["type"] == "control_request" {
                let id = v["request_id"].as_str().unwrap().to_string();
                let req = &v["request"];
                assert_ne!(req["tool_name"], "Bash");
                assert_ne!(req["tool_name"], "Edit");
                match req["subtype"].as_str().unwrap() {
                    "can_use_tool" => {
                        let qs = req["input"]["questions"].clone();
                        h.send(ok(&id, json!({"behavior": "allow", "updatedInput": {"questions": qs, "answers": {Q1: "Admin", Q2: "Everywhere at once"}}})));
                    }
                    "elicitation" => h.send(ok(&id, json!({"action": "cancel"}))),
                    other => panic!("unexpected {other}"),
                }
            }
        }
        let (_, lines) = h.close();
        common_checks(&lines);
        // No partial messages without the flag.
        assert!(!lines.iter().any(|l| l["type"] == "stream_event"));
        let all = texts(&lines);
        assert!(
            all.contains("approved automatically (bypassPermissions mode)"),
            "{all}"
        );
    }

    #[test]
    fn matcher_rules() {
        assert!(matcher_matches("*", "Grep"));
        assert!(matcher_matches("", "Grep"));
        assert!(matcher_matches("Read|Grep", "Grep"));
        assert!(!matcher_matches("Read|Write", "Grep"));
        assert!(matcher_matches("Task", "Agent"));
    }
}
