//! The real iii engine and a stand-in worker on it, for the real-engine tests
//! (`tests/iii_wire.rs`, `tests/iii_real.rs`). Include beside `common.rs`:
//! `#[path = "support/common.rs"] mod common;` and
//! `#[path = "support/real_engine.rs"] mod real_engine;`.
//!
//! - The engine binary is `III_ENGINE_BIN` when set, else `../shared/peers/iii-engine/iii`
//!   beside the repository (iii 0.23.0-rc.4, built from `iii-hq/iii`; no registry offers it).
//!   Missing, it goes through `common::require_or_skip`: a failure under `CI=true`.
//! - `Engine` runs it in a private scratch directory on free ports (or given ones), can be
//!   killed and started again on the same ports, and is killed however the test ends.
//! - `StandIn` runs `tests/peers/iii-worker/standin.py` (the harness, session-manager and
//!   approval gate, written on the iii authors' Python SDK) in the venv `tests/run.sh` makes.
#![allow(dead_code)]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::common::{manifest, require_or_skip};

/// What a test names when the engine is missing.
pub const ENGINE: &str = "the iii engine (III_ENGINE_BIN, else ../shared/peers/iii-engine/iii)";
/// What a test names when the stand-in worker's venv is missing.
pub const VENV: &str = "the iii SDK venv tests/peers/iii-worker/.venv (tests/run.sh makes it)";

/// The engine binary: `III_ENGINE_BIN` when set (and not empty), else the shared one beside
/// the repository; `None` under the skip rule when that file is missing.
pub fn engine_bin_or_skip(test: &str) -> Option<PathBuf> {
    let bin = std::env::var_os("III_ENGINE_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest("../shared/peers/iii-engine/iii"));
    require_or_skip(test, ENGINE, Some(bin).filter(|b| b.is_file()))
}

/// The stand-in worker's Python (the venv's), or `None` under the skip rule.
pub fn standin_python_or_skip(test: &str) -> Option<PathBuf> {
    let python = manifest("tests/peers/iii-worker/.venv/bin/python");
    require_or_skip(test, VENV, Some(python).filter(|p| p.is_file()))
}

/// A free loopback port (free when asked; the engine binds it a moment later).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The engine process of one test, in its own scratch directory, killed on drop.
pub struct Engine {
    bin: PathBuf,
    child: Option<Child>,
    pub dir: PathBuf,
    /// The open worker listener.
    pub port: u16,
    /// A second listener whose RBAC authentication always fails (its auth function does not
    /// exist).
    pub locked: u16,
    starts: u32,
}

impl Engine {
    /// Start `bin` on free ports in a scratch directory named after `name`.
    pub fn start(bin: &Path, name: &str) -> Engine {
        Engine::start_on(bin, name, free_port(), free_port())
    }

    /// Start `bin` with its open listener on `port` and the refusing one on `locked`. The
    /// config is the engine's own format (`engine/src/workers/config.rs`): a `workers:` list
    /// of `{name, config}`; `iii-worker-manager` is a worker WebSocket listener (a second
    /// entry is a second listener), `iii-pubsub` gives the `subscribe` trigger type and the
    /// `publish` function. Mandatory workers (configuration, observability, the `engine::*`
    /// functions) the engine adds itself.
    pub fn start_on(bin: &Path, name: &str, port: u16, locked: u16) -> Engine {
        let dir = std::env::temp_dir().join(format!("sb-iii-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.yaml"),
            format!(
                "workers:\n  - name: iii-worker-manager\n    config:\n      host: 127.0.0.1\n      port: {port}\n  - name: iii-worker-manager\n    config:\n      host: 127.0.0.1\n      port: {locked}\n      rbac:\n        auth_function_id: sbtest::no-such-auth\n  - name: iii-pubsub\n    config:\n      adapter:\n        name: local\n"
            ),
        )
        .unwrap();
        let mut e = Engine {
            bin: bin.to_path_buf(),
            child: None,
            dir,
            port,
            locked,
            starts: 0,
        };
        e.spawn();
        e
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let log =
            std::fs::File::create(self.dir.join(format!("engine-{}.log", self.starts))).unwrap();
        // The engine rewrites config.yaml on its first start (blocks move to its configuration
        // worker, under ./config); a restart reads what it left, like a real restart.
        let child = Command::new(&self.bin)
            .arg("--no-update-check")
            .arg("--config")
            .arg(self.dir.join("config.yaml"))
            .current_dir(&self.dir)
            // No telemetry from a test run, no daemons spawned beside the engine, and whatever
            // it keeps under $HOME kept in the scratch directory.
            .env("III_TELEMETRY_ENABLED", "false")
            .env("HOME", &self.dir)
            .env("IIIWORKER_DISABLE_BUILTIN_DAEMONS", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{} runs: {e}", self.bin.display()));
        self.child = Some(child);
    }

    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    pub fn locked_url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.locked)
    }

    /// Kill the engine (SIGKILL: no goodbye to anyone) and wait for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start it again on the same ports and scratch directory (after `kill`).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Until the open listener accepts a TCP connection, at most `within`.
    pub async fn listening(&self, within: Duration) -> bool {
        let end = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < end {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    /// The engine's log so far (every start), for failure messages.
    pub fn log(&self) -> String {
        (1..=self.starts)
            .map(|n| {
                std::fs::read_to_string(self.dir.join(format!("engine-{n}.log")))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n--- restart ---\n")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.kill();
        if !std::thread::panicking() {
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }
}

/// How a stand-in worker plays the harness and the approval gate (`standin.py --help`).
#[derive(Clone, Debug)]
pub struct Play {
    /// `current`, `legacy`, `unknown` or `none` (no gate at all).
    pub generation: &'static str,
    /// The hook the gate binds `approval::gate` on (`pre-trigger`, `pre-dispatch`, `none`).
    pub hook: &'static str,
    /// The hook trigger types the harness provides, comma-separated.
    pub harness_hooks: &'static str,
    pub sessions: u32,
    pub held: u32,
    /// Emit `pending-created` for the scripted held calls once started (else a subscriber
    /// learns of them only by listing).
    pub announce: bool,
    /// Answer a listing of held calls this long after taking it (a decision can overtake it).
    pub list_lag_ms: u64,
    /// The scripted sessions' epoch (ms; 0: a minute before it starts). A restarted worker
    /// given the same one holds the very same records (`pending_at` included).
    pub since_ms: u64,
}

impl Default for Play {
    fn default() -> Play {
        Play {
            generation: "current",
            hook: "pre-trigger",
            harness_hooks: "pre-trigger",
            sessions: 2,
            held: 2,
            announce: true,
            list_lag_ms: 0,
            since_ms: 0,
        }
    }
}

/// A running stand-in worker; killed on drop (its stdin closing ends it too).
pub struct StandIn {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// JSON lines: every invocation it received, every binding handed to it, every event it
    /// emitted.
    pub log: PathBuf,
    stderr: PathBuf,
}

impl StandIn {
    /// Start `standin.py` with `python` against `url`; its files go to `dir` under `name`.
    pub fn start(python: &Path, url: &str, play: &Play, dir: &Path, name: &str) -> StandIn {
        let log = dir.join(format!("{name}.jsonl"));
        let stderr = dir.join(format!("{name}.stderr"));
        let _ = std::fs::remove_file(&log);
        let mut child = Command::new(python)
            .arg(manifest("tests/peers/iii-worker/standin.py"))
            .args([
                "--url",
                url,
                "--generation",
                play.generation,
                "--hook",
                play.hook,
            ])
            .args(["--harness-hooks", play.harness_hooks])
            .args(["--sessions", &play.sessions.to_string()])
            .args(["--held", &play.held.to_string()])
            .args(["--list-lag-ms", &play.list_lag_ms.to_string()])
            .args(["--since-ms", &play.since_ms.to_string()])
            .args((!play.announce).then_some("--no-announce"))
            .arg("--log")
            .arg(&log)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{} runs standin.py: {e}", python.display()));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        StandIn {
            stdin: child.stdin.take(),
            child,
            lines,
            log,
            stderr,
        }
    }

    /// The next stdout line starting with `prefix`, at most `within`; panics (with the
    /// worker's stderr) otherwise.
    pub async fn line(&mut self, prefix: &str, within: Duration) -> String {
        let end = tokio::time::Instant::now() + within;
        loop {
            match self.lines.try_recv() {
                Ok(l) if l.starts_with(prefix) => return l,
                Ok(_) => continue,
                Err(mpsc::TryRecvError::Disconnected) => {
                    panic!("the stand-in exited before {prefix:?}:\n{}", self.stderr())
                }
                Err(mpsc::TryRecvError::Empty) => {}
            }
            if tokio::time::Instant::now() >= end {
                panic!(
                    "no {prefix:?} from the stand-in in {within:?}:\n{}",
                    self.stderr()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Until it printed `READY` (every function listed by the engine, held calls announced).
    pub async fn ready(&mut self) {
        self.line("READY", Duration::from_secs(40)).await;
    }

    /// Send one command line (`hold SESSION CALL`, `ready`, `bindings TYPE`); its `OK` answer.
    pub async fn command(&mut self, cmd: &str) -> String {
        let stdin = self.stdin.as_mut().expect("the stand-in is running");
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
        self.line("OK", Duration::from_secs(20)).await
    }

    /// Every line of its log, parsed.
    pub fn logged(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Until it logged an invocation of `function_id` at or after `since_ms` (epoch ms), at
    /// most `within`; whether it did.
    pub async fn invoked_since(&self, function_id: &str, since_ms: u64, within: Duration) -> bool {
        let end = tokio::time::Instant::now() + within;
        loop {
            let hit = self.logged().iter().any(|r| {
                r["kind"] == "invoke"
                    && r["function_id"] == function_id
                    && r["t"].as_u64().is_some_and(|t| t >= since_ms)
            });
            if hit || tokio::time::Instant::now() >= end {
                return hit;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The payloads of every invocation of `function_id` it received.
    pub fn invoked(&self, function_id: &str) -> Vec<Value> {
        self.logged()
            .into_iter()
            .filter(|r| r["kind"] == "invoke" && r["function_id"] == function_id)
            .map(|r| r["data"].clone())
            .collect()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Kill it (SIGKILL: its connections drop without a goodbye) and wait for it.
    pub fn kill(&mut self) {
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// End it with SIGTERM (its clean exit) and wait at most `within`; whether it exited
    /// with status 0 in time.
    pub async fn terminate(&mut self, within: Duration) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let end = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < end {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.kill();
    }
}
