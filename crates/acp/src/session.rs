//! The live ACP backend: runs the agent, feeds its lines through the mapping, performs the
//! mapping's actions (files, terminals) and writes every answer through the single stdin writer.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::codec::{self, schema};
use super::mapping::{AcpOptions, Action, Mapper, Out};
use super::terminal::Terminals;
use switchboard_backend::Backend;
use switchboard_backend::contain::{FsError, READ_CAP, Root};
use switchboard_backend::link::{Link, StderrTail};
use switchboard_backend::process::{Agent, SharedRecorder, Spawn, record};
use switchboard_core::msg::Stamped;
use switchboard_core::msg::{BackendEvent, Command};
use switchboard_core::state::ReplyCheck;
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_record::{Dir, now_ms};

pub use switchboard_backend::link::SHUTDOWN_GRACE;

#[derive(Clone, Debug, Default)]
pub struct AcpConfig {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub prompt: Option<String>,
    pub builtin_tools: Option<Vec<String>>,
    pub output_schema: Option<Value>,
    pub record: Option<PathBuf>,
    pub env: Vec<(String, Option<String>)>,
    /// Client capabilities withheld from the agent (`--no-fs`, `--no-terminal`, profile keys).
    pub withhold_fs: bool,
    pub withhold_terminal: bool,
    /// Resume this session of the agent (`session/load`) instead of starting one.
    pub resume: Option<String>,
    /// Resuming: the transcript already shows the session's history (from its recording), so
    /// the agent's replay of it is counted, not drawn again.
    pub history_shown: bool,
}

pub struct AcpBackend {
    pub config: AcpConfig,
}

/// Check a raw reply body typed by hand: only permission answers can be written raw.
pub fn reply_check(def: &str, body: &Value) -> Result<(), String> {
    match def {
        "RequestPermissionResponse" => codec::typed::<schema::RequestPermissionResponse>(body)
            .map(|_| ())
            .map_err(|e| format!("not a RequestPermissionResponse: {e}")),
        other => Err(format!(
            "a {other} is served by switchboard itself: use the keys of the card"
        )),
    }
}

impl Backend for AcpBackend {
    fn kind(&self) -> switchboard_core::BackendKind {
        switchboard_core::BackendKind::Acp
    }

    fn root_name(&self) -> String {
        "agent".into()
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

struct Io {
    agent: Agent,
    rec: SharedRecorder,
    terms: Terminals,
    /// The session directory's handle: every path the agent names is opened beneath it.
    root: Result<Arc<Root>, String>,
    /// Outstanding `terminal/wait_for_exit` answers (each is a task until its process exits).
    waits: std::sync::Arc<tokio::sync::Semaphore>,
    /// Terminal waiters hand their answer back here (`terminal/wait_for_exit`).
    waited: mpsc::Sender<(Value, Value)>,
}

/// JSON-RPC "Invalid Request": the answer to a request line too long to read.
const INVALID_REQUEST: i64 = -32600;

/// The most `terminal/wait_for_exit` requests waiting at once.
const MAX_WAITS: usize = 64;

/// Run file work beneath the session directory's handle, off the runtime's workers.
async fn beneath<T: Send + 'static>(
    root: &Result<Arc<Root>, String>,
    path: &Path,
    work: impl FnOnce(&Root, &Path) -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    let root = match root {
        Ok(r) => r.clone(),
        Err(e) => return Err(FsError::Outside(e.clone())),
    };
    let rel = root.relative(path)?;
    tokio::task::spawn_blocking(move || work(&root, &rel))
        .await
        .unwrap_or_else(|e| Err(FsError::Io(std::io::Error::other(e.to_string()))))
}

/// The JSON-RPC error for a file request that failed.
fn fs_error(id: &Value, path: &Path, e: &FsError) -> String {
    let code = match e {
        FsError::Outside(_) | FsError::Changed => codec::REFUSED,
        FsError::NotFound => -32002,
        _ => codec::INTERNAL_ERROR,
    };
    codec::error(id, code, &format!("{}: {e}", path.display()), None)
}

impl Io {
    /// Write lines; Checkfu frames are checked against the bundled extension schema first.
    async fn write(&self, link: &Link, lines: Vec<String>) {
        for line in lines {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && let Some(kind) = crate::schema::outbound_kind(&v)
                && let Err(e) = crate::schema::validate_frame(kind, &v)
            {
                link.protocol(
                    Level::Warn,
                    format!("outbound frame outside the Checkfu schema: {e}"),
                )
                .await;
            }
            if let Err(line) = self.agent.send(line).await {
                record(
                    &self.rec,
                    Dir::Note,
                    &format!("not sent, stdin is closed or not read: {line}"),
                );
            }
        }
    }
}

/// Deliver one mapping output: lines, events, then actions (which may produce more).
async fn deliver(io: &mut Io, mapper: &mut Mapper, link: &Link, out: Out) {
    let mut queue = VecDeque::from([out]);
    while let Some(out) = queue.pop_front() {
        io.write(link, out.lines).await;
        for e in out.events {
            link.send(e).await;
        }
        for a in out.actions {
            if let Some(more) = act(io, mapper, link, a).await {
                queue.push_back(more);
            }
        }
    }
}

async fn act(io: &mut Io, mapper: &mut Mapper, link: &Link, a: Action) -> Option<Out> {
    let reply = |id: &Value, v: Value| codec::result(id, v);
    let fail = |id: &Value, code: i64, m: String| codec::error(id, code, &m, None);
    match a {
        Action::ReadFile {
            id,
            path,
            line,
            limit,
        } => {
            let read = beneath(&io.root, &path, move |root, rel| {
                root.read_lines(rel, line, limit, READ_CAP)
            })
            .await;
            let line_out = match read {
                Ok(text) => {
                    link.system("fs", format!("read {} for the agent", path.display()))
                        .await;
                    reply(&id, json!({ "content": text }))
                }
                Err(e) => {
                    if let FsError::Outside(why) = &e {
                        link.protocol(Level::Warn, format!("fs/read_text_file refused: {why}"))
                            .await;
                    }
                    fs_error(&id, &path, &e)
                }
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::PrepareWrite { id, path, content } => {
            // The file as it is now, for the diff on the card (and the approval it may match).
            let old = beneath(&io.root, &path, |root, rel| {
                root.read_text_opt(rel, READ_CAP)
            })
            .await;
            match old {
                Ok(old) => Some(mapper.write_gate(id, path, content, old)),
                Err(e) => {
                    link.protocol(
                        Level::Warn,
                        format!("fs/write_text_file refused: {}: {e}", path.display()),
                    )
                    .await;
                    let e = match e {
                        // No diff can be shown for it, so no one can approve it.
                        FsError::TooLarge { .. } | FsError::NotText => FsError::Outside(format!(
                            "{e}: the change cannot be shown for approval"
                        )),
                        e => e,
                    };
                    io.write(link, vec![fs_error(&id, &path, &e)]).await;
                    None
                }
            }
        }
        Action::WriteFile {
            id,
            path,
            content,
            base,
        } => {
            // Opened again beneath the handle: the tree may have changed while the gate waited,
            // and the file must still be the one the card showed.
            let len = content.len();
            let written = beneath(&io.root, &path, move |root, rel| {
                root.write_atomic_if(rel, content.as_bytes(), Some(base))
            })
            .await;
            let line_out = match written {
                Ok(()) => {
                    link.system("fs", format!("wrote {} ({len} bytes)", path.display()))
                        .await;
                    reply(&id, json!({}))
                }
                Err(e) => {
                    link.protocol(
                        Level::Warn,
                        format!("fs/write_text_file failed: {}: {e}", path.display()),
                    )
                    .await;
                    fs_error(&id, &path, &e)
                }
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::AnswerAfterSnapshot { line, gate, paths } => {
            let mut files = Vec::new();
            for path in paths {
                let read = beneath(&io.root, &path, |root, rel| {
                    root.read_text_opt(rel, READ_CAP)
                })
                .await;
                // Unreadable now: left out, so a write to it meets its own gate.
                if let Ok(base) = read {
                    files.push((path, base));
                }
            }
            mapper.approved_files(&gate, files);
            io.write(link, vec![line]).await;
            None
        }
        Action::Note(text) => {
            record(&io.rec, Dir::Note, &text);
            None
        }
        Action::CreateTerminal { id, spec } => {
            // The working directory opened beneath the session's handle: a link in it that
            // leads outside is refused, and one that leads elsewhere inside would run the
            // command somewhere the card did not show, so it is refused too.
            let shown = spec.cwd.clone();
            let opened = beneath(&io.root, &spec.cwd, |root, rel| {
                let (real, dir) = root.open_dir(rel)?;
                if real != rel {
                    return Err(FsError::Outside(format!(
                        "the working directory resolves to {}, not the {} the card showed",
                        root.path().join(&real).display(),
                        root.path().join(rel).display()
                    )));
                }
                Ok(dir)
            })
            .await;
            let dir = match opened {
                Ok(d) => d,
                Err(e) => {
                    let m = format!("terminal/create refused: {}: {e}", shown.display());
                    link.protocol(Level::Warn, m.clone()).await;
                    io.write(link, vec![fail(&id, codec::REFUSED, m)]).await;
                    return None;
                }
            };
            match io.terms.create(&spec, dir) {
                Ok(tid) => Some(mapper.terminal_created(&id, &tid, &spec.command_line())),
                Err(e) => {
                    let m = format!("cannot start `{}`: {e}", spec.command_line());
                    io.write(link, vec![fail(&id, codec::INTERNAL_ERROR, m)])
                        .await;
                    None
                }
            }
        }
        Action::TerminalOutput { id, terminal_id } => {
            let line_out = match io.terms.output(&terminal_id) {
                Some(v) => reply(&id, v),
                None => unknown_terminal(&id, &terminal_id),
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::WaitForExit { id, terminal_id } => {
            match io.terms.wait(&terminal_id) {
                Some(_) if io.waits.available_permits() == 0 => {
                    // Each wait holds a task until its process exits: an agent must not be
                    // able to start them without bound.
                    let m =
                        format!("more than {MAX_WAITS} terminal/wait_for_exit requests pending");
                    mapper.waited(&id);
                    io.write(link, vec![fail(&id, codec::INTERNAL_ERROR, m)])
                        .await;
                }
                Some(fut) => {
                    // Answered when the process exits, without blocking the session: through
                    // the session loop, which frees the id in the mapper as it sends.
                    let tx = io.waited.clone();
                    let permit = io.waits.clone().try_acquire_owned().ok();
                    tokio::spawn(async move {
                        let _permit = permit;
                        let v = fut.await;
                        let _ = tx.send((id, v)).await;
                    });
                }
                None => {
                    mapper.waited(&id);
                    io.write(link, vec![unknown_terminal(&id, &terminal_id)])
                        .await
                }
            }
            None
        }
        Action::KillTerminal { id, terminal_id } => {
            let line_out = if io.terms.kill(&terminal_id) {
                reply(&id, json!({}))
            } else {
                unknown_terminal(&id, &terminal_id)
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::ReleaseTerminal { id, terminal_id } => match io.terms.release(&terminal_id) {
            Some(last) => {
                io.write(link, vec![reply(&id, json!({}))]).await;
                // Its row ends with what it printed and how it ended.
                Some(mapper.terminal_update(
                    &last.terminal_id,
                    &last.output,
                    last.truncated,
                    last.exit,
                ))
            }
            None => {
                io.write(link, vec![unknown_terminal(&id, &terminal_id)])
                    .await;
                None
            }
        },
    }
}

fn unknown_terminal(id: &Value, tid: &str) -> String {
    codec::error(
        id,
        codec::INVALID_PARAMS,
        &format!("unknown terminal {tid}"),
        None,
    )
}

async fn run(
    cfg: AcpConfig,
    events: mpsc::Sender<Stamped>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let link = Link { events };
    let mut argv = vec![cfg.program.display().to_string()];
    argv.extend(cfg.args.iter().cloned());
    let rec = link
        .open_recording(
            cfg.record.as_deref(),
            switchboard_core::BackendKind::Acp,
            &argv,
            &cfg.cwd,
        )
        .await;
    let cwd = std::fs::canonicalize(&cfg.cwd).unwrap_or_else(|_| cfg.cwd.clone());
    let spec = Spawn {
        program: cfg.program.clone(),
        args: cfg.args.clone(),
        cwd: cwd.clone(),
        env: cfg.env.clone(),
    };
    let agent = match Agent::spawn(&spec, rec.clone()) {
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
    // One message per waiter: a waiter that finds it full waits its turn.
    let (waited_tx, mut waited_rx) = mpsc::channel::<(Value, Value)>(16);
    let mut io = Io {
        waited: waited_tx,
        agent,
        rec: rec.clone(),
        terms: Terminals::new(),
        root: Root::open(&cwd).map(Arc::new).map_err(|e| {
            format!(
                "the session directory {} cannot be opened: {e}",
                cwd.display()
            )
        }),
        waits: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_WAITS)),
    };
    let mut mapper = Mapper::new(AcpOptions {
        cwd,
        builtin_tools: cfg.builtin_tools.clone(),
        output_schema: cfg.output_schema.clone(),
        withhold_fs: cfg.withhold_fs,
        withhold_terminal: cfg.withhold_terminal,
    });
    mapper.now = now_ms();
    if let Some(id) = &cfg.resume {
        mapper.resume_session(id, cfg.history_shown);
    }
    let init = mapper.initialize_line();
    io.write(&link, vec![init]).await;
    if let Some(p) = cfg.prompt.clone() {
        link.send(BackendEvent::Item {
            node: None,
            op: ItemOp::Push(ItemKind::User { text: p.clone() }),
        })
        .await;
        let out = mapper.command(&Command::Prompt(p));
        deliver(&mut io, &mut mapper, &link, out).await;
    }
    let mut stderr_tail = StderrTail::default();
    let mut exited = false;
    let mut stdout_open = true;
    let mut stderr_open = true;
    loop {
        tokio::select! {
            line = io.agent.stdout.recv(), if stdout_open => match line {
                Some(Err(big)) => {
                    link.protocol(Level::Error, big.to_string()).await;
                    // A request too long to read still gets its one answer.
                    if big.head.contains("\"method\":")
                        && let Some(id) = big.request_id("id", "params")
                    {
                        let m = format!("request not read: {big}");
                        io.write(&link, vec![codec::error(&id, INVALID_REQUEST, &m, None)]).await;
                    }
                }
                Some(Ok(line)) => {
                    mapper.now = now_ms();
                    let out = mapper.on_line(&line);
                    deliver(&mut io, &mut mapper, &link, out).await;
                }
                None => stdout_open = false,
            },
            line = io.agent.stderr.recv(), if stderr_open => match line {
                Some(line) => {
                    let line = line.unwrap_or_else(|big| big.to_string());
                    stderr_tail.push(&line);
                    link.send(BackendEvent::Stderr(line)).await;
                }
                None => stderr_open = false,
            },
            latest = io.terms.changed() => {
                // Each changed terminal read once (the terminal coalesces a burst of output).
                for u in latest {
                    let out = mapper.terminal_update(&u.terminal_id, &u.output, u.truncated, u.exit);
                    deliver(&mut io, &mut mapper, &link, out).await;
                }
            },
            // An agent that never answers `session/load` does not hold the session for ever.
            _ = load_deadline(mapper.load_deadline()), if mapper.load_deadline().is_some() => {
                mapper.now = now_ms();
                let out = mapper.load_overdue();
                deliver(&mut io, &mut mapper, &link, out).await;
            },
            Some((id, v)) = waited_rx.recv() => {
                mapper.waited(&id);
                io.write(&link, vec![codec::result(&id, v)]).await;
            },
            status = io.agent.child.wait(), if !exited && !stdout_open => {
                exited = true;
                link.exited(&status, &rec, &stderr_tail).await;
            }
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => break,
                Some(Command::Note(text)) => record(&rec, Dir::Note, &text),
                Some(c) => {
                    mapper.now = now_ms();
                    let out = mapper.command(&c);
                    deliver(&mut io, &mut mapper, &link, out).await;
                }
            },
        }
    }
    io.terms.kill_all();
    if !exited {
        // Every request still pending gets its one answer before stdin closes.
        let lines = mapper.shutdown_answers();
        io.write(&link, lines).await;
        // Give terminal waiters a moment to answer for their killed processes.
        let until = tokio::time::Instant::now() + Duration::from_millis(50);
        while mapper.waiting() > 0 {
            match tokio::time::timeout_at(until, waited_rx.recv()).await {
                Ok(Some((id, v))) => {
                    mapper.waited(&id);
                    io.write(&link, vec![codec::result(&id, v)]).await;
                }
                _ => break,
            }
        }
        let lines = mapper.waiting_answers();
        io.write(&link, lines).await;
        let status = io.agent.stop(SHUTDOWN_GRACE, &rec).await;
        link.exited(&status, &rec, &stderr_tail).await;
    }
}

/// Sleeps until `deadline_ms` (wall clock, as the mapper keeps time).
async fn load_deadline(deadline_ms: Option<u64>) {
    let wait = deadline_ms.map_or(0, |d| d.saturating_sub(now_ms()));
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_permission_replies_are_checked() {
        let ok = json!({"outcome":{"outcome":"selected","optionId":"allow"}});
        assert!(reply_check("RequestPermissionResponse", &ok).is_ok());
        assert!(reply_check("RequestPermissionResponse", &json!({"x":1})).is_err());
        assert!(reply_check("WriteTextFileResponse", &json!({})).is_err());
    }
}
