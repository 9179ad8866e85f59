//! Adopted sessions, the Codex half (issue 36's acceptance): the **real interactive Codex CLI**
//! (0.169.0, pinned in `tests/peers`) on a pty, against the fake OpenAI Responses API
//! (`tests/support/fake_openai.rs`, scenario `fixtures/scenarios/adopt_codex.json`), with
//! switchboard's hooks installed into the test's own `CODEX_HOME` by `switchboard hooks install
//! --codex --yes`, and `switchboard up` (an empty workspace) on a second pty adopting the session:
//!
//! * `y` on the card: the escalated command runs in Codex's terminal, the model reads its output;
//! * `n` with a message: nothing runs, the model reads the message;
//! * `T` (hand back): the card leaves the inbox, Codex draws its own prompt, answered there;
//! * fail-safe: with no host, and with the host SIGKILLed while the card waits, Codex shows its
//!   own prompt within a second and nothing runs unapproved.
//!
//! Each test has its own world (HOME, CODEX_HOME = `$HOME/.codex`, project, runtime dir, fake
//! server), so they run in parallel. Every recording a host left validates clean. Under
//! `CI=true` a missing Codex fails (`npm ci --prefix tests/peers`, which `tests/run.sh` runs).

#[path = "support/adopt.rs"]
mod adopt;
#[path = "support/common.rs"]
mod common;
#[path = "support/fake_openai.rs"]
mod fake_openai;
#[path = "support/fake_script.rs"]
mod fake_script;
#[path = "support/http_fake.rs"]
mod http_fake;
#[path = "support/pty.rs"]
mod pty;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use adopt::{World, kill, wait_until};
use common::{manifest, require_or_skip};
use fake_openai::FakeOpenAi;
use fake_script::Script;
use http_fake::Recorded;
use pty::{STEP, Tui};

/// Codex's terminal: roomy enough that its approval prompt is never cut.
const CODEX_SIZE: (u16, u16) = (160, 48);
/// What the issue allows a fall-through to take.
const WITHIN: Duration = Duration::from_secs(1);
/// Codex's own approval prompt (after a hook fell through or was handed back).
const NATIVE: &str = "Would you like to run the following command?";
/// Codex's main screen (its header).
const MAIN: &str = "OpenAI Codex (v0.169.0)";
/// The host's name in every test (each test has its own runtime dir).
const HOST: &str = "cx";

fn codex_bin() -> Option<PathBuf> {
    Some(manifest("tests/peers/node_modules/.bin/codex")).filter(|p| p.is_file())
}

/// One test's world, its fake model and Codex's home in it.
struct Setup {
    world: World,
    fake: FakeOpenAi,
    codex_home: PathBuf,
    bin: PathBuf,
    test: String,
}

impl Setup {
    /// The world, the fake model, Codex's config and switchboard's hooks installed into it; or
    /// `None` (a skip) when Codex is not installed.
    fn new(tag: &str) -> Option<Setup> {
        let test = format!("adopt_codex_{tag}");
        let bin = require_or_skip(
            &test,
            "the pinned codex CLI (npm ci --prefix tests/peers)",
            codex_bin(),
        )?;
        let world = World::new(&format!("codex-{tag}"));
        let fake = FakeOpenAi::start(Script::load("adopt_codex"));
        // Codex's default home: the host (which has no CODEX_HOME) follows transcripts under
        // `$HOME/.codex/sessions` with no configuration.
        let codex_home = world.home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        let s = Setup {
            world,
            fake,
            codex_home,
            bin,
            test,
        };
        std::fs::write(s.codex_home.join("config.toml"), s.codex_config()).unwrap();
        s.install_hooks();
        Some(s)
    }

    /// Offline against the fake: on-request approvals (an escalated command asks), the project
    /// trusted (no trust screen), no update check, no analytics, no model-migration notice.
    fn codex_config(&self) -> String {
        format!(
            r#"model = "gpt-5.5"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[projects."{proj}"]
trust_level = "trusted"

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
"#,
            url = self.fake.base_url(),
            proj = self.world.proj.display(),
        )
    }

    /// `switchboard hooks install --codex --yes` with this world's HOME and CODEX_HOME.
    fn install_hooks(&self) {
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["hooks", "install", "--codex", "--yes"])
            .envs(self.world.env())
            .env("CODEX_HOME", &self.codex_home)
            .current_dir(&self.world.root)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hooks install failed:\n{text}");
        assert!(text.contains("Hooks need review"), "{text}");
        let hooks = std::fs::read_to_string(self.codex_home.join("hooks.json")).unwrap();
        let v: Value = serde_json::from_str(&hooks).unwrap();
        let cmd = v["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap_or_default();
        assert!(
            cmd.ends_with("hook codex; exit 0 # switchboard") && cmd.starts_with("test -x /"),
            "{hooks}"
        );
        assert!(
            !std::fs::read_to_string(self.codex_home.join("config.toml"))
                .unwrap()
                .contains("trusted_hash"),
            "install must not write Codex's trust hashes"
        );
    }

    /// `switchboard up --name cx` on a pty, stopped when the guard goes.
    fn host(&self) -> Host<'_> {
        Host {
            world: &self.world,
            tui: self.world.host(HOST, &[]),
        }
    }

    /// What Codex (and so its hooks) runs with: the world's variables (the runtime dir the host
    /// listens in, switchboard's data and config, HOME), CODEX_HOME, the fake's key; and what
    /// is taken out of ours.
    fn codex_env(&self) -> (Vec<(String, String)>, Vec<String>) {
        let mut env = self.world.env();
        env.extend([
            (
                "CODEX_HOME".to_string(),
                self.codex_home.display().to_string(),
            ),
            ("FAKE_OPENAI_API_KEY".into(), "sk-fake-openai".into()),
        ]);
        let mut remove: Vec<String> = [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_ORG_ID",
            "CODEX_API_KEY",
            "SWITCHBOARD_CLAUDE_BIN",
            "CLAUDE_CONFIG_DIR",
            // The same run everywhere: CLIs behave differently under CI.
            "CI",
        ]
        .map(String::from)
        .to_vec();
        // Any Codex setting of ours (CODEX_*) but the home set above.
        remove.extend(
            std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .filter(|k| k.starts_with("CODEX_") && k != "CODEX_HOME"),
        );
        (env, remove)
    }

    /// The real interactive Codex in the project, its hooks reviewed and trusted on its first
    /// screen as a person does ("Hooks need review" → "2. Trust all and continue").
    fn codex(&self) -> Codex {
        let (env, remove) = self.codex_env();
        let remove: Vec<&str> = remove.iter().map(String::as_str).collect();
        // `--no-daemon`: the TUI runs the session itself, so the hooks are its children and no
        // background app-server daemon (`$CODEX_HOME/app-server-daemon`) outlives the test.
        // Codex 0.169.0 drains the terminal's buffered input at start with a deadline; on a
        // loaded machine it may miss it and exit ("timed out discarding buffered terminal
        // input"): that is Codex's start failing, not the test's subject, so it starts again
        // (at most twice; its hooks' trust is kept in its config by then).
        let mut tries = 0;
        let (c, s) = loop {
            tries += 1;
            let tui = Tui::spawn_program(
                &self.bin,
                &["--no-daemon"],
                &env,
                &remove,
                &self.world.proj,
                CODEX_SIZE,
            );
            let mut c = Codex { tui };
            // On a first start Codex draws its header, then the review over it: until its
            // trust is in the config, the review comes first.
            let mut reviewed = std::fs::read_to_string(self.codex_home.join("config.toml"))
                .is_ok_and(|c| c.contains("trusted_hash"));
            let t = Instant::now();
            let outcome = loop {
                let s = c.tui.screen();
                if s.contains("timed out discarding buffered terminal input")
                    || c.tui.child.try_wait().ok().flatten().is_some()
                {
                    break Err(s);
                }
                if s.contains("Hooks need review") && s.contains("2. Trust all and continue") {
                    c.trust_all();
                    reviewed = true;
                    continue;
                }
                if reviewed && s.contains(MAIN) && !s.contains("Hooks need review") {
                    break Ok(s);
                }
                assert!(t.elapsed() < STEP, "Codex did not start\n{s}");
                std::thread::sleep(Duration::from_millis(50));
            };
            match outcome {
                Ok(s) => break (c, s),
                Err(s) if tries < 3 => {
                    eprintln!("Codex failed to start (try {tries}), starting it again:\n{s}");
                    let _ = c.tui.child.kill();
                }
                Err(s) => panic!("Codex failed to start {tries} times:\n{s}"),
            }
        };
        let config = std::fs::read_to_string(self.codex_home.join("config.toml")).unwrap();
        assert!(
            config.contains(":permission_request:0:0\"]") && config.contains("trusted_hash"),
            "Codex did not record its trust in the hooks:\n{config}\n{s}"
        );
        c
    }

    /// The first `/v1/responses` call the scenario rule `rule` answered.
    fn served(&self, rule: &str) -> Recorded {
        let mut found = None;
        wait_until(&format!("the fake model's `{rule}` call"), STEP, || {
            found = self
                .fake
                .turns()
                .into_iter()
                .find(|r| r.rule.as_deref() == Some(rule));
            found.is_some()
        });
        found.unwrap()
    }

    /// When the fake model answered `r`.
    fn served_at(&self, r: &Recorded) -> Instant {
        self.fake.http.started() + Duration::from_secs_f64(r.at)
    }

    /// The output the model was sent for its `exec_command` whose `cmd` is `cmd`, once a
    /// request holds it.
    fn output_for(&self, cmd: &str) -> String {
        let mut found = None;
        wait_until(&format!("a function_call_output for `{cmd}`"), STEP, || {
            found = self.fake.turns().iter().find_map(|r| output_in(r, cmd));
            found.is_some()
        });
        found.unwrap()
    }

    /// Whether any request so far holds an output for `cmd`.
    fn has_output_for(&self, cmd: &str) -> bool {
        self.fake
            .turns()
            .iter()
            .any(|r| output_in(r, cmd).is_some())
    }

    /// Run the PermissionRequest hook command `hooks install` wrote, as Codex runs it (`sh -c`,
    /// in the project, Codex's environment), with `event` on stdin: its output and how long
    /// it took.
    fn run_installed_hook(&self, event: &Value) -> (std::process::Output, Duration) {
        let hooks = std::fs::read_to_string(self.codex_home.join("hooks.json")).unwrap();
        let v: Value = serde_json::from_str(&hooks).unwrap();
        let cmd = v["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string();
        let (env, remove) = self.codex_env();
        let mut c = Command::new("sh");
        c.args(["-c", &cmd]).current_dir(&self.world.proj);
        for k in &remove {
            c.env_remove(k);
        }
        let t = Instant::now();
        let mut child = c
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(event.to_string().as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        (out, t.elapsed())
    }

    fn file(&self, name: &str) -> PathBuf {
        self.world.proj.join(name)
    }

    /// Every request went to a rule, none unexpected; then the world is removed.
    fn finish(self) {
        self.fake.http.assert_no_unexpected();
        eprintln!(
            "{}: fake model calls:\n{}",
            self.test,
            self.fake.http.dump()
        );
        let _ = std::fs::remove_dir_all(&self.world.root);
    }
}

/// The `function_call_output` a request sends for the `exec_command` call running `cmd`.
fn output_in(r: &Recorded, cmd: &str) -> Option<String> {
    let input = r.body.as_ref()?["input"].as_array()?;
    let call_id = input.iter().find_map(|i| {
        let args: Value = serde_json::from_str(i["arguments"].as_str()?).ok()?;
        (i["type"] == "function_call" && i["name"] == "exec_command" && args["cmd"] == cmd)
            .then(|| i["call_id"].clone())
    })?;
    input
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
        .map(|i| match &i["output"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
}

/// A host on its pty; stopped (`switchboard stop`) when dropped, whatever happened.
struct Host<'a> {
    world: &'a World,
    tui: Tui,
}

impl Host<'_> {
    /// `g`: the oldest waiting gate's card, open; its screen.
    fn open_card(&mut self, cmd: &str) -> String {
        self.tui.wait(&["1 waiting", "g opens the oldest"]);
        self.tui.send(b"g");
        self.tui.wait(&[
            "Permission · Bash",
            &format!("$ {cmd}"),
            "[y] Allow once",
            "[T] Own terminal",
        ])
    }

    /// The host's pid, from `switchboard ls`.
    fn pid(&self) -> i32 {
        self.world
            .host_pid(HOST)
            .expect("`switchboard ls` names the host")
    }

    /// Stop it as `q` would; its recordings and manifest are complete afterwards.
    fn stop(&self) {
        let pid = self.pid();
        self.world.stop(HOST);
        assert!(self.world.host_pid(HOST).is_none(), "`ls` still lists it");
        // `stop` returns once the manifest's last state is written (found by this test: it
        // once returned before); the process itself exits a moment later.
        wait_until("the stopped host's process to exit", STEP, || !alive(pid));
    }
}

impl Drop for Host<'_> {
    fn drop(&mut self) {
        // Already stopped (or killed) by the test: this fails quietly.
        let _ = self.world.sb(&["stop", HOST]);
    }
}

/// Codex on its pty; it and every process under it are killed when dropped.
struct Codex {
    tui: Tui,
}

impl Codex {
    /// Type a prompt and submit it (a pause first: Enter right after fast typing would be
    /// taken as part of a paste).
    fn prompt(&mut self, text: &str) {
        self.tui.send_now(text.as_bytes());
        self.tui.wait(&[text]);
        std::thread::sleep(Duration::from_millis(400));
        self.tui.send(b"\r");
    }

    /// The screen, polled every 10 ms, once it holds `what`; when that was first seen.
    fn seen(&self, what: &str, limit: Duration) -> (Instant, String) {
        let t = Instant::now();
        loop {
            let s = self.tui.screen();
            if s.contains(what) {
                return (Instant::now(), s);
            }
            assert!(t.elapsed() < limit, "waited {limit:?} for {what:?}\n{s}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// On "Hooks need review": move to "2. Trust all and continue" and take it. A key typed
    /// while Codex starts up may be lost (it reads the terminal's answers to its queries
    /// then), so each key is typed again when the screen does not change within a second.
    fn trust_all(&mut self) {
        let t = Instant::now();
        loop {
            let s = self.tui.screen();
            if !s.contains("Hooks need review") {
                return;
            }
            assert!(t.elapsed() < STEP, "the hook review did not end\n{s}");
            let key: &[u8] = if s.contains("› 2. Trust all and continue") {
                b"\r"
            } else if s.contains("› 3.") {
                b"\x1b[A"
            } else {
                b"\x1b[B"
            };
            self.tui.send_now(key);
            let sent = Instant::now();
            while self.tui.screen() == s && sent.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Quit as a person does once the turn is over (Ctrl-C on an empty composer; SessionEnd
    /// fires), for at most 10 s: whether it exited.
    fn quit(&mut self) -> bool {
        // A Ctrl-C while the turn still runs (its Stop hook, say) interrupts the turn instead.
        self.tui
            .wait_gone(&["esc to interrupt", "Running hook"], STEP);
        let t = Instant::now();
        let mut presses = 0;
        while self.tui.child.try_wait().unwrap().is_none() && t.elapsed() < STEP / 3 {
            if presses < 2 && t.elapsed() >= Duration::from_secs(2 * presses) {
                self.tui.send_now(b"\x03");
                presses += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let quit = self.tui.child.try_wait().unwrap().is_some();
        if !quit {
            eprintln!("Codex did not quit (it is killed):\n{}", self.tui.screen());
        }
        quit
    }
}

impl Drop for Codex {
    fn drop(&mut self) {
        if let Some(pid) = self.tui.child.process_id() {
            kill_tree(pid as i32);
        }
        let _ = self.tui.child.kill();
    }
}

/// `pid` and every process under it.
fn tree(pid: i32) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so read after its last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        if let Some(ppid) = ppid {
            parents.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// SIGKILL `pid` and every process under it (hooks run in their own process groups).
fn kill_tree(pid: i32) {
    for p in tree(pid) {
        kill(p);
    }
}

/// The `switchboard hook codex` process running under `pid`, if one is.
fn hook_under(pid: i32) -> Option<i32> {
    tree(pid).into_iter().find(|p| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.ends_with(b"\0hook\0codex\0") && alive(*p))
    })
}

/// Whether process `pid` still runs (a zombie has exited).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// Wait until `path` exists.
fn wait_file(path: &Path) {
    wait_until(&format!("{} to exist", path.display()), STEP, || {
        path.exists()
    });
}

/// Validate every recording the host left: clean, and an adopted Codex session among them.
fn validate(world: &World) -> String {
    assert!(
        world
            .recordings()
            .iter()
            .any(|p| p.display().to_string().contains("-adopted-codex")),
        "no adopted Codex recording in {:?}",
        world.recordings()
    );
    let out = world.validate_all();
    assert!(out.contains(" 0 problem(s)"), "{out}");
    out
}

/// `y` on the card: the command runs in Codex's terminal and the model reads its output. The
/// card offers only what Codex takes: no edit, no "always", no interrupt.
#[test]
fn allow_runs_the_command_in_codex() {
    let Some(s) = Setup::new("allow") else {
        return;
    };
    let mut host = s.host();
    let mut codex = s.codex();
    codex.prompt("ADOPT_ALLOW please");
    s.served("allow");
    // While the hook waits Codex draws no prompt of its own.
    codex.tui.wait(&["Running hook"]);
    let card = host.open_card("touch allowed.txt");
    assert!(
        card.contains("Create allowed.txt outside the sandbox"),
        "{card}"
    );
    assert!(card.contains("Codex shows only \"Running hook\""), "{card}");
    // A root of the tree named for its project.
    assert!(card.contains("proj · adopted"), "{card}");
    for absent in ["[e]", "[a]", "[N]"] {
        assert!(
            !card.contains(absent),
            "a Codex card offers {absent}:\n{card}"
        );
    }
    assert!(!s.file("allowed.txt").exists());
    assert!(!codex.tui.screen().contains(NATIVE));
    // What Codex refuses is not offered, and its keys do nothing here: no editor, no answer.
    for k in ["e", "a", "N"] {
        host.tui.send(k.as_bytes());
    }
    std::thread::sleep(Duration::from_millis(300));
    let card = host.tui.wait(&["1 waiting", "[y] Allow once"]);
    assert!(!card.contains("tell the agent why"), "{card}");
    assert!(!card.contains("edit the tool input"), "{card}");
    assert!(!s.has_output_for("touch allowed.txt"));
    assert!(codex.tui.screen().contains("Running hook"));
    host.tui.send(b"y");
    wait_file(&s.file("allowed.txt"));
    let out = s.output_for("touch allowed.txt");
    assert!(out.contains("Process exited with code 0"), "{out}");
    codex.tui.wait(&["Ran touch allowed.txt", "Tool finished."]);
    let screen = codex.tui.screen();
    assert!(!screen.contains(NATIVE), "{screen}");
    host.tui.wait(&[
        "nothing waits for you",
        "allowed once: Bash `touch allowed.txt`",
    ]);
    // The session's transcript, read from Codex's rollout (`$CODEX_HOME/sessions/…`).
    host.tui.wait(&[
        "› ADOPT_ALLOW please",
        "exec_command touch allowed.txt",
        "Process exited with code 0",
        "Tool finished.",
    ]);
    codex.quit();
    drop(codex);
    host.stop();
    eprintln!("{}", validate(&s.world));
    drop(host);
    s.finish();
}

/// `n`, a message, Enter: nothing runs and the model reads the message.
#[test]
fn deny_with_a_message_reaches_the_model() {
    let Some(s) = Setup::new("deny") else {
        return;
    };
    let mut host = s.host();
    let mut codex = s.codex();
    codex.prompt("ADOPT_DENY please");
    s.served("deny");
    host.open_card("touch denied.txt");
    host.tui.send(b"n");
    host.tui.wait(&["tell the agent why"]);
    host.tui.send(b"NOT_TODAY_FROM_SB");
    host.tui.wait(&["NOT_TODAY_FROM_SB"]);
    host.tui.send(b"\r");
    let out = s.output_for("touch denied.txt");
    assert!(out.contains("NOT_TODAY_FROM_SB"), "{out}");
    assert!(!out.contains("Process exited"), "{out}");
    codex
        .tui
        .wait(&["Blocked by hook", "NOT_TODAY_FROM_SB", "Tool finished."]);
    assert!(!codex.tui.screen().contains(NATIVE));
    assert!(!s.file("denied.txt").exists());
    host.tui
        .wait(&["nothing waits for you", "NOT_TODAY_FROM_SB"]);
    codex.quit();
    drop(codex);
    host.stop();
    assert!(!s.file("denied.txt").exists());
    eprintln!("{}", validate(&s.world));
    drop(host);
    s.finish();
}

/// `T`: the card leaves switchboard's inbox, Codex draws its own prompt, and the answer given
/// there (`y`) is the one that counts.
#[test]
fn hand_back_leaves_the_answer_to_codex() {
    let Some(s) = Setup::new("handback") else {
        return;
    };
    let mut host = s.host();
    let mut codex = s.codex();
    codex.prompt("ADOPT_HANDBACK please");
    s.served("hand_back");
    host.open_card("touch handed.txt");
    assert!(!codex.tui.screen().contains(NATIVE));
    host.tui.send(b"T");
    host.tui.wait(&["nothing waits for you", "0 wait"]);
    host.tui
        .wait_gone(&["Permission · Bash", "[T] Own terminal"], STEP);
    host.tui
        .wait(&["handed to its own terminal: Bash `touch handed.txt`"]);
    codex
        .tui
        .wait(&[NATIVE, "$ touch handed.txt", "1. Yes, proceed (y)"]);
    assert!(!s.file("handed.txt").exists());
    assert!(!s.has_output_for("touch handed.txt"));
    codex.tui.send(b"y");
    wait_file(&s.file("handed.txt"));
    let out = s.output_for("touch handed.txt");
    assert!(out.contains("Process exited with code 0"), "{out}");
    codex.tui.wait(&[
        "You approved codex to run touch handed.txt",
        "Tool finished.",
    ]);
    codex.quit();
    drop(codex);
    host.stop();
    eprintln!("{}", validate(&s.world));
    drop(host);
    s.finish();
}

/// No host running: the hook prints nothing at once and Codex shows its own prompt within a
/// second of the model's call; nothing runs until it is answered there.
#[test]
fn no_host_falls_through_to_codex_at_once() {
    let Some(s) = Setup::new("nohost") else {
        return;
    };
    let ls = s.world.sb(&["ls"]);
    assert!(
        String::from_utf8_lossy(&ls.stdout).contains("no hosts running"),
        "{ls:?}"
    );
    let mut codex = s.codex();
    codex.prompt("ADOPT_NOHOST please");
    let call = s.served("no_host");
    let served = s.served_at(&call);
    let (seen, screen) = codex.seen(NATIVE, STEP);
    let took = seen.saturating_duration_since(served);
    eprintln!("no host: Codex's own prompt {took:?} after the model's call was served");
    assert!(
        took <= WITHIN,
        "Codex's own prompt came {took:?} after the call (limit {WITHIN:?})\n{screen}"
    );
    assert!(screen.contains("$ touch nohost.txt"), "{screen}");
    assert!(!screen.contains("Hook failed"), "{screen}");
    assert!(!s.file("nohost.txt").exists());
    assert!(!s.has_output_for("touch nohost.txt"));
    // Declined there too: nothing ran, nothing more went to the model.
    codex.tui.send(b"\x1b");
    codex
        .tui
        .wait(&["You canceled the request to run touch nohost.txt"]);
    codex.quit();
    drop(codex);
    assert!(!s.file("nohost.txt").exists());
    assert!(!s.has_output_for("touch nohost.txt"));
    // switchboard's part of that second, alone: the installed hook with no host prints
    // nothing (stdout or stderr) and exits 0 at once. (Codex's own path from the model's call
    // to its prompt takes most of the second: 0.5 to 0.95 s here with no hooks at all.)
    let event = serde_json::json!({
        "session_id": "01a24da8-0f90-7ba3-9c58-a4bb1c87882d",
        "turn_id": "01a24da8-2675-7281-983f-dd8c70af1b37",
        "transcript_path": s.codex_home.join("sessions/rollout-x.jsonl"),
        "cwd": s.world.proj,
        "hook_event_name": "PermissionRequest",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "touch nohost.txt", "description": "Create nohost.txt"},
    });
    let (out, took) = s.run_installed_hook(&event);
    eprintln!("no host: the installed hook fell through in {took:?}");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    assert!(took < Duration::from_millis(500), "the hook took {took:?}");
    assert!(
        !s.world.data.join("recordings").exists() || s.world.recordings().is_empty(),
        "no host ran, yet something was recorded: {:?}",
        s.world.recordings()
    );
    s.finish();
}

/// The host SIGKILLed while the card waits: the waiting hook prints nothing, Codex shows its own
/// prompt within a second, nothing runs; declined there (Esc, the third option), the file never
/// appears. The crashed host's recording still validates (the unanswered gate is informational).
#[test]
fn host_killed_while_the_card_waits_falls_through() {
    let Some(s) = Setup::new("crash") else {
        return;
    };
    let mut host = s.host();
    let mut codex = s.codex();
    codex.prompt("ADOPT_CRASH please");
    s.served("crash");
    host.open_card("touch crash.txt");
    codex.tui.wait(&["Running hook"]);
    assert!(!codex.tui.screen().contains(NATIVE));
    let pid = host.pid();
    let codex_pid = codex.tui.child.process_id().unwrap() as i32;
    let mut hook = None;
    wait_until(
        "the waiting `switchboard hook codex` under Codex",
        STEP,
        || {
            hook = hook_under(codex_pid);
            hook.is_some()
        },
    );
    let hook = hook.unwrap();
    let killed = Instant::now();
    kill(pid);
    // switchboard's part: the waiting hook sees the socket close and exits (printing nothing:
    // Codex then shows its prompt, not "Hook failed").
    while alive(hook) && killed.elapsed() < STEP {
        std::thread::sleep(Duration::from_millis(1));
    }
    let hook_took = killed.elapsed();
    let (seen, screen) = codex.seen(NATIVE, STEP);
    let took = seen.saturating_duration_since(killed);
    eprintln!(
        "host killed: the waiting hook exited {hook_took:?} and Codex's own prompt showed \
         {took:?} after the SIGKILL"
    );
    assert!(hook_took < Duration::from_millis(200), "{hook_took:?}");
    assert!(
        took <= WITHIN,
        "Codex's own prompt came {took:?} after the host died (limit {WITHIN:?})\n{screen}"
    );
    assert!(screen.contains("$ touch crash.txt"), "{screen}");
    assert!(
        screen.contains("3. No, and tell Codex what to do differently (esc)"),
        "{screen}"
    );
    assert!(!screen.contains("Hook failed"), "{screen}");
    assert!(!s.file("crash.txt").exists());
    assert!(!s.has_output_for("touch crash.txt"));
    wait_until("the killed host to leave `ls`", STEP, || {
        s.world.host_pid(HOST).is_none()
    });
    // The third option, natively.
    codex.tui.send(b"\x1b");
    codex
        .tui
        .wait(&["You canceled the request to run touch crash.txt"]);
    codex.quit();
    drop(codex);
    assert!(!s.file("crash.txt").exists());
    assert!(!s.has_output_for("touch crash.txt"));
    let out = validate(&s.world);
    assert!(out.contains("still waiting"), "{out}");
    eprintln!("{out}");
    drop(host);
    s.finish();
}
