//! Client-side terminals (`terminal/*`): real processes with an output byte limit and an exit
//! status. Output changes are reported on a channel so the transcript can show them.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::{mpsc, watch};

use super::mapping::TerminalSpec;

/// Output kept when the agent gives no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

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
    fn append(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.limit {
            let mut cut = self.buf.len() - self.limit;
            // Keep the tail from a character boundary on.
            while cut < self.buf.len() && (self.buf[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.buf.drain(..cut);
            self.truncated = true;
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
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
    updates: mpsc::UnboundedSender<TermUpdate>,
}

async fn pump(
    mut src: impl AsyncRead + Unpin,
    shared: Arc<Mutex<Shared>>,
    tid: String,
    updates: mpsc::UnboundedSender<TermUpdate>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let u = {
                    let mut s = shared.lock().expect("terminal buffer");
                    s.append(&buf[..n]);
                    s.update(&tid)
                };
                let _ = updates.send(u);
            }
        }
    }
}

impl Terminals {
    pub fn new(updates: mpsc::UnboundedSender<TermUpdate>) -> Terminals {
        Terminals {
            next: 0,
            map: HashMap::new(),
            updates,
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
            .map(|l| l as usize)
            .unwrap_or(DEFAULT_OUTPUT_LIMIT);
        let shared = Arc::new(Mutex::new(Shared {
            limit,
            ..Shared::default()
        }));
        let (exit_tx, exit_rx) = watch::channel(false);
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let r1 = tokio::spawn(pump(out, shared.clone(), tid.clone(), self.updates.clone()));
        let r2 = tokio::spawn(pump(err, shared.clone(), tid.clone(), self.updates.clone()));
        let pid = child.id();
        let (sh, t, up) = (shared.clone(), tid.clone(), self.updates.clone());
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
            let u = {
                let mut s = sh.lock().expect("terminal buffer");
                s.exit = Some(exit);
                s.update(&t)
            };
            let _ = up.send(u);
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

    /// Kill (if running) and forget the terminal.
    pub fn release(&mut self, tid: &str) -> bool {
        let found = self.kill(tid);
        self.map.remove(tid);
        found
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
        let root = crate::contain::Root::open(&base.join("cwd")).unwrap();
        let (real, dir) = root.open_dir(Path::new("build")).unwrap();
        assert_eq!(real, PathBuf::from("build"));
        // Swap: build moves away, a link to outside takes its name.
        std::fs::rename(base.join("cwd/build"), base.join("cwd/moved")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("cwd/build")).unwrap();
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut terms = Terminals::new(tx);
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
}
