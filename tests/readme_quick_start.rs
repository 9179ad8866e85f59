//! The README's quick start, run as written (issue 38 item 3): each demo's command sequence
//! is read from the README's code blocks and run, the built binary on a pty, and every key the
//! prose names is read from the prose and pressed, and must do what the prose says. A README
//! whose commands or keys drift from the program fails here.
//!
//! `SB_README=FILE` points the test at another README (how the failing case was tried: a
//! copy with one key changed). Sections not run: ACP agents and agents in their own
//! terminals (real agents, covered by tests/acp_agents.rs and tests/adopt_*.rs); the Claude
//! Code keys are checked on `switchboard demo`, the same Claude backend against the scripted
//! agent.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use serde_json::Value;

#[path = "support/pty.rs"]
mod pty;

use pty::{STEP, Tui};

const SIZE: (u16, u16) = (160, 45);
/// A card's answer keys act once it has been on screen a moment (`[keys] settle_ms`, 300 ms by
/// default): this long after it shows.
const SETTLE: Duration = Duration::from_millis(500);

// ---- the README ------------------------------------------------------------------------------

struct Readme {
    path: PathBuf,
    text: String,
}

/// One `### …` section of the quick start: its shell lines and its prose.
struct Section {
    title: String,
    /// Each command of its code blocks, continuation lines joined, the `# …` comment cut.
    commands: Vec<String>,
    /// The prose outside code blocks, whitespace collapsed to single spaces.
    prose: String,
}

fn readme() -> Readme {
    let path = std::env::var_os("SB_README")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    Readme { path, text }
}

impl Readme {
    /// The quick start's section whose title starts with `title`.
    fn section(&self, title: &str) -> Section {
        let quick = self
            .text
            .split("\n## ")
            .find(|s| s.starts_with("Quick start"))
            .unwrap_or_else(|| panic!("{}: no `## Quick start`", self.path.display()));
        let body = quick
            .split("\n### ")
            .skip(1)
            .find(|s| s.starts_with(title))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no `### {title}` in the quick start",
                    self.path.display()
                )
            });
        let mut commands = Vec::new();
        let mut prose = String::new();
        let mut in_code = false;
        let mut shell = false;
        let mut pending = String::new();
        for line in body.lines().skip(1) {
            if let Some(lang) = line.trim_start().strip_prefix("```") {
                shell = !in_code && lang.trim() == "sh";
                in_code = !in_code;
                continue;
            }
            if !in_code {
                prose.push_str(line);
                prose.push(' ');
            } else if shell {
                match line.trim_end().strip_suffix('\\') {
                    Some(head) => pending.push_str(head),
                    None => {
                        pending.push_str(line);
                        commands.push(cut_comment(&pending).trim().to_string());
                        pending.clear();
                    }
                }
            }
        }
        Section {
            title: title.to_string(),
            commands,
            prose: prose.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    }
}

/// A shell line without its trailing `# comment` (a `#` after a blank, outside quotes).
fn cut_comment(line: &str) -> String {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return line[..i].to_string(),
            _ => {}
        }
        prev = c;
    }
    line.to_string()
}

impl Section {
    /// The arguments (after `switchboard`) of the section's command that starts with
    /// `switchboard PREFIX`.
    fn command(&self, prefix: &str) -> Vec<String> {
        let want = format!("switchboard {prefix}");
        let line = self
            .commands
            .iter()
            .find(|c| *c == &want || c.starts_with(&format!("{want} ")))
            .unwrap_or_else(|| {
                panic!(
                    "the README's `{}` runs no `{want}`: {:?}",
                    self.title, self.commands
                )
            });
        let words = shlex::split(line).unwrap_or_else(|| panic!("unbalanced quotes: {line}"));
        words[1..].to_vec()
    }

    /// The keys the prose names where it reads `template`, each `{}` a key in backticks:
    /// "`{}` opens it" matches "`g` opens it" and gives `g`. A section that no longer says
    /// it fails: the text and this test change together.
    fn keys(&self, template: &str) -> Vec<String> {
        let parts: Vec<&str> = template.split("{}").collect();
        let mut from = 0;
        while let Some(at) = self.prose[from..].find(parts[0]) {
            let start = from + at;
            from = start + parts[0].len().max(1);
            if let Some(keys) = match_from(&self.prose[start + parts[0].len()..], &parts[1..]) {
                return keys;
            }
        }
        panic!(
            "the README's `{}` no longer says \"{template}\" (keys in backticks): change this \
             test with the text\nits prose: {}",
            self.title, self.prose
        );
    }

    /// The prose says `what` (whitespace as in the source does not matter).
    fn says(&self, what: &str) -> bool {
        self.prose.contains(what)
    }
}

/// The keys between the literal `parts` of a template, `text` just after its first part.
fn match_from(text: &str, parts: &[&str]) -> Option<Vec<String>> {
    let Some((next, rest)) = parts.split_first() else {
        return Some(Vec::new());
    };
    let end = if next.is_empty() {
        text.len()
    } else {
        text.find(next)?
    };
    let key = &text[..end];
    if key.is_empty() || key.chars().count() > 12 || key.contains('`') {
        return None;
    }
    let mut keys = vec![key.to_string()];
    keys.extend(match_from(&text[end + next.len()..], rest)?);
    Some(keys)
}

/// What a terminal sends for the key the README names (its notation: `y`, `Esc`, `Ctrl-N`).
fn bytes(key: &str) -> Vec<u8> {
    match key {
        "Esc" => vec![0x1b],
        "Tab" => vec![b'\t'],
        "Enter" => vec![b'\r'],
        "Space" => vec![b' '],
        k if k.chars().count() == 1 => k.as_bytes().to_vec(),
        k => match k.strip_prefix("Ctrl-").map(|c| c.as_bytes()) {
            Some([c]) if c.is_ascii_alphabetic() || b"\\[]^_".contains(c) => {
                vec![c.to_ascii_uppercase() & 0x1f]
            }
            _ => panic!("the README names the key `{k}`, which this test cannot type"),
        },
    }
}

/// The default of `switchboard COMMAND --ARG`, from the parser itself.
fn default_of(command: &str, arg: &str) -> String {
    let cli = switchboard::cli::Cli::command();
    let sub = cli
        .find_subcommand(command)
        .unwrap_or_else(|| panic!("no {command}"));
    let a = sub
        .get_arguments()
        .find(|a| a.get_id() == arg)
        .unwrap_or_else(|| panic!("{command}: no --{arg}"));
    a.get_default_values()[0].to_string_lossy().into_owned()
}

// ---- running things ---------------------------------------------------------------------------

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-readme-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("run")).unwrap();
    d
}

/// The environment every command of one test runs in: its data and config in `base`, a
/// runtime dir of its own (host sockets), the scripted agents without their pauses.
fn env_of(base: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("XDG_RUNTIME_DIR", base.join("run").display().to_string()),
        ("SWITCHBOARD_DEMO_FAST", "1".into()),
    ]
}

fn tui(base: &Path, args: &[String], extra: &[(&str, String)]) -> Tui {
    let mut env = env_of(base);
    env.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Tui::spawn(&args, &env, base, SIZE)
}

/// `switchboard ARGS` without a terminal.
fn run(base: &Path, args: &[String]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.args(args)
        .env("SWITCHBOARD_DATA_DIR", base)
        .env("SWITCHBOARD_CONFIG_DIR", base)
        .current_dir(base)
        .stdin(Stdio::null());
    for (k, v) in env_of(base) {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// A peer (`demo-engine`, `demo-gateway`) and the first lines it printed.
struct Peer(Child);

impl Peer {
    fn start(base: &Path, args: &[String], lines: usize) -> (Peer, Vec<String>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .current_dir(base)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut read = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Vec<String> = (0..lines).filter_map(|_| read.next()?.ok()).collect();
        std::thread::spawn(move || for _ in read {});
        (Peer(child), first)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Press a key as the README names it.
fn press(t: &mut Tui, key: &str) {
    t.send(&bytes(key));
}

/// An answer key: only once the card has settled on screen.
fn answer(t: &mut Tui, key: &str) {
    std::thread::sleep(SETTLE);
    press(t, key);
}

/// Wait for `what` after pressing `key`, failing with what the README claimed for it.
fn after(t: &Tui, key: &str, claim: &str, what: &[&str]) -> String {
    let limit = Instant::now() + STEP;
    loop {
        let s = t.screen();
        if what.iter().all(|w| s.contains(w)) {
            return s;
        }
        assert!(
            Instant::now() < limit,
            "the README says `{key}` {claim}; after it the screen never showed {what:?}\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every outbound `control_response` body switchboard recorded under `base`.
fn answers_sent(base: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(base.join("recordings")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        if e.path().extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if entry["dir"] != "out" {
                continue;
            }
            let Some(frame) = entry["line"]
                .as_str()
                .and_then(|l| serde_json::from_str::<Value>(l).ok())
            else {
                continue;
            };
            if frame["type"] == "control_response" {
                out.push(frame["response"]["response"].clone());
            }
        }
    }
    out
}

/// Wait until an answer `pred` accepts has been recorded, after `key`.
fn answered(t: &Tui, base: &Path, key: &str, claim: &str, pred: impl Fn(&Value) -> bool) {
    let limit = Instant::now() + STEP;
    while !answers_sent(base).iter().any(&pred) {
        assert!(
            Instant::now() < limit,
            "the README says `{key}` {claim}; no such answer was sent: {:?}\n{}",
            answers_sent(base),
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is_touch(b: &Value) -> bool {
    b["updatedInput"]["command"] == "touch demo-output.txt"
}

// ---- the sections -------------------------------------------------------------------------------

/// Claude Code: "`y` allows once, `a` always (this session), `n` denies, `e` edits the input
/// first", on the demo's cards (the same Claude backend).
#[test]
fn claude_card_keys() {
    let s = readme().section("Claude Code");
    let k = s.keys(
        "`{}` allows once, `{}` always (this session), `{}` denies, `{}` edits the input first",
    );
    let (allow, always, deny, edit) = (&k[0], &k[1], &k[2], &k[3]);
    // One demo: edit opens the input, allow once, then deny the next card.
    let base = scratch("claude");
    let cwd = base.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let args: Vec<String> = ["demo", "--cwd", &cwd.display().to_string()]
        .map(String::from)
        .to_vec();
    let mut t = tui(&base, &args, &[]);
    t.wait(&[
        "Permission · Bash",
        "touch demo-output.txt",
        "keys in the card",
    ]);
    answer(&mut t, edit);
    after(&t, edit, "edits the input first", &["tool input JSON"]);
    press(&mut t, "Esc");
    t.wait_gone(&["tool input JSON"], STEP);
    answer(&mut t, allow);
    answered(&t, &base, allow, "allows once", |b| {
        b["behavior"] == "allow" && is_touch(b) && b.get("updatedPermissions").is_none()
    });
    t.wait(&["Permission · Edit", "src/auth.rs"]);
    answer(&mut t, deny);
    // The deny asks for an optional message; Enter sends it without one.
    after(&t, deny, "denies", &["tell the agent why"]);
    press(&mut t, "Enter");
    answered(&t, &base, deny, "denies", |b| b["behavior"] == "deny");
    t.quit();
    drop(t);
    // Another: allow always sends the session rules the card offered.
    let base2 = scratch("claude-always");
    let cwd = base2.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let args: Vec<String> = ["demo", "--cwd", &cwd.display().to_string()]
        .map(String::from)
        .to_vec();
    let mut t = tui(&base2, &args, &[]);
    t.wait(&[
        "Permission · Bash",
        "touch demo-output.txt",
        "keys in the card",
    ]);
    answer(&mut t, always);
    answered(&t, &base2, always, "allows always (this session)", |b| {
        b["behavior"] == "allow"
            && is_touch(b)
            && b["updatedPermissions"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["destination"] == "session"))
    });
    t.quit();
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_dir_all(&base2);
}

/// iii: the two commands as written (the engine on a free port), then the keys the text names
/// for the oldest held call, its allow, and the inbox.
#[test]
fn iii_engine_demo() {
    let s = readme().section("iii engine sessions");
    let k = s.keys("`{}` opens the oldest held call (`{}` allows it) and `{}` the inbox");
    let (oldest, allow, inbox) = (&k[0], &k[1], &k[2]);
    let base = scratch("iii");
    let mut engine = s.command("demo-engine");
    let mut iii = s.command("iii");
    // The README's URL is the engine's default port; here the engine takes a free one.
    let url_at = iii.iter().position(|a| a == "--engine").expect("--engine") + 1;
    assert_eq!(
        iii[url_at],
        format!("ws://127.0.0.1:{}", default_of("demo-engine", "port")),
        "the README's iii command does not dial the demo engine's default port"
    );
    engine.extend(["--port".into(), "0".into()]);
    let (_engine, lines) = Peer::start(&base, &engine, 1);
    iii[url_at] = lines
        .first()
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("ws://")))
        .expect("the engine prints its URL")
        .to_string();
    let mut t = tui(&base, &iii, &[]);
    let first = t.wait(&["2 waiting", "g opens the oldest"]);
    // The text says the node takes no prompt and the strip names both sessions.
    assert!(s.says("takes no prompt"), "{}", s.prose);
    assert!(first.contains("takes no prompt"), "{first}");
    assert!(
        !first.contains("Enter send"),
        "the prompt has the keys\n{first}"
    );
    assert!(
        first.contains("Refactor the parser 1") && first.contains("Tidy the notes 1"),
        "{first}"
    );
    press(&mut t, oldest);
    let card = after(&t, oldest, "opens the oldest held call", &["Permission · "]);
    let function = ["shell::exec", "filesystem::read"]
        .into_iter()
        .find(|f| card.contains(&format!("Permission · {f}")))
        .unwrap_or_else(|| panic!("an unknown held call\n{card}"));
    answer(&mut t, allow);
    after(
        &t,
        allow,
        "allows it",
        &[&format!("{function} ran (demo): exit 0"), "1 waiting"],
    );
    press(&mut t, inbox);
    after(&t, inbox, "opens the inbox", &["gate inbox", "1 pending"]);
    press(&mut t, "Esc");
    t.quit();
    let _ = std::fs::remove_dir_all(&base);
}

/// ai-gateway: the two commands as written (the host on a free port, its project and token),
/// the strip naming the waiting card, the key that opens it and the one that allows.
#[test]
fn gateway_demo() {
    let s = readme().section("Remote agents");
    let k = s.keys("`{}` opens it (`{}` allows)");
    let (open, allow) = (&k[0], &k[1]);
    assert!(s.says("the strip at the bottom names it"), "{}", s.prose);
    let base = scratch("gateway");
    let mut host = s.command("demo-gateway");
    let mut gateway = s.command("gateway");
    let arg = |args: &[String], name: &str| {
        args.iter()
            .position(|a| a == name)
            .unwrap_or_else(|| panic!("the README's gateway command has no {name}"))
            + 1
    };
    let url_at = arg(&gateway, "--url");
    assert_eq!(
        gateway[url_at],
        format!("ws://127.0.0.1:{}", default_of("demo-gateway", "port")),
        "the README's gateway command does not dial the demo host's default port"
    );
    host.extend(["--port".into(), "0".into()]);
    let (_host, lines) = Peer::start(&base, &host, 5);
    let printed = lines
        .iter()
        .find(|l| l.trim().starts_with("switchboard gateway"))
        .expect("the host prints the command");
    let printed = shlex::split(printed.trim()).unwrap();
    // The README's command with the host's own URL and project (its `--root /tmp/...` is a
    // placeholder); the rest (workspace, intention, token variable) as the README has it.
    for name in ["--url", "--root"] {
        let at = arg(&gateway, name);
        gateway[at] = printed[arg(&printed, name)].clone();
    }
    let token_var = gateway[arg(&gateway, "--token-env")].clone();
    let token = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix(&format!("export {token_var}=")))
        .unwrap_or_else(|| panic!("the host prints no {token_var}: {lines:?}"))
        .to_string();
    let mut t = tui(&base, &gateway, &[(token_var.as_str(), token)]);
    t.wait(&["1 waiting", "g opens the oldest"]);
    press(&mut t, open);
    after(&t, open, "opens it", &["workspace_write", "README.md"]);
    answer(&mut t, allow);
    after(&t, allow, "allows", &["wrote README.md", "bytes"]);
    t.quit();
    let _ = std::fs::remove_dir_all(&base);
}

/// The workspace demo: "press `I`, `=` on `npm test`, `y`" answers both `npm test` gates at
/// once; then `g`, `]`, `[`, `Ctrl-N` and `x` as the text says.
#[test]
fn workspace_demo() {
    let s = readme().section("Workspace");
    let k = s.keys("press `{}`, `{}` on `npm test`, `{}`");
    let (inbox, identical, allow) = (&k[0], &k[1], &k[2]);
    let w = s.keys(
        "`{}` jumps to the oldest pending gate anywhere, `{}` `{}` walk them, `{}` opens the \
         inbox to answer identical requests in one batch, `{}` starts a new session, `{}` closes one",
    );
    let (oldest, next, prev, inbox2, new, close) = (&w[0], &w[1], &w[2], &w[3], &w[4], &w[5]);
    assert_eq!(inbox, inbox2, "the README names two inbox keys");
    assert!(s.says("seven gates wait across the three"), "{}", s.prose);
    let base = scratch("workspace");
    let cwd = base.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut demo = s.command("demo --sessions 3");
    demo.extend(["--cwd".into(), cwd.display().to_string()]);
    let mut t = tui(&base, &demo, &[]);
    t.wait(&["7 waiting", "keys in the card"]);
    press(&mut t, inbox);
    after(&t, inbox, "opens the inbox", &["gate inbox", "7 pending"]);
    // Down to the first `npm test` (the cursor starts on the top row), then mark.
    let shown = t.screen();
    let rows: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.contains("age  session"))
        .skip(1)
        .take(7)
        .collect();
    let at = rows
        .iter()
        .position(|r| r.contains("npm test"))
        .unwrap_or_else(|| panic!("no npm test in the inbox\n{shown}"));
    for _ in 0..at {
        press(&mut t, "j");
    }
    answer(&mut t, identical);
    let marked = after(&t, identical, "marks every identical `npm test`", &["✓"]);
    let rows: Vec<&str> = marked.lines().filter(|l| l.contains('✓')).collect();
    assert_eq!(rows.len(), 2, "{marked}");
    assert!(rows.iter().all(|r| r.contains("npm test")), "{marked}");
    answer(&mut t, allow);
    after(
        &t,
        allow,
        "allows the marked gates",
        &["2 of 2 gate(s) allowed once", "5 pending"],
    );
    let npm = |b: &Value| b["behavior"] == "allow" && b["updatedInput"]["command"] == "npm test";
    let limit = Instant::now() + STEP;
    while answers_sent(&base).iter().filter(|b| npm(b)).count() < 2 {
        assert!(Instant::now() < limit, "both npm test allows recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The oldest gate left: the inbox's top row.
    let inbox_now = t.screen();
    let top = inbox_now
        .lines()
        .skip_while(|l| !l.contains("age  session"))
        .nth(1)
        .unwrap_or_default();
    let summary = top
        .trim_matches(|c: char| c == '│' || c.is_whitespace())
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .pop()
        .unwrap_or_default()
        .trim_end_matches(" · no rule")
        .chars()
        .take(24)
        .collect::<String>();
    assert!(!summary.is_empty(), "{inbox_now}");
    press(&mut t, "Esc");
    t.wait_gone(&["gate inbox"], STEP);
    press(&mut t, oldest);
    let first = after(&t, oldest, "jumps to the oldest gate", &[&summary]);
    let heading = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("┌ ") && l.contains("asked by"))
            .unwrap_or_default()
            .to_string()
    };
    let h1 = heading(&first);
    assert!(!h1.is_empty(), "no card after `{oldest}`\n{first}");
    press(&mut t, next);
    let limit = Instant::now() + STEP;
    while heading(&t.screen()) == h1 || heading(&t.screen()).is_empty() {
        assert!(
            Instant::now() < limit,
            "the README says `{next}` walks to the next gate; the card stayed\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    press(&mut t, prev);
    let limit = Instant::now() + STEP;
    while heading(&t.screen()) != h1 {
        assert!(
            Instant::now() < limit,
            "the README says `{prev}` walks back; the card is not the first one ({h1})\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    press(&mut t, new);
    after(&t, new, "starts a new session", &["new session"]);
    press(&mut t, "Esc");
    t.wait_gone(&["┌ new session"], STEP);
    // From the tree (Tab from the card passes the prompt).
    press(&mut t, "Tab");
    t.wait(&["Enter send"]);
    press(&mut t, "Tab");
    t.wait(&["I inbox"]);
    let before = waiting(&t.screen());
    press(&mut t, close);
    after(&t, close, "closes a session", &["close this session?"]);
    answer(&mut t, "y");
    // Its gates answered as it closed: fewer wait.
    let limit = Instant::now() + STEP;
    while waiting(&t.screen()) >= before {
        assert!(
            Instant::now() < limit,
            "the README says `{close}` closes a session; {before} still wait\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.quit();
    let _ = std::fs::remove_dir_all(&base);
}

/// The workspace's waiting count on the status line (` ‖ 5 waiting (1 here) · …`).
fn waiting(screen: &str) -> usize {
    screen
        .lines()
        .rev()
        .find_map(|l| {
            let n = l
                .trim_start()
                .strip_prefix("‖ ")?
                .split(" waiting")
                .next()?;
            n.trim().parse().ok()
        })
        .unwrap_or(usize::MAX)
}

/// Sessions that outlive the terminal: the four commands with the README's name, and the
/// detach key the text names.
#[test]
fn hosted_demo() {
    let s = readme().section("Sessions that outlive the terminal");
    let detach = &s.keys("terminals attach and detach (`{}`)")[0];
    let base = scratch("host");
    let cwd = base.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut demo = s.command("demo");
    let name = demo[demo.iter().position(|a| a == "--name").expect("--name") + 1].clone();
    demo.extend(["--cwd".into(), cwd.display().to_string()]);
    let host = StopHost(base.clone(), name.clone());
    let mut t = tui(&base, &demo, &[]);
    t.wait(&["7 waiting"]);
    press(&mut t, detach);
    let limit = Instant::now() + STEP;
    while t.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < limit,
            "the README says `{detach}` detaches; the client is still there\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(t);
    // `ls` prints what the README's comment shows, but for the pid.
    let ls = s.command("ls");
    let line = s
        .commands
        .iter()
        .find(|c| c.starts_with("switchboard ls"))
        .unwrap();
    let shown = s.commands_comment("switchboard ls");
    let out = run(&base, &ls);
    assert!(out.status.success(), "{out:?}");
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let strip_pid = |l: &str| {
        l.split(" (pid ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert!(
        out.lines().any(|l| strip_pid(l) == strip_pid(&shown)),
        "`{line}` printed\n{out}\nthe README shows\n{shown}"
    );
    // attach, then stop.
    let attach = s.command("attach");
    assert_eq!(attach, vec!["attach".to_string(), name.clone()]);
    let mut t = tui(&base, &attach, &[]);
    t.wait(&["7 waiting"]);
    press(&mut t, detach);
    let stop = s.command("stop");
    assert_eq!(stop, vec!["stop".to_string(), name.clone()]);
    let out = run(&base, &stop);
    assert!(out.status.success(), "{out:?}");
    let out = run(&base, &ls);
    assert!(
        !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with(&format!("{name}  "))),
        "{out:?}"
    );
    drop(host);
    // Replay and validate, on what this workspace recorded.
    replay_and_validate(&base);
    let _ = std::fs::remove_dir_all(&base);
}

/// Stops the test's host however the test ends.
struct StopHost(PathBuf, String);

impl Drop for StopHost {
    fn drop(&mut self) {
        let _ = run(&self.0, &["stop".to_string(), self.1.clone()]);
    }
}

impl Section {
    /// The comment after the command that starts with `prefix` in the section's code block.
    fn commands_comment(&self, prefix: &str) -> String {
        let line = self
            .raw_lines()
            .into_iter()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in the README's {}", self.title));
        let cut = cut_comment(&line);
        line[cut.len()..].trim_start_matches(['#', ' ']).to_string()
    }

    fn raw_lines(&self) -> Vec<String> {
        let r = readme();
        let quick = r
            .text
            .split("\n## ")
            .find(|s| s.starts_with("Quick start"))
            .unwrap();
        let body = quick
            .split("\n### ")
            .find(|b| b.starts_with(&self.title))
            .unwrap();
        body.lines().map(str::to_string).collect()
    }
}

/// Replay and validate: `sessions` lists the workspace, `validate` passes its manifest with
/// exit 0, `export … --markdown` writes a transcript, `replay` opens it.
fn replay_and_validate(base: &Path) {
    let s = readme().section("Replay and validate");
    let out = run(base, &s.command("sessions"));
    assert!(out.status.success(), "{out:?}");
    let manifests: Vec<PathBuf> = std::fs::read_dir(base.join("recordings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("workspace-"))
        })
        .collect();
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let file = manifests[0].display().to_string();
    let listed = String::from_utf8_lossy(&out.stdout);
    let file_name = manifests[0].file_name().unwrap().to_string_lossy();
    assert!(listed.contains(&*file_name), "sessions:\n{listed}");
    let with_file = |prefix: &str| -> Vec<String> {
        s.command(prefix)
            .into_iter()
            .map(|a| {
                if a == "FILE" || a == "FILE..." {
                    file.clone()
                } else {
                    a
                }
            })
            .collect()
    };
    let said = s.commands_comment("switchboard validate");
    assert!(said.contains("exit 0 clean"), "{said}");
    let out = run(base, &with_file("validate"));
    assert_eq!(out.status.code(), Some(0), "validate: {out:?}");
    // export takes a recording: one of the workspace's sessions, one that ran `npm test`.
    let recording = std::fs::read_dir(base.join("recordings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && std::fs::read_to_string(p).is_ok_and(|t| t.contains("npm test"))
        })
        .expect("a recording with npm test");
    let export: Vec<String> = with_file("export")
        .into_iter()
        .map(|a| {
            if a == file {
                recording.display().to_string()
            } else {
                a
            }
        })
        .collect();
    let out = run(base, &export);
    assert!(out.status.success(), "export: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("npm test"),
        "export: {out:?}"
    );
    // (vt100 answers no cursor-position query: the replay asks none.)
    let mut t = tui(base, &with_file("replay"), &[]);
    t.wait(&["auth", "web", "docs"]);
    t.quit();
}
