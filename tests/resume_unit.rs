//! The systemd user unit of docs/host.md (issue 37): `systemd-analyze verify` takes it
//! without a word, and what systemd does with it works. Its command resumes a workspace whose
//! host was SIGKILLed, with no terminal; the SIGTERM of a shutdown stops it and leaves it
//! resumable; the same command brings it back ("after the reboot"); after `stop` it finds
//! nothing to resume and succeeds (the unit's `Restart=on-failure` then rests).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support {
    #[path = "../support/adopt.rs"]
    pub mod adopt;
    #[path = "../support/common.rs"]
    pub mod common;
    #[path = "../support/pty.rs"]
    pub mod pty;
}

use support::adopt::{SIZE, World, kill, wait_until};
use support::pty::Tui;

const STEP: Duration = Duration::from_secs(60);

/// The unit between the markers of docs/host.md.
fn unit() -> String {
    let doc = std::fs::read_to_string(support::common::manifest("docs/host.md")).unwrap();
    let start = doc
        .find("<!-- unit:start -->")
        .expect("the unit's start marker");
    let end = doc
        .find("<!-- unit:end -->")
        .expect("the unit's end marker");
    let block = &doc[start..end];
    let body = block
        .split_once("```ini\n")
        .and_then(|(_, b)| b.split_once("```"))
        .expect("an ini block")
        .0;
    body.to_string()
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The unit's ExecStart for instance `name`, as systemd expands it, with the built binary
/// where the unit names the installed one.
fn exec_start(unit: &str, home: &Path, name: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart");
    let line = line
        .replace(
            "%h/.cargo/bin/switchboard",
            env!("CARGO_BIN_EXE_switchboard"),
        )
        .replace("%h", &home.display().to_string())
        .replace("%i", name);
    shlex::split(&line).expect("a command line")
}

#[test]
fn the_documented_unit_verifies() {
    let Some(analyze) = support::common::require_or_skip(
        "the_documented_unit_verifies",
        "systemd-analyze",
        ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
            .into_iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file()),
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("sb-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unit = unit().replace(
        "%h/.cargo/bin/switchboard",
        env!("CARGO_BIN_EXE_switchboard"),
    );
    let path = dir.join("switchboard@work.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .current_dir(&dir)
        .output()
        .unwrap();
    let said = text(&out)
        .lines()
        // Not the unit's: this machine's own manager state.
        .filter(|l| !l.contains("RuntimeDirectory") && !l.contains("initialize manager"))
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(out.status.success() && said.is_empty(), "{said:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_units_command_resumes_a_killed_workspace_and_a_shutdown_leaves_it_resumable() {
    let world = World::new("unit");
    let unit = unit();
    let argv = exec_start(&unit, &world.home, "work");
    assert_eq!(argv[1..], ["resume", "work", "--serve"]);
    let mut env = world.env();
    env.push(("SWITCHBOARD_DEMO_FAST".into(), "1".into()));

    // A workspace killed outright while a gate waits.
    let front = Tui::spawn_program(
        Path::new(env!("CARGO_BIN_EXE_switchboard")),
        &["demo", "--sessions", "2", "--name", "work"],
        &env,
        &["SWITCHBOARD_CLAUDE_BIN"],
        &world.root,
        SIZE,
    );
    front.wait_for(&["[y]"], STEP);
    kill(world.host_pid("work").expect("listed"));
    front.wait_for(&["stopped unexpectedly"], STEP);
    drop(front);
    let ls = || text(&world.sb(&["ls"]));
    wait_until("it is listed as ended", STEP, || {
        ls().contains("`switchboard resume work`")
    });

    // What systemd runs: no terminal, no front; the host in the foreground.
    let serve = || {
        Command::new(&argv[0])
            .args(&argv[1..])
            .envs(env.iter().cloned())
            .env_remove("SWITCHBOARD_CLAUDE_BIN")
            .current_dir(&world.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    for boot in 0..2 {
        let mut host = serve();
        wait_until("the host serves", STEP, || {
            ls().contains("work  ") && ls().contains("(pid ")
        });
        let listed = ls();
        assert!(listed.contains("2 sessions"), "boot {boot}: {listed}");
        // The shutdown: SIGTERM, and the host stops on its own.
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(host.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        let status = loop {
            if let Some(s) = host.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < STEP, "the host did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "boot {boot}: {status:?}");
        wait_until("resumable after the shutdown", STEP, || {
            ls().contains("`switchboard resume work`")
        });
    }

    // Stopped by its owner: the unit's command finds nothing to resume, and succeeds.
    let mut host = serve();
    wait_until("the host serves", STEP, || ls().contains("(pid "));
    let out = world.sb(&["stop", "work"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(host.wait().unwrap().success());
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().cloned())
        .current_dir(&world.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("nothing to resume"), "{}", text(&out));
}
