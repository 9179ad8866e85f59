//! A child agent process speaking line-delimited text: spawn, line readers, a single stdin
//! writer, recording of every line, and a graceful-then-forceful shutdown.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use switchboard_record::{Dir, Recorder};

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
        // The session goes on unrecorded; the UI says so for the rest of it.
        tracing::warn!("recording failed, stopping it: {e}");
        r.failed(&e);
        *guard = None;
    }
}

/// The longest line accepted from an agent. Longer lines are a protocol error: recorded as a
/// note with their length and first bytes, then skipped up to the next newline.
pub const MAX_LINE: usize = 8 * 1024 * 1024;
/// How much of an oversize line is kept for the record.
pub const OVERSIZE_HEAD: usize = 512;
/// Bytes of read-but-unhandled lines each reader may hold: a slow consumer stops the reader,
/// and the agent blocks on its pipe instead of our memory growing.
pub const LINE_BUDGET: usize = 2 * MAX_LINE;
/// Lines queued for the agent's stdin; a full queue makes the sender wait (backpressure).
pub const STDIN_QUEUE: usize = 256;
/// How long a line waits for room in a full stdin queue before the agent counts as not reading.
pub const STDIN_STALL: Duration = Duration::from_secs(2);
/// How long stopping waits for queued lines to reach an agent that may have stopped reading.
pub const STDIN_FLUSH: Duration = Duration::from_millis(500);

/// A line longer than `MAX_LINE`: what was seen of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oversize {
    pub stream: &'static str,
    pub bytes: usize,
    pub head: String,
}

impl std::fmt::Display for Oversize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line of {} bytes on {} exceeds the {} byte limit; dropped (starts {:?})",
            self.bytes, self.stream, MAX_LINE, self.head
        )
    }
}

impl Oversize {
    /// The id of the request this line starts, when its head shows one: `"key":` followed by
    /// a string or an integer, at the top level before `nested` (the request body) opens. An
    /// oversize request still gets its one answer (an error), so the agent is not left waiting.
    pub fn request_id(&self, key: &str, nested: &str) -> Option<serde_json::Value> {
        let head = self.head.as_str();
        let at = head.find(&format!("\"{key}\":"))?;
        if head.find(&format!("\"{nested}\":")).is_some_and(|n| n < at) {
            return None;
        }
        let rest = head[at + key.len() + 3..].trim_start();
        if rest.starts_with('"') {
            // The string up to its closing quote (escapes skipped), decoded by serde.
            let bytes = rest.as_bytes();
            let mut i = 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return serde_json::from_str(&rest[..=i]).ok(),
                    _ => i += 1,
                }
            }
            None
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(rest.len());
            // A number cut off by the head's end is not trusted.
            if end == rest.len() {
                return None;
            }
            rest[..end].parse::<i64>().ok().map(serde_json::Value::from)
        }
    }
}

/// Lines from one of the agent's streams, each holding its share of the reader's byte budget
/// until it is taken.
pub struct Lines {
    rx: mpsc::Receiver<(Result<String, Oversize>, OwnedSemaphorePermit)>,
}

impl Lines {
    /// The next line (or oversize report); `None` at end of stream.
    pub async fn recv(&mut self) -> Option<Result<String, Oversize>> {
        // The permit drops here: the reader may read on.
        self.rx.recv().await.map(|(line, _permit)| line)
    }
}

/// Bytes of lines queued for the agent's stdin and not yet written.
pub const STDIN_BUDGET: usize = 2 * MAX_LINE;

/// The queue to the agent's stdin, bounded in lines and bytes. Clones share the queue.
#[derive(Clone)]
pub struct Stdin {
    tx: mpsc::Sender<(String, OwnedSemaphorePermit)>,
    budget: Arc<Semaphore>,
    /// A send found no room for `STDIN_STALL`: the agent is not reading its stdin.
    stalled: Arc<AtomicBool>,
}

impl Stdin {
    /// Queue one line, or give it back when stdin is closed or not read. A full queue makes
    /// the caller wait (backpressure on an agent that floods requests) up to `STDIN_STALL`;
    /// after that the agent counts as not reading and lines are refused at once until there
    /// is room again, so nothing (shutdown answers included) can hang on it.
    pub async fn send(&self, line: String) -> Result<(), String> {
        let cost = line.len().clamp(1, STDIN_BUDGET) as u32;
        if self.stalled.load(Ordering::Relaxed) {
            let Ok(permit) = self.budget.clone().try_acquire_many_owned(cost) else {
                return Err(line);
            };
            return match self.tx.try_send((line, permit)) {
                Ok(()) => {
                    self.stalled.store(false, Ordering::Relaxed);
                    Ok(())
                }
                Err(e) => Err(e.into_inner().0),
            };
        }
        let room = async {
            let permit = self.budget.clone().acquire_many_owned(cost).await.ok()?;
            let slot = self.tx.reserve().await.ok()?;
            Some((permit, slot))
        };
        match tokio::time::timeout(STDIN_STALL, room).await {
            Ok(Some((permit, slot))) => {
                slot.send((line, permit));
                Ok(())
            }
            Ok(None) => Err(line),
            Err(_) => {
                self.stalled.store(true, Ordering::Relaxed);
                Err(line)
            }
        }
    }
}

/// A running agent: its lines arrive on `stdout`/`stderr`, lines to send go to `stdin`.
pub struct Agent {
    pub child: Child,
    pub pid: Option<u32>,
    pub stdin: Option<Stdin>,
    writer: Option<tokio::task::JoinHandle<()>>,
    pub stdout: Lines,
    pub stderr: Lines,
    /// The process group is known to be empty (signalled and drained): nothing to do on drop.
    group_gone: bool,
    /// Kills the group if we die without doing it (SIGKILL of a host): `watchdog.rs`.
    watchdog: Option<std::process::Child>,
    /// The agent's own cgroup, where there can be one: it holds what left the group.
    cgroup: Option<crate::cgroup::Cgroup>,
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
        // The owner's environment (an agent needs its credentials), minus any secret we read
        // (`child_env`: a gateway token of another session of this workspace).
        crate::child_env::scrub(cmd.as_std_mut(), false);
        for (k, v) in &spec.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        // Own process group, so shutdown can signal the agent and everything it started.
        #[cfg(unix)]
        cmd.process_group(0);
        // And its own cgroup where ours is delegated to us: what leaves the group (`setsid`)
        // stays in it (`cgroup.rs`).
        let mut cgroup = crate::cgroup::Cgroup::create();
        if let Some(fd) = cgroup.as_ref().and_then(crate::cgroup::Cgroup::enter_fd) {
            // SAFETY: `enter` is one write(2), async-signal-safe, to a descriptor we opened.
            unsafe {
                cmd.pre_exec(move || {
                    crate::cgroup::enter(fd);
                    Ok(())
                });
            }
        }
        let spawned = cmd.spawn();
        if let Some(cg) = cgroup.as_mut() {
            cg.started();
        }
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                if let Some(cg) = &cgroup {
                    cg.remove();
                }
                return Err(e);
            }
        };
        let pid = child.id();
        // The agent did not get into its cgroup: without it, the watchdog walks the tree.
        if let (Some(cg), Some(p)) = (&cgroup, pid)
            && !cg.holds(p)
        {
            cg.remove();
            cgroup = None;
        }
        let watchdog = match pid.map(|p| {
            crate::watchdog::start_in(p as i32, cgroup.as_ref().map(crate::cgroup::Cgroup::dir))
        }) {
            Some(Ok(w)) => Some(w),
            Some(Err(e)) => {
                // Without its watchdog the agent could outlive a killed switchboard: it does
                // not run.
                if let Some(p) = pid {
                    // SAFETY: signalling the group we just created.
                    unsafe {
                        libc::kill(-(p as i32), libc::SIGKILL);
                    }
                }
                if let Some(cg) = &cgroup {
                    cg.kill();
                }
                return Err(std::io::Error::other(format!(
                    "could not start the agent's watchdog: {e}"
                )));
            }
            None => None,
        };
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let (in_tx, mut in_rx) = mpsc::channel::<(String, OwnedSemaphorePermit)>(STDIN_QUEUE);
        let wrec = rec.clone();
        let writer = tokio::spawn(async move {
            // The single owner of stdin: lines can never interleave.
            let mut stdin = stdin;
            while let Some((line, _permit)) = in_rx.recv().await {
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
        let stdout = spawn_reader(stdout, rec.clone(), Dir::In, "stdout");
        let stderr = spawn_reader(stderr, rec, Dir::Err, "stderr");
        Ok(Agent {
            child,
            pid,
            stdin: Some(Stdin {
                tx: in_tx,
                budget: Arc::new(Semaphore::new(STDIN_BUDGET)),
                stalled: Arc::new(AtomicBool::new(false)),
            }),
            writer: Some(writer),
            stdout,
            stderr,
            group_gone: false,
            watchdog,
            cgroup,
        })
    }

    /// Queue one line for stdin, or give it back when stdin is closed or not read.
    pub async fn send(&self, line: String) -> Result<(), String> {
        match &self.stdin {
            Some(s) => s.send(line).await,
            None => Err(line),
        }
    }

    /// Close stdin after the queued lines are written, waiting at most `limit`: an agent that
    /// stopped reading must not hold up its own shutdown. Returns whether everything was written.
    pub async fn close_stdin(&mut self, limit: Duration) -> bool {
        self.stdin = None;
        let Some(mut w) = self.writer.take() else {
            return true;
        };
        match tokio::time::timeout(limit, &mut w).await {
            Ok(_) => true,
            Err(_) => {
                // Dropping the writer drops the pipe: the agent sees end of input.
                w.abort();
                let _ = w.await;
                false
            }
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

    /// Whether any process of the agent's group is still alive (zombies included).
    fn group_alive(&self) -> bool {
        #[cfg(unix)]
        if let Some(pid) = self.pid {
            // SAFETY: signal 0 only checks for existence.
            return unsafe { libc::killpg(pid as libc::pid_t, 0) } == 0;
        }
        false
    }

    /// Wait up to `grace` for the agent to exit by itself, then SIGTERM, then SIGKILL, always
    /// to the whole process group; every wait is bounded. Whatever the agent started and left
    /// behind (tool children, MCP servers) is signalled too.
    pub async fn stop(
        &mut self,
        grace: Duration,
        rec: &SharedRecorder,
    ) -> std::io::Result<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + grace;
        let flushed = self.close_stdin(grace.min(STDIN_FLUSH)).await;
        record(
            rec,
            Dir::Note,
            if flushed {
                "shutting down: stdin closed"
            } else {
                "shutting down: stdin closed with lines unwritten (the agent stopped reading)"
            },
        );
        let status = match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(r) => r,
            Err(_) => {
                self.signal(libc::SIGTERM);
                match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
                    Ok(r) => r,
                    Err(_) => {
                        self.signal(libc::SIGKILL);
                        let _ = self.child.start_kill();
                        match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await
                        {
                            Ok(r) => r,
                            Err(_) => Err(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                "the agent did not die after SIGKILL",
                            )),
                        }
                    }
                }
            }
        };
        self.reap_group().await;
        status
    }

    /// The leader is gone: end what it left in its group (SIGTERM, then SIGKILL after 1 s),
    /// and in its cgroup what left the group.
    async fn reap_group(&mut self) {
        if self.group_alive() {
            self.signal(libc::SIGTERM);
            let until = tokio::time::Instant::now() + Duration::from_secs(1);
            while self.group_alive() && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            self.signal(libc::SIGKILL);
        }
        self.group_gone = true;
        if let Some(cg) = &self.cgroup {
            if cg.populated() {
                cg.kill();
            }
            // SIGKILLed processes leave it within moments; one left is removed on the way
            // out (`cgroup::sweep_ours`).
            let until = tokio::time::Instant::now() + Duration::from_secs(1);
            while !cg.remove() && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

impl Drop for Agent {
    /// Every path out, including a runtime dropped mid-shutdown: the whole group gets SIGKILL
    /// (`kill_on_drop` alone would reach only the leader and orphan its children).
    fn drop(&mut self) {
        if !self.group_gone {
            self.signal(libc::SIGKILL);
        }
        if let Some(cg) = &self.cgroup
            && !cg.remove()
        {
            // Not empty: end what is in it (removed on the way out, `cgroup::sweep_ours`).
            cg.kill();
        }
        if let Some(w) = self.watchdog.take() {
            crate::watchdog::stop(w);
        }
    }
}

fn spawn_reader(
    src: impl AsyncRead + Unpin + Send + 'static,
    rec: SharedRecorder,
    dir: Dir,
    stream: &'static str,
) -> Lines {
    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(read_lines(src, tx, rec, dir, stream));
    Lines { rx }
}

/// How one line under construction ends up.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// Bytes of a line that outgrew `MAX_LINE` (its head stays in `buf`).
    over: Option<usize>,
}

impl Pending {
    fn take(&mut self, bytes: &[u8]) {
        match &mut self.over {
            Some(n) => *n += bytes.len(),
            None if self.buf.len() + bytes.len() > MAX_LINE => {
                self.over = Some(self.buf.len() + bytes.len());
                let keep = OVERSIZE_HEAD
                    .saturating_sub(self.buf.len())
                    .min(bytes.len());
                self.buf.extend_from_slice(&bytes[..keep]);
                self.buf.truncate(OVERSIZE_HEAD);
                // Give the memory back: the line may have been close to the limit.
                self.buf.shrink_to_fit();
            }
            None => self.buf.extend_from_slice(bytes),
        }
    }

    fn finish(&mut self, stream: &'static str) -> Result<String, Oversize> {
        let buf = std::mem::take(&mut self.buf);
        match self.over.take() {
            Some(bytes) => Err(Oversize {
                stream,
                bytes,
                head: String::from_utf8_lossy(&buf).into_owned(),
            }),
            None => Ok(String::from_utf8_lossy(&buf).into_owned()),
        }
    }
}

/// Read `\n`-terminated lines up to `MAX_LINE` bytes; invalid UTF-8 is replaced, never fatal.
/// At most `LINE_BUDGET` bytes of lines wait in the channel.
async fn read_lines(
    src: impl AsyncRead + Unpin,
    tx: mpsc::Sender<(Result<String, Oversize>, OwnedSemaphorePermit)>,
    rec: SharedRecorder,
    dir: Dir,
    stream: &'static str,
) {
    let budget = Arc::new(Semaphore::new(LINE_BUDGET));
    let mut reader = BufReader::with_capacity(64 * 1024, src);
    let mut line = Pending::default();
    loop {
        let (used, complete) = match reader.fill_buf().await {
            Ok([]) => {
                // A last line without a newline still counts.
                if line.buf.is_empty() && line.over.is_none() {
                    break;
                }
                (0, true)
            }
            Ok(chunk) => match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    line.take(&chunk[..i]);
                    (i + 1, true)
                }
                None => {
                    line.take(chunk);
                    (chunk.len(), false)
                }
            },
            Err(e) => {
                record(&rec, Dir::Note, &format!("read error on {dir:?}: {e}"));
                break;
            }
        };
        reader.consume(used);
        if !complete {
            continue;
        }
        let item = line.finish(stream);
        let cost = match &item {
            Ok(l) => {
                record(&rec, dir, l);
                l.len()
            }
            Err(big) => {
                record(&rec, Dir::Note, &big.to_string());
                big.head.len()
            }
        };
        let permits = cost.clamp(1, LINE_BUDGET) as u32;
        let Ok(permit) = budget.clone().acquire_many_owned(permits).await else {
            break;
        };
        if tx.send((item, permit)).await.is_err() {
            break;
        }
        if used == 0 {
            break; // end of stream after the last unterminated line
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

#[cfg(test)]
mod tests {
    use super::*;

    fn no_recorder() -> SharedRecorder {
        Arc::new(Mutex::new(None))
    }

    /// Whether `pid` is gone (or a zombie nobody needs to wait for).
    fn dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    async fn eventually_dead(pid: i32, within: Duration) -> bool {
        let until = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < until {
            if dead(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        dead(pid)
    }

    /// An agent that never reads stdin and leaves a grandchild; prints the grandchild's pid.
    fn stubborn(dir: &std::path::Path) -> Spawn {
        Spawn {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "trap '' TERM; sleep 60 & echo $!; while :; do sleep 1; done".into(),
            ],
            cwd: dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    #[tokio::test]
    async fn oversize_lines_are_reported_and_skipped() {
        let mut input = b"first\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.extend_from_slice(b"\nlast");
        let (tx, rx) = mpsc::channel(4);
        let task = tokio::spawn(read_lines(
            std::io::Cursor::new(input),
            tx,
            no_recorder(),
            Dir::In,
            "stdout",
        ));
        let mut lines = Lines { rx };
        assert_eq!(lines.recv().await, Some(Ok("first".into())));
        let big = lines.recv().await.unwrap().unwrap_err();
        assert_eq!(big.bytes, MAX_LINE + 10);
        assert_eq!(big.head, "x".repeat(OVERSIZE_HEAD));
        assert!(
            big.to_string()
                .contains(&format!("{} bytes", MAX_LINE + 10))
        );
        assert_eq!(lines.recv().await, Some(Ok("last".into())));
        assert_eq!(lines.recv().await, None);
        task.await.unwrap();
    }

    fn big(head: &str) -> Oversize {
        Oversize {
            stream: "stdout",
            bytes: MAX_LINE + 1,
            head: head.into(),
        }
    }

    #[test]
    fn an_oversize_request_shows_its_id_when_the_head_holds_it() {
        let claude = big(r#"{"type":"control_request","request_id":"r\"1","request":{"subtype":"#);
        assert_eq!(
            claude.request_id("request_id", "request"),
            Some(serde_json::json!("r\"1"))
        );
        let acp = big(r#"{"jsonrpc":"2.0","id":42,"method":"fs/write_text_file","params":{"#);
        assert_eq!(acp.request_id("id", "params"), Some(serde_json::json!(42)));
        // An id inside the body is not the request's.
        let nested = big(r#"{"jsonrpc":"2.0","method":"x","params":{"id":7,"#);
        assert_eq!(nested.request_id("id", "params"), None);
        // Cut off by the end of the head: not trusted.
        assert_eq!(big(r#"{"id":12"#).request_id("id", "params"), None);
        assert_eq!(big(r#"{"id":"abc"#).request_id("id", "params"), None);
    }

    #[tokio::test]
    async fn unread_lines_are_bounded_in_bytes() {
        // 64 lines of 1 MiB and nobody receiving: the reader stops at the byte budget.
        let line = format!("{}\n", "y".repeat(1024 * 1024));
        let input = line.repeat(64);
        let (tx, mut rx) = mpsc::channel(1024);
        tokio::spawn(read_lines(
            std::io::Cursor::new(input.into_bytes()),
            tx,
            no_recorder(),
            Dir::In,
            "stdout",
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut queued = 0;
        while let Ok((Ok(l), permit)) = rx.try_recv() {
            queued += l.len();
            std::mem::forget(permit); // keep them held: count what was let through
        }
        assert!(queued <= LINE_BUDGET, "{queued} bytes queued");
        assert!(queued >= 1024 * 1024, "nothing read");
    }

    #[tokio::test]
    async fn stop_does_not_wait_for_an_agent_that_stopped_reading() {
        let dir = std::env::temp_dir();
        let mut agent = Agent::spawn(&stubborn(&dir), no_recorder()).unwrap();
        let Some(Ok(grandchild)) = agent.stdout.recv().await else {
            panic!("no grandchild pid");
        };
        let grandchild: i32 = grandchild.trim().parse().unwrap();
        // Fill the pipe and the queue: the writer blocks on a full pipe.
        let mut refused = 0;
        for _ in 0..(STDIN_QUEUE + 8) {
            if agent.send("z".repeat(64 * 1024)).await.is_err() {
                refused += 1;
            }
        }
        assert!(refused > 0, "a full queue must refuse after the stall time");
        let leader = agent.pid.unwrap() as i32;
        let started = std::time::Instant::now();
        let status = tokio::time::timeout(
            Duration::from_secs(8),
            agent.stop(Duration::from_millis(300), &no_recorder()),
        )
        .await
        .expect("stop hung");
        assert!(status.is_ok(), "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(eventually_dead(leader, Duration::from_secs(2)).await);
        assert!(
            eventually_dead(grandchild, Duration::from_secs(2)).await,
            "the grandchild {grandchild} outlived stop"
        );
    }

    #[tokio::test]
    async fn lines_for_a_deaf_agent_are_bounded_in_bytes() {
        let dir = std::env::temp_dir();
        let agent = Agent::spawn(&stubborn(&dir), no_recorder()).unwrap();
        let mib = "q".repeat(1024 * 1024);
        let mut accepted = 0;
        for _ in 0..64 {
            if agent.send(mib.clone()).await.is_ok() {
                accepted += 1;
            }
        }
        // What the budget holds, plus the line the writer is writing into the full pipe.
        assert!(
            accepted * mib.len() <= STDIN_BUDGET + mib.len(),
            "{accepted} MiB queued"
        );
    }

    #[tokio::test]
    async fn dropping_the_agent_kills_its_whole_group() {
        let dir = std::env::temp_dir();
        let mut agent = Agent::spawn(&stubborn(&dir), no_recorder()).unwrap();
        let Some(Ok(grandchild)) = agent.stdout.recv().await else {
            panic!("no grandchild pid");
        };
        let grandchild: i32 = grandchild.trim().parse().unwrap();
        drop(agent);
        assert!(
            eventually_dead(grandchild, Duration::from_secs(3)).await,
            "the grandchild {grandchild} outlived the dropped agent"
        );
    }
}
