//! `switchboard hooks install | uninstall | status` on real settings files (issue 36 item 1):
//! the person's own keys and hooks kept, install idempotent, uninstall byte for byte the file
//! from before, a file that does not parse left alone, nothing written unasked, and a hook
//! command that is a silent no-op once its binary is gone.

use std::process::{Command, Stdio};

mod support {
    #[path = "../support/adopt.rs"]
    pub mod adopt;
    #[path = "../support/pty.rs"]
    pub mod pty;
}

use serde_json::Value;
use support::adopt::World;

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn codex_env(w: &World) -> Vec<(String, String)> {
    vec![(
        "CODEX_HOME".into(),
        w.home.join(".codex").display().to_string(),
    )]
}

const CLAUDE_SETTINGS: &str = "{\n  \"permissions\": {\n    \"defaultMode\": \"default\"\n  },\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"my-audit.sh\"\n          }\n        ]\n      }\n    ]\n  },\n  \"model\": \"opus\"\n}\n";

#[test]
fn install_keeps_what_is_there_twice_changes_nothing_and_uninstall_gives_it_back() {
    let w = World::new("install-round");
    let claude = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    std::fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    // Codex: a directory without hooks.json yet.
    std::fs::create_dir_all(w.home.join(".codex")).unwrap();
    let codex = w.home.join(".codex/hooks.json");

    let out = w.sb_with(
        &["hooks", "install", "--claude", "--codex", "--yes"],
        &codex_env(&w),
    );
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("+++ "),
        "the change is shown as a diff: {said}"
    );
    assert!(
        said.contains("Hooks need review") && said.contains("never writes Codex's"),
        "{said}"
    );
    let after_claude = std::fs::read_to_string(&claude).unwrap();
    let v: Value = serde_json::from_str(&after_claude).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "my-audit.sh"
    );
    assert_eq!(v["model"], "opus");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "hooks", "model"], "the order is kept");
    let ours = v["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_switchboard")).unwrap();
    assert!(
        ours.contains(&format!("exec {} hook claude", bin.display())),
        "{ours}"
    );
    let after_codex = std::fs::read_to_string(&codex).unwrap();
    assert!(after_codex.contains("hook codex"), "{after_codex}");
    // Codex's trust is Codex's: no config.toml was written.
    assert!(!w.home.join(".codex/config.toml").exists());

    // Twice: nothing changes, byte for byte.
    let out = w.sb_with(
        &["hooks", "install", "--claude", "--codex", "--yes"],
        &codex_env(&w),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("there already"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), after_claude);
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), after_codex);

    // status names both, with this binary, and that no host listens.
    let out = w.sb_with(&["hooks", "status"], &codex_env(&w));
    let said = text(&out);
    assert!(said.contains("(this binary)"), "{said}");
    assert!(said.contains("not yet reviewed in Codex"), "{said}");
    assert!(said.contains("hosts: none running"), "{said}");

    // Uninstall: the files from before, exactly (Codex's had none: it goes).
    let out = w.sb_with(
        &["hooks", "uninstall", "--claude", "--codex", "--yes"],
        &codex_env(&w),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
    assert!(!codex.exists(), "install made it, uninstall removes it");
}

/// Only install's record tells a `"hooks": {}` that was there from one install made: with
/// it, uninstall is exact; after someone else's change, it removes only our entries.
#[test]
fn uninstall_is_exact_after_install_and_careful_after_other_changes() {
    let w = World::new("install-record");
    let claude = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let before = "{\"hooks\": {}, \"env\": {\"A\": \"1\"}}";
    std::fs::write(&claude, before).unwrap();
    assert!(
        w.sb(&["hooks", "install", "--claude", "--yes"])
            .status
            .success()
    );
    assert!(
        w.sb(&["hooks", "uninstall", "--claude", "--yes"])
            .status
            .success()
    );
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), before);

    // Installed, then the person adds a key of their own: uninstall keeps it.
    assert!(
        w.sb(&["hooks", "install", "--claude", "--yes"])
            .status
            .success()
    );
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    v["theme"] = "dark".into();
    std::fs::write(&claude, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(
        w.sb(&["hooks", "uninstall", "--claude", "--yes"])
            .status
            .success()
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["env"]["A"], "1");
    assert!(
        !std::fs::read_to_string(&claude)
            .unwrap()
            .contains("# switchboard")
    );
}

#[test]
fn a_broken_file_is_left_alone_and_nothing_is_written_unasked() {
    let w = World::new("install-broken");
    let claude = w.home.join(".claude/settings.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let broken = "{\"hooks\": {\"Stop\": [}\n";
    std::fs::write(&claude, broken).unwrap();
    let out = w.sb(&["hooks", "install", "--claude", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("not valid JSON"), "{}", text(&out));
    assert!(text(&out).contains("settings.json"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), broken);

    // No terminal to ask on and no --yes: not written.
    std::fs::write(&claude, "{}").unwrap();
    let out = w.sb(&["hooks", "install", "--claude"]);
    assert!(text(&out).contains("pass --yes"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), "{}");
}

/// The installed command runs this binary only while it is there: removed, the hook prints
/// nothing and exits 0, so the CLI goes on as if no hook were installed.
#[test]
fn a_removed_binary_makes_the_hook_a_silent_no_op() {
    let w = World::new("install-gone");
    let copy = w.root.join("bin/switchboard copy");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_switchboard"), &copy).unwrap();
    let out = Command::new(&copy)
        .args(["hooks", "install", "--claude", "--yes"])
        .envs(w.env())
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let settings = std::fs::read_to_string(w.home.join(".claude/settings.json")).unwrap();
    let v: Value = serde_json::from_str(&settings).unwrap();
    let cmd = v["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cmd.contains("'"), "the path with a space is quoted: {cmd}");
    let run = |cmd: &str| {
        let mut c = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .envs(w.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        // With the binary gone the shell exits without reading its input, so the write may
        // meet a closed pipe. The CLIs live with that, as with any hook that ignores its
        // input; what matters is what the hook printed and how it exited.
        let wrote = c.stdin
            .take()
            .unwrap()
            .write_all(br#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}"#);
        if let Err(e) = wrote {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        c.wait_with_output().unwrap()
    };
    // There, with no host: it falls through (nothing printed, exit 0).
    let out = run(&cmd);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    std::fs::remove_file(&copy).unwrap();
    let out = run(&cmd);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}
