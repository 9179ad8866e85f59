//! A seeded kill loop (issue 37): a workspace under a host is SIGKILLed at random points, 20
//! times, and resumed each time, while keys answer some of its gates. After every kill the
//! manifest parses and every recording reads back whole; at the end (one last resume and a
//! clean stop) the workspace validates clean: no request was answered twice, no decision
//! names a gate its recording did not ask, and no tool ran that nobody allowed. No host ever
//! panicked. Two workspaces: the scripted demo (three sessions) and the real `claude` CLI
//! against the fake model. And a rule made for one session (`a`) comes back with it.
//!
//! The seed is printed; `SWITCHBOARD_KILL_SEED=N` replays a run.

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

use serde_json::{Value, json};
use support::adopt::{SIZE, World, kill, wait_until};
use support::fake_model::{CLAUDE_ENV_REMOVE, FakeModel, Scenario, claude_bin, claude_env};
use support::pty::Tui;

const STEP: Duration = Duration::from_secs(60);
const KILLS: usize = 20;

/// A small seeded generator (xorshift): the same seed, the same run.
struct Rng(u64);

impl Rng {
    fn new(tag: &str) -> Rng {
        let seed = std::env::var("SWITCHBOARD_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        println!("{tag}: SWITCHBOARD_KILL_SEED={seed}");
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn spawn(world: &World, env: &[(String, String)], args: &[&str]) -> Tui {
    let mut all = env.to_vec();
    all.extend(world.env().into_iter().filter(|(k, _)| k != "HOME"));
    let mut remove = CLAUDE_ENV_REMOVE.to_vec();
    remove.push("SWITCHBOARD_CLAUDE_BIN");
    Tui::spawn_program(
        Path::new(env!("CARGO_BIN_EXE_switchboard")),
        args,
        &all,
        &remove,
        &world.root,
        SIZE,
    )
}

/// The workspace's manifest (there is one: every kill resumes the same).
fn manifest(world: &World) -> std::path::PathBuf {
    let dir = world.data.join("recordings");
    let found: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("workspace-") && n.ends_with(".json"))
        })
        .collect();
    assert_eq!(found.len(), 1, "one workspace, resumed: {found:?}");
    found[0].clone()
}

/// What a host wrote on its standard error (the front's `NAME.err`): never a panic.
fn no_panic(world: &World, name: &str) {
    let err = world.run.join("switchboard").join(format!("{name}.err"));
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(!said.contains("panicked"), "the host panicked:\n{said}");
}

/// Run the loop: `start` the workspace, then 20 times wait a random while (pressing `y` on a
/// card now and then, prompting an idle session), SIGKILL the host, check what it left, and
/// resume it. `prompt`: what to type into an idle session to give it work.
fn kill_loop(
    world: &World,
    env: &[(String, String)],
    name: &str,
    start: &[&str],
    prompt: &dyn Fn(usize) -> String,
) {
    let mut rng = Rng::new(name);
    let mut tui = spawn(world, env, start);
    tui.wait_for(&["Sessions"], STEP);
    for round in 0..KILLS {
        // Give it work and answer a little, at random.
        let steps = rng.below(4);
        for _ in 0..steps {
            std::thread::sleep(Duration::from_millis(200 + rng.below(900)));
            let screen = tui.screen();
            if screen.contains("[y]") && rng.below(2) == 0 {
                std::thread::sleep(Duration::from_millis(600));
                tui.send(b"y");
            } else if !screen.contains("[y]") && screen.contains("idle") {
                tui.send(b"i");
                tui.send(prompt(round).as_bytes());
                tui.send(b"\r");
                tui.send(b"\x1b");
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(1500)));
        let pid = wait_pid(world, name);
        kill(pid);
        tui.wait_for(&["stopped unexpectedly"], STEP);
        drop(tui);
        no_panic(world, name);
        // Whatever instant it died at, the manifest parses and every line reads back.
        let m = manifest(world);
        let out = world.sb(&["validate", m.to_str().unwrap()]);
        assert_ne!(
            out.status.code(),
            Some(2),
            "round {round}: unreadable after the kill:\n{}",
            text(&out)
        );
        wait_until("the lock is free", STEP, || {
            text(&world.sb(&["ls"])).contains("ended unexpectedly")
        });
        tui = spawn(world, env, &["resume", name]);
        tui.wait_for(&["the host stopped unexpectedly at"], STEP);
    }
    // One clean stop: every gate answered as a quit answers, the manifest closed.
    std::thread::sleep(Duration::from_millis(500));
    let out = world.sb(&["stop", name]);
    assert!(out.status.success(), "{}", text(&out));
    drop(tui);
    no_panic(world, name);
    let m = manifest(world);
    let out = world.sb(&["validate", m.to_str().unwrap()]);
    let said = text(&out);
    assert!(
        out.status.success(),
        "the resumed workspace validates:\n{said}"
    );
    for never in [
        "answered-twice",
        "duplicate-decision",
        "unknown-gate",
        "decision-mismatch",
    ] {
        assert!(!said.contains(never), "{never}:\n{said}");
    }
    let out = world.sb(&["resume", name]);
    assert!(text(&out).contains("nothing to resume"), "{}", text(&out));
}

fn wait_pid(world: &World, name: &str) -> i32 {
    let mut pid = None;
    wait_until("the host is listed", STEP, || {
        pid = world.host_pid(name);
        pid.is_some()
    });
    pid.unwrap()
}

#[test]
fn a_demo_workspace_killed_twenty_times_never_answers_twice() {
    let world = World::new("kill-demo");
    let env = vec![("SWITCHBOARD_DEMO_FAST".to_string(), "1".to_string())];
    kill_loop(
        &world,
        &env,
        "kl",
        &["demo", "--sessions", "3", "--name", "kl"],
        &|_| "Add audit logging to the auth module.".into(),
    );
}

/// Every Bash command the CLI asked about, with whether a recorded answer allowed it.
fn asked_and_allowed(world: &World) -> Vec<(String, bool)> {
    let mut asked: Vec<(String, String)> = Vec::new();
    let mut allowed: Vec<String> = Vec::new();
    for f in std::fs::read_dir(world.data.join("recordings"))
        .unwrap()
        .flatten()
    {
        let p = f.path();
        if p.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines().skip(1) {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<Value>(e["line"].as_str().unwrap_or("")) else {
                continue;
            };
            let file = p.display().to_string();
            if e["dir"] == "in" && v["request"]["subtype"] == "can_use_tool" {
                let cmd = v["request"]["input"]["command"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                asked.push((format!("{file}#{}", v["request_id"]), cmd));
            }
            if e["dir"] == "out" && v["response"]["response"]["behavior"] == "allow" {
                allowed.push(format!("{file}#{}", v["response"]["request_id"]));
            }
        }
    }
    asked
        .into_iter()
        .map(|(id, cmd)| (cmd, allowed.contains(&id)))
        .collect()
}

#[test]
fn a_claude_session_killed_twenty_times_runs_nothing_unapproved() {
    let Some(bin) = support::common::require_or_skip(
        "resume_kill_loop_claude",
        support::common::CLAUDE_CLI,
        claude_bin(),
    ) else {
        return;
    };
    let world = World::new("kill-claude");
    // LOOP_n asks for Bash `touch loop-n.txt`; a tool result ends the turn.
    let mut rules: Vec<Value> = (0..KILLS)
        .map(|n| {
            json!({"name": format!("loop{n}"),
                   "when": {"last_user_text_contains": format!("LOOP_{n} "), "tool_result": false, "main": true},
                   "reply": {"content": [{"type": "tool_use", "id": format!("toolu_loop{n}"), "name": "Bash",
                              "input": {"command": format!("touch loop-{n}.txt"), "description": "loop"}}]}})
        })
        .collect();
    rules.push(
        json!({"name": "after", "when": {"tool_result": {"tool_name": "Bash"}, "main": true},
                      "reply": {"text": "looped."}}),
    );
    let scenario = Scenario::from_value(
        "kill_loop",
        &json!({"rules": rules, "default": {"text": "ok"}}),
    )
    .unwrap();
    let fake = FakeModel::start_blocking(scenario);
    std::fs::write(
        world.cfg.join("config.toml"),
        format!(
            "[[session]]\nname = \"api\"\nbackend = \"claude\"\ncwd = {:?}\ncommand = [{:?}]\nprompt = \"LOOP_0 go\"\n",
            world.proj.display().to_string(),
            bin.display().to_string()
        ),
    )
    .unwrap();
    let mut env = claude_env(&world.home, &fake.base_url());
    env.push(("IS_SANDBOX".into(), "1".into()));
    kill_loop(&world, &env, "kc", &["up", "--name", "kc"], &|n| {
        format!("LOOP_{} go", n + 1)
    });
    // Every file a tool made was allowed by a recorded answer; none other exists.
    let decided = asked_and_allowed(&world);
    assert!(
        decided.iter().any(|(_, ok)| *ok),
        "the loop allowed no card, so nothing here was tried: {decided:?}"
    );
    for f in std::fs::read_dir(&world.proj).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if let Some(n) = name.strip_prefix("loop-") {
            let cmd = format!("touch loop-{n}");
            assert!(
                decided.iter().any(|(c, ok)| *c == cmd && *ok),
                "{name} was made without an allow: {decided:?}"
            );
        }
    }
}

/// A rule made for one session only (`a` on a card: exactly that request) is kept in the
/// manifest as it is made and comes back with the session when the killed workspace is
/// resumed.
#[test]
fn a_rule_made_for_a_session_comes_back_after_a_kill() {
    let world = World::new("kill-rule");
    let env = vec![("SWITCHBOARD_DEMO_FAST".to_string(), "1".to_string())];
    let mut tui = spawn(&world, &env, &["demo", "--sessions", "1", "--name", "kr"]);
    // The demo's cards in turn (a breakpoint comes first): each one continued, until one
    // offers "allow always"; that one is answered with `a`.
    let mut answered = 0;
    loop {
        tui.wait_for(&["1 waiting"], STEP);
        tui.send(b"g");
        let card = tui.wait_for(&["[y]"], STEP);
        // Past the card's settle time.
        std::thread::sleep(Duration::from_millis(600));
        if card.contains("[a] Allow always") {
            tui.send(b"a");
            break;
        }
        tui.send(b"y");
        answered += 1;
        assert!(answered < 10, "no card offered allow always:\n{card}");
        wait_until("the card to go", STEP, || {
            !tui.screen().contains("1 waiting")
        });
    }
    // (The next card takes the keyboard and the view: the rule is looked for where it is
    // kept.)
    // In the manifest as soon as it is written (at most a second later).
    let m = manifest(&world);
    let mut kept = Value::Null;
    wait_until("the rule is in the manifest", STEP, || {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&m).unwrap_or_default())
            .unwrap_or_default();
        kept = doc["sessions"][0]["rules"][0].clone();
        kept.is_object()
    });
    assert_eq!(kept["action"], "allow", "{kept}");
    assert_eq!(kept["exact"], true, "{kept}");
    kill(wait_pid(&world, "kr"));
    tui.wait_for(&["stopped unexpectedly"], STEP);
    drop(tui);
    wait_until("the lock is free", STEP, || {
        text(&world.sb(&["ls"])).contains("ended unexpectedly")
    });
    let mut back = spawn(&world, &env, &["resume", "kr"]);
    back.wait_for(&["the host stopped unexpectedly at"], STEP);
    back.send(b"L");
    back.wait_for(&["1 rule(s) made for this session came back"], STEP);
    back.send(b"\x1b");
    // The rules view lists it, as exactly that request (`= …`).
    let pattern = kept["pattern"].as_str().unwrap_or("").to_string();
    let row = format!("= {}", pattern.chars().take(20).collect::<String>());
    back.send(b"R");
    back.wait_for(&["rules: deny wins", &row], STEP);
    back.send(b"\x1b");
    let out = world.sb(&["stop", "kr"]);
    assert!(out.status.success(), "{}", text(&out));
    drop(back);
    no_panic(&world, "kr");
}
