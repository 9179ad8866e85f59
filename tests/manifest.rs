//! `validate` and `sessions` on a workspace manifest, run as the built binary.
//!
//! The manifest is written by `ManifestWriter` over two real recordings copied to a temp dir: a
//! cowork-harness cassette of the real Claude CLI (`../shared/recordings/claude/`, an
//! AskUserQuestion gate answered) and the two-sided ACP recording `fixtures/recordings/acp/good.jsonl`
//! (a permission allowed, an `fs/write_text_file` approved, a permission cancelled with its turn).
//! The public ACP logs in `../shared/recordings/acp/` hold only the agent's side (no answers), so
//! a manifest over one of them must fail, and a test shows that it does and why.

#[path = "support/common.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use switchboard::core::gate::Decision;
use switchboard::workspace::manifest::ManifestWriter;

use common::{manifest, shared_dir_or_skip};

/// The AskUserQuestion gate of `cowork-multiselect-gate.agent-2.1.238.cassette.json`.
const CLAUDE_GATE: &str = "1d40b7fc-f178-464d-b799-9a6b5312fa28";
const CASSETTE: &str = "cowork-multiselect-gate.agent-2.1.238.cassette.json";

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-manifest-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bin(args: &[&str], data_dir: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.args(args).env("NO_COLOR", "1");
    if let Some(d) = data_dir {
        c.env("SWITCHBOARD_DATA_DIR", d);
    }
    c.output().expect("run switchboard")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn allow() -> Decision {
    Decision::Allow {
        updated_input: None,
        always: false,
    }
}

/// A workspace of the Claude cassette (session 0, recorded by a relative path) and the ACP
/// recording (session 1, absolute path), with the four decisions their gates got, interleaved.
fn workspace(dir: &Path) -> Option<PathBuf> {
    let claude = shared_dir_or_skip("manifest", "recordings/claude")?;
    std::fs::copy(claude.join(CASSETTE), dir.join("api.cassette.json")).unwrap();
    std::fs::copy(
        manifest("fixtures/recordings/acp/good.jsonl"),
        dir.join("docs.jsonl"),
    )
    .unwrap();
    let path = dir.join("workspace-test.json");
    let mut w = ManifestWriter::create(&path, 1_000).unwrap();
    w.session_opened(
        0,
        "api",
        "claude",
        Some(Path::new("api.cassette.json")),
        1_000,
    )
    .unwrap();
    w.session_opened(1, "docs", "acp", Some(&dir.join("docs.jsonl")), 1_000)
        .unwrap();
    w.decision(1_105, 1, "acp:0", &allow(), "human").unwrap();
    w.decision(1_125, 1, "acp:1", &allow(), "batch").unwrap();
    let answers = Decision::Answer {
        answers: vec![("Which areas?".into(), "Auth, Audit".into())],
    };
    w.decision(1_200, 0, CLAUDE_GATE, &answers, "human")
        .unwrap();
    w.decision(1_240, 1, "acp:3", &Decision::Cancelled, "backend")
        .unwrap();
    w.session_closed(1, 2_000, Some(0)).unwrap();
    Some(path)
}

/// Rewrite the manifest's text with `edit`.
fn edit(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, edit(text)).unwrap();
}

/// The line of the manifest that holds `needle`.
fn line_of(path: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    1 + text.lines().position(|l| l.contains(needle)).unwrap()
}

#[test]
fn a_manifest_over_real_recordings_validates_clean() {
    let dir = scratch("clean");
    let Some(path) = workspace(&dir) else { return };
    let o = bin(&["validate", path.to_str().unwrap()], None);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("3 file(s)") && out.contains("0 problem(s), 0 unreadable"),
        "{out}"
    );
    // The JSON report lists the manifest and both recordings, each checked.
    let o = bin(&["validate", "--json", path.to_str().unwrap()], None);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["files"][0];
    assert_eq!(m["format"], "manifest");
    assert_eq!(m["report"]["requests"], 4);
    assert_eq!(m["report"]["replies_checked"], 4);
    let recs = m["recordings"].as_array().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["format"], "cassette");
    assert_eq!(recs[1]["format"], "recording");
    assert!(
        recs[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("api.cassette.json"),
        "the relative recording is resolved next to the manifest: {recs:?}"
    );
    assert_eq!(v["problems"], 0);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn an_unknown_session_is_found() {
    let dir = scratch("session");
    let Some(path) = workspace(&dir) else { return };
    edit(&path, |t| {
        t.replace(
            &format!("\"session\":0,\"gate_id\":\"{CLAUDE_GATE}\""),
            &format!("\"session\":7,\"gate_id\":\"{CLAUDE_GATE}\""),
        )
    });
    let o = bin(&["validate", path.to_str().unwrap()], None);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let line = line_of(&path, CLAUDE_GATE);
    assert!(
        out.contains(&format!(
            "{}:{line}: unknown-session: decision on {CLAUDE_GATE} names session 7",
            path.display()
        )),
        "{out}"
    );
    assert!(out.contains("1 problem(s)"), "{out}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_gate_the_recording_never_asked_is_found() {
    let dir = scratch("gate");
    let Some(path) = workspace(&dir) else { return };
    edit(&path, |t| t.replace("\"acp:1\"", "\"acp:41\""));
    let o = bin(&["validate", path.to_str().unwrap()], None);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let line = line_of(&path, "acp:41");
    assert!(
        out.contains(&format!(
            "{}:{line}: unknown-gate: gate acp:41 is not a request in session 1's recording",
            path.display()
        )),
        "{out}"
    );
    // A recorded answer of another kind is found too.
    edit(&path, |t| {
        t.replace(
            "\"gate_id\":\"acp:0\",\"decision\":\"allow\"",
            "\"gate_id\":\"acp:0\",\"decision\":\"deny\"",
        )
    });
    let out = stdout(&bin(&["validate", path.to_str().unwrap()], None));
    assert!(
        out.contains(&format!(
            "{}:{}: decision-mismatch: gate acp:0: the manifest says deny but the recording (line 12) answers allow",
            path.display(),
            line_of(&path, "acp:0")
        )),
        "{out}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_schema_violation_is_found_with_its_line_and_key() {
    let dir = scratch("schema");
    let Some(path) = workspace(&dir) else { return };
    edit(&path, |t| {
        t.replace("\"by\":\"backend\"", "\"by\":\"robot\"")
    });
    let o = bin(&["validate", path.to_str().unwrap()], None);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let line = line_of(&path, "robot");
    assert!(
        out.contains(&format!(
            "{}:{line}: schema: /decisions/3/by: \"robot\" is not one of",
            path.display()
        )),
        "{out}"
    );
    // Out of order in time, and an unknown key at the top.
    edit(&path, |t| {
        t.replace("\"at_ms\":1240", "\"at_ms\":1100").replacen(
            "\"started_ms\"",
            "\"extra\": true,\n  \"started_ms\"",
            1,
        )
    });
    let out = stdout(&bin(&["validate", path.to_str().unwrap()], None));
    assert!(
        out.contains(": order: decision on acp:3 at 1100 ms"),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}:1: schema: /: ", path.display())) && out.contains("extra"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_one_sided_agent_log_cannot_back_a_decision() {
    let Some(acp) = shared_dir_or_skip("manifest", "recordings/acp") else {
        return;
    };
    let dir = scratch("onesided");
    std::fs::copy(
        acp.join("toad_claude-code-acp_terminal_790af4b.jsonl"),
        dir.join("toad.jsonl"),
    )
    .unwrap();
    let path = dir.join("w.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    w.session_opened(0, "toad", "acp", Some(Path::new("toad.jsonl")), 0)
        .unwrap();
    w.decision(5, 0, "acp:0", &allow(), "human").unwrap();
    let out = stdout(&bin(&["validate", path.to_str().unwrap()], None));
    assert!(
        out.contains(&format!(
            "{}:0: one-sided:",
            dir.join("toad.jsonl").display()
        )),
        "{out}"
    );
    assert!(
        out.contains("unanswered-gate: gate acp:0 (line "),
        "the permission request is there, its answer is not: {out}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_missing_recording_makes_the_workspace_unreadable() {
    let dir = scratch("missing");
    let path = dir.join("w.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    w.session_opened(0, "gone", "claude", Some(Path::new("gone.jsonl")), 0)
        .unwrap();
    let o = bin(&["validate", path.to_str().unwrap()], None);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("recording: session 0: its recording"), "{out}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sessions_lists_workspaces_neutralized() {
    let data = scratch("sessions");
    let recs = data.join("recordings");
    std::fs::create_dir_all(&recs).unwrap();
    let mut w = ManifestWriter::create(&recs.join("workspace-20260101T000000Z.json"), 0).unwrap();
    w.session_opened(
        0,
        "api\u{1b}]0;pwned\u{7}\u{1b}[2J",
        "claude",
        Some(Path::new("a.jsonl")),
        0,
    )
    .unwrap();
    w.session_opened(1, "docs", "acp", None, 0).unwrap();
    w.decision(1, 0, "g1", &allow(), "rule").unwrap();
    w.session_closed(1, 2, Some(3)).unwrap();
    // A damaged manifest is listed as such, not skipped.
    std::fs::write(
        recs.join("workspace-broken.json"),
        "{\"switchboard_workspace\": 1, \"sessions\": []}",
    )
    .unwrap();
    let o = bin(&["sessions"], Some(&data));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(
        out.contains("1970-01-01T00:00:00Z  workspace  2 session(s), 1 decision(s)"),
        "{out}"
    );
    assert!(
        out.contains(&recs.join("a.jsonl").display().to_string()),
        "{out}"
    );
    assert!(
        out.contains("(not recorded)") && out.contains("exited 3"),
        "{out}"
    );
    assert!(out.contains("workspace  unreadable: line 1"), "{out}");
    std::fs::remove_dir_all(data).ok();
}
