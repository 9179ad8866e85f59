//! The command table's tests: ownership, stop and timeout, the SIGKILL watchdog, the
//! declared environment and input that never blocks.

use super::*;
use std::time::Instant;

fn root(name: &str) -> (std::path::PathBuf, Root) {
    let base = std::env::temp_dir().join(format!("sb-gw-exec-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("sub")).unwrap();
    (base.clone(), Root::open(&base).unwrap())
}

fn a(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn wait_done(c: &mut Commands, owner: &(String, String), id: &str) -> Value {
    for _ in 0..300 {
        let p = c.poll(owner, &a(json!({"commandId": id}))).unwrap();
        if p["status"] != "running" {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("command did not end");
}

#[test]
fn exec_runs_in_cwd_and_only_its_session_may_touch_it() {
    let (_b, root) = root("own");
    let mut c = Commands::default();
    let me = ("w".to_string(), "s1".to_string());
    let other = ("w".to_string(), "s2".to_string());
    let id = Commands::new_id();
    c.exec(
        &root,
        me.clone(),
        &id,
        &a(json!({"command": "pwd; read x; echo got $x", "cwd": "sub"})),
    )
    .unwrap();
    for e in [
        c.poll(&other, &a(json!({"commandId": id}))).unwrap_err(),
        c.input(&other, &a(json!({"commandId": id, "text": "hi\n"})))
            .unwrap_err(),
        c.stop(&other, &a(json!({"commandId": id}))).unwrap_err(),
    ] {
        assert_eq!(e.code, Code::CommandNotOwned);
    }
    c.input(&me, &a(json!({"commandId": id, "text": "hi\n"})))
        .unwrap();
    let p = wait_done(&mut c, &me, &id);
    assert_eq!(p["status"], "exited");
    assert_eq!(p["exitCode"], 0);
    let out = p["output"].as_str().unwrap();
    assert!(out.ends_with("/sub\ngot hi\n"), "{out}");
    assert!(Commands::check_cwd(&root, &a(json!({"cwd": "../"}))).is_err());
}

/// Whether `pid` is gone (a zombie waiting for init to reap it counts as gone).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
    }
}

/// The child half of the SIGKILL test: start a command that leaves a background process,
/// then wait to be killed.
#[test]
fn sigkill_child() {
    let Ok(dir) = std::env::var("SB_GW_EXEC_SIGKILL_DIR") else {
        return;
    };
    let root = Root::open(std::path::Path::new(&dir)).unwrap();
    let mut c = Commands::default();
    c.exec(
        &root,
        ("w".to_string(), "s".to_string()),
        &Commands::new_id(),
        &a(json!({"command": "sleep 300 & echo $! > bg.tmp; mv bg.tmp bg.pid; echo $$ > sh.tmp; mv sh.tmp sh.pid; wait"})),
    )
    .unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

/// No command outlives switchboard, even a SIGKILL of it: the watchdog ends the group.
#[test]
fn a_sigkill_of_switchboard_ends_its_commands() {
    let (base, _root) = root("sigkill");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "tools::exec::tests::sigkill_child",
            "--exact",
            "--test-threads=1",
        ])
        .env("SB_GW_EXEC_SIGKILL_DIR", &base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let read_pid = |f: &str| -> Option<i32> {
        std::fs::read_to_string(base.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut pids = None;
    for _ in 0..500 {
        if let (Some(a), Some(b)) = (read_pid("sh.pid"), read_pid("bg.pid")) {
            pids = Some((a, b));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (sh, bg) = pids.expect("the command started");
    assert!(!gone(sh) && !gone(bg));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    for _ in 0..250 {
        if gone(sh) && gone(bg) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Do not leave them behind on failure either.
    kill_group(sh, libc::SIGKILL);
    panic!("the command (sh {sh}, background {bg}) outlived a SIGKILL of switchboard");
}

#[test]
fn stop_and_timeout_end_the_whole_group() {
    let (_b, root) = root("stop");
    let mut c = Commands::default();
    let me = ("w".to_string(), "s".to_string());
    let id = Commands::new_id();
    c.exec(
        &root,
        me.clone(),
        &id,
        &a(json!({"command": "sleep 30 & sleep 30"})),
    )
    .unwrap();
    c.stop(&me, &a(json!({"commandId": id}))).unwrap();
    assert_eq!(wait_done(&mut c, &me, &id)["status"], "stopped");
    let id2 = Commands::new_id();
    c.exec(
        &root,
        me.clone(),
        &id2,
        &a(json!({"command": "sleep 30", "timeoutMs": 1000})),
    )
    .unwrap();
    assert_eq!(wait_done(&mut c, &me, &id2)["status"], "timed_out");
}

#[test]
fn running_commands_are_capped() {
    let (_b, root) = root("cap");
    let mut c = Commands::default();
    let me = ("w".to_string(), "s".to_string());
    for _ in 0..MAX_RUNNING {
        c.exec(
            &root,
            me.clone(),
            &Commands::new_id(),
            &a(json!({"command": "sleep 30"})),
        )
        .unwrap();
    }
    let e = c
        .exec(
            &root,
            me.clone(),
            &Commands::new_id(),
            &a(json!({"command": "true"})),
        )
        .unwrap_err();
    assert_eq!(e.code, Code::Busy);
    drop(c); // kills them all
}

#[test]
fn output_is_bounded_and_says_what_was_dropped() {
    let mut o = Output::default();
    o.push(&vec![b'a'; OUTPUT_CAP]);
    o.push(b"bcd");
    assert_eq!(o.bytes.len(), OUTPUT_CAP);
    assert_eq!(o.base, 3);
    assert!(o.bytes.ends_with(b"bcd"));
}

/// What an approved `env` prints: only the allowlisted names we hold and the configured ones
/// (plus `PWD`, which `sh` sets itself), never the token variable or a `SWITCHBOARD_*`.
#[test]
fn a_command_sees_only_the_declared_environment() {
    let (_b, root) = root("env");
    let ours = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/home/owner"),
        ("LANG", "C.UTF-8"),
        ("SB_GW_TOKEN", "tok-never-shown-4242"),
        ("SWITCHBOARD_DATA_DIR", "/data"),
        ("AWS_SECRET_ACCESS_KEY", "aws-never-shown"),
        ("CARGO_HOME", "/cargo"),
    ]
    .map(|(k, v)| (k.into(), v.into()));
    let env = ExecEnv::build(
        ours,
        &["CARGO_HOME".into(), "RUST_LOG=debug".into()],
        &["SB_GW_TOKEN".into()],
    )
    .unwrap();
    let mut c = Commands::new(Arc::new(env));
    let me = ("w".to_string(), "s".to_string());
    let id = Commands::new_id();
    c.exec(&root, me.clone(), &id, &a(json!({"command": "env"})))
        .unwrap();
    let p = wait_done(&mut c, &me, &id);
    let out = p["output"].as_str().unwrap();
    let mut names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|x| x.0)
        .collect();
    names.sort();
    names.retain(|n| *n != "PWD");
    assert_eq!(
        names,
        ["CARGO_HOME", "HOME", "LANG", "PATH", "RUST_LOG"],
        "{out}"
    );
    assert!(out.contains("RUST_LOG=debug\n"), "{out}");
    assert!(!out.contains("never-shown"), "{out}");
    // What the card is given is what ran.
    let shown: Vec<&str> = c.env().vars().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(shown, ["CARGO_HOME", "HOME", "LANG", "PATH", "RUST_LOG"]);
}

/// Input is queued and delivered: a command that reads gets every byte, and the poll says so.
#[test]
fn input_is_delivered_in_order_and_the_poll_shows_it() {
    let (base, root) = root("feed");
    let mut c = Commands::default();
    let me = ("w".to_string(), "s".to_string());
    let id = Commands::new_id();
    c.exec(
        &root,
        me.clone(),
        &id,
        &a(json!({"command": "head -c 200000 > got.txt; echo done"})),
    )
    .unwrap();
    let chunk = "0123456789".repeat(10_000);
    let r = c
        .input(&me, &a(json!({"commandId": id, "text": chunk})))
        .unwrap();
    assert_eq!(r["queued"], 100_000);
    c.input(&me, &a(json!({"commandId": id, "text": chunk})))
        .unwrap();
    let p = wait_done(&mut c, &me, &id);
    assert_eq!(p["output"], "done\n");
    assert_eq!(p["inputDelivered"], 200_000);
    assert_eq!(p["inputPending"], 0);
    assert_eq!(
        std::fs::read_to_string(base.join("got.txt")).unwrap(),
        chunk.repeat(2)
    );
    // Once it has ended, input is refused.
    let e = c
        .input(&me, &a(json!({"commandId": id, "text": "x"})))
        .unwrap_err();
    assert_eq!(e.code, Code::Failed);
}

/// 64 KiB and more to a command that never reads its stdin: every call answers at once, the
/// one past the bound is `busy`, a poll is answered at once, and dropping the table does not
/// wait for the pending input.
#[test]
fn input_to_a_command_that_never_reads_never_blocks() {
    let (_b, root) = root("deaf");
    let mut c = Commands::default();
    let me = ("w".to_string(), "s".to_string());
    let id = Commands::new_id();
    c.exec(&root, me.clone(), &id, &a(json!({"command": "sleep 30"})))
        .unwrap();
    let chunk = "x".repeat(64 * 1024);
    let mut accepted = 0;
    let busy = loop {
        let t = Instant::now();
        let r = c.input(&me, &a(json!({"commandId": id, "text": chunk})));
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "input took {:?}",
            t.elapsed()
        );
        match r {
            Ok(v) => {
                accepted += 1;
                assert!(v["pending"].as_u64().unwrap() as usize <= super::super::feed::INPUT_CAP);
            }
            Err(e) => break e,
        }
        // The pipe (64 KiB here) plus the bound: never more than a few dozen calls.
        assert!(accepted < 64, "the bound never answered busy");
    };
    assert_eq!(busy.code, Code::Busy, "{}", busy.message);
    // The pipe takes some, the queue the bound: at least 256 KiB were accepted.
    assert!(accepted >= 4, "{accepted}");
    let t = Instant::now();
    let p = c.poll(&me, &a(json!({"commandId": id}))).unwrap();
    assert!(t.elapsed() < Duration::from_secs(1));
    assert_eq!(p["status"], "running");
    assert!(p["inputPending"].as_u64().unwrap() > 0, "{p}");
    let t = Instant::now();
    drop(c);
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "drop took {:?}",
        t.elapsed()
    );
}

/// A background child that keeps the command's output open cannot outlive its timeout.
#[test]
fn a_background_child_holding_the_output_ends_at_the_timeout() {
    let (_b, root) = root("bg-timeout");
    let mut c = Commands::default();
    let o = ("w".to_string(), "s".to_string());
    let id = Commands::new_id();
    c.exec(
        &root,
        o.clone(),
        &id,
        &a(json!({"command": "sleep 7.77 & echo started", "timeoutMs": 1000})),
    )
    .unwrap();
    let t = Instant::now();
    wait_done(&mut c, &o, &id);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}
