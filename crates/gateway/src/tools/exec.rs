//! exec, poll, input, stop: shell commands owned by the (workspace, session) that started
//! them, each started with the table's declared environment (`env::ExecEnv`, never ours
//! wholesale), input queued to a writer of its own (`feed`, never a blocking write here),
//! output kept in a bounded buffer, every command killed with its process group when the
//! table is dropped, so no command outlives switchboard.
//!
//! Not even a SIGKILL of switchboard: each running command has a watchdog, a tiny `sh` in
//! its own process group reading a pipe only we write to. When switchboard dies, however it
//! dies, the kernel closes the pipe, the watchdog's `read` ends, and it SIGKILLs the
//! command's group (reference §6.3: after a restart the commands from before are gone, and
//! their receipts are uncertain). When the command ends the watchdog is killed and reaped by
//! us, so it never signals a group id that may have been reused.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::env::ExecEnv;
use super::feed::Feed;
use crate::codec::{Code, Refusal};
use crate::validate::rel_path;
use switchboard_backend::contain::Root;

/// Output kept per command; older bytes are dropped and polls say from where.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// Most output one poll returns.
pub const POLL_PAGE: usize = 256 * 1024;
/// `timeoutMs` when the call gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Commands running at once; more are refused (a host cannot fork without bound).
pub const MAX_RUNNING: usize = 16;
/// Commands remembered (finished ones are forgotten oldest first beyond this).
pub const MAX_KEPT: usize = 256;
/// Between SIGTERM and SIGKILL on stop.
const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Running,
    Exited(i32),
    Signalled(i32),
    TimedOut,
    Stopped,
}

#[derive(Debug, Default)]
struct Output {
    bytes: Vec<u8>,
    /// Offset of `bytes[0]` in the whole output (bytes before it were dropped).
    base: usize,
}

impl Output {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > OUTPUT_CAP {
            let cut = self.bytes.len() - OUTPUT_CAP;
            self.bytes.drain(..cut);
            self.base += cut;
        }
    }
}

#[derive(Debug)]
struct Shared {
    out: Output,
    status: Status,
    /// Why it ended, when we ended it.
    ended_by: Option<Status>,
}

struct Cmd {
    seq: u64,
    owner: (String, String),
    pid: i32,
    stdin: Feed,
    shared: Arc<Mutex<Shared>>,
}

/// Every command this process started, by `commandId`, and the one environment they all
/// start with.
pub struct Commands {
    table: HashMap<String, Cmd>,
    seq: u64,
    env: Arc<ExecEnv>,
}

impl Default for Commands {
    /// The allowlist alone (`ExecEnv::baseline`): nothing the owner listed in `[gateway] env`.
    fn default() -> Commands {
        Commands::new(ExecEnv::baseline())
    }
}

fn kill_group(pid: i32, sig: i32) {
    // SAFETY: signalling a process group we created (setpgid in the child).
    unsafe {
        libc::kill(-pid, sig);
    }
}

/// The watchdog of the command whose group is `pgid` (shared with the agents' groups).
fn watchdog(pgid: i32) -> std::io::Result<std::process::Child> {
    switchboard_backend::watchdog::start(pgid)
}

impl Commands {
    /// A table whose commands get `env` (built once per channel at startup).
    pub fn new(env: Arc<ExecEnv>) -> Commands {
        Commands {
            table: HashMap::new(),
            seq: 0,
            env,
        }
    }

    /// The environment every command of this table starts with: `env().vars()` are the
    /// `(name, value)` pairs the card shows.
    pub fn env(&self) -> &ExecEnv {
        &self.env
    }

    /// A fresh lowercase UUIDv4, generated (and journaled by the caller) before the spawn.
    pub fn new_id() -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// The cwd checked before the receipt: it must be a directory beneath the root.
    pub fn check_cwd(root: &Root, args: &Map<String, Value>) -> Result<String, Refusal> {
        let cwd = args.get("cwd").and_then(Value::as_str).unwrap_or(".");
        let rel = rel_path(cwd)?;
        if !rel.as_os_str().is_empty() {
            root.dir()
                .open_dir(&rel)
                .map_err(|e| super::files::io_refusal(e, cwd))?;
        }
        Ok(cwd.to_string())
    }

    /// Room for one more running command, checked before the receipt so that a full table
    /// answers the transient `busy` and nothing is journaled.
    pub fn check_room(&self) -> Result<(), Refusal> {
        let running = self.table.values().filter(|c| c.running()).count();
        if running >= MAX_RUNNING {
            return Err(Refusal::new(
                Code::Busy,
                format!("{running} commands are running; stop or await one first"),
            ));
        }
        Ok(())
    }

    /// Start `sh -c command` in `cwd` (opened beneath the root; the child `fchdir`s to that
    /// handle, so a link swapped in after the check cannot move it), in its own process group.
    pub fn exec(
        &mut self,
        root: &Root,
        owner: (String, String),
        id: &str,
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        self.check_room()?;
        self.forget_old();
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let cwd = args.get("cwd").and_then(Value::as_str).unwrap_or(".");
        let timeout = args
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        let rel = rel_path(cwd)?;
        let dir = if rel.as_os_str().is_empty() {
            root.dir().try_clone()
        } else {
            root.dir().open_dir(&rel)
        }
        .map_err(|e| super::files::io_refusal(e, cwd))?;
        let fd = dir.as_fd().as_raw_fd();
        let mut c = Command::new("/bin/sh");
        self.env.apply(&mut c);
        c.arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls (fchdir, setpgid) between fork and exec.
        unsafe {
            c.pre_exec(move || {
                if libc::fchdir(fd) != 0 || libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = c
            .spawn()
            .map_err(|e| Refusal::new(Code::Failed, format!("could not start the command: {e}")))?;
        drop(dir);
        let pid = child.id() as i32;
        let watchdog = match watchdog(pid) {
            Ok(w) => w,
            Err(e) => {
                // Without its watchdog the command could outlive us: it does not run.
                kill_group(pid, libc::SIGKILL);
                let _ = child.wait();
                return Err(Refusal::new(
                    Code::Failed,
                    format!("could not start the command's watchdog: {e}"),
                ));
            }
        };
        let shared = Arc::new(Mutex::new(Shared {
            out: Output::default(),
            status: Status::Running,
            ended_by: None,
        }));
        let mut readers = Vec::new();
        for mut r in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let sh = shared.clone();
            readers.push(std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sh.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .out
                        .push(&buf[..n]);
                }
            }));
        }
        let stdin = match child.stdin.take().map(Feed::start) {
            Some(Ok(f)) => f,
            e => {
                // Without its writer the command could never be given input; it does not run.
                kill_group(pid, libc::SIGKILL);
                let _ = child.wait();
                let mut watchdog = watchdog;
                let _ = watchdog.kill();
                let _ = watchdog.wait();
                let why = match e {
                    Some(Err(e)) => e.to_string(),
                    _ => "no pipe".into(),
                };
                return Err(Refusal::new(
                    Code::Failed,
                    format!("could not start the command's input writer: {why}"),
                ));
            }
        };
        let sh = shared.clone();
        let feed = stdin.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(timeout);
            let status = loop {
                match child.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() >= deadline => {
                        sh.lock().unwrap_or_else(|p| p.into_inner()).ended_by =
                            Some(Status::TimedOut);
                        kill_group(pid, libc::SIGKILL);
                        break child.wait().ok();
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                    Err(_) => break None,
                }
            };
            feed.close("the command has ended");
            // A background child of the command can keep its output open after `sh` exits:
            // the timeout still holds for it, then the group goes (review finding: such a
            // command stayed `running` past its timeoutMs).
            while !readers.iter().all(|r| r.is_finished()) {
                if Instant::now() >= deadline {
                    kill_group(pid, libc::SIGKILL);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            for r in readers {
                let _ = r.join();
            }
            // Over: the watchdog goes, killed and reaped here (never left to signal later).
            let mut watchdog = watchdog;
            let _ = watchdog.kill();
            let _ = watchdog.wait();
            let mut g = sh.lock().unwrap_or_else(|p| p.into_inner());
            g.status = match (g.ended_by.clone(), status) {
                (Some(by), _) => by,
                (None, Some(s)) => match (s.code(), s.signal()) {
                    (Some(c), _) => Status::Exited(c),
                    (None, Some(sig)) => Status::Signalled(sig),
                    _ => Status::Exited(-1),
                },
                (None, None) => Status::Exited(-1),
            };
        });
        self.seq += 1;
        self.table.insert(
            id.to_string(),
            Cmd {
                seq: self.seq,
                owner,
                pid,
                stdin,
                shared,
            },
        );
        Ok(json!({"commandId": id, "cwd": cwd, "timeoutMs": timeout}))
    }

    /// A handle on command `id`'s output and status (`None`: no such command).
    pub fn watch(&self, id: &str) -> Option<Watch> {
        self.table.get(id).map(|c| Watch(c.shared.clone()))
    }

    /// Forget finished commands, oldest first, beyond `MAX_KEPT`.
    fn forget_old(&mut self) {
        while self.table.len() >= MAX_KEPT {
            let oldest = self
                .table
                .iter()
                .filter(|(_, c)| !c.running())
                .min_by_key(|(_, c)| c.seq)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => {
                    self.table.remove(&k);
                }
                None => break,
            }
        }
    }

    /// The command, if this (workspace, session) owns it.
    fn owned(&mut self, owner: &(String, String), id: &str) -> Result<&mut Cmd, Refusal> {
        match self.table.get_mut(id) {
            Some(c) if &c.owner == owner => Ok(c),
            _ => Err(Refusal::new(
                Code::CommandNotOwned,
                format!("command {id} was not started by this workspace session"),
            )),
        }
    }

    /// Step 10 for poll, input and stop.
    pub fn check_owned(&mut self, owner: &(String, String), id: &str) -> Result<(), Refusal> {
        self.owned(owner, id).map(|_| ())
    }

    /// Step 10 for input: owned, still running, and room in its input queue, checked before
    /// the receipt so that `busy` stays a transient answer, never a journaled one.
    pub fn check_input(
        &mut self,
        owner: &(String, String),
        args: &Map<String, Value>,
    ) -> Result<(), Refusal> {
        let id = command_id(args);
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        let c = self.owned(owner, id)?;
        if c.shared.lock().unwrap_or_else(|p| p.into_inner()).status != Status::Running {
            return Err(Refusal::new(
                Code::Failed,
                format!("command {id} has exited"),
            ));
        }
        c.stdin.room_for(text.len())
    }

    pub fn poll(
        &mut self,
        owner: &(String, String),
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let id = command_id(args);
        let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
        let c = self.owned(owner, id)?;
        let g = c.shared.lock().unwrap_or_else(|p| p.into_inner());
        let end = g.out.base + g.out.bytes.len();
        let from = offset.clamp(g.out.base, end);
        let to = (from + POLL_PAGE).min(end);
        let text =
            String::from_utf8_lossy(&g.out.bytes[from - g.out.base..to - g.out.base]).into_owned();
        let (pending, delivered) = c.stdin.progress();
        let (status, code) = match &g.status {
            Status::Running => ("running", Value::Null),
            Status::Exited(c) => ("exited", json!(c)),
            Status::Signalled(s) => ("signalled", json!(s)),
            Status::TimedOut => ("timed_out", Value::Null),
            Status::Stopped => ("stopped", Value::Null),
        };
        Ok(json!({
            "commandId": id,
            "status": status,
            "exitCode": code,
            "offset": from,
            "output": text,
            "nextOffset": to,
            // Nothing is lost silently: bytes before this offset were dropped from the buffer.
            "droppedBefore": if offset < g.out.base { json!(g.out.base) } else { Value::Null },
            "more": to < end,
            // What `workspace_input` queued: bytes still waiting, bytes the command was given.
            "inputPending": pending,
            "inputDelivered": delivered,
        }))
    }

    pub fn input(
        &mut self,
        owner: &(String, String),
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let id = command_id(args);
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        let c = self.owned(owner, id)?;
        if c.shared.lock().unwrap_or_else(|p| p.into_inner()).status != Status::Running {
            return Err(Refusal::new(
                Code::Failed,
                format!("command {id} has exited"),
            ));
        }
        // Queued, not yet written: `queued` is this call's bytes, `pending` all that waits;
        // the poll's `inputPending` and `inputDelivered` show the delivery.
        let pending = c.stdin.push(text.as_bytes())?;
        Ok(json!({"commandId": id, "queued": text.len(), "pending": pending}))
    }

    pub fn stop(
        &mut self,
        owner: &(String, String),
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let id = command_id(args);
        let c = self.owned(owner, id)?;
        let pid = c.pid;
        c.stdin.close("the command was stopped");
        {
            let mut g = c.shared.lock().unwrap_or_else(|p| p.into_inner());
            if g.status != Status::Running {
                return Ok(json!({"commandId": id, "stopped": false, "reason": "already ended"}));
            }
            g.ended_by = Some(Status::Stopped);
        }
        kill_group(pid, libc::SIGTERM);
        let sh = c.shared.clone();
        std::thread::spawn(move || {
            std::thread::sleep(GRACE);
            if sh.lock().unwrap_or_else(|p| p.into_inner()).status == Status::Running {
                kill_group(pid, libc::SIGKILL);
            }
        });
        Ok(json!({"commandId": id, "stopped": true}))
    }
}

/// A look at one command's output and status from outside the table, without its lock:
/// what the channel's watcher reads to show a command's output as it runs, whether or not
/// the host polls (the engine stays free for the host's calls meanwhile).
#[derive(Clone)]
pub struct Watch(Arc<Mutex<Shared>>);

/// What a `Watch` read: output after the offset asked, and the command's status.
#[derive(Debug, PartialEq)]
pub struct Seen {
    /// At most the `max` bytes asked for: the newest ones when more arrived.
    pub bytes: Vec<u8>,
    /// The offset to read from next time.
    pub next: usize,
    /// Output between the offset asked and `bytes` was not returned (dropped from the
    /// buffer, or past `max`).
    pub skipped: bool,
    pub status: Status,
}

impl Watch {
    /// Output from `offset` on, at most the last `max` bytes of it: O(what is returned).
    pub fn read(&self, offset: usize, max: usize) -> Seen {
        let g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let end = g.out.base + g.out.bytes.len();
        let from = offset.clamp(g.out.base, end).max(end.saturating_sub(max));
        Seen {
            bytes: g.out.bytes[from - g.out.base..].to_vec(),
            next: end,
            skipped: from > offset,
            status: g.status.clone(),
        }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// Two handles are equal when they look at the same command.
impl PartialEq for Watch {
    fn eq(&self, other: &Watch) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Cmd {
    fn running(&self) -> bool {
        self.shared.lock().unwrap_or_else(|p| p.into_inner()).status == Status::Running
    }
}

impl Drop for Commands {
    /// Never waits: each command's group is killed, and its input writer, closed when its
    /// `Feed` goes, ends within a tick on its own.
    fn drop(&mut self) {
        for c in self.table.values() {
            c.stdin.close("switchboard is shutting down");
            if c.shared.lock().unwrap_or_else(|p| p.into_inner()).status == Status::Running {
                kill_group(c.pid, libc::SIGKILL);
            }
        }
    }
}

/// The `commandId` argument of poll, input and stop (the schema requires it; a missing one
/// matches no command and is refused as unknown).
fn command_id(args: &Map<String, Value>) -> &str {
    args.get("commandId")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
