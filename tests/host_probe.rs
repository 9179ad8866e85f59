//! What the host probe found (issue 37 item 4), on the built binary: a client whose host was
//! killed is told so, `stop` gives up on a host that does not answer, the hidden `host`
//! command takes no path for a name, a runtime directory replaced under a host leaves one
//! reachable host, and what an agent started outside its process group ends with a host
//! killed outright.

use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "support/common.rs"]
mod common;
#[path = "support/place.rs"]
mod place;
#[path = "support/pty.rs"]
mod pty;

use place::Place;
use pty::{STEP, Tui};

/// Ctrl-\ (the detach key).
const DETACH: &[u8] = b"\x1c";

fn signal(pid: i32, sig: i32) {
    // SAFETY: only sends a signal, to a host or process this test started.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Whether `pid` runs (a zombie is not running).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(!s.rsplit_once(')')?.1.trim_start().starts_with('Z')))
        .unwrap_or(false)
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

/// The demo agents of host `host`: its children that lead their own group.
fn demo_agents(host: i32) -> Vec<i32> {
    procs()
        .into_iter()
        .filter(|&(pid, ppid, pgrp)| ppid == host && pgrp == pid)
        .map(|(pid, ..)| pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("demo-agent"))
        })
        .collect()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < limit, "{what} (after {:?})", t.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(tui: &mut Tui) -> portable_pty::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = tui.child.try_wait().unwrap() {
            return s;
        }
        assert!(
            t.elapsed() < STEP,
            "the client did not exit\n{}",
            tui.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A hosted demo of two sessions, its terminal detached: the host's pid.
fn detached_demo(p: &Place) -> i32 {
    let mut client = p.tui(&["demo", "--sessions", "2", "--name", p.name], &[]);
    client.wait(&["Sessions (2)", "g opens the oldest"]);
    client.send(DETACH);
    wait_exit(&mut client);
    p.host_pid(p.name)
}

/// The host SIGKILLed under an attached client: the client says the host is gone, that its
/// agents went with it and what `resume` does, never that they go on; it exits non-zero.
#[test]
fn a_client_whose_host_was_killed_is_told_so() {
    let p = Place::new("probe", "killed");
    let mut client = p.tui(&["demo", "--sessions", "2", "--name", p.name], &[]);
    client.wait(&["Sessions (2)", "g opens the oldest"]);
    let host = p.host_pid(p.name);
    signal(host, libc::SIGKILL);
    let status = wait_exit(&mut client);
    let screen = client.wait(&["stopped unexpectedly"]);
    let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "the host {0} stopped unexpectedly; its agents stopped with it; `switchboard resume \
             {0}` brings its sessions back",
            p.name
        )),
        "{screen}"
    );
    assert!(
        !flat.contains("go on") && !flat.contains("goes on"),
        "{screen}"
    );
    assert!(!status.success(), "{status:?}");
}

/// `stop` on a host that does not answer (SIGSTOPped) gives up after about 5 s, says so and
/// fails, instead of hanging; the host, let go on, is stopped by the next `stop`.
#[test]
fn stop_gives_up_on_a_host_that_does_not_answer() {
    let p = Place::new("probe", "wedged");
    let host = detached_demo(&p);
    signal(host, libc::SIGSTOP);
    let t = Instant::now();
    let out = p.run_within(&["stop", p.name], Duration::from_secs(20));
    let took = t.elapsed();
    signal(host, libc::SIGCONT);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("did not answer within 5 s"), "{said}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // Answering again, it is stopped as usual.
    let out = p.run_within(&["stop", p.name], STEP);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("the host exits", STEP, || !alive(host));
}

/// The hidden `host` subcommand takes the front's name rule: a name with a path in it is
/// refused before anything is made, and nothing appears outside the socket directory.
#[test]
fn the_host_command_takes_no_path_for_a_name() {
    let p = Place::new("probe", "names");
    for bad in ["../escape", "a/b", "/tmp/x"] {
        let out = p.run_within(
            &["host", "demo", "--sessions", "1", "--name", bad],
            Duration::from_secs(20),
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {said}");
        assert!(said.contains("host name"), "{bad}: {said}");
    }
    let made: Vec<PathBuf> = std::fs::read_dir(&p.runtime)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|f| f.file_name().is_some_and(|n| n != "switchboard"))
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

/// The runtime directory removed while host A cannot act (stopped: a suspended laptop, a
/// wedged host), and host B of the same name started in the new one. When A runs again it
/// finds the name held there: it stops its workspace (its agents end) and exits, so exactly
/// one host of that name runs, the one clients reach.
#[test]
fn a_replaced_directory_leaves_one_reachable_host() {
    let p = Place::new("probe", "replaced");
    let a = detached_demo(&p);
    let a_agents = demo_agents(a);
    assert_eq!(a_agents.len(), 2, "{:?}", procs());
    signal(a, libc::SIGSTOP);
    std::fs::remove_dir_all(p.runtime.join("switchboard")).unwrap();
    let b = detached_demo(&p);
    assert_ne!(a, b);
    signal(a, libc::SIGCONT);
    wait_until("host A stops", Duration::from_secs(15), || !alive(a));
    wait_until("host A's agents end", Duration::from_secs(5), || {
        a_agents.iter().all(|g| !alive(*g))
    });
    assert!(alive(b), "host B goes on");
    let ls = p.ls();
    // (Running hosts; a workspace that ended unexpectedly is listed too, without a pid.)
    let lines: Vec<&str> = ls
        .lines()
        .filter(|l| l.starts_with(p.name) && l.contains("(pid "))
        .collect();
    assert_eq!(lines.len(), 1, "{ls}");
    assert!(lines[0].contains(&format!("(pid {b})")), "{ls}");
    assert_eq!(demo_agents(b).len(), 2, "B's agents run");
}

/// A unique fractional part for one test's sleeps.
fn tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}{nanos:09}", std::process::id())
}

/// Live processes whose command line is `sleep <arg>`.
fn sleeping(arg: &str) -> Vec<i32> {
    procs()
        .into_iter()
        .map(|(pid, ..)| pid)
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                let parts: Vec<&[u8]> = c.split(|b| *b == 0).collect();
                parts.len() >= 2 && parts[0].ends_with(b"sleep") && parts[1] == arg.as_bytes()
            })
        })
        .collect()
}

/// Kills a test's sleeps when dropped, so a failing run leaves nothing behind.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for a in &self.0 {
            for p in sleeping(a) {
                signal(p, libc::SIGKILL);
            }
        }
    }
}

/// A hosted agent starts `setsid sleep` children: one whose parent (a shell) is still there,
/// one whose parent exited at once, and one in the agent's group. The host is SIGKILLed; the
/// first and the last end within a few seconds, and the orphan too when `orphan_too`.
fn escaped_children_end_with_a_killed_host(
    name: &'static str,
    env: &[(&str, &str)],
    orphan_too: bool,
) {
    let Some(_) = common::python_or_skip(name) else {
        return;
    };
    let p = Place::new("probe", name);
    let t = tag();
    let (kept, orphan, grouped) = (
        format!("1001.{t}"),
        format!("1002.{t}"),
        format!("1003.{t}"),
    );
    let _cleanup = Cleanup(vec![kept.clone(), orphan.clone(), grouped.clone()]);
    let line = format!("setsid sleep {kept} & (setsid sleep {orphan} &); sleep {grouped}");
    let script = common::manifest("tests/support/hostile_claude.py")
        .display()
        .to_string();
    let cwd = p.base.display().to_string();
    let mut all = vec![
        ("HOSTILE_MODE", "escape"),
        ("HOSTILE_ESCAPE", line.as_str()),
    ];
    all.extend_from_slice(env);
    let _client = p.tui(
        &[
            "claude",
            "--claude-bin",
            &script,
            "--cwd",
            &cwd,
            "--name",
            p.name,
        ],
        &all,
    );
    for a in [&kept, &orphan, &grouped] {
        wait_until(&format!("sleep {a} runs"), STEP, || !sleeping(a).is_empty());
    }
    let host = p.host_pid(p.name);
    signal(host, libc::SIGKILL);
    let mut gone = vec![&kept, &grouped];
    if orphan_too {
        gone.push(&orphan);
    }
    let t = Instant::now();
    let left = || -> Vec<String> {
        gone.iter()
            .flat_map(|a| sleeping(a))
            .map(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                format!("{p}: {stat}")
            })
            .collect()
    };
    while !left().is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "still running 5 s after the host was killed: {:#?}",
            left()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("{name}: ended {:?} after the kill", t.elapsed());
}

/// Whether this process may make a cgroup beneath its own (cgroup v2, delegated to us): what
/// switchboard tries for each agent.
fn cgroup_writable() -> bool {
    let Some(own) = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        })
    else {
        return false;
    };
    let Some(mount) = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                let (head, tail) = l.split_once(" - ")?;
                (tail.split(' ').next()? == "cgroup2")
                    .then(|| head.split(' ').nth(4).map(PathBuf::from))?
            })
        })
    else {
        return false;
    };
    let probe = mount
        .join(own.trim_start_matches('/'))
        .join(format!("switchboard-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// Everything an agent started ends with a killed host: where each agent gets a cgroup of
/// its own (ours writable: root, a systemd user unit with `Delegate=yes`), even a `setsid`
/// child whose parent exited long before; elsewhere the watchdog's walk of the tree (below).
#[test]
fn a_killed_hosts_escaped_descendants_end_with_it() {
    let writable = cgroup_writable();
    eprintln!("cgroup writable here: {writable}");
    escaped_children_end_with_a_killed_host("cgroup", &[], writable);
}

/// Without a cgroup (`SWITCHBOARD_CGROUP=off`, as in a login session's scope): the
/// watchdog walks the tree, so a `setsid` child whose parent is alive ends with a killed
/// host. (One whose parent exited is nobody's descendant once the host is gone: docs/host.md
/// says so.)
#[test]
fn a_killed_hosts_escaped_descendants_end_by_the_tree() {
    escaped_children_end_with_a_killed_host("tree", &[("SWITCHBOARD_CGROUP", "off")], false);
}
