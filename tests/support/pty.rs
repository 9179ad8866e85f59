//! The built binary on a pty, read back through a vt100 screen: what the PTY tests of the
//! first minute and of descendants share.
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

/// What the footer says of an answer key held for the settle time (`update::HELD`).
pub const HELD: &str = "the card just changed";

/// How long one awaited screen may take.
pub const STEP: Duration = Duration::from_secs(30);

pub struct Tui {
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Option<Box<dyn Write + Send>>,
    master: Option<Box<dyn portable_pty::MasterPty + Send>>,
}

impl Tui {
    /// `switchboard ARGS` at `(cols, rows)`, its data and config in `data` (also its cwd).
    pub fn spawn(
        args: &[&str],
        env: &[(&str, &str)],
        data: &Path,
        (cols, rows): (u16, u16),
    ) -> Tui {
        let mut all: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend([
            ("SWITCHBOARD_DATA_DIR".into(), data.display().to_string()),
            ("SWITCHBOARD_CONFIG_DIR".into(), data.display().to_string()),
        ]);
        Tui::spawn_program(
            Path::new(env!("CARGO_BIN_EXE_switchboard")),
            args,
            &all,
            &["SWITCHBOARD_CLAUDE_BIN"],
            data,
            (cols, rows),
        )
    }

    /// Any program on a pty of `(cols, rows)`: `env` set, `remove` taken out of ours, in `cwd`.
    pub fn spawn_program(
        program: &Path,
        args: &[&str],
        env: &[(String, String)],
        remove: &[&str],
        cwd: &Path,
        (cols, rows): (u16, u16),
    ) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        for k in remove {
            cmd.env_remove(k);
        }
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.cwd(cwd);
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
            0,
        )));
        let p = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
            }
        });
        // portable-pty's writer sends "\n" and ^D when dropped; it lives as long as the test.
        let writer = pair.master.take_writer().unwrap();
        Tui {
            child,
            parser,
            writer: Some(writer),
            master: Some(pair.master),
        }
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Wait until the screen holds every one of `what`; that screen.
    pub fn wait(&self, what: &[&str]) -> String {
        self.wait_for(what, STEP)
    }

    /// `wait`, for at most `limit`.
    pub fn wait_for(&self, what: &[&str], limit: Duration) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if what.iter().all(|w| s.contains(w)) {
                return s;
            }
            assert!(t.elapsed() < limit, "waiting for {what:?}\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until the screen holds none of `what`, for at most `limit`; that screen.
    pub fn wait_gone(&self, what: &[&str], limit: Duration) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if !what.iter().any(|w| s.contains(w)) {
                return s;
            }
            assert!(t.elapsed() < limit, "waiting for {what:?} to go\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Type `b`, then pause as a person between keys does. An answer key typed within the
    /// settle time of a card that just appeared is held and the footer says "the card just
    /// changed: press again": a person then presses it again, and so does this (the tests
    /// of the settle time itself type with `send_now` and look).
    pub fn send(&mut self, b: &[u8]) {
        let held_before = self.screen().contains(HELD);
        self.send_now(b);
        std::thread::sleep(Duration::from_millis(150));
        if held_before {
            return;
        }
        for _ in 0..3 {
            if !self.screen().contains(HELD) {
                return;
            }
            std::thread::sleep(Duration::from_millis(350));
            self.send_now(b);
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Type `b` with no pause after it (keys of two terminals at the same moment).
    pub fn send_now(&mut self, b: &[u8]) {
        let w = self.writer.as_mut().expect("the terminal is open");
        w.write_all(b).unwrap();
        w.flush().unwrap();
    }

    /// Close the terminal under the program (a window closed, an ssh connection lost): the
    /// kernel hangs up on it.
    /// The kernel's SIGHUP, then the pty closed. (portable-pty's writer types "\n" and ^D
    /// when dropped: it is forgotten instead, so nothing is typed on the way out.)
    pub fn hang_up(&mut self) {
        if let Some(pid) = self.child.process_id() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(pid as i32, libc::SIGHUP);
            }
        }
        if let Some(w) = self.writer.take() {
            std::mem::forget(w);
        }
        self.master = None;
    }

    /// `q` (and `y` if it asks first); switchboard has exited.
    pub fn quit(&mut self) {
        self.send(b"q");
        let t = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if self.screen().contains("Quit anyway") || self.screen().contains("y quit") {
                self.send(b"y");
            }
            assert!(
                t.elapsed() < STEP,
                "switchboard did not exit\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
