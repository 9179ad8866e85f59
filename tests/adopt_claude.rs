//! Adopted Claude Code sessions (issue 36): the real interactive `claude` CLI in a pty of its
//! own, against the fake model, with switchboard's hooks installed by `switchboard hooks
//! install` into the test's HOME; a host (`switchboard up --name`, an empty workspace) on
//! another pty. Every answer is given with the keys a person would press, in switchboard or
//! in Claude's own terminal, and checked where it lands: the file system, the fake model's
//! next request, the two screens, the recordings.

use std::time::{Duration, Instant};

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

use serde_json::{Value, json};
use support::adopt::{SIZE, World, kill, wait_until};
use support::fake_model::{FakeModel, Scenario, claude_bin, claude_env};
use support::pty::Tui;

const STEP: Duration = Duration::from_secs(40);
/// Ctrl-S: send a JSON editor.
const CTRL_S: &str = "\x13";

/// A Claude CLI in its own pty, hooked to switchboard, against the fake model.
struct Claude {
    tui: Tui,
    fake: FakeModel,
}

impl Drop for Claude {
    fn drop(&mut self) {
        let _ = self.tui.child.kill();
    }
}

/// Host `name` stopped when the test ends, however it ends.
struct Host<'a> {
    world: &'a World,
    name: &'a str,
    tui: Tui,
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        let _ = self.world.sb(&["stop", self.name]);
    }
}

fn host<'a>(world: &'a World, name: &'a str) -> Host<'a> {
    Host {
        world,
        name,
        tui: world.host(name, &[]),
    }
}

/// Prepare Claude's home (no first-run screens, manual permission mode, one hook of the
/// person's own), install switchboard's hooks, and start the CLI in the project.
fn claude(world: &World, tag: &str) -> Option<Claude> {
    let bin = support::common::require_or_skip(
        &format!("adopt_claude_{tag}"),
        support::common::CLAUDE_CLI,
        claude_bin(),
    )?;
    let fake = FakeModel::start_blocking(Scenario::load("adopt_claude"));
    let key = "sk-ant-fake-test-key";
    let claude_json = json!({
        "hasCompletedOnboarding": true,
        "hasSeenAutoDefaultNudge": true,
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
        "projects": {world.proj.display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(world.home.join(".claude.json"), claude_json.to_string()).unwrap();
    std::fs::create_dir_all(world.home.join(".claude")).unwrap();
    // The person's own settings: manual mode (where Claude asks), and a hook of theirs that
    // must keep running beside ours.
    let marker = world.root.join("user-hook-ran");
    let settings = format!(
        "{{\n  \"permissions\": {{\n    \"defaultMode\": \"default\"\n  }},\n  \"hooks\": {{\n    \"Stop\": [\n      {{\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"touch {}\"\n          }}\n        ]\n      }}\n    ]\n  }}\n}}\n",
        marker.display()
    );
    let settings_path = world.home.join(".claude/settings.json");
    std::fs::write(&settings_path, &settings).unwrap();
    let out = world.sb(&["hooks", "install", "--claude", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    let installed = std::fs::read_to_string(&settings_path).unwrap();
    let v: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        format!("touch {}", marker.display()),
        "the person's own hook stays first"
    );
    assert_eq!(v["permissions"]["defaultMode"], "default");
    let mut env: Vec<(String, String)> = claude_env(&world.home, &fake.base_url());
    env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
    env.push(("ANTHROPIC_API_KEY".into(), key.into()));
    env.push(("IS_SANDBOX".into(), "1".into()));
    env.extend(
        world
            .env()
            .into_iter()
            .filter(|(k, _)| k != "HOME" && !k.starts_with("SWITCHBOARD_DATA")),
    );
    let tui = Tui::spawn_program(
        &bin,
        &[],
        &env,
        support::fake_model::CLAUDE_ENV_REMOVE,
        &world.proj,
        SIZE,
    );
    tui.wait_for(&["Claude Code v"], STEP);
    // The banner comes before the input box takes keys.
    std::thread::sleep(Duration::from_millis(1500));
    Some(Claude { tui, fake })
}

impl Claude {
    /// Type a prompt as a person does and send it.
    fn prompt(&mut self, text: &str) {
        self.tui.send(text.as_bytes());
        self.tui.send(b"\r");
    }

    /// Wait until the model's `n`-th answer ending a turn was served.
    fn turns_done(&self, n: usize) {
        let ok = self.fake.wait_for_blocking(
            move |r| {
                r.iter()
                    .filter(|r| r.rule.as_deref() == Some("after"))
                    .count()
                    >= n
            },
            STEP,
        );
        assert!(
            ok,
            "turn {n} did not end\n{}\n{}",
            self.fake.dump(),
            self.tui.screen()
        );
    }

    /// The tool results the model has received.
    fn results(&self) -> Vec<support::fake_model::ToolResult> {
        self.fake.tool_results()
    }
}

/// Open the oldest card in switchboard and wait until it shows `what`.
fn open_card(h: &mut Host, what: &str) -> String {
    h.tui.wait_for(&["g opens the oldest"], STEP);
    h.tui.send_now(b"g");
    h.tui.wait_for(&[what], STEP)
}

fn exists(world: &World, name: &str) -> bool {
    world.proj.join(name).exists()
}

/// Events of the adopted session's recording, by name.
fn recorded_events(world: &World, name: &str, needle: &str) -> usize {
    world
        .recordings()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter_map(|e| e["line"].as_str().map(str::to_string))
        .filter(|l| l.contains(&format!("\"hook_event_name\":\"{name}\"")) && l.contains(needle))
        .count()
}

/// Allow, deny with a message the model reads, an edited command that is what runs, allow
/// always (the next identical call asks nobody), and a multiSelect question answered here.
#[test]
fn claude_permissions_answered_in_switchboard() {
    let world = World::new("claude-answers");
    let Some(mut c) = claude(&world, "answers") else {
        return;
    };
    let mut h = host(&world, "cl-answers");
    std::fs::create_dir_all(world.proj.join("keep")).unwrap();

    // y: allowed once, it runs.
    c.prompt("RUN_TOUCH");
    let card = open_card(&mut h, "$ touch allowed.txt");
    assert!(
        card.contains("Claude shows its own dialog there too"),
        "{card}"
    );
    assert!(card.contains("[T] Own terminal"), "{card}");
    h.tui.send(b"y");
    c.turns_done(1);
    assert!(exists(&world, "allowed.txt"));
    let r = c.results();
    assert!(!r.last().unwrap().is_error, "{r:?}");

    // n + a message: denied, and the model reads the message.
    c.prompt("RUN_DENY");
    open_card(&mut h, "$ rm -rf keep");
    h.tui.send(b"n");
    h.tui.send(b"DENIED_FROM_SWITCHBOARD");
    h.tui.send(b"\r");
    c.turns_done(2);
    assert!(world.proj.join("keep").is_dir(), "nothing was removed");
    let last = c.results().last().cloned().unwrap();
    assert!(
        last.is_error && last.text.contains("DENIED_FROM_SWITCHBOARD"),
        "{last:?}"
    );

    // e: the edit is what runs.
    c.prompt("RUN_EDIT");
    open_card(&mut h, "$ touch original.txt");
    h.tui.send(b"e");
    h.tui
        .wait_for(&["\"command\": \"touch original.txt\""], STEP);
    // To the command's line, its end, back over `",`, and rewrite the file name.
    h.tui.send(b"\x1b[1;5H");
    h.tui.send(b"\x1b[B");
    h.tui.send(b"\x1b[F");
    h.tui.send(b"\x1b[D\x1b[D");
    h.tui.send(&b"\x7f".repeat("original.txt".len()));
    h.tui.send(b"edited.txt");
    h.tui.wait_for(&["\"command\": \"touch edited.txt\""], STEP);
    h.tui.send(CTRL_S.as_bytes());
    c.turns_done(3);
    assert!(exists(&world, "edited.txt"), "the edited command ran");
    assert!(!exists(&world, "original.txt"), "the asked one did not");

    // a: always (the CLI's suggestion, this session): the same call again asks nobody.
    c.prompt("RUN_ALWAYS");
    open_card(&mut h, "$ touch always.txt");
    h.tui.send(b"a");
    c.turns_done(4);
    assert!(exists(&world, "always.txt"));
    std::fs::remove_file(world.proj.join("always.txt")).unwrap();
    c.prompt("RUN_ALWAYS");
    c.turns_done(5);
    assert!(exists(&world, "always.txt"), "ran again");
    wait_until("both calls recorded", STEP, || {
        recorded_events(&world, "PreToolUse", "always.txt") == 2
    });
    assert_eq!(
        recorded_events(&world, "PermissionRequest", "always.txt"),
        1,
        "the second identical call asked nobody"
    );

    // A multiSelect question answered here reaches the model as the CLI expects: the chosen
    // labels joined with ", ".
    c.prompt("RUN_ASK");
    open_card(&mut h, "Which regions should the canary cover?");
    h.tui.send(b"1");
    h.tui.send(b"2");
    h.tui.send(b"\r");
    h.tui.wait_for(&["Roll back automatically?"], STEP);
    h.tui.send(b"1");
    h.tui.send(b"\r");
    c.turns_done(6);
    let last = c.results().last().cloned().unwrap();
    assert_eq!(last.tool_name.as_deref(), Some("AskUserQuestion"));
    assert!(
        last.text.contains("us-east, eu-west") && last.text.contains("Yes"),
        "{last:?}"
    );
    assert!(!last.is_error, "{last:?}");

    // The person's own hook ran all along.
    assert!(world.root.join("user-hook-ran").exists());
    let screen = h.tui.screen();
    assert!(
        !screen.contains("g opens the oldest"),
        "nothing waits: {screen}"
    );
    drop(c);
    world.stop("cl-answers");
    h.tui.wait_for(&["recording written"], STEP);
    world.validate_all();
    // Read back through the replay mapping: every answer where it was given.
    let rec = world
        .recordings()
        .into_iter()
        .find(|p| p.display().to_string().contains("-adopted-claude"))
        .expect("the session's recording")
        .display()
        .to_string();
    let out = world.sb(&["export", &rec, "--markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{md}");
    for said in [
        "allowed once: Bash `touch allowed.txt`",
        "denied: Bash `rm -rf keep`",
        "allowed with an edit: Bash `touch edited.txt` (asked: `touch original.txt`)",
        "allowed always (session rule): Bash `touch always.txt`",
        "us-east, eu-west",
        "RUN_TOUCH",
        "TURN_DONE",
    ] {
        assert!(md.contains(said), "{said} not in the export:\n{md}");
    }
}

/// A background sub-agent's request sits on the sub-agent's node; a request answered in
/// Claude's own terminal leaves switchboard's inbox within a second, and the transcript says
/// so.
#[test]
fn claude_subagent_gate_and_an_answer_in_its_own_terminal() {
    let world = World::new("claude-sub");
    let Some(mut c) = claude(&world, "sub") else {
        return;
    };
    let mut h = host(&world, "cl-sub");

    c.prompt("RUN_SUB");
    let screen = open_card(&mut h, "$ touch sub.txt");
    // The card is the sub-agent's: its node in the tree, its name on the card.
    assert!(screen.contains("general-purpose"), "{screen}");
    assert!(
        screen.contains("sub-agent: Claude shows its dialog only once"),
        "{screen}"
    );
    h.tui.send(b"y");
    wait_until("sub.txt", STEP, || exists(&world, "sub.txt"));

    // Answered in Claude's own dialog: the card goes.
    c.prompt("RUN_NATIVE");
    h.tui.wait_for(&["g opens the oldest"], STEP);
    c.tui.wait_for(&["Do you want to proceed?"], STEP);
    // The dialog takes keys a moment after it is drawn: press until it took the answer
    // (the command ran), then time from there.
    let t = Instant::now();
    while !exists(&world, "native.txt") {
        assert!(
            t.elapsed() < STEP,
            "the answer in Claude's dialog did not take"
        );
        if c.tui.screen().contains("Do you want to proceed?") {
            c.tui.send_now(b"1");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = Instant::now();
    h.tui
        .wait_gone(&["g opens the oldest"], Duration::from_secs(1));
    eprintln!(
        "left the inbox {:?} after the answer in Claude's terminal ran",
        t.elapsed()
    );
    // The transcript of the session says where it was answered.
    h.tui.send(b"g");
    let _ = h.tui.screen();
    drop(c);
    world.stop("cl-sub");
    h.tui.wait_for(&["recording written"], STEP);
    let text = world.validate_all();
    let rec = world
        .recordings()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<String>();
    assert!(rec.contains("answered in its own terminal"), "{text}");
}

/// With no host, and with the host killed while a card waits, Claude shows its own prompt
/// within a second and nothing runs unapproved. (A background sub-agent's dialog is drawn
/// only once its hook has returned, so it shows how fast the hook falls through.)
#[test]
fn claude_fail_safe_without_a_host_and_with_the_host_killed() {
    let world = World::new("claude-failsafe");
    let Some(mut c) = claude(&world, "failsafe") else {
        return;
    };
    // No host at all.
    c.prompt("RUN_SUB");
    let served = |fake: &FakeModel| {
        fake.requests()
            .iter()
            .find(|r| r.rule.as_deref() == Some("sub_touch"))
            .map(|r| r.at)
    };
    wait_until("the sub-agent's call", STEP, || served(&c.fake).is_some());
    let t = Instant::now();
    c.tui
        .wait_for(&["Do you want to proceed?"], Duration::from_secs(5));
    let shown = t.elapsed();
    assert!(
        shown < Duration::from_millis(1500),
        "the dialog took {shown:?}"
    );
    eprintln!("no host: Claude's own dialog {shown:?} after the call was served");
    assert!(!exists(&world, "sub.txt"), "nothing ran unapproved");
    c.tui.send(b"\x1b");
    c.tui.wait_gone(&["Do you want to proceed?"], STEP);
    assert!(!exists(&world, "sub.txt"));

    // A host that is killed while the card waits.
    let h = host(&world, "cl-kill");
    c.prompt("RUN_SUB again");
    h.tui.wait_for(&["g opens the oldest"], STEP);
    assert!(!c.tui.screen().contains("Do you want to proceed?"));
    let pid = world.host_pid("cl-kill").expect("the host's pid");
    kill(pid);
    let t = Instant::now();
    c.tui
        .wait_for(&["Do you want to proceed?"], Duration::from_secs(5));
    let shown = t.elapsed();
    eprintln!("host killed: Claude's own dialog {shown:?} later");
    assert!(
        shown < Duration::from_millis(1500),
        "the dialog took {shown:?}"
    );
    assert!(!exists(&world, "sub.txt"), "nothing ran unapproved");
    c.tui.send(b"\x1b");
    c.tui.wait_gone(&["Do you want to proceed?"], STEP);
    assert!(!exists(&world, "sub.txt"));
    drop(h);
    drop(c);
    // The recording stops where the host died; the waiting gate is reported as such.
    let text = world.validate_all();
    eprintln!("{text}");
    assert!(
        text.contains("still waiting when the recording ended"),
        "{text}"
    );
}
