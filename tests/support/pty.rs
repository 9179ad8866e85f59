//! The built binary on a pty, read back through a vt100 screen: what the PTY tests of the
//! first minute and of descendants share.
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

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
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(args);
        cmd.env_remove("SWITCHBOARD_CLAUDE_BIN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.env("SWITCHBOARD_DATA_DIR", data);
        cmd.env("SWITCHBOARD_CONFIG_DIR", data);
        cmd.env("TERM", "xterm-256color");
        cmd.cwd(data);
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
        let t = Instant::now();
        loop {
            let s = self.screen();
            if what.iter().all(|w| s.contains(w)) {
                return s;
            }
            assert!(t.elapsed() < STEP, "waiting for {what:?}\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Type `b`, then pause as a person between keys does.
    pub fn send(&mut self, b: &[u8]) {
        self.send_now(b);
        std::thread::sleep(Duration::from_millis(150));
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
