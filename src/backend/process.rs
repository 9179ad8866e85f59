//! A child agent process speaking line-delimited text: spawn, line readers, a single stdin
//! writer, recording of every line, and a graceful-then-forceful shutdown.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::record::{Dir, Recorder};

/// How to start the agent.
#[derive(Clone, Debug)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Extra environment; `None` values are removed from the inherited environment.
    pub env: Vec<(String, Option<String>)>,
}

pub type SharedRecorder = Arc<Mutex<Option<Recorder>>>;

pub fn record(rec: &SharedRecorder, dir: Dir, line: &str) {
    if let Ok(mut guard) = rec.lock()
        && let Some(r) = guard.as_mut()
        && let Err(e) = r.record(dir, line)
    {
        tracing::warn!("recording failed, stopping it: {e}");
        *guard = None;
    }
}

/// A running agent: its lines arrive on `stdout`/`stderr`, lines to send go to `stdin`.
pub struct Agent {
    pub child: Child,
    pub pid: Option<u32>,
    pub stdin: Option<mpsc::UnboundedSender<String>>,
    writer: Option<tokio::task::JoinHandle<()>>,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
}

impl Agent {
    pub fn spawn(spec: &Spawn, rec: SharedRecorder) -> std::io::Result<Agent> {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &spec.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        // Own process group, so shutdown can signal the agent and everything it started.
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let (in_tx, mut in_rx) = mpsc::unbounded_channel::<String>();
        let wrec = rec.clone();
        let writer = tokio::spawn(async move {
            // The single owner of stdin: lines can never interleave.
            let mut stdin = stdin;
            while let Some(line) = in_rx.recv().await {
                record(&wrec, Dir::Out, &line);
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                    record(
                        &wrec,
                        Dir::Note,
                        "stdin closed by the agent; line not delivered",
                    );
                    break;
                }
            }
            // Dropping stdin closes it: the agent sees end of input.
        });
        let (out_tx, out_rx) = mpsc::channel(1024);
        tokio::spawn(read_lines(stdout, out_tx, rec.clone(), Dir::In));
        let (err_tx, err_rx) = mpsc::channel(1024);
        tokio::spawn(read_lines(stderr, err_tx, rec, Dir::Err));
        Ok(Agent {
            child,
            pid,
            stdin: Some(in_tx),
            writer: Some(writer),
            stdout: out_rx,
            stderr: err_rx,
        })
    }

    /// Queue one line for stdin, or give it back when stdin is closed.
    pub fn try_send(&self, line: String) -> Result<(), String> {
        match &self.stdin {
            Some(s) => s.send(line).map_err(|e| e.0),
            None => Err(line),
        }
    }

    /// Close stdin after the queued lines are written, and wait until they are.
    pub async fn close_stdin(&mut self) {
        self.stdin = None;
        if let Some(w) = self.writer.take() {
            let _ = w.await;
        }
    }

    /// Signal the whole process group.
    pub fn signal(&self, sig: i32) {
        #[cfg(unix)]
        if let Some(pid) = self.pid {
            // SAFETY: killpg only sends a signal; a stale group id yields ESRCH.
            unsafe {
                libc::killpg(pid as libc::pid_t, sig);
            }
        }
    }

    /// Wait up to `grace` for the agent to exit by itself, then SIGTERM, then SIGKILL.
    pub async fn stop(
        &mut self,
        grace: Duration,
        rec: &SharedRecorder,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.close_stdin().await;
        record(rec, Dir::Note, "shutting down: stdin closed");
        if let Ok(r) = tokio::time::timeout(grace, self.child.wait()).await {
            return r;
        }
        self.signal(libc::SIGTERM);
        if let Ok(r) = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            return r;
        }
        self.signal(libc::SIGKILL);
        self.child.kill().await.ok();
        self.child.wait().await
    }
}

/// Read `\n`-terminated lines of any length; invalid UTF-8 is replaced, never fatal.
async fn read_lines(
    src: impl AsyncRead + Unpin,
    tx: mpsc::Sender<String>,
    rec: SharedRecorder,
    dir: Dir,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, src);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {
                // Only the line terminator goes: a `\r` before it is part of what was sent.
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                record(&rec, dir, &line);
                if tx.send(line).await.is_err() {
                    break;
                }
            }
            Err(e) => {
                record(&rec, Dir::Note, &format!("read error on {dir:?}: {e}"));
                break;
            }
        }
    }
}

/// Describe an exit status for people: "exit 0", "exit 1", "killed by signal 9".
pub fn describe_exit(status: &std::process::ExitStatus) -> (Option<i32>, String) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return (None, format!("killed by signal {sig}"));
        }
    }
    let code = status.code();
    (code, format!("exit status {}", code.unwrap_or(-1)))
}
