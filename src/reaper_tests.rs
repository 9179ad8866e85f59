//! The test harness runs tests as threads of one process, and a subreaper is a property of
//! the process: each test here re-runs this test binary for one `*_child` test, which makes
//! itself a subreaper, and checks from outside what it left behind.

use super::*;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Processes whose command line is `sleep <arg>` for one of `args`.
fn sleeps(args: &[String]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let Ok(c) = std::fs::read(format!("/proc/{p}/cmdline")) else {
                return false;
            };
            let parts: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            parts.len() >= 2
                && parts[0].ends_with(b"sleep")
                && args.iter().any(|a| parts[1] == a.as_bytes())
                && linux::stat(*p).is_some_and(|s| s.state != 'Z')
        })
        .collect()
}

/// Run `test` of this binary with `var=value`; its exit status.
fn run_child(test: &str, var: &str, value: &str) -> std::process::ExitStatus {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(var, value)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > Duration::from_secs(30) {
            let _ = c.kill();
            panic!("{test} did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The child half of `descendants_that_left_the_group_are_ended`.
#[test]
fn sweep_child() {
    let Ok(tag) = std::env::var("SB_REAPER_SWEEP") else {
        return;
    };
    assert!(become_subreaper());
    let args: Vec<String> = (1001..=1004).map(|n| format!("{n}.{tag}")).collect();
    let script = format!(
        "setsid sleep {} & (setsid sh -c 'sleep {}' &); nohup sleep {} >/dev/null 2>&1 & sleep {} &",
        args[0], args[1], args[2], args[3]
    );
    let mut sh = Command::new("sh")
        .arg("-c")
        .arg(script)
        .process_group(0)
        .spawn()
        .unwrap();
    assert!(sh.wait().unwrap().success());
    let t = Instant::now();
    let found = loop {
        let d: Vec<i32> = descendants().iter().map(|(p, _)| *p).collect();
        let found: Vec<i32> = sleeps(&args)
            .into_iter()
            .filter(|p| d.contains(p))
            .collect();
        if found.len() == 4 || t.elapsed() > Duration::from_secs(10) {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(found.len(), 4, "the four sleeps are below us: {found:?}");
    end_descendants(Duration::from_secs(2));
    assert!(descendants().is_empty(), "{:?}", descendants());
}

/// `setsid`, a double fork into a new session, `nohup` and a plain background job, all left
/// by a shell that exited: after the sweep none is running.
#[test]
fn descendants_that_left_the_group_are_ended() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let tag = format!("{}{nanos:09}", std::process::id());
    let args: Vec<String> = (1001..=1004).map(|n| format!("{n}.{tag}")).collect();
    let status = run_child("reaper::tests::sweep_child", "SB_REAPER_SWEEP", &tag);
    let left = sleeps(&args);
    for p in &left {
        // SAFETY: only sends a signal, to a sleep whose unique argument this test chose.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    assert!(status.success(), "the child failed: {status:?}");
    assert!(left.is_empty(), "still running: {left:?}");
}

/// The child half of `only_inherited_zombies_are_reaped`.
#[test]
fn orphans_child() {
    if std::env::var("SB_REAPER_ORPHANS").is_err() {
        return;
    }
    assert!(become_subreaper());
    // Children we start ourselves, as the spawn sites do: one leading its own group, one in
    // ours. Both end at once and stay zombies until we wait for them.
    let mut own_group = Command::new("true").process_group(0).spawn().unwrap();
    let mut our_group = Command::new("true").spawn().unwrap();
    // A command (its own group) that leaves one orphan in a new session and one in its group.
    let mut sh = Command::new("sh")
        .arg("-c")
        .arg("(setsid true &); (true &); sleep 0.1")
        .process_group(0)
        .spawn()
        .unwrap();
    assert!(sh.wait().unwrap().success());
    let t = Instant::now();
    let mut reaped = 0;
    while reaped < 2 && t.elapsed() < Duration::from_secs(10) {
        reaped += reap_orphans();
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    reaped += reap_orphans();
    assert_eq!(reaped, 2, "both orphans reaped, nothing else");
    // Our own children's statuses were left to us.
    assert!(own_group.wait().unwrap().success());
    assert!(our_group.wait().unwrap().success());
}

/// The reaper thread reaps orphans reparented to us, and never a child std or tokio waits for.
#[test]
fn only_inherited_zombies_are_reaped() {
    let status = run_child("reaper::tests::orphans_child", "SB_REAPER_ORPHANS", "1");
    assert!(status.success(), "the child failed: {status:?}");
}
