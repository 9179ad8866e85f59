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
//! - `--demo-script web|docs` plays a shorter script instead (`web`, `docs`): a Bash, a question
//!   and a sub-agent's Edit all open at once within the first seconds (`parallel`), so several
//!   demo agents side by side fill the workspace's gate inbox.

mod config;
mod dialogs;
mod docs;
mod fan_out;
mod first_turn;
mod frames;
mod gates;
mod helpers;
mod host;
mod ids;
mod messages;
mod parallel;
mod permissions;
mod tasks;
#[cfg(test)]
mod tests;
mod texts;
mod turn;
mod web;

pub use config::SCRIPT_NAMES;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead, Write};
use std::sync::mpsc;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use serde_json::{Value, json};

use helpers::epoch_ms;

/// Run the scripted demo agent on this process's stdin/stdout. `args` are the CLI-style
/// arguments it was started with (e.g. "-p --verbose --output-format stream-json ...
/// --permission-mode default --model X"); unknown ones are ignored.
///
/// `--demo-script NAME` picks the script (see [`SCRIPT_NAMES`]); an unknown name is reported on
/// stderr and ends the agent with status 2 before it reads anything.
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
    let cfg = match Config::from_args(args, fast) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("demo agent: {e}");
            return 2;
        }
    };
    let mut agent = Agent::new(cfg, input, output);
    agent.main_loop()
}

#[derive(Clone, Debug)]
struct Config {
    script: config::Script,
    fast: bool,
    partial: bool,
    permission_mode: String,
    model: String,
    session_id: Option<String>,
}

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
}
