//! exec, poll, input, stop: shell commands owned by the (workspace, session) that started
//! them, output kept in a bounded buffer, every command killed with its process group when
//! the table is dropped, so no command outlives switchboard.
//!
//! Not even a SIGKILL of switchboard: each running command has a watchdog, a tiny `sh` in
//! its own process group reading a pipe only we write to. When switchboard dies, however it
//! dies, the kernel closes the pipe, the watchdog's `read` ends, and it SIGKILLs the
//! command's group (reference §6.3: after a restart the commands from before are gone, and
//! their receipts are uncertain). When the command ends the watchdog is killed and reaped by
//! us, so it never signals a group id that may have been reused.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::backend::gateway::codec::{Code, Refusal};
use crate::backend::gateway::validate::rel_path;
use crate::contain::Root;

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
    stdin: Option<ChildStdin>,
    shared: Arc<Mutex<Shared>>,
}

/// Every command this process started, by `commandId`.
#[derive(Default)]
pub struct Commands {
    table: HashMap<String, Cmd>,
    seq: u64,
}

fn kill_group(pid: i32, sig: i32) {
    // SAFETY: signalling a process group we created (setpgid in the child).
    unsafe {
        libc::kill(-pid, sig);
    }
}

/// The watchdog of the command whose group is `pgid`: `sh` waiting for the end of a pipe we
/// hold (its write end closes with this process, however it ends), then SIGKILLing the group.
/// In its own process group, so the command's own group signals never reach it.
fn watchdog(pgid: i32) -> std::io::Result<std::process::Child> {
    let mut w = Command::new("/bin/sh");
    w.arg("-c")
        .arg(r#"read _ ; kill -KILL "-$1" 2>/dev/null"#)
        .arg("switchboard-watchdog")
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only setpgid (async-signal-safe) between fork and exec.
    unsafe {
        w.pre_exec(|| {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    w.spawn()
}

impl Commands {
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

    /// Start `sh -c command` in `cwd` (opened beneath the root; the child `fchdir`s to that
    /// handle, so a link swapped in after the check cannot move it), in its own process group.
    pub fn exec(
        &mut self,
        root: &Root,
        owner: (String, String),
        id: &str,
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let running = self.table.values().filter(|c| c.running()).count();
        if running >= MAX_RUNNING {
            return Err(Refusal::new(
                Code::Failed,
                format!("{running} commands are running; stop or await one first"),
            ));
        }
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
        let stdin = child.stdin.take();
        let sh = shared.clone();
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
        let Some(stdin) = c.stdin.as_mut() else {
            return Err(Refusal::new(
                Code::Failed,
                format!("command {id} has no input"),
            ));
        };
        stdin
            .write_all(text.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| {
                Refusal::new(
                    Code::Failed,
                    format!("could not write to command {id}: {e}"),
                )
            })?;
        Ok(json!({"commandId": id, "written": text.len()}))
    }

    pub fn stop(
        &mut self,
        owner: &(String, String),
        args: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let id = command_id(args);
        let c = self.owned(owner, id)?;
        let pid = c.pid;
        c.stdin = None;
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

impl Cmd {
    fn running(&self) -> bool {
        self.shared.lock().unwrap_or_else(|p| p.into_inner()).status == Status::Running
    }
}

impl Drop for Commands {
    fn drop(&mut self) {
        for c in self.table.values() {
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
mod tests {
    use super::*;

    fn root(name: &str) -> (std::path::PathBuf, Root) {
        let base = std::env::temp_dir().join(format!("sb-gw-exec-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("sub")).unwrap();
        (base.clone(), Root::open(&base).unwrap())
    }

    fn a(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn wait_done(c: &mut Commands, owner: &(String, String), id: &str) -> Value {
        for _ in 0..300 {
            let p = c.poll(owner, &a(json!({"commandId": id}))).unwrap();
            if p["status"] != "running" {
                return p;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("command did not end");
    }

    #[test]
    fn exec_runs_in_cwd_and_only_its_session_may_touch_it() {
        let (_b, root) = root("own");
        let mut c = Commands::default();
        let me = ("w".to_string(), "s1".to_string());
        let other = ("w".to_string(), "s2".to_string());
        let id = Commands::new_id();
        c.exec(
            &root,
            me.clone(),
            &id,
            &a(json!({"command": "pwd; read x; echo got $x", "cwd": "sub"})),
        )
        .unwrap();
        for e in [
            c.poll(&other, &a(json!({"commandId": id}))).unwrap_err(),
            c.input(&other, &a(json!({"commandId": id, "text": "hi\n"})))
                .unwrap_err(),
            c.stop(&other, &a(json!({"commandId": id}))).unwrap_err(),
        ] {
            assert_eq!(e.code, Code::CommandNotOwned);
        }
        c.input(&me, &a(json!({"commandId": id, "text": "hi\n"})))
            .unwrap();
        let p = wait_done(&mut c, &me, &id);
        assert_eq!(p["status"], "exited");
        assert_eq!(p["exitCode"], 0);
        let out = p["output"].as_str().unwrap();
        assert!(out.ends_with("/sub\ngot hi\n"), "{out}");
        assert!(Commands::check_cwd(&root, &a(json!({"cwd": "../"}))).is_err());
    }

    /// Whether `pid` is gone (a zombie waiting for init to reap it counts as gone).
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s.rsplit_once(')').is_some_and(|(_, rest)| {
                matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))
            }),
        }
    }

    /// The child half of the SIGKILL test: start a command that leaves a background process,
    /// then wait to be killed.
    #[test]
    fn sigkill_child() {
        let Ok(dir) = std::env::var("SB_GW_EXEC_SIGKILL_DIR") else {
            return;
        };
        let root = Root::open(std::path::Path::new(&dir)).unwrap();
        let mut c = Commands::default();
        c.exec(
            &root,
            ("w".to_string(), "s".to_string()),
            &Commands::new_id(),
            &a(json!({"command": "sleep 300 & echo $! > bg.tmp; mv bg.tmp bg.pid; echo $$ > sh.tmp; mv sh.tmp sh.pid; wait"})),
        )
        .unwrap();
        std::thread::sleep(Duration::from_secs(60));
    }

    /// No command outlives switchboard, even a SIGKILL of it: the watchdog ends the group.
    #[test]
    fn a_sigkill_of_switchboard_ends_its_commands() {
        let (base, _root) = root("sigkill");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "backend::gateway::tools::exec::tests::sigkill_child",
                "--exact",
                "--test-threads=1",
            ])
            .env("SB_GW_EXEC_SIGKILL_DIR", &base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let read_pid = |f: &str| -> Option<i32> {
            std::fs::read_to_string(base.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let mut pids = None;
        for _ in 0..500 {
            if let (Some(a), Some(b)) = (read_pid("sh.pid"), read_pid("bg.pid")) {
                pids = Some((a, b));
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (sh, bg) = pids.expect("the command started");
        assert!(!gone(sh) && !gone(bg));
        child.kill().unwrap(); // SIGKILL: no destructor runs
        child.wait().unwrap();
        for _ in 0..250 {
            if gone(sh) && gone(bg) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Do not leave them behind on failure either.
        kill_group(sh, libc::SIGKILL);
        panic!("the command (sh {sh}, background {bg}) outlived a SIGKILL of switchboard");
    }

    #[test]
    fn stop_and_timeout_end_the_whole_group() {
        let (_b, root) = root("stop");
        let mut c = Commands::default();
        let me = ("w".to_string(), "s".to_string());
        let id = Commands::new_id();
        c.exec(
            &root,
            me.clone(),
            &id,
            &a(json!({"command": "sleep 30 & sleep 30"})),
        )
        .unwrap();
        c.stop(&me, &a(json!({"commandId": id}))).unwrap();
        assert_eq!(wait_done(&mut c, &me, &id)["status"], "stopped");
        let id2 = Commands::new_id();
        c.exec(
            &root,
            me.clone(),
            &id2,
            &a(json!({"command": "sleep 30", "timeoutMs": 1000})),
        )
        .unwrap();
        assert_eq!(wait_done(&mut c, &me, &id2)["status"], "timed_out");
    }

    #[test]
    fn running_commands_are_capped() {
        let (_b, root) = root("cap");
        let mut c = Commands::default();
        let me = ("w".to_string(), "s".to_string());
        for _ in 0..MAX_RUNNING {
            c.exec(
                &root,
                me.clone(),
                &Commands::new_id(),
                &a(json!({"command": "sleep 30"})),
            )
            .unwrap();
        }
        let e = c
            .exec(
                &root,
                me.clone(),
                &Commands::new_id(),
                &a(json!({"command": "true"})),
            )
            .unwrap_err();
        assert_eq!(e.code, Code::Failed);
        drop(c); // kills them all
    }

    #[test]
    fn output_is_bounded_and_says_what_was_dropped() {
        let mut o = Output::default();
        o.push(&vec![b'a'; OUTPUT_CAP]);
        o.push(b"bcd");
        assert_eq!(o.bytes.len(), OUTPUT_CAP);
        assert_eq!(o.base, 3);
        assert!(o.bytes.ends_with(b"bcd"));
    }
}
