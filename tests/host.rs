//! The workspace host (issue 27), the built binary on ptys: a workspace started with `--name`
//! outlives its terminal, clients attach from other terminals, a gate is answered once however
//! many clients press at once, and `stop` quits as quitting does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "support/place.rs"]
mod place;
#[path = "support/pty.rs"]
mod pty;

use place::Place;
use pty::{STEP, Tui};
use serde_json::Value;

/// Ctrl-\ (the detach key).
const DETACH: &[u8] = b"\x1c";

/// What these tests read of a place: its host's `ls` line, socket, recordings and answers.
trait HostPlace {
    fn ls_until(&self, what: &str, pred: impl Fn(&str) -> bool) -> String;
    fn socket_dir(&self) -> PathBuf;
    fn recordings(&self) -> Vec<(PathBuf, Vec<Value>)>;
    fn answers(&self) -> Vec<(String, Vec<String>)>;
    fn allows(&self) -> usize;
}

impl HostPlace for Place {
    /// The host's `ls` line once `pred` holds for it.
    fn ls_until(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let out = self.ls();
            if let Some(line) = out.lines().find(|l| l.starts_with(self.name))
                && pred(line)
            {
                return line.to_string();
            }
            assert!(t.elapsed() < STEP, "waiting for {what}: ls says\n{out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn socket_dir(&self) -> PathBuf {
        self.runtime.join("switchboard")
    }

    /// Every recording under the data dir, each a list of entries.
    fn recordings(&self) -> Vec<(PathBuf, Vec<Value>)> {
        let Ok(dir) = std::fs::read_dir(self.base.join("recordings")) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in dir.flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let entries = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            out.push((p, entries));
        }
        out
    }

    /// For every permission request any agent sent: how many answers we sent it, and the
    /// behaviours of those answers.
    fn answers(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for (p, rec) in self.recordings() {
            let parse = |e: &Value| serde_json::from_str::<Value>(e["line"].as_str()?).ok();
            let sent: Vec<Value> = rec
                .iter()
                .filter(|e| e["dir"] == "out")
                .filter_map(parse)
                .filter(|l| l["type"] == "control_response")
                .collect();
            for req in rec.iter().filter(|e| e["dir"] == "in").filter_map(parse) {
                if req["type"] != "control_request"
                    || !matches!(
                        req["request"]["subtype"].as_str(),
                        Some("can_use_tool" | "hook_callback")
                    )
                {
                    continue;
                }
                let id = &req["request_id"];
                let behaviours = sent
                    .iter()
                    .filter(|s| &s["response"]["request_id"] == id)
                    .map(|s| {
                        let b = &s["response"]["response"];
                        b["behavior"]
                            .as_str()
                            .or(b["hookSpecificOutput"]["permissionDecision"].as_str())
                            .unwrap_or("?")
                            .to_string()
                    })
                    .collect();
                out.push((format!("{}#{id}", p.display()), behaviours));
            }
        }
        out
    }

    fn allows(&self) -> usize {
        self.answers()
            .iter()
            .flat_map(|(_, b)| b.iter())
            .filter(|b| *b == "allow")
            .count()
    }
}

/// Start a host of `args` on a pty and wait for `what`.
fn start(p: &Place, args: &[&str], what: &[&str]) -> Tui {
    let tui = p.tui(args, &[]);
    tui.wait(what);
    tui
}

/// The waiting count of an `ls` line (`NAME  2 sessions, 3 waiting, …`).
fn waiting(line: &str) -> usize {
    line.split(", ")
        .find_map(|part| {
            part.strip_suffix(" waiting").or_else(|| {
                part.split(" waiting")
                    .next()
                    .filter(|_| part.contains(" waiting"))
            })
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn wait_exit(tui: &mut Tui) {
    let t = Instant::now();
    while tui.child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < STEP,
            "the client did not exit\n{}",
            tui.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn two_demo_profiles(p: &Place) -> String {
    let config = p.base.join("sessions.toml");
    std::fs::write(
        &config,
        format!(
            "[[session]]\nname = \"frontend\"\nbackend = \"demo\"\ncwd = \"{0}\"\nscript = \"web\"\n\n\
             [[session]]\nname = \"release\"\nbackend = \"demo\"\ncwd = \"{0}\"\nscript = \"docs\"\n",
            p.base.display()
        ),
    )
    .unwrap();
    config.display().to_string()
}

/// `up --name` with the demo workspace: detach, the agents go on and their gates wait (`ls`),
/// a second terminal attaches and answers one gate, and the agent gets that answer once.
#[test]
fn up_detach_ls_attach_elsewhere_and_answer_once() {
    let p = Place::new("host", "upw");
    let cfg = two_demo_profiles(&p);
    let mut first = start(
        &p,
        &["up", "--config", &cfg, "--name", p.name],
        &["Sessions (2)", "frontend", "release", "g opens the oldest"],
    );
    // The socket is private, in a private directory.
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p.socket_dir()), 0o700);
    assert_eq!(mode(&p.socket_dir().join("upw.sock")), 0o600);
    first.send(DETACH);
    wait_exit(&mut first);
    let s = first.screen();
    assert!(s.contains("detached from host upw"), "{s}");
    // Both agents run on and their gates wait, with nobody attached.
    let line = p.ls_until("gates waiting", |l| waiting(l) >= 2);
    assert!(
        line.contains("2 sessions") && line.contains("nobody attached"),
        "{line}"
    );
    // The runtime directory goes (logind removes it at a user's last logout): the host
    // listens again where clients look, within its tick.
    std::fs::remove_dir_all(p.socket_dir()).unwrap();
    p.ls_until("the host listening again", |l| {
        l.contains("nobody attached")
    });
    assert_eq!(mode(&p.socket_dir().join("upw.sock")), 0o600);
    // A second host of the same name is refused.
    let mut dup = p.tui(&["demo", "--name", p.name], &[]);
    wait_exit(&mut dup);
    assert!(dup.screen().contains("already running"), "{}", dup.screen());
    // Another terminal attaches and answers the oldest gate.
    let mut second = start(
        &p,
        &["attach", p.name],
        &["Sessions (2)", "g opens the oldest"],
    );
    assert!(p.ls().contains("1 client attached"), "{}", p.ls());
    assert_eq!(p.allows(), 0, "nothing allowed before a key");
    second.send(b"g");
    second.send(b"y");
    let t = Instant::now();
    while p.allows() == 0 {
        assert!(t.elapsed() < STEP, "no allow sent\n{}", second.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    second.send(DETACH);
    wait_exit(&mut second);
    let o = p.run(&["stop", p.name]);
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{said}");
    assert!(said.contains("recording written to"), "{said}");
    assert!(!p.ls().contains(p.name), "{}", p.ls());
    for (gate, b) in p.answers() {
        assert!(b.len() <= 1, "{gate} answered {} times: {b:?}", b.len());
    }
    assert_eq!(p.allows(), 1, "{:?}", p.answers());
}

/// Two clients press `y` on the same card at the same moment: one answer reaches the agent,
/// and the other client is told.
#[test]
fn two_clients_answer_the_same_gate_once() {
    let p = Place::new("host", "race");
    let mut a = start(
        &p,
        &["demo", "--name", p.name],
        &["touch demo-output.txt", "1 waiting"],
    );
    let mut b = start(
        &p,
        &["attach", p.name],
        &["touch demo-output.txt", "1 waiting"],
    );
    // Each client has its own view: help opened on one is not on the other.
    a.send(b"?");
    a.wait(&["cycle focus: tree, transcript"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !b.screen().contains("cycle focus: tree, transcript"),
        "{}",
        b.screen()
    );
    a.send(b"\x1b");
    let t = Instant::now();
    while a.screen().contains("cycle focus: tree, transcript") {
        assert!(t.elapsed() < STEP, "help stays open\n{}", a.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Both open the card.
    a.send(b"g");
    b.send(b"g");
    b.wait(&["Allow once"]);
    a.wait(&["Allow once"]);
    // Both keys at once, past the card's settle time: no pause between them.
    std::thread::sleep(Duration::from_millis(400));
    a.send_now(b"y");
    b.send_now(b"y");
    // One allow, and the client whose key came second is told: each key names the frame
    // its terminal showed, and both showed the gate unanswered.
    let t = Instant::now();
    loop {
        let told = [&a, &b]
            .iter()
            .filter(|c| c.screen().contains("answered from another terminal"))
            .count();
        assert!(
            told <= 1,
            "both told\nA:\n{}\nB:\n{}",
            a.screen(),
            b.screen()
        );
        if p.allows() == 1 && told == 1 {
            break;
        }
        assert!(
            t.elapsed() < STEP,
            "told {told}, allows {}\nA:\n{}\nB:\n{}",
            p.allows(),
            a.screen(),
            b.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(p.allows(), 1, "{:?}", p.answers());
    a.send(DETACH);
    b.send(DETACH);
    wait_exit(&mut a);
    wait_exit(&mut b);
}

/// A client's terminal closes with gates pending: the host and its gates are untouched. Then
/// `stop` answers every gate as quitting does, and the recordings validate clean.
#[test]
fn a_closed_client_leaves_the_host_and_stop_quits_cleanly() {
    let p = Place::new("host", "hup");
    // Nobody attached: the notification command runs once per waiting gate.
    let notes = p.base.join("notified.txt");
    std::fs::write(
        p.base.join("config.toml"),
        format!(
            "notify_command = \"printf '%s\\\\n' \\\"$SWITCHBOARD_MESSAGE\\\" >> '{}'\"\n",
            notes.display()
        ),
    )
    .unwrap();
    let mut client = start(
        &p,
        &["demo", "--sessions", "2", "--name", p.name],
        &["Sessions (2)", "g opens the oldest"],
    );
    let before = p.ls_until("gates waiting", |l| waiting(l) >= 2);
    assert!(before.contains("1 client attached"), "{before}");
    let waiting_before = waiting(&before);
    // The client's terminal goes away (its pty closed under it).
    client.hang_up();
    let after = p.ls_until("the client gone", |l| l.contains("nobody attached"));
    assert!(after.contains("2 sessions"), "{after}");
    assert!(waiting(&after) >= waiting_before, "{before} → {after}");
    assert_eq!(p.allows(), 0);
    for (gate, b) in p.answers() {
        assert!(b.is_empty(), "{gate} answered {b:?} while nobody was there");
    }
    // While the client was there nothing was notified; now each waiting gate is, once.
    let line = p.ls_until("gates notified", |l| l.contains("notified"));
    std::thread::sleep(Duration::from_millis(1500));
    let line_later = p.ls_until("the same", |_| true);
    let notified: Vec<String> = std::fs::read_to_string(&notes)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(!notified.is_empty(), "{line}");
    assert!(
        notified
            .iter()
            .all(|n| n.contains("host hup, nobody attached")),
        "{notified:?}"
    );
    assert!(
        line_later.contains(&format!("({} notified)", notified.len())),
        "{line_later}: {notified:?}"
    );
    let o = p.run(&["stop", p.name]);
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{said}");
    assert!(said.contains("host hup stopped"), "{said}");
    assert!(said.contains("recording written to"), "{said}");
    assert!(!p.ls().contains("hup"), "{}", p.ls());
    // Every gate that waited got the quit answer (a deny), once. (A gate the demo agent asks
    // after its input closed stays unanswered, as with any quit: nobody is left to ask.)
    let answers = p.answers();
    let denied = answers.iter().filter(|(_, b)| b.len() == 1).count();
    assert!(denied >= waiting(&after), "{after}: {answers:?}");
    for (gate, b) in &answers {
        assert!(b.len() <= 1, "{gate}: {b:?}");
        assert!(b.iter().all(|x| x != "allow"), "{gate}: {b:?}");
    }
    let files: Vec<String> = p
        .recordings()
        .into_iter()
        .map(|(f, _)| f.display().to_string())
        .collect();
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let v = p.run(&args);
    assert!(
        v.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
}

/// The host killed with SIGKILL: its agents do not outlive it (each agent's group has a
/// watchdog), `ls` forgets it, and what was recorded up to then still reads back in validate.
#[test]
fn a_host_killed_outright_takes_its_agents_along() {
    let p = Place::new("host", "kill9");
    let mut client = start(
        &p,
        &["demo", "--sessions", "2", "--name", p.name],
        &["Sessions (2)", "g opens the oldest"],
    );
    client.send(DETACH);
    wait_exit(&mut client);
    let line = p.ls_until("gates waiting", |l| waiting(l) >= 2);
    let host: i32 = line
        .rsplit_once("(pid ")
        .and_then(|(_, r)| r.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line}"));
    // The agents: the host's children that lead their own process group and run the demo.
    let agents: Vec<i32> = procs()
        .into_iter()
        .filter(|&(pid, ppid, pgrp)| ppid == host && pgrp == pid)
        .map(|(pid, ..)| pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("demo-agent"))
        })
        .collect();
    assert_eq!(agents.len(), 2, "{line}: {:?}", procs());
    // SAFETY: killing the host this test started.
    unsafe {
        libc::kill(host, libc::SIGKILL);
    }
    let t = Instant::now();
    loop {
        let left: Vec<i32> = procs()
            .into_iter()
            .filter(|&(_, _, g)| agents.contains(&g))
            .map(|(pid, ..)| pid)
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < STEP,
            "agents' groups outlived the host: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // No longer a running host: a workspace that ended unexpectedly, with how to resume it.
    let t = Instant::now();
    let resume = format!("`switchboard resume {}`", p.name);
    while !p.ls().contains(&resume) || p.ls().contains("(pid ") {
        assert!(t.elapsed() < STEP, "ls still lists it running: {}", p.ls());
        std::thread::sleep(Duration::from_millis(50));
    }
    let files: Vec<String> = p
        .recordings()
        .into_iter()
        .map(|(f, _)| f.display().to_string())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    // Every line written before the kill reads back; the only findings are the truth: the
    // gates that were waiting were never answered (exit 1 is "problems", 2 "unreadable").
    let v = p.run(&args);
    let said = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(matches!(v.status.code(), Some(0 | 1)), "{said}");
    assert!(said.contains(", 0 unreadable"), "{said}");
    for l in said.lines().filter(|l| l.contains(".jsonl:")) {
        assert!(l.contains("unanswered:"), "{said}");
    }
}

/// Live processes as (pid, parent, process group).
fn procs() -> Vec<(i32, i32, i32)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut f = s.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?;
            let ppid = f.next()?.parse().ok()?;
            let pgrp = f.next()?.parse().ok()?;
            (state != "Z").then_some((pid, ppid, pgrp))
        })
        .collect()
}
