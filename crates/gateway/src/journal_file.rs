//! The journal's bytes on disk: an append that either lands whole or leaves the file as it
//! was. A failed or short write (a full disk, an I/O error, a failed fsync) is rolled back by
//! truncating to the last complete line before anything else is appended, so a torn record
//! can never merge with the next one into a line the loader cannot read (issue 21 item 5:
//! a torn `completed` followed by the next call's `executing` once made one invalid line, and
//! the lost `executing` let a re-send run its command again).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Where the journal's bytes go: its file, or (in tests) a stand-in that fails on cue.
pub trait Sink: Send {
    /// Append all of `bytes` at the end (the file is opened with `O_APPEND`).
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Make what was appended durable (`fdatasync`).
    fn sync(&mut self) -> io::Result<()>;
    /// Cut the file back to `len` bytes.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl Sink for File {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// Wraps the journal's file when it is opened: the identity for the product, a fault
/// injector for the tests of every append point.
pub type Wrap = Box<dyn Fn(File) -> Box<dyn Sink> + Send + Sync>;

/// Appends whole lines or nothing.
pub struct Appender {
    sink: Box<dyn Sink>,
    /// Length of the file up to its last complete line.
    good: u64,
    /// Why the last append failed; `None` once an append succeeds again.
    broken: Option<String>,
}

impl Appender {
    /// `good`: the file's length now, which must end at a complete line.
    pub fn new(sink: Box<dyn Sink>, good: u64) -> Appender {
        Appender {
            sink,
            good,
            broken: None,
        }
    }

    /// Why the journal cannot be written now (the last append failed), if it cannot.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Append one line (ending in `\n`); with `sync`, durable before this returns. On any
    /// failure the file is cut back to its last complete line and the error returned: the
    /// record is not on disk, and nothing later is appended after torn bytes.
    pub fn line(&mut self, line: &[u8], sync: bool) -> io::Result<()> {
        debug_assert!(line.ends_with(b"\n"));
        if self.broken.is_some() {
            // A rollback that failed before: retry it first, and write nothing until it holds.
            self.sink.truncate(self.good).inspect_err(|e| {
                self.broken = Some(format!("cannot repair the journal's tail: {e}"));
            })?;
        }
        let r = self
            .sink
            .append(line)
            .and_then(|_| if sync { self.sink.sync() } else { Ok(()) });
        match r {
            Ok(()) => {
                self.good += line.len() as u64;
                self.broken = None;
                Ok(())
            }
            Err(e) => {
                let rolled = self.sink.truncate(self.good);
                self.broken = Some(match &rolled {
                    Ok(()) => e.to_string(),
                    Err(t) => format!("{e}; the torn tail could not be cut yet: {t}"),
                });
                Err(e)
            }
        }
    }
}

/// Take `<journal>.lock` (0600) exclusively, or say who has it.
pub(super) fn lock(path: &Path) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    let f =
        switchboard_record::paths::create_private_file(&path.with_extension("jsonl.lock"), true)?;
    // A child forked by another thread holds a copy of the descriptor until its exec closes
    // it (close-on-exec): a short retry rides that out; a second switchboard holds it longer.
    let mut tries = 0;
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    while unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) && tries < 50 {
            tries += 1;
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                "another switchboard serves this workspace (its receipts journal is in use)",
            )
        } else {
            e
        });
    }
    Ok(f)
}

/// A line that does not parse may be a torn record with a whole one appended straight after
/// it (journals written before appends were rolled back): the last record start inside it
/// that parses to the end of the line is kept.
pub(super) fn salvage<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
    let starts: Vec<usize> = memchr::memmem::find_iter(line, b"{\"ws\":")
        .filter(|&i| i > 0)
        .collect();
    starts
        .into_iter()
        .rev()
        .find_map(|i| serde_json::from_slice::<T>(&line[i..]).ok())
}

#[cfg(test)]
pub mod faults {
    //! A sink that fails appends on cue, the way a full disk does: part of the bytes land,
    //! then an error.
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// Fails the appends whose 0-based numbers are in `fail` (counted across reopenings
    /// through the shared counter), after writing half of their bytes.
    pub struct Faulty {
        pub file: File,
        pub count: Arc<AtomicUsize>,
        pub fail: Arc<Mutex<Vec<usize>>>,
    }

    impl Sink for Faulty {
        fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
            let n = self.count.fetch_add(1, Ordering::SeqCst);
            if self.fail.lock().unwrap().contains(&n) {
                self.file.write_all(&bytes[..bytes.len() / 2])?;
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device",
                ));
            }
            self.file.write_all(bytes)
        }

        fn sync(&mut self) -> io::Result<()> {
            self.file.sync_data()
        }

        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.file.set_len(len)
        }
    }

    /// A `Wrap` that makes `Faulty` sinks sharing one counter and one list of failures.
    pub fn wrap(count: Arc<AtomicUsize>, fail: Arc<Mutex<Vec<usize>>>) -> Wrap {
        Box::new(move |file| {
            Box::new(Faulty {
                file,
                count: count.clone(),
                fail: fail.clone(),
            })
        })
    }
}
