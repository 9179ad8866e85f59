use super::*;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sb-prof-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home/proj")).unwrap();
    dir
}

fn run(dir: &Path, text: &str) -> Checked {
    let file = dir.join("config.toml");
    let cfg = crate::config::parse_config(&file, text).unwrap();
    let resolve = Resolve {
        home: Some(dir.join("home")),
        base: dir.to_path_buf(),
    };
    check(Path::new("config.toml"), text, &cfg.session, &resolve)
}

#[test]
fn a_good_profile_resolves_its_paths() {
    let dir = scratch("good");
    std::fs::write(
        dir.join("home/r.toml"),
        "[[rule]]\naction = \"deny\"\ntool = \"Bash\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("agent"), "").unwrap();
    let c = run(
        &dir,
        "[[session]]\nname = \"api\"\nbackend = \"claude\"\ncwd = \"~/proj\"\nprompt = \"fix it\"\n\
         model = \"sonnet\"\npermission_mode = \"plan\"\nrules = [\"~/r.toml\"]\nbreaks = [\"Bash\"]\n\
         [[session]]\nname = \"docs\"\nbackend = \"acp\"\ncwd = \"home\"\ncommand = [\"./agent\", \"--x\"]\n\
         [[session]]\nname = \"show\"\nbackend = \"demo\"\nscript = \"overlap\"\n",
    );
    assert_eq!(c.problems, Vec::<String>::new());
    assert_eq!(c.profiles.len(), 3);
    let api = &c.profiles[0];
    assert_eq!(api.backend, ProfileKind::Claude);
    assert_eq!(api.cwd, dir.join("home/proj"));
    assert_eq!(api.rules, vec![dir.join("home/r.toml")]);
    assert_eq!(api.permission_mode.as_deref(), Some("plan"));
    assert_eq!(api.breaks, vec!["Bash"]);
    let docs = &c.profiles[1];
    assert_eq!(docs.cwd, dir.join("home"));
    assert_eq!(
        docs.command,
        vec![dir.join("./agent").display().to_string(), "--x".into()]
    );
    assert_eq!(c.profiles[2].script.as_deref(), Some("overlap"));
    assert_eq!(c.profiles[2].cwd, std::env::current_dir().unwrap());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_gateway_profile_takes_the_flags_as_keys() {
    use crate::backend::gateway::session::TokenSource;
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("gw-good");
    std::fs::write(dir.join("home/token"), "t0k3n\n").unwrap();
    std::fs::set_permissions(
        dir.join("home/token"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let c = run(
        &dir,
        "[[session]]\nname = \"remote\"\nbackend = \"gateway\"\nurl = \"wss://agents.example\"\n\
         workspace = \"ws-1\"\nroot = \"~/proj\"\nintention = \"tidy the docs\"\nmode = \"edits\"\n\
         token_file = \"~/token\"\n",
    );
    assert_eq!(c.problems, Vec::<String>::new());
    let g = c.profiles[0].gateway.as_ref().unwrap();
    assert_eq!(c.profiles[0].backend, ProfileKind::Gateway);
    assert_eq!(g.url, "wss://agents.example");
    assert_eq!(g.workspace, "ws-1");
    assert_eq!(g.root, dir.join("home/proj"));
    assert_eq!(g.intention, "tidy the docs");
    assert_eq!(g.mode, "edits");
    assert_eq!(g.token, TokenSource::File(dir.join("home/token")));
    assert!(
        g.token.read().is_ok(),
        "the token is read from the private file"
    );
    // `up` builds it like `switchboard gateway` does (nothing connects yet).
    let spec = crate::workspace::launch::launch(
        &c.profiles[0],
        &crate::workspace::launch::LaunchContext::default(),
    )
    .unwrap();
    assert_eq!(spec.name, "remote");
    assert_eq!(spec.backend.kind(), crate::core::BackendKind::Gateway);
    assert!(spec.backend.keeps_gates_on_quit());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn every_gateway_problem_is_reported_with_its_line_and_key() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("gw-bad");
    std::fs::write(dir.join("home/open"), "t0k3n").unwrap();
    std::fs::set_permissions(
        dir.join("home/open"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let text = "[[session]]\n\
name = \"a\"\n\
backend = \"gateway\"\n\
url = \"ws://agents.example\"\n\
workspace = \"ws\"\n\
root = \"~/nope\"\n\
mode = \"yolo\"\n\
token_file = \"~/open\"\n\
[[session]]\n\
name = \"b\"\n\
backend = \"gateway\"\n\
url = \"wss://h\"\n\
root = \"~/proj\"\n\
intention = 3\n\
token_file = \"~/t\"\n\
token_env = \"SB_NO_SUCH_TOKEN_VAR\"\n\
command = [\"x\"]\n\
[[session]]\n\
name = \"c\"\n\
backend = \"gateway\"\n\
url = \"wss://h\"\n\
workspace = \"ws\"\n\
root = \"~/proj\"\n\
intention = \"i\"\n\
token_env = \"SB_NO_SUCH_TOKEN_VAR\"\n";
    let c = run(&dir, text);
    assert!(c.profiles.is_empty(), "{:?}", c.profiles);
    let d = dir.display();
    for w in [
        "config.toml:4: session \"a\": url: ".to_string(),
        format!("config.toml:6: session \"a\": root: {d}/home/nope: no such directory"),
        "config.toml:7: session \"a\": mode: \"yolo\" is not one of ask, edits, full".into(),
        format!("config.toml:8: session \"a\": token_file: {d}/home/open: readable by group or others; chmod 600 it"),
        "config.toml:1: session \"a\": intention: missing (a gateway profile needs it)".into(),
        "config.toml:9: session \"b\": workspace: missing (a gateway profile needs it)".into(),
        "config.toml:14: session \"b\": intention: expected a string, found integer".into(),
        "config.toml:16: session \"b\": token_env: give the token with token_file or token_env, not both".into(),
        "config.toml:17: session \"b\": command: not used by gateway profiles (only claude, acp)".into(),
        "config.toml:25: session \"c\": token_env: $SB_NO_SUCH_TOKEN_VAR is not set".into(),
    ] {
        assert!(
            c.problems.iter().any(|p| p.starts_with(&w)),
            "missing {w}\nin {:#?}",
            c.problems
        );
    }
    assert!(
        c.problems
            .iter()
            .any(|p| p.starts_with("config.toml:4: session \"a\": url: ")
                && p.contains("loopback")),
        "{:#?}",
        c.problems
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn every_problem_of_every_profile_is_reported_with_its_line_and_key() {
    let dir = scratch("bad");
    std::fs::write(dir.join("home/broken.toml"), "[[rule]]\naction = 3\n").unwrap();
    std::fs::write(dir.join("home/file"), "").unwrap();
    let text = "bell = true\n\
[[session]]\n\
name = \"api\"\n\
backend = \"clod\"\n\
cwd = \"~/nope\"\n\
[[session]]\n\
backend = \"acp\"\n\
cwd = \"~/file\"\n\
model = \"x\"\n\
[[session]]\n\
name = \"api\"\n\
backend = \"claude\"\n\
permission_mode = \"yolo\"\n\
rules = [\"~/broken.toml\", \"~/missing.toml\"]\n\
colour = \"red\"\n\
breaks = \"Bash\"\n\
command = []\n\
[[session]]\n\
name = 7\n\
backend = \"demo\"\n\
script = \"../../etc\"\n\
command = [\"x\"]\n";
    let c = run(&dir, text);
    assert!(c.profiles.is_empty(), "{:?}", c.profiles);
    let d = dir.display();
    let want = vec![
        "config.toml:4: session \"api\": backend: \"clod\" is not one of claude, acp, demo, gateway, iii"
            .to_string(),
        format!("config.toml:5: session \"api\": cwd: {d}/home/nope: no such directory"),
        "config.toml:6: [[session]] #2: name: missing (every profile needs a unique name)"
            .to_string(),
        format!("config.toml:8: [[session]] #2: cwd: {d}/home/file: not a directory"),
        "config.toml:9: [[session]] #2: model: not used by acp profiles (only claude)"
            .to_string(),
        "config.toml:6: [[session]] #2: command: missing: an acp profile needs the agent's argv, e.g. [\"claude-agent-acp\"]".to_string(),
        "config.toml:11: session \"api\": name: \"api\" is already the name of [[session]] #1, line 3; names must be unique".to_string(),
        "config.toml:13: session \"api\": permission_mode: \"yolo\" is not one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto".to_string(),
    ];
    for w in &want {
        assert!(c.problems.contains(w), "missing {w}\nin {:#?}", c.problems);
    }
    let has = |prefix: &str, part: &str| {
        assert!(
            c.problems
                .iter()
                .any(|p| p.starts_with(prefix) && p.contains(part)),
            "no {prefix} … {part} in {:#?}",
            c.problems
        )
    };
    has("config.toml:14: session \"api\": rules: ", "broken.toml:2");
    has(
        "config.toml:14: session \"api\": rules: ",
        "missing.toml: no such file",
    );
    has(
        "config.toml:15: session \"api\": colour: unknown key \"colour\"; accepted: name, backend, cwd, prompt, rules, model,",
        "",
    );
    has(
        "config.toml:16: session \"api\": breaks: expected an array of strings, found string",
        "",
    );
    has("config.toml:17: session \"api\": command: empty", "");
    has(
        "config.toml:19: [[session]] #4: name: expected a string, found integer",
        "",
    );
    has("config.toml:21: [[session]] #4: script: \"../../etc\"", "");
    has(
        "config.toml:22: [[session]] #4: command: not used by demo profiles (only claude, acp)",
        "",
    );
    // The lines are in order within each profile.
    assert!(c.problems.len() >= want.len() + 7, "{:#?}", c.problems);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn an_iii_profile_is_checked_key_by_key_and_never_shows_a_header_value() {
    let dir = scratch("iii");
    let text = "[[session]]\n\
name = \"engine\"\n\
backend = \"iii\"\n\
engine = \"ws://127.0.0.1:49134\"\n\
headers = [\"Authorization: Bearer s3cr3t\"]\n\
sessions = [\"sess-a\", \"sess-b\"]\n\
[[session]]\n\
name = \"remote\"\n\
backend = \"iii\"\n\
engine = \"ws://10.0.0.1:49134\"\n\
headers = [\"no colon s3cr3t\", \"X-Ok: fine\"]\n\
sessions = [\"\"]\n\
model = \"sonnet\"\n\
[[session]]\n\
name = \"api\"\n\
backend = \"claude\"\n\
engine = \"ws://127.0.0.1:1\"\n";
    let c = run(&dir, text);
    assert_eq!(c.profiles.len(), 1, "{:#?}", c.problems);
    let p = &c.profiles[0];
    assert_eq!(p.backend, ProfileKind::Iii);
    assert_eq!(p.engine.as_deref(), Some("ws://127.0.0.1:49134"));
    assert_eq!(p.headers, vec!["Authorization: Bearer s3cr3t"]);
    assert_eq!(p.sessions, vec!["sess-a", "sess-b"]);
    let has = |prefix: &str| {
        assert!(
            c.problems.iter().any(|p| p.starts_with(prefix)),
            "no {prefix} in {:#?}",
            c.problems
        )
    };
    has("config.toml:10: session \"remote\": engine: ws:// is refused except to loopback");
    has("config.toml:11: session \"remote\": headers: entry 1: --header");
    has("config.toml:12: session \"remote\": sessions: must not be empty");
    has("config.toml:13: session \"remote\": model: not used by iii profiles (only claude)");
    has("config.toml:17: session \"api\": engine: not used by claude profiles (only iii)");
    assert!(
        c.problems.iter().all(|p| !p.contains("s3cr3t")),
        "{:#?}",
        c.problems
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `provider` (iii only): the one the new-session dialog starts with for that engine. It is sent
/// to the engine and shown, so it is one printable line of bounded length; an empty one is
/// refused (leaving the key out is how the router's default is asked for).
#[test]
fn an_iii_profile_may_name_a_provider() {
    let dir = scratch("provider");
    let long = "p".repeat(crate::core::msg::PROVIDER_MAX + 1);
    let text = format!(
        "[[session]]\n\
name = \"engine\"\n\
backend = \"iii\"\n\
provider = \"openrouter\"\n\
[[session]]\n\
name = \"esc\"\n\
backend = \"iii\"\n\
provider = \"x\\u001b[2J\"\n\
[[session]]\n\
name = \"long\"\n\
backend = \"iii\"\n\
provider = \"{long}\"\n\
[[session]]\n\
name = \"blank\"\n\
backend = \"iii\"\n\
provider = \" \"\n\
[[session]]\n\
name = \"api\"\n\
backend = \"claude\"\n\
provider = \"anthropic\"\n"
    );
    let c = run(&dir, &text);
    assert_eq!(c.profiles.len(), 1, "{:#?}", c.problems);
    assert_eq!(c.profiles[0].provider.as_deref(), Some("openrouter"));
    let want = [
        "config.toml:8: session \"esc\": provider: \"x\\u{1b}[2J\": must be printable text",
        "config.toml:12: session \"long\": provider: \"ppp",
        "config.toml:16: session \"blank\": provider: \" \": must not be empty",
        "config.toml:20: session \"api\": provider: not used by claude profiles (only iii)",
    ];
    assert_eq!(c.problems.len(), want.len(), "{:#?}", c.problems);
    for (got, want) in c.problems.iter().zip(want) {
        assert!(
            got.starts_with(want),
            "{got:?} does not start with {want:?}"
        );
        assert!(!got.contains('\u{1b}'), "{got:?}");
    }
    assert!(
        c.problems[1].ends_with("longer than 128 characters"),
        "{:?}",
        c.problems[1]
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn hostile_values_never_reach_a_message_raw_and_never_panic() {
    let dir = scratch("hostile");
    let long = "x".repeat(10_000);
    let text = format!(
        "[[session]]\nname = \"\\u001b[2Jevil\"\nbackend = \"\\u001b]0;t\\u0007\"\ncwd = \"\\u0000\"\n\
         [[session]]\nname = \"{long}\"\nbackend = \"claude\"\nmodel = \"--dangerously\"\ncommand = [\"\"]\n\
         [[session]]\nname = \"\u{202e}x\"\nbackend = \"acp\"\ncommand = [\"no-such-agent-anywhere-xyz\"]\n\
         [[session]]\nname = \"ok\"\nbackend = \"demo\"\nbreaks = [\"\", 3]\ncwd = \"~bob/x\"\nprompt = \"{}\"\n\
         [[session]]\n[[session]]\nname = \"\"\nbackend = \"\"\n",
        "p".repeat(70_000)
    );
    let c = run(&dir, &text);
    assert!(c.profiles.is_empty());
    for p in &c.problems {
        assert!(!p.chars().any(|ch| ch.is_control()), "raw control in {p:?}");
        assert!(!p.contains('\u{202e}'), "raw bidi in {p:?}");
        assert!(p.len() < 400, "unbounded message {p:?}");
        assert!(p.starts_with("config.toml:"), "{p}");
    }
    let all = c.problems.join("\n");
    for part in [
        "#1: name: must be printable",
        "#1: backend: \"\\u{1b}]0;t\\u{7}\" is not one of claude, acp, demo",
        "#1: cwd:",
        "#2: name: longer than 64 characters",
        "#2: model: \"--dangerously\": must not start with `-`",
        "#2: command: the program (first entry) is empty",
        "#3: name: must be printable",
        "#3: command: \"no-such-agent-anywhere-xyz\": not found on $PATH",
        "session \"ok\": breaks: entry 2 is integer, expected a string",
        "session \"ok\": cwd: \"~bob/x\": only `~` and `~/…` are expanded",
        "session \"ok\": prompt: longer than 65536 bytes",
        "#5: name: missing",
        "#5: backend: missing (one of claude, acp, demo, gateway, iii)",
        "#6: name: must not be empty",
        "#6: backend: \"\" is not one of claude, acp, demo, gateway, iii",
    ] {
        assert!(all.contains(part), "missing {part} in\n{all}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn tilde_needs_a_home() {
    let r = Resolve {
        home: None,
        base: PathBuf::from("/base"),
    };
    assert!(r.path("~/x").unwrap_err().contains("$HOME is not set"));
    assert_eq!(r.path("x/y").unwrap(), PathBuf::from("/base/x/y"));
    assert_eq!(r.path("/abs").unwrap(), PathBuf::from("/abs"));
    assert_eq!(ProfileKind::parse("acp"), Some(ProfileKind::Acp));
    assert_eq!(ProfileKind::parse("ACP"), None);
}

/// `fs` and `terminal` (acp only): `false` withholds that client capability from the agent
/// (gemini-cli cannot create files through the client's fs); anything but a boolean is refused.
#[test]
fn an_acp_profile_may_withhold_fs_and_terminal() {
    let dir = scratch("withhold");
    let text = "[[session]]\n\
name = \"gemini\"\n\
backend = \"acp\"\n\
command = [\"sh\", \"-c\", \"gemini --acp\"]\n\
fs = false\n\
[[session]]\n\
name = \"plain\"\n\
backend = \"acp\"\n\
command = [\"sh\"]\n\
fs = true\n\
terminal = false\n\
[[session]]\n\
name = \"typo\"\n\
backend = \"acp\"\n\
command = [\"sh\"]\n\
fs = \"no\"\n\
[[session]]\n\
name = \"api\"\n\
backend = \"claude\"\n\
terminal = false\n";
    let c = run(&dir, text);
    assert_eq!(c.profiles.len(), 2, "{:#?}", c.problems);
    let (g, p) = (&c.profiles[0], &c.profiles[1]);
    assert!(g.withhold_fs && !g.withhold_terminal);
    assert!(!p.withhold_fs && p.withhold_terminal);
    let want = [
        "config.toml:16: session \"typo\": fs: expected true or false, found string",
        "config.toml:20: session \"api\": terminal: not used by claude profiles (only acp)",
    ];
    assert_eq!(c.problems.len(), want.len(), "{:#?}", c.problems);
    for (got, want) in c.problems.iter().zip(want) {
        assert!(
            got.starts_with(want),
            "{got}\n  does not start with\n{want}"
        );
    }
}
