//! A command's stdin, written by a thread of its own from a bounded queue, so that
//! `workspace_input` never blocks: a command that does not read its stdin fills the pipe,
//! and a blocking write there would hold the engine's lock (no other call served, a quit
//! waiting for the command's timeout).
//!
//! `push` only queues (up to `INPUT_CAP` bytes not yet written; beyond that `busy`) and
//! returns at once. The writer holds the queue's lock only to take a chunk or count what it
//! wrote, never while writing; it writes without blocking (`O_NONBLOCK`, then `poll` with a
//! short timeout), so `close` (stop, the command's end, the table dropped) ends it within one
//! tick without anyone waiting for it, and its end of the pipe closes with it.

use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::process::ChildStdin;
use std::sync::{Arc, Condvar, Mutex};

use crate::codec::{Code, Refusal};

/// Bytes of input a command may have queued and not yet written.
pub const INPUT_CAP: usize = 256 * 1024;
/// How often a writer waiting for room in the pipe looks whether it was closed.
const TICK_MS: i32 = 100;

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<u8>>,
    /// Queued and not yet written.
    pending: usize,
    /// Written into the pipe so far.
    delivered: u64,
    /// Why no more input is taken (closed by us, or the write failed).
    closed: Option<String>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    wake: Condvar,
}

/// The handle of one command's stdin writer; clones share it.
#[derive(Clone)]
pub struct Feed {
    inner: Arc<Inner>,
}

impl Feed {
    /// Start the writer thread that owns `stdin`.
    pub fn start(stdin: ChildStdin) -> std::io::Result<Feed> {
        let fd = stdin.as_raw_fd();
        // SAFETY: F_GETFL/F_SETFL on a descriptor we own. Our end of the pipe is a file
        // description of its own: the command's end stays as it was.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let feed = Feed {
            inner: Arc::default(),
        };
        let inner = feed.inner.clone();
        std::thread::Builder::new()
            .name("gateway-stdin".into())
            .spawn(move || write_loop(&inner, stdin))?;
        Ok(feed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `len` more bytes can be queued now: a full queue is `busy` (try again once the
    /// poll shows fewer pending), a closed one `failed`. Room only grows until the next push,
    /// so a check before the receipt holds for the push after it.
    pub fn room_for(&self, len: usize) -> Result<(), Refusal> {
        Self::room(&self.state(), len)
    }

    fn room(s: &State, len: usize) -> Result<(), Refusal> {
        if let Some(why) = &s.closed {
            return Err(Refusal::new(
                Code::Failed,
                format!("the command's input is closed: {why}"),
            ));
        }
        if s.pending + len > INPUT_CAP {
            return Err(Refusal::new(
                Code::Busy,
                format!(
                    "{} bytes of input are still waiting for the command to read them (at most {INPUT_CAP}); poll and try again",
                    s.pending
                ),
            ));
        }
        Ok(())
    }

    /// Queue `bytes`; returns the bytes now waiting (these included).
    pub fn push(&self, bytes: &[u8]) -> Result<usize, Refusal> {
        let mut s = self.state();
        Self::room(&s, bytes.len())?;
        if !bytes.is_empty() {
            s.queue.push_back(bytes.to_vec());
            s.pending += bytes.len();
            self.inner.wake.notify_one();
        }
        Ok(s.pending)
    }

    /// No more input: what is queued is dropped and the writer closes the pipe within a tick.
    /// Never waits.
    pub fn close(&self, why: &str) {
        let mut s = self.state();
        if s.closed.is_none() {
            s.closed = Some(why.to_string());
        }
        s.queue.clear();
        s.pending = 0;
        self.inner.wake.notify_one();
    }

    /// (bytes waiting, bytes written so far).
    pub fn progress(&self) -> (usize, u64) {
        let s = self.state();
        (s.pending, s.delivered)
    }
}

fn write_loop(inner: &Inner, mut stdin: ChildStdin) {
    let lock = || inner.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let chunk = {
            let mut s = lock();
            loop {
                if s.closed.is_some() {
                    return;
                }
                if let Some(c) = s.queue.pop_front() {
                    break c;
                }
                s = inner.wake.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        };
        let mut off = 0;
        while off < chunk.len() {
            if lock().closed.is_some() {
                return;
            }
            match stdin.write(&chunk[off..]) {
                Ok(n) => {
                    off += n;
                    let mut s = lock();
                    s.pending = s.pending.saturating_sub(n);
                    s.delivered += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let mut p = libc::pollfd {
                        fd: stdin.as_raw_fd(),
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd; the result is only a hint to try again.
                    unsafe { libc::poll(&mut p, 1, TICK_MS) };
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let mut s = lock();
                    s.closed = Some(format!("write failed: {e}"));
                    s.queue.clear();
                    s.pending = 0;
                    return;
                }
            }
        }
    }
}
