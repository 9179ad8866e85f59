//! Client-side terminals (`terminal/*`): real processes with an output byte limit and an exit
//! status. Output changes only mark a terminal as changed; the session reads each changed
//! terminal once per `UPDATE_INTERVAL`, so a flood costs neither memory nor a copy per read.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::mapping::TerminalSpec;

/// Output kept when the agent gives no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;
/// The most output kept per terminal whatever `outputByteLimit` asks for (an agent's number
/// must not size our memory); the result says `truncated` as for any limit.
pub const MAX_OUTPUT_LIMIT: usize = 4 * 1024 * 1024;
/// Changes of a terminal within this interval are shown as one update.
pub const UPDATE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Which terminals changed since the session last looked, and when it should look.
#[derive(Default)]
struct Changes {
    dirty: Mutex<(Vec<String>, Option<Instant>)>,
    notify: Notify,
}

impl Changes {
    fn mark(&self, tid: &str) {
        let mut d = self.dirty.lock().expect("terminal changes");
        if !d.0.iter().any(|t| t == tid) {
            d.0.push(tid.to_string());
        }
        if d.1.is_none() {
            d.1 = Some(Instant::now() + UPDATE_INTERVAL);
            self.notify.notify_one();
        }
    }
}

/// A change of one terminal, for the transcript.
#[derive(Clone, Debug)]
pub struct TermUpdate {
    pub terminal_id: String,
    pub output: String,
    pub truncated: bool,
    pub exit: Option<String>,
}

#[derive(Debug, Default)]
struct Shared {
    buf: Vec<u8>,
    truncated: bool,
    limit: usize,
    /// (exit code, signal name) once exited.
    exit: Option<(Option<i32>, Option<String>)>,
}

impl Shared {
    /// Append, keeping at most twice the limit: the front is dropped in large steps, so a
    /// flood costs amortised O(1) per byte instead of moving the whole buffer per read.
    fn append(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.limit {
            self.truncated = true;
            if self.buf.len() > 2 * self.limit.max(64 * 1024) {
                let cut = self.buf.len() - self.limit;
                self.buf.drain(..cut);
            }
        }
    }

    /// The last `limit` bytes, from a character boundary on.
    fn kept(&self) -> &[u8] {
        let mut cut = self.buf.len().saturating_sub(self.limit);
        while cut < self.buf.len() && (self.buf[cut] & 0b1100_0000) == 0b1000_0000 {
            cut += 1;
        }
        &self.buf[cut..]
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(self.kept()).into_owned()
    }

    fn exit_text(&self) -> Option<String> {
        self.exit.as_ref().map(|(code, sig)| match (code, sig) {
            (_, Some(s)) => format!("killed by {s}"),
            (Some(c), None) => format!("exit {c}"),
            (None, None) => "exited".into(),
        })
    }

    fn update(&self, tid: &str) -> TermUpdate {
        TermUpdate {
            terminal_id: tid.to_string(),
            output: self.text(),
            truncated: self.truncated,
            exit: self.exit_text(),
        }
    }
}

fn exit_status_json(exit: &(Option<i32>, Option<String>)) -> Value {
    json!({"exitCode": exit.0, "signal": exit.1})
}

fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        9 => "SIGKILL".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

struct Term {
    pid: Option<u32>,
    shared: Arc<Mutex<Shared>>,
    exited: watch::Receiver<bool>,
}

pub struct Terminals {
    next: u64,
    map: HashMap<String, Term>,
    changes: Arc<Changes>,
}

async fn pump(
    mut src: impl AsyncRead + Unpin,
    shared: Arc<Mutex<Shared>>,
    tid: String,
    changes: Arc<Changes>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                shared.lock().expect("terminal buffer").append(&buf[..n]);
                changes.mark(&tid);
            }
        }
    }
}

impl Default for Terminals {
    fn default() -> Self {
        Self::new()
    }
}

impl Terminals {
    pub fn new() -> Terminals {
        Terminals {
            next: 0,
            map: HashMap::new(),
            changes: Arc::default(),
        }
    }

    /// The terminals that changed, each read once, at most once per `UPDATE_INTERVAL`.
    /// Cancel-safe: what is not returned stays marked.
    pub async fn changed(&self) -> Vec<TermUpdate> {
        loop {
            let due = self.changes.dirty.lock().expect("terminal changes").1;
            match due {
                Some(at) => {
                    tokio::time::sleep_until(at).await;
                    let tids = {
                        let mut d = self.changes.dirty.lock().expect("terminal changes");
                        d.1 = None;
                        std::mem::take(&mut d.0)
                    };
                    let updates: Vec<TermUpdate> = tids
                        .iter()
                        .filter_map(|tid| {
                            let t = self.map.get(tid)?;
                            Some(t.shared.lock().expect("terminal buffer").update(tid))
                        })
                        .collect();
                    if !updates.is_empty() {
                        return updates;
                    }
                }
                None => self.changes.notify.notified().await,
            }
        }
    }

    /// Start the process in `dir` (the working directory, opened beneath the session's
    /// handle: the child changes into that very directory, never a path looked up again);
    /// returns its terminal id.
    pub fn create(&mut self, spec: &TerminalSpec, dir: std::fs::File) -> std::io::Result<String> {
        let mut cmd = if spec.args.is_empty() {
            // A whole shell line in `command` (what claude-code-acp sends).
            let mut c = Command::new("sh");
            c.arg("-c").arg(&spec.command);
            c
        } else {
            let mut c = Command::new(&spec.command);
            c.args(&spec.args);
            c
        };
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let fd = dir.as_raw_fd();
            // SAFETY: fchdir is async-signal-safe; `dir` outlives the spawn below, and the
            // descriptor (close-on-exec) stays open in the child until exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::fchdir(fd) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        #[cfg(not(unix))]
        cmd.current_dir(&spec.cwd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // The agent's command gets the owner's environment (the agent has it anyway) minus
        // switchboard's own variables and any secret we read (`child_env`); then what the
        // request sets, shown on its card.
        switchboard_backend::child_env::scrub(cmd.as_std_mut(), true);
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        drop(dir);
        self.next += 1;
        let tid = format!("term-{}", self.next);
        let limit = spec
            .output_byte_limit
            .map(|l| {
                usize::try_from(l)
                    .unwrap_or(usize::MAX)
                    .min(MAX_OUTPUT_LIMIT)
            })
            .unwrap_or(DEFAULT_OUTPUT_LIMIT);
        let shared = Arc::new(Mutex::new(Shared {
            limit,
            ..Shared::default()
        }));
        let (exit_tx, exit_rx) = watch::channel(false);
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let r1 = tokio::spawn(pump(out, shared.clone(), tid.clone(), self.changes.clone()));
        let r2 = tokio::spawn(pump(err, shared.clone(), tid.clone(), self.changes.clone()));
        let pid = child.id();
        let (sh, t, up) = (shared.clone(), tid.clone(), self.changes.clone());
        tokio::spawn(async move {
            let status = child.wait().await;
            // Output first, then the exit: readers end at EOF (bounded wait for stray children).
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
                let _ = r1.await;
                let _ = r2.await;
            })
            .await;
            let exit = match status {
                Ok(s) => {
                    #[cfg(unix)]
                    {
                        use std::os::unix::process::ExitStatusExt;
                        (s.code(), s.signal().map(signal_name))
                    }
                    #[cfg(not(unix))]
                    {
                        (s.code(), None)
                    }
                }
                Err(_) => (None, None),
            };
            sh.lock().expect("terminal buffer").exit = Some(exit);
            up.mark(&t);
            let _ = exit_tx.send(true);
        });
        self.map.insert(
            tid.clone(),
            Term {
                pid,
                shared,
                exited: exit_rx,
            },
        );
        Ok(tid)
    }

    /// The `terminal/output` result.
    pub fn output(&self, tid: &str) -> Option<Value> {
        let t = self.map.get(tid)?;
        let s = t.shared.lock().expect("terminal buffer");
        let mut v = json!({"output": s.text(), "truncated": s.truncated});
        if let Some(e) = &s.exit {
            v["exitStatus"] = exit_status_json(e);
        }
        Some(v)
    }

    /// A future resolving to the `terminal/wait_for_exit` result.
    pub fn wait(&self, tid: &str) -> Option<impl std::future::Future<Output = Value> + use<>> {
        let t = self.map.get(tid)?;
        let mut rx = t.exited.clone();
        let shared = t.shared.clone();
        Some(async move {
            while !*rx.borrow_and_update() {
                if rx.changed().await.is_err() {
                    break;
                }
            }
            let s = shared.lock().expect("terminal buffer");
            exit_status_json(&s.exit.clone().unwrap_or((None, None)))
        })
    }

    /// Kill the process group (the terminal stays until released).
    pub fn kill(&self, tid: &str) -> bool {
        let Some(t) = self.map.get(tid) else {
            return false;
        };
        if !*t.exited.borrow() {
            #[cfg(unix)]
            if let Some(pid) = t.pid {
                // SAFETY: killpg only sends a signal; a stale group id yields ESRCH.
                unsafe {
                    libc::killpg(pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
        true
    }

    /// Kill (if running) and forget the terminal; its last state, for its row (`None`: no
    /// such terminal). Read here because a released terminal is not read by `changed` any
    /// more: an agent that waits, reads and releases within one `UPDATE_INTERVAL` left its
    /// row at "running, no output yet" for good (issue 22 item 5).
    pub fn release(&mut self, tid: &str) -> Option<TermUpdate> {
        let mut last = self
            .map
            .get(tid)?
            .shared
            .lock()
            .expect("terminal buffer")
            .update(tid);
        if last.exit.is_none() {
            last.exit = Some("killed on release".into());
        }
        self.kill(tid);
        self.map.remove(tid);
        Some(last)
    }

    pub fn kill_all(&mut self) {
        let ids: Vec<String> = self.map.keys().cloned().collect();
        for id in ids {
            self.kill(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child runs in the directory opened beneath the session's handle, even when the
    /// path it was opened by now leads somewhere else (a link swapped in after the check).
    #[cfg(unix)]
    #[tokio::test]
    async fn the_command_runs_in_the_opened_directory_not_a_path_looked_up_again() {
        use std::path::{Path, PathBuf};
        let base = std::env::temp_dir().join(format!("sb-term-cwd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("cwd/build")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        let base = base.canonicalize().unwrap();
        let root = switchboard_backend::contain::Root::open(&base.join("cwd")).unwrap();
        let (real, dir) = root.open_dir(Path::new("build")).unwrap();
        assert_eq!(real, PathBuf::from("build"));
        // Swap: build moves away, a link to outside takes its name.
        std::fs::rename(base.join("cwd/build"), base.join("cwd/moved")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("cwd/build")).unwrap();
        let mut terms = Terminals::new();
        let spec = TerminalSpec {
            command: "pwd -P".into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: base.join("cwd/build"),
            output_byte_limit: None,
        };
        let tid = terms.create(&spec, dir).unwrap();
        let fut = terms.wait(&tid).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), fut)
            .await
            .unwrap();
        let out = terms.output(&tid).unwrap();
        assert_eq!(
            out["output"].as_str().unwrap().trim(),
            base.join("cwd/moved").display().to_string()
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn limit_keeps_the_tail_at_a_char_boundary() {
        let mut s = Shared {
            limit: 4,
            ..Shared::default()
        };
        s.append("abé".as_bytes());
        s.append("xy".as_bytes());
        assert!(s.truncated);
        assert_eq!(s.text(), "éxy");
    }

    fn spec(line: &str, limit: Option<u64>) -> TerminalSpec {
        TerminalSpec {
            command: line.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: std::env::temp_dir(),
            output_byte_limit: limit,
        }
    }

    /// A terminal gets our environment less any registered secret and `SWITCHBOARD_*`, plus
    /// what the request sets.
    #[tokio::test]
    async fn a_terminal_never_gets_a_secret_or_our_own_variables() {
        // A variable cargo sets for every test run and nothing reads at run time.
        assert!(std::env::var_os("CARGO_PKG_VERSION_PATCH").is_some());
        switchboard_backend::child_env::register_secret("CARGO_PKG_VERSION_PATCH");
        let mut terms = Terminals::new();
        let mut s = spec("env", None);
        s.env = vec![("ASKED".into(), "yes".into())];
        let tid = terms
            .create(&s, std::fs::File::open(std::env::temp_dir()).unwrap())
            .unwrap();
        let fut = terms.wait(&tid).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), fut)
            .await
            .unwrap();
        let out = terms.output(&tid).unwrap()["output"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            out.contains("\nASKED=yes\n") || out.starts_with("ASKED=yes\n"),
            "{out}"
        );
        assert!(out.contains("PATH="), "{out}");
        assert!(!out.contains("CARGO_PKG_VERSION_PATCH="), "{out}");
        assert!(!out.lines().any(|l| l.starts_with("SWITCHBOARD_")), "{out}");
    }

    /// Released right after its exit, before `changed` looked: the release hands back what
    /// it printed and how it ended, for its row; a running one reads as killed.
    #[tokio::test]
    async fn a_release_hands_back_the_last_state() {
        let mut terms = Terminals::new();
        let dir = || std::fs::File::open(std::env::temp_dir()).unwrap();
        let tid = terms
            .create(&spec("printf out; exit 4", None), dir())
            .unwrap();
        let fut = terms.wait(&tid).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), fut)
            .await
            .unwrap();
        let last = terms.release(&tid).unwrap();
        assert_eq!(
            (last.output.as_str(), last.exit.as_deref()),
            ("out", Some("exit 4"))
        );
        assert!(terms.release(&tid).is_none(), "released once");
        let tid = terms.create(&spec("sleep 30", None), dir()).unwrap();
        let last = terms.release(&tid).unwrap();
        assert_eq!(last.exit.as_deref(), Some("killed on release"));
    }

    #[tokio::test]
    async fn a_flood_is_coalesced_and_capped_whatever_the_limit_asked() {
        let mut terms = Terminals::new();
        // 64 MiB of output, with a limit far above what we keep.
        let tid = terms
            .create(
                &spec("head -c 67108864 /dev/zero", Some(u64::MAX)),
                std::fs::File::open(std::env::temp_dir()).unwrap(),
            )
            .unwrap();
        let mut updates = 0;
        let last = loop {
            let batch = tokio::time::timeout(std::time::Duration::from_secs(20), terms.changed())
                .await
                .expect("no terminal update");
            updates += batch.len();
            let u = batch.into_iter().last().unwrap();
            if u.exit.is_some() {
                break u;
            }
        };
        assert_eq!(last.terminal_id, tid);
        assert!(last.truncated);
        assert_eq!(last.output.len(), MAX_OUTPUT_LIMIT);
        // 8 KiB reads would have been 8192 updates of the whole buffer.
        assert!(updates < 1000, "{updates} updates");
        let out = terms.output(&tid).unwrap();
        assert_eq!(out["output"].as_str().unwrap().len(), MAX_OUTPUT_LIMIT);
        let held = terms.map[&tid].shared.lock().unwrap().buf.len();
        assert!(held <= 2 * MAX_OUTPUT_LIMIT, "{held} bytes held");
    }
}
