//! Nothing is lost when the host dies (issue 37), with the real ACP agents pinned in
//! `tests/peers`: each runs in a workspace under a host on a pty (`up --name`), against a fake
//! of its model API. One shell card is allowed with a key, the host is SIGKILLed while a
//! second waits, and `switchboard resume` brings the session back through `session/load`
//! (all four declare `loadSession`; what each really does is in docs/host.md): the model's next
//! request holds the earlier turns, the waiting command never ran, the transcript shows the
//! history and the boundary, and the recordings validate with the crash reported as a crash.
//!
//! And an agent that does not declare `loadSession` (our Checkfu test agent): the row says it
//! cannot resume and a new session starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod support {
    #[path = "../support/adopt.rs"]
    pub mod adopt;
    #[path = "../support/agents.rs"]
    pub mod agents;
    #[path = "../support/common.rs"]
    pub mod common;
    #[path = "../support/fake_gemini.rs"]
    pub mod fake_gemini;
    #[path = "../support/fake_model.rs"]
    pub mod fake_model;
    #[path = "../support/fake_openai.rs"]
    pub mod fake_openai;
    #[path = "../support/fake_script.rs"]
    pub mod fake_script;
    #[path = "../support/http_fake.rs"]
    pub mod http_fake;
    #[path = "../support/pty.rs"]
    pub mod pty;
}

use support::adopt::{SIZE, World, kill, wait_until};
use support::agents::{Kind, Model, Opts, setup};
use support::pty::Tui;

const STEP: Duration = Duration::from_secs(90);

/// Every request body the fake model got, in order.
fn bodies(m: &Model) -> Vec<String> {
    let b = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
    match m {
        Model::Anthropic(f) => f.requests().iter().map(|r| b(&r.body)).collect(),
        Model::Gemini(f) => f.http.requests().iter().map(|r| b(&r.body)).collect(),
        Model::OpenAi(f) => f.http.requests().iter().map(|r| b(&r.body)).collect(),
    }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A profile line's TOML string.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// The agent's declared environment as the host's own: set what it sets, remove what it
/// removes (the host hands its environment to local agents).
fn split_env(env: &[(String, Option<String>)]) -> (Vec<(String, String)>, Vec<String>) {
    let mut set = Vec::new();
    let mut remove = Vec::new();
    for (k, v) in env {
        match v {
            Some(v) => set.push((k.clone(), v.clone())),
            None => remove.push(k.clone()),
        }
    }
    (set, remove)
}

struct Stop<'a>(&'a World);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let _ = self.0.sb(&["stop", "work"]);
    }
}

fn spawn(world: &World, set: &[(String, String)], remove: &[String], args: &[&str]) -> Tui {
    let mut env = set.to_vec();
    env.extend(world.env().into_iter().filter(|(k, _)| k != "HOME"));
    let mut rm: Vec<&str> = remove.iter().map(String::as_str).collect();
    rm.push("SWITCHBOARD_CLAUDE_BIN");
    Tui::spawn_program(
        Path::new(env!("CARGO_BIN_EXE_switchboard")),
        args,
        &env,
        &rm,
        &world.root,
        SIZE,
    )
}

/// `y`/`n` only once the card has been on the screen a moment (a key on a card nobody has
/// seen yet is not taken).
fn answer(tui: &mut Tui, key: &[u8]) {
    std::thread::sleep(Duration::from_millis(1000));
    tui.send(key);
}

fn resumed(kind: Kind) {
    let tag = format!("resume-{}", kind.name());
    let Some(s) = setup(kind, &tag, Opts::default()) else {
        return;
    };
    let world = World::new(&tag);
    let mut command = vec![s.config.program.display().to_string()];
    command.extend(s.config.args.iter().cloned());
    let command: Vec<String> = command.iter().map(|c| q(c)).collect();
    std::fs::write(
        world.cfg.join("config.toml"),
        format!(
            "[[session]]\nname = \"agent\"\nbackend = \"acp\"\ncwd = {}\ncommand = [{}]\nprompt = \"SHELL_ALLOW please\"\n",
            q(&s.cwd.display().to_string()),
            command.join(", ")
        ),
    )
    .unwrap();
    let (set, remove) = split_env(&s.config.env);
    let _stop = Stop(&world);

    let mut front = spawn(&world, &set, &remove, &["up", "--name", "work"]);
    front.wait_for(&["touch allowed.txt", "[y]"], STEP);
    answer(&mut front, b"y");
    wait_until("the allowed command ran", STEP, || {
        s.cwd.join("allowed.txt").exists()
    });
    // The turn ends, then the second prompt's card waits.
    std::thread::sleep(Duration::from_secs(2));
    front.send(b"i");
    front.wait_for(&["Enter send"], STEP);
    front.send(b"SHELL_REJECT please");
    front.send(b"\r");
    front.wait_for(&["touch rejected.txt"], STEP);
    let pid = world.host_pid("work").expect("the host is listed");
    kill(pid);
    front.wait_for(&["stopped unexpectedly"], STEP);
    wait_until("ls lists the crashed workspace", STEP, || {
        text(&world.sb(&["ls"])).contains("ended unexpectedly")
    });
    if kind == Kind::Gemini {
        // gemini-cli names its chat files by the minute: a load in the minute its session was
        // made resets that file and loses the history (docs/host.md). A person resumes later.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        std::thread::sleep(Duration::from_secs(61 - now % 60));
    }
    let asked = bodies(&s.model).len();

    let mut back = spawn(&world, &set, &remove, &["resume", "work"]);
    let screen = back.wait_for(
        &[
            "the host stopped unexpectedly at",
            "not answered: the host stopped while this waited",
        ],
        STEP,
    );
    assert!(screen.contains("SHELL_ALLOW please"), "{screen}");
    back.wait_for(&["resumed"], STEP);
    std::thread::sleep(Duration::from_secs(2));
    back.send(b"i");
    back.wait_for(&["Enter send"], STEP);
    back.send(b"RESUMED and now?");
    back.send(b"\r");
    wait_until("the resumed prompt reached the model", STEP, || {
        bodies(&s.model)
            .iter()
            .skip(asked)
            .any(|b| b.contains("RESUMED and now?"))
    });
    let resumed = bodies(&s.model)
        .into_iter()
        .skip(asked)
        .find(|b| b.contains("RESUMED and now?"))
        .unwrap();
    assert!(
        resumed.contains("SHELL_ALLOW please"),
        "the model's next request holds the earlier turns: {resumed}"
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !s.cwd.join("rejected.txt").exists(),
        "the waiting command never ran"
    );
    let out = world.sb(&["stop", "work"]);
    assert!(out.status.success(), "{}", text(&out));
    let report = world.validate_all();
    assert!(report.contains("host-stopped"), "{report}");
    drop(back);
    drop(front);
}

#[test]
fn claude_agent_acp_resumes_by_session_load() {
    resumed(Kind::Claude);
}

#[test]
fn codex_acp_resumes_by_session_load() {
    resumed(Kind::Codex);
}

#[test]
fn opencode_resumes_by_session_load() {
    resumed(Kind::Opencode);
}

#[test]
fn gemini_cli_resumes_by_session_load() {
    resumed(Kind::Gemini);
}

/// Our Checkfu test agent declares no `loadSession`: the resume says so, and a new session of
/// it starts (the history is still shown, from the recording).
#[test]
fn an_agent_that_cannot_load_starts_a_new_session_and_says_so() {
    let Some(python) = support::common::python_or_skip("resume_noload") else {
        return;
    };
    let world = World::new("resume-noload");
    let agent: PathBuf = support::common::manifest("tests/support/checkfu_agent.py");
    std::fs::write(
        world.cfg.join("config.toml"),
        format!(
            "[[session]]\nname = \"agent\"\nbackend = \"acp\"\ncwd = {}\ncommand = [{}, {}]\nprompt = \"hello there\"\n",
            q(&world.proj.display().to_string()),
            q(&python.display().to_string()),
            q(&agent.display().to_string())
        ),
    )
    .unwrap();
    let _stop = Stop(&world);
    let front = spawn(&world, &[], &[], &["up", "--name", "work"]);
    front.wait_for(&["hello there", "started"], STEP);
    std::thread::sleep(Duration::from_secs(1));
    kill(world.host_pid("work").expect("listed"));
    front.wait_for(&["stopped unexpectedly"], STEP);
    wait_until("the lock is free", STEP, || {
        text(&world.sb(&["ls"])).contains("ended unexpectedly")
    });
    let back = spawn(&world, &[], &[], &["resume", "work"]);
    let screen = back.wait_for(
        &[
            "the host stopped unexpectedly at",
            "cannot resume a session",
        ],
        STEP,
    );
    assert!(
        screen.contains("hello there"),
        "the history is shown: {screen}"
    );
    back.wait_for(&["started"], STEP);
    drop(back);
    drop(front);
}
