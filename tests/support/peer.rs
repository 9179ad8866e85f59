//! The demo peers a test runs beside switchboard (`demo-engine`, `demo-gateway`), started from
//! the built binary, read for what they print, and killed when dropped.
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Stdio};

/// A peer command and the first lines it printed.
pub struct Peer(Child);

impl Peer {
    pub fn start(args: &[&str], lines: usize) -> (Peer, Vec<String>) {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut read = std::io::BufReader::new(out).lines();
        let first: Vec<String> = (0..lines).filter_map(|_| read.next()?.ok()).collect();
        // Keep draining, so the peer never blocks on a full pipe.
        std::thread::spawn(move || for _ in read {});
        (Peer(child), first)
    }

    /// `demo-engine` on a free port, and its URL.
    pub fn engine() -> (Peer, String) {
        let (peer, lines) = Peer::start(&["demo-engine", "--port", "0"], 1);
        let url = lines[0]
            .split_whitespace()
            .find(|w| w.starts_with("ws://"))
            .expect("the engine's URL")
            .to_string();
        (peer, url)
    }

    /// `demo-gateway` on a free port: its token and the `switchboard gateway` arguments it
    /// prints (without the program name).
    pub fn gateway() -> (Peer, String, Vec<String>) {
        let (peer, lines) = Peer::start(&["demo-gateway", "--port", "0"], 5);
        let token = lines
            .iter()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("export SWITCHBOARD_DEMO_GATEWAY_TOKEN=")
            })
            .expect("the token line")
            .to_string();
        let run = lines
            .iter()
            .find(|l| l.trim().starts_with("switchboard gateway"))
            .expect("the command line");
        let mut argv = shlex::split(run.trim()).unwrap();
        argv.remove(0);
        (peer, token, argv)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
