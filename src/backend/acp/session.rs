//! The live ACP backend: runs the agent, feeds its lines through the mapping, performs the
//! mapping's actions (files, terminals) and writes every answer through the single stdin writer.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::codec::{self, schema};
use super::mapping::{AcpOptions, Action, Mapper, Out};
use super::terminal::Terminals;
use crate::backend::Backend;
use crate::backend::link::{Link, StderrTail};
use crate::backend::process::{Agent, SharedRecorder, Spawn, record};
use crate::core::Msg;
use crate::core::msg::{BackendEvent, Command};
use crate::core::state::ReplyCheck;
use crate::core::transcript::{ItemKind, ItemOp, Level};
use crate::record::{Dir, now_ms};

pub use crate::backend::link::SHUTDOWN_GRACE;

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
    fn name(&self) -> &'static str {
        "acp"
    }

    fn root_name(&self) -> String {
        "agent".into()
    }

    fn reply_check(&self) -> ReplyCheck {
        reply_check
    }

    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Msg>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()> {
        tokio::spawn(run(self.config, events, commands))
    }
}

struct Io {
    agent: Agent,
    rec: SharedRecorder,
    terms: Terminals,
    /// The session directory, symlinks resolved.
    cwd: PathBuf,
    /// Outstanding `terminal/wait_for_exit` answers (each is a task until its process exits).
    waits: std::sync::Arc<tokio::sync::Semaphore>,
}

/// JSON-RPC "Invalid Request": the answer to a request line too long to read.
const INVALID_REQUEST: i64 = -32600;

/// The most `terminal/wait_for_exit` requests waiting at once.
const MAX_WAITS: usize = 64;

/// The mapping checks paths lexically; this also follows symlinks, so a link inside the
/// session directory cannot lead a read or write outside it. A path that does not exist yet
/// is judged by its nearest existing ancestor.
fn real_path_within(path: &Path, cwd: &Path) -> Result<(), String> {
    let mut probe = path.to_path_buf();
    let resolved = loop {
        match std::fs::canonicalize(&probe) {
            Ok(p) => break p,
            Err(_) => match probe.parent() {
                Some(parent) => probe = parent.to_path_buf(),
                None => return Err(format!("{} cannot be resolved", path.display())),
            },
        }
    };
    if resolved.starts_with(cwd) {
        Ok(())
    } else {
        Err(format!(
            "{} resolves to {}, outside the session directory {}",
            path.display(),
            resolved.display(),
            cwd.display()
        ))
    }
}

impl Io {
    /// Write lines; Checkfu frames are checked against the bundled extension schema first.
    async fn write(&self, link: &Link, lines: Vec<String>) {
        for line in lines {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && let Some(kind) = crate::schema_acp::outbound_kind(&v)
                && let Err(e) = crate::schema_acp::validate_frame(kind, &v)
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

fn read_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_string();
    }
    let start = line.unwrap_or(1).max(1) as usize - 1;
    let take = limit.map(|l| l as usize).unwrap_or(usize::MAX);
    text.split_inclusive('\n').skip(start).take(take).collect()
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
            if let Err(why) = real_path_within(&path, &io.cwd) {
                link.protocol(Level::Warn, format!("fs/read_text_file refused: {why}"))
                    .await;
                io.write(link, vec![fail(&id, codec::REFUSED, why)]).await;
                return None;
            }
            let line_out = match std::fs::read_to_string(&path) {
                Ok(t) => {
                    link.system("fs", format!("read {} for the agent", path.display()))
                        .await;
                    reply(&id, json!({"content": read_lines(&t, line, limit)}))
                }
                Err(e) => {
                    let code = if e.kind() == std::io::ErrorKind::NotFound {
                        -32002
                    } else {
                        codec::INTERNAL_ERROR
                    };
                    fail(&id, code, format!("cannot read {}: {e}", path.display()))
                }
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::PrepareWrite { id, path, content } => {
            if let Err(why) = real_path_within(&path, &io.cwd) {
                link.protocol(Level::Warn, format!("fs/write_text_file refused: {why}"))
                    .await;
                io.write(link, vec![fail(&id, codec::REFUSED, why)]).await;
                return None;
            }
            let old = std::fs::read_to_string(&path).ok();
            Some(mapper.write_gate(id, path, content, old))
        }
        Action::WriteFile { id, path, content } => {
            // Checked again: the tree may have changed while the gate waited.
            if let Err(why) = real_path_within(&path, &io.cwd) {
                io.write(link, vec![fail(&id, codec::REFUSED, why)]).await;
                return None;
            }
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let line_out = match std::fs::write(&path, content.as_bytes()) {
                Ok(()) => {
                    link.system(
                        "fs",
                        format!("wrote {} ({} bytes)", path.display(), content.len()),
                    )
                    .await;
                    reply(&id, json!({}))
                }
                Err(e) => fail(
                    &id,
                    codec::INTERNAL_ERROR,
                    format!("cannot write {}: {e}", path.display()),
                ),
            };
            io.write(link, vec![line_out]).await;
            None
        }
        Action::CreateTerminal { id, spec } => match io.terms.create(&spec) {
            Ok(tid) => Some(mapper.terminal_created(&id, &tid, &spec.command_line())),
            Err(e) => {
                let m = format!("cannot start `{}`: {e}", spec.command_line());
                io.write(link, vec![fail(&id, codec::INTERNAL_ERROR, m)])
                    .await;
                None
            }
        },
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
                    io.write(link, vec![fail(&id, codec::INTERNAL_ERROR, m)])
                        .await;
                }
                Some(fut) => {
                    // Answered when the process exits, without blocking the session.
                    let tx = io.agent.stdin.clone();
                    let permit = io.waits.clone().try_acquire_owned().ok();
                    tokio::spawn(async move {
                        let _permit = permit;
                        let v = fut.await;
                        if let Some(tx) = tx {
                            let _ = tx.send(codec::result(&id, v)).await;
                        }
                    });
                }
                None => {
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
        Action::ReleaseTerminal { id, terminal_id } => {
            let line_out = if io.terms.release(&terminal_id) {
                reply(&id, json!({}))
            } else {
                unknown_terminal(&id, &terminal_id)
            };
            io.write(link, vec![line_out]).await;
            None
        }
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
    events: mpsc::Sender<Msg>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let link = Link { events };
    let mut argv = vec![cfg.program.display().to_string()];
    argv.extend(cfg.args.iter().cloned());
    let rec = link
        .open_recording(cfg.record.as_deref(), "acp", &argv, &cfg.cwd)
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
    let mut io = Io {
        agent,
        rec: rec.clone(),
        terms: Terminals::new(),
        cwd: cwd.clone(),
        waits: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_WAITS)),
    };
    let mut mapper = Mapper::new(AcpOptions {
        cwd,
        builtin_tools: cfg.builtin_tools.clone(),
        output_schema: cfg.output_schema.clone(),
    });
    mapper.now = now_ms();
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
        tokio::time::sleep(Duration::from_millis(50)).await;
        let status = io.agent.stop(SHUTDOWN_GRACE, &rec).await;
        link.exited(&status, &rec, &stderr_tail).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_cannot_leave_the_session_directory() {
        let base = std::env::temp_dir().join(format!("sb-acp-links-{}", std::process::id()));
        let cwd = base.join("cwd");
        let outside = base.join("outside");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, cwd.join("link")).unwrap();
        let cwd = std::fs::canonicalize(&cwd).unwrap();
        assert!(real_path_within(&cwd.join("new/file.txt"), &cwd).is_ok());
        #[cfg(unix)]
        {
            let e = real_path_within(&cwd.join("link/secret.txt"), &cwd).unwrap_err();
            assert!(e.contains("outside the session directory"), "{e}");
            assert!(real_path_within(&cwd.join("link/new.txt"), &cwd).is_err());
        }
        std::fs::remove_dir_all(base).ok();
    }

    #[test]
    fn line_and_limit_select_lines() {
        let t = "a\nb\nc\nd\n";
        assert_eq!(read_lines(t, None, None), t);
        assert_eq!(read_lines(t, Some(2), Some(2)), "b\nc\n");
        assert_eq!(read_lines(t, None, Some(1)), "a\n");
    }

    #[test]
    fn raw_permission_replies_are_checked() {
        let ok = json!({"outcome":{"outcome":"selected","optionId":"allow"}});
        assert!(reply_check("RequestPermissionResponse", &ok).is_ok());
        assert!(reply_check("RequestPermissionResponse", &json!({"x":1})).is_err());
        assert!(reply_check("WriteTextFileResponse", &json!({})).is_err());
    }
}
