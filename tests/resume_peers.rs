//! `switchboard resume` for the backends whose conversation lives on the peer (issue 37): an
//! iii session (`demo-engine`, the fake engine on loopback) and an ai-gateway session
//! (`demo-gateway`, the fake remote host) run under a host that is SIGKILLed while a call
//! waits; `resume NAME` connects again from the manifest's saved profile (the gateway's token
//! named by its variable, read again from the environment, never stored), the waiting calls
//! come back from the peer onto cards, and one of them is answered.

use std::time::{Duration, Instant};

#[path = "support/peer.rs"]
mod peer;
#[path = "support/place.rs"]
mod place;
#[path = "support/pty.rs"]
mod pty;

use peer::Peer;
use place::Place;
use pty::{STEP, Tui};

/// What these tests do to a place's hosts: kill one outright, stop one.
trait ResumePlace {
    fn sb(&self, args: &[&str]) -> String;
    fn kill_host(&self, name: &str);
    fn stop(&self, name: &str);
}

impl ResumePlace for Place {
    /// `switchboard ARGS`: what it printed, both streams.
    fn sb(&self, args: &[&str]) -> String {
        let o = self.run(args);
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    }

    /// SIGKILL the host named `name` (its pid from `ls`), and wait until `ls` lists the
    /// workspace as ended unexpectedly.
    fn kill_host(&self, name: &str) {
        let pid = self.host_pid(name);
        // SAFETY: a process this test started (through the front).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        let resume = format!("`switchboard resume {name}`");
        let t = Instant::now();
        loop {
            let ls = self.sb(&["ls"]);
            if ls.contains(&resume) && !ls.contains("(pid ") {
                break;
            }
            assert!(t.elapsed() < STEP, "not listed as ended: {ls}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&self, name: &str) {
        let said = self.sb(&["stop", name]);
        assert!(!said.contains("error"), "{said}");
    }
}

/// Which held call the card shows.
fn iii_card(tui: &Tui) -> &'static str {
    let t = Instant::now();
    loop {
        let s = tui.screen();
        if s.contains("Permission · shell::exec") {
            return "shell::exec";
        }
        if s.contains("Permission · filesystem::read") {
            return "filesystem::read";
        }
        assert!(t.elapsed() < STEP, "no card after g\n{s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_iii_session_comes_back_with_its_held_calls_after_the_host_is_killed() {
    let p = Place::new("resume", "iii").paced();
    let (_engine, url) = Peer::engine();
    let front = p.tui(&["iii", "--engine", &url, "--name", "eng"], &[]);
    front.wait(&["2 waiting", "g opens the oldest"]);
    p.kill_host("eng");
    front.wait(&["stopped unexpectedly"]);
    drop(front);

    let mut back = p.tui(&["resume", "eng"], &[]);
    // The engine still holds both calls: they come back onto cards.
    back.wait(&["2 waiting", "g opens the oldest"]);
    back.send(b"g");
    let function = iii_card(&back);
    back.send(b"y");
    back.wait(&[&format!("{function} ran (demo): exit 0")]);
    p.stop("eng");
    let _ = back.child.wait();
    // Stopped by its owner: nothing left to resume.
    assert!(p.sb(&["resume", "eng"]).contains("nothing to resume"));
}

#[test]
fn a_gateway_session_comes_back_with_its_token_from_the_environment() {
    let p = Place::new("resume", "gw").paced();
    let (_host, token, argv) = Peer::gateway();
    let mut args: Vec<&str> = argv.iter().map(String::as_str).collect();
    args.extend(["--name", "gw"]);
    let env = [("SWITCHBOARD_DEMO_GATEWAY_TOKEN", token.as_str())];
    let mut front = p.tui(&args, &env);
    front.wait(&["1 waiting", "g opens the oldest"]);
    front.send(b"g");
    front.wait(&["workspace_write", "README.md"]);
    p.kill_host("gw");
    front.wait(&["stopped unexpectedly"]);
    drop(front);
    // The manifest names the token's variable, never its value.
    let manifests: Vec<String> = std::fs::read_dir(p.base.join("recordings"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("workspace-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(!manifests.is_empty());
    for m in &manifests {
        assert!(
            !m.contains(&token),
            "the token's value is in the manifest:\n{m}"
        );
    }

    let mut back = p.tui(&["resume", "gw"], &env);
    back.wait(&["g opens the oldest"]);
    back.send(b"g");
    back.wait(&["workspace_write", "README.md"]);
    back.send(b"y");
    back.wait(&["wrote README.md"]);
    p.stop("gw");
    let _ = back.child.wait();
}
