//! The live Claude backend: runs the CLI, feeds its lines through the mapping, writes answers.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::mapping::{Mapper, Out};
use switchboard_backend::Backend;
use switchboard_backend::link::{Link, StderrTail};
use switchboard_backend::process::{Agent, SharedRecorder, Spawn, record};
use switchboard_core::msg::Stamped;
use switchboard_core::msg::{BackendEvent, Command};
use switchboard_core::state::ReplyCheck;
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_record::Dir;

/// The flags every supervised session needs (see the protocol reference §2.1).
pub const BASE_ARGS: &[&str] = &[
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

pub use switchboard_backend::link::SHUTDOWN_GRACE;

#[derive(Clone, Debug, Default)]
pub struct ClaudeConfig {
    pub program: PathBuf,
    /// Arguments before the protocol flags (the demo uses its hidden subcommand here).
    pub prefix_args: Vec<String>,
    pub cwd: PathBuf,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub resume: Option<String>,
    pub breaks: Vec<String>,
    pub extra_args: Vec<String>,
    pub prompt: Option<String>,
    pub record: Option<PathBuf>,
    pub env: Vec<(String, Option<String>)>,
}

impl ClaudeConfig {
    pub fn args(&self) -> Vec<String> {
        let mut a = self.prefix_args.clone();
        a.extend(BASE_ARGS.iter().map(|s| s.to_string()));
        for (flag, v) in [
            ("--model", &self.model),
            ("--permission-mode", &self.permission_mode),
            ("--resume", &self.resume),
        ] {
            if let Some(v) = v {
                a.push(flag.to_string());
                a.push(v.clone());
            }
        }
        // Last: some CLI flags take several values and would swallow what follows.
        a.extend(self.extra_args.iter().cloned());
        a
    }
}

pub struct ClaudeBackend {
    pub config: ClaudeConfig,
}

/// Check a raw reply against the bundled schema: `def` may list alternatives (`A|B`).
pub fn reply_check(def: &str, body: &serde_json::Value) -> Result<(), String> {
    let mut errors = Vec::new();
    for d in def.split('|') {
        match crate::schema::validate_claude(d, body) {
            Ok(()) => return Ok(()),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors.join("\n"))
}

impl Backend for ClaudeBackend {
    fn kind(&self) -> switchboard_core::BackendKind {
        switchboard_core::BackendKind::Claude
    }

    fn root_name(&self) -> String {
        "main".into()
    }

    fn reply_check(&self) -> ReplyCheck {
        reply_check
    }

    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        tokio::spawn(run(self.config, events, commands))
    }
}

/// Write lines to the agent, validating each against the bundled schema first. A line the
/// schema does not know is still sent (the agent is the judge) but flagged.
async fn write(agent: &Agent, link: &Link, rec: &SharedRecorder, lines: Vec<String>) {
    for line in lines {
        if let Err(e) = crate::schema::validate_claude_outbound_line(&line) {
            link.protocol(
                Level::Warn,
                format!("outbound line outside the bundled schema: {e}"),
            )
            .await;
        }
        if let Err(line) = agent.send(line).await {
            record(
                rec,
                Dir::Note,
                &format!("not sent, stdin is closed or not read: {line}"),
            );
        }
    }
}

async fn deliver(agent: &Agent, link: &Link, rec: &SharedRecorder, out: Out) {
    for note in &out.notes {
        record(rec, Dir::Note, note);
    }
    write(agent, link, rec, out.replies).await;
    for e in out.events {
        link.send(e).await;
    }
}

async fn run(
    cfg: ClaudeConfig,
    events: mpsc::Sender<Stamped>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let link = Link { events };
    let args = cfg.args();
    let mut argv = vec![cfg.program.display().to_string()];
    argv.extend(args.iter().cloned());
    let rec = link
        .open_recording(
            cfg.record.as_deref(),
            switchboard_core::BackendKind::Claude,
            &argv,
            &cfg.cwd,
        )
        .await;
    let mut env = vec![("CLAUDECODE".to_string(), None)];
    env.extend(cfg.env.iter().cloned());
    let spec = Spawn {
        program: cfg.program.clone(),
        args,
        cwd: cfg.cwd.clone(),
        env,
    };
    let mut agent = match Agent::spawn(&spec, rec.clone()) {
        Ok(a) => a,
        Err(e) => {
            let detail = format!("could not start {}: {e}", cfg.program.display());
            return link.failed_to_start(detail, &rec, &mut commands).await;
        }
    };
    link.send(BackendEvent::Started {
        program: argv.join(" "),
        pid: agent.pid,
    })
    .await;

    let mut mapper = Mapper::new(&cfg.breaks);
    let init = mapper.initialize_line();
    write(&agent, &link, &rec, vec![init]).await;
    // User turns wait for the initialize reply (MCP servers start first), at most 60 s.
    let mut held: VecDeque<Command> = VecDeque::new();
    let mut initialized = false;
    let init_deadline = tokio::time::sleep(Duration::from_secs(60));
    tokio::pin!(init_deadline);
    if let Some(p) = cfg.prompt.clone() {
        // `--prompt` never went through the prompt box: show it like a typed one.
        link.send(BackendEvent::Item {
            node: None,
            op: ItemOp::Push(ItemKind::User { text: p.clone() }),
        })
        .await;
        held.push_back(Command::Prompt(p));
    }
    let mut stderr_tail = StderrTail::default();
    let mut exited = false;
    let mut stdout_open = true;
    let mut stderr_open = true;
    loop {
        tokio::select! {
            line = agent.stdout.recv(), if stdout_open => match line {
                Some(Err(big)) => {
                    link.protocol(Level::Error, big.to_string()).await;
                    // A request too long to read still gets its one answer.
                    if big.head.contains("\"control_request\"")
                        && let Some(serde_json::Value::String(id)) = big.request_id("request_id", "request")
                    {
                        let reply = super::encode::error(&id, &format!("request not read: {big}"));
                        write(&agent, &link, &rec, vec![reply]).await;
                    }
                }
                Some(Ok(line)) => {
                    let mut out = mapper.on_line(&line);
                    // Edit/Write cards against the file on disk (real line numbers).
                    super::file_diff::attach(&mut out.events, &cfg.cwd).await;
                    deliver(&agent, &link, &rec, out).await;
                    if !initialized && mapper.initialized() {
                        initialized = true;
                        while let Some(c) = held.pop_front() {
                            let out = mapper.command(&c);
                            deliver(&agent, &link, &rec, out).await;
                        }
                    }
                }
                None => stdout_open = false,
            },
            line = agent.stderr.recv(), if stderr_open => match line {
                Some(line) => {
                    let line = line.unwrap_or_else(|big| big.to_string());
                    stderr_tail.push(&line);
                    link.send(BackendEvent::Stderr(line)).await;
                }
                None => stderr_open = false,
            },
            () = &mut init_deadline, if !initialized => {
                initialized = true;
                link.protocol(Level::Warn, "no initialize reply after 60 s; sending anyway".into()).await;
                while let Some(c) = held.pop_front() {
                    let out = mapper.command(&c);
                    deliver(&agent, &link, &rec, out).await;
                }
            }
            status = agent.child.wait(), if !exited && !stdout_open => {
                exited = true;
                link.exited(&status, &rec, &stderr_tail).await;
            }
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => break,
                Some(Command::Note(text)) => record(&rec, Dir::Note, &text),
                Some(c @ Command::Prompt(_)) if !initialized => held.push_back(c),
                Some(c) => {
                    let out = mapper.command(&c);
                    deliver(&agent, &link, &rec, out).await;
                }
            },
        }
    }
    if !exited {
        // Anything still pending gets a fail-closed answer before stdin closes.
        let out = mapper.exit_answers();
        deliver(&agent, &link, &rec, out).await;
        let status = agent.stop(SHUTDOWN_GRACE, &rec).await;
        link.exited(&status, &rec, &stderr_tail).await;
    }
}
