//! Nothing is lost when the host dies (issue 37): a workspace of the real `claude` CLI against
//! the fake model, run under a host on a pty like a person runs it. One gate is answered with
//! a key, the host is SIGKILLed while a second gate waits, and `switchboard resume` brings the
//! session back: the same conversation (the model's next request holds the earlier turns),
//! the second gate's tool never ran, the transcript shows the history, the boundary and the
//! resumed session, and every recording validates with the crash reported as a crash.

use std::path::Path;
use std::time::Duration;

mod support {
    #[path = "../support/adopt.rs"]
    pub mod adopt;
    #[path = "../support/common.rs"]
    pub mod common;
    #[path = "../support/fake_model.rs"]
    pub mod fake_model;
    #[path = "../support/pty.rs"]
    pub mod pty;
}

use serde_json::Value;
use support::adopt::{SIZE, World, kill, wait_until};
use support::fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env};
use support::pty::Tui;

const STEP: Duration = Duration::from_secs(60);

/// The world's environment plus the CLI's against the fake model.
fn env(world: &World, fake: &FakeModel) -> Vec<(String, String)> {
    let mut env = claude_env(&world.home, &fake.base_url());
    env.push(("IS_SANDBOX".into(), "1".into()));
    env.extend(world.env().into_iter().filter(|(k, _)| k != "HOME"));
    env
}

fn spawn(world: &World, env: &[(String, String)], args: &[&str]) -> Tui {
    let mut remove = CLAUDE_ENV_REMOVE.to_vec();
    remove.push("SWITCHBOARD_CLAUDE_BIN");
    Tui::spawn_program(
        Path::new(env!("CARGO_BIN_EXE_switchboard")),
        args,
        env,
        &remove,
        &world.root,
        SIZE,
    )
}

/// Stop the host `work` when the test ends, however it ends.
struct Stop<'a>(&'a World);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let _ = self.0.sb(&["stop", "work"]);
    }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_killed_host_resumes_its_claude_session_where_it_was() {
    let Some(bin) = support::common::require_or_skip(
        "resume_claude",
        support::common::CLAUDE_CLI,
        claude_bin(),
    ) else {
        return;
    };
    let world = World::new("resume-claude");
    let fake = FakeModel::start_blocking(Scenario::load("resume_claude"));
    std::fs::write(
        world.cfg.join("config.toml"),
        format!(
            "[[session]]\nname = \"api\"\nbackend = \"claude\"\ncwd = {:?}\ncommand = [{:?}]\nprompt = \"RESUME_ONE make two files\"\n",
            world.proj.display().to_string(),
            bin.display().to_string()
        ),
    )
    .unwrap();
    let env = env(&world, &fake);
    let _stop = Stop(&world);

    // The first minute: the first gate, answered with a key; the second waits.
    let mut front = spawn(&world, &env, &["up", "--name", "work"]);
    front.wait_for(&["touch one.txt", "[y] Allow once"], STEP);
    std::thread::sleep(Duration::from_millis(1000));
    front.send(b"y");
    front.wait_for(&["touch two.txt"], STEP);
    // The second gate is open (its request arrived), not just its tool call drawn.
    front.wait_for(&["touch two.txt", "1 waiting"], STEP);
    // The CLI writes its own session file a moment after the model's turn (batched): a kill
    // inside that window loses the turn from what `--resume` reads, whatever we keep (CI saw
    // it under load). Kill once the CLI has saved what the test expects back.
    wait_until("the CLI saved its second turn", STEP, || {
        claude_saved(&world.home.join(".claude/projects"), "Second file.")
    });
    wait_until("the first tool ran", STEP, || {
        world.proj.join("one.txt").exists()
    });
    assert!(!world.proj.join("two.txt").exists());

    // The host dies at once: no quit, no answer, no clean stop.
    let pid = world.host_pid("work").expect("the host is listed");
    kill(pid);
    let gone = front.wait_for(&["stopped unexpectedly"], STEP);
    assert!(gone.contains("switchboard resume work"), "{gone}");
    let listed = wait_ls(&world);
    assert!(listed.contains("switchboard resume work"), "{listed}");
    // The CLI the host started does not outlive it, and its waiting tool never ran.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!world.proj.join("two.txt").exists(), "nobody approved it");

    // Back: the same conversation, its history, the boundary, a prompt that goes on.
    let asked_before = fake.message_requests().len();
    let mut back = spawn(&world, &env, &["resume", "work"]);
    let screen = back.wait_for(&["the host stopped unexpectedly at", "First file."], STEP);
    assert!(
        screen.contains("not answered: the host stopped while this waited"),
        "{screen}"
    );
    // The resumed CLI is up (it said its session) before it is prompted.
    std::thread::sleep(Duration::from_secs(3));
    back.send(b"i");
    back.wait_for(&["Enter send"], STEP);
    back.send(b"RESUME_AGAIN where were we?");
    back.send(b"\r");
    back.wait_for(&["Back where we were."], STEP);
    let again = fake
        .message_requests()
        .into_iter()
        .skip(asked_before)
        .find(|r| r.rule.as_deref() == Some("again"))
        .expect("the resumed turn reached the model");
    let history = Value::Array(again.messages()).to_string();
    for earlier in [
        "RESUME_ONE make two files",
        "First file.",
        "toolu_one",
        "Second file.",
    ] {
        assert!(
            history.contains(earlier),
            "the resumed conversation holds {earlier:?}: {history}"
        );
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !world.proj.join("two.txt").exists(),
        "the resume approved nothing"
    );

    // A clean stop closes the workspace: nothing more to resume.
    let out = world.sb(&["stop", "work"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = world.sb(&["resume", "work"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("stopped cleanly") && text(&out).contains("nothing to resume"),
        "{}",
        text(&out)
    );

    // Every recording validates; the gate the crash left is reported as such.
    let report = world.validate_all();
    assert!(report.contains("host-stopped"), "{report}");
    assert!(!report.contains(": unanswered:"), "{report}");
    drop(back);
    drop(front);
}

/// `ls` once the crashed workspace shows (its lock is freed with the host).
fn wait_ls(world: &World) -> String {
    let mut out = String::new();
    wait_until("ls lists the crashed workspace", STEP, || {
        out = text(&world.sb(&["ls"]));
        out.contains("ended unexpectedly")
    });
    out
}

/// Whether a session file of the Claude CLI under `dir` (its projects directory) holds `text`.
fn claude_saved(dir: &Path, text: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            claude_saved(&p, text)
        } else {
            p.extension().is_some_and(|x| x == "jsonl")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains(text))
        }
    })
}
