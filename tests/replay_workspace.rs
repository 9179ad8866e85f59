//! `switchboard replay MANIFEST`: a workspace's recordings merged into one timeline by time,
//! each frame fed to its own session.
//!
//! The manifest is written by `ManifestWriter` over two real recordings copied to a temp dir
//! with their times shifted so they interleave: our recording of the real Claude CLI
//! `fixtures/recordings/claude/bash_write.jsonl` (three Bash gates: denied, allowed, allowed) as
//! session "api", and the two-sided ACP recording `fixtures/recordings/acp/good.jsonl` (a
//! permission allowed, a write approved, a permission cancelled) as session "docs". The player
//! is driven headless with keys and checked on its `State`.

#[path = "support/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

use switchboard::core::State;
use switchboard::core::state::{Focus, SessionState};
use switchboard::core::transcript::ItemKind;
use switchboard::replay::player::{Player, clock};
use switchboard::workspace::manifest::ManifestWriter;

use common::manifest;

const CLAUDE: &str = "fixtures/recordings/claude/bash_write.jsonl";
const ACP: &str = "fixtures/recordings/acp/good.jsonl";

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-wsreplay-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copy the recording `src` to `dst` with every entry's time mapped by `f`.
fn shifted(src: &str, dst: &Path, f: impl Fn(u64) -> u64) {
    let text = std::fs::read_to_string(manifest(src)).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 || line.trim().is_empty() {
            out.push_str(line);
        } else {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if let Some(ts) = v["ts"].as_u64() {
                v["ts"] = Value::from(f(ts));
            }
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    std::fs::write(dst, out).unwrap();
}

/// The ACP recording's times (1000..1260, every 10 ms) spread over the Claude one's (1..1336).
fn acp_time(ts: u64) -> u64 {
    (ts - 1000) * 5 + 3
}

/// A manifest listing `sessions` (name, backend, recording file name in `dir`).
fn write_manifest(dir: &Path, sessions: &[(&str, &str, &str)]) -> PathBuf {
    let path = dir.join("workspace.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    for (i, (name, backend, rec)) in sessions.iter().enumerate() {
        // The first by a relative path (resolved against the manifest's directory), the others
        // absolute, as the writer may record either.
        let rec = if i == 0 {
            PathBuf::from(rec)
        } else {
            dir.join(rec)
        };
        w.session_opened(i as u32, name, backend, Some(&rec), 0)
            .unwrap();
    }
    path
}

/// "api" (Claude) and "docs" (ACP), interleaved.
fn two_sessions(tag: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(tag);
    shifted(CLAUDE, &dir.join("api.jsonl"), |t| t);
    shifted(ACP, &dir.join("docs.jsonl"), acp_time);
    let m = write_manifest(
        &dir,
        &[
            ("api", "claude", "api.jsonl"),
            ("docs", "acp", "docs.jsonl"),
        ],
    );
    (dir, m)
}

fn open(m: &Path) -> Player {
    let mut p = Player::open_path(m, None).unwrap_or_else(|e| panic!("{}: {e}", m.display()));
    p.feeder.state.size = (120, 40);
    p
}

fn press(p: &mut Player, code: KeyCode) {
    p.key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn ch(p: &mut Player, c: char) {
    press(p, KeyCode::Char(c));
}

fn frame(p: &Player) -> usize {
    p.state().replay.as_ref().expect("replay view").frame
}

/// (ts, line) of each entry of a recording file.
fn entries(path: &Path) -> Vec<(u64, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["ts"].as_u64().unwrap(),
                v["line"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Everything the reducer built for one session, with times: tree, transcripts, gates,
/// answers and session facts. `root_name`: whether the root's name is included.
fn domain(s: &SessionState, root_name: bool) -> String {
    let mut out = String::new();
    for (i, n) in s.tree.nodes.iter().enumerate() {
        let name = if i == 0 && !root_name { "" } else { &n.name };
        out.push_str(&format!(
            "{} parent={:?} {name} {:?} {:?} tokens={} tools={} {}..{:?}\n",
            n.key,
            n.parent,
            n.description,
            n.status,
            n.tokens,
            n.tool_uses,
            n.started_ms,
            n.ended_ms
        ));
        for it in &n.transcript.items {
            out.push_str(&format!("  {} {:?}\n", it.at_ms, it.kind));
        }
    }
    for g in &s.gates {
        out.push_str(&format!(
            "gate {} on {} @{}\n",
            g.id, g.node_key, g.opened_ms
        ));
    }
    let x = &s.session;
    out.push_str(&format!(
        "answered={} closed={:?} {:?} {:?} {:?} turn={:?} turns={} tokens={}/{}\n",
        s.answered,
        s.closed_gates,
        x.session_id,
        x.permission_mode,
        x.cwd,
        x.turn,
        x.turns,
        x.input_tokens,
        x.output_tokens
    ));
    out
}

fn workspace_domain(s: &State) -> Vec<String> {
    s.sessions.iter().map(|x| domain(x, true)).collect()
}

fn audits(s: &SessionState) -> Vec<String> {
    s.tree
        .nodes
        .iter()
        .flat_map(|n| n.transcript.items.iter())
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The merged timeline

#[test]
fn the_timeline_interleaves_the_sessions_in_time_order() {
    let (dir, m) = two_sessions("order");
    let p = open(&m);
    let api = entries(&dir.join("api.jsonl"));
    let docs = entries(&dir.join("docs.jsonl"));
    assert_eq!(p.total(), api.len() + docs.len());
    // Independently: a stable sort of both by (time, session listed first).
    let mut want: Vec<(u64, usize, String)> = api
        .iter()
        .map(|(t, l)| (*t, 0, l.clone()))
        .chain(docs.iter().map(|(t, l)| (*t, 1, l.clone())))
        .collect();
    want.sort_by_key(|(t, lane, _)| (*t, *lane));
    let got: Vec<(u64, usize, String)> = (0..p.total())
        .map(|i| {
            let f = p.frame(i);
            (f.ts.unwrap(), p.lane(i), f.text)
        })
        .collect();
    assert_eq!(got, want);
    // It really alternates: many switches between the sessions, not one block after another.
    let switches = got.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(switches >= 10, "only {switches} switches between sessions");
    // The footer's position and time refer to the merged timeline.
    let mut p = p;
    press(&mut p, KeyCode::Home);
    for _ in 0..40 {
        ch(&mut p, '.');
    }
    let view = p.state().replay.as_ref().unwrap();
    assert_eq!((view.frame, view.total), (40, p.total()));
    assert_eq!(view.time, clock(Some(got[39].0)));
}

#[test]
fn stepping_builds_both_sessions_with_their_gates() {
    let (_dir, m) = two_sessions("step");
    let mut p = open(&m);
    press(&mut p, KeyCode::Home);
    let s = p.state();
    assert_eq!(s.sessions.len(), 2);
    assert_eq!(s.sessions[0].name(), "api");
    assert_eq!(s.sessions[1].name(), "docs");
    assert_eq!(
        s.sessions[0].session.backend,
        switchboard::core::BackendKind::Claude
    );
    assert_eq!(
        s.sessions[1].session.backend,
        switchboard::core::BackendKind::Acp
    );
    let mut gated = [false; 2];
    while frame(&p) < p.total() {
        let before = p
            .state()
            .sessions
            .iter()
            .map(|s| s.answered)
            .collect::<Vec<_>>();
        ch(&mut p, '.');
        let lane = p.lane(frame(&p) - 1);
        let s = p.state();
        // A frame only ever changes its own session's answers.
        for (i, x) in s.sessions.iter().enumerate() {
            if i != lane {
                assert_eq!(
                    x.answered,
                    before[i],
                    "frame {} changed session {i}",
                    frame(&p)
                );
            }
            gated[i] |= !x.gates.is_empty();
        }
        assert!(s.pending_total() <= 2);
    }
    assert_eq!(gated, [true, true], "each session had a gate open");
    // Both trees are there: the ACP agent's sub-agent under "docs", the Claude transcript under
    // "api".
    let s = p.state();
    assert!(
        s.sessions[1].tree.nodes.len() > 1,
        "{}",
        domain(&s.sessions[1], true)
    );
    assert!(
        s.sessions[0].tree.nodes[0].transcript.len() > 3,
        "{}",
        domain(&s.sessions[0], true)
    );
}

#[test]
fn gate_jumps_show_each_sessions_gate_with_its_own_recorded_answer() {
    let (_dir, m) = two_sessions("gates");
    let mut p = open(&m);
    press(&mut p, KeyCode::Home);
    let mut seen = Vec::new();
    loop {
        let at = frame(&p);
        ch(&mut p, ']');
        if frame(&p) == at {
            break;
        }
        let lane = p.lane(frame(&p) - 1);
        let s = p.state();
        assert_eq!(s.selected, lane, "the gate's session is shown");
        assert_eq!(s.focus, Focus::Gate);
        let g = s.active().expect("the gate is open on screen");
        let answer = s.replay.as_ref().unwrap().answers.get(&g.id);
        assert!(
            answer.is_some(),
            "no recorded answer for {} in {lane}",
            g.id
        );
        seen.push((lane, g.id.clone(), answer.unwrap().clone()));
    }
    let lanes: Vec<usize> = seen.iter().map(|(l, _, _)| *l).collect();
    assert_eq!(lanes.iter().filter(|l| **l == 0).count(), 3, "{seen:?}");
    assert_eq!(lanes.iter().filter(|l| **l == 1).count(), 3, "{seen:?}");
    assert!(lanes.windows(2).any(|w| w[0] != w[1]), "{seen:?}");
    let first_acp = seen.iter().find(|(l, _, _)| *l == 1).unwrap();
    assert_eq!(first_acp.1, "acp:0");
    assert!(
        first_acp.2.starts_with("selected Allow (allow, allow)"),
        "{first_acp:?}"
    );
    let first_claude = seen.iter().find(|(l, _, _)| *l == 0).unwrap();
    assert!(first_claude.2.starts_with("denied"), "{first_claude:?}");
}

/// Two ACP sessions of the same recording (shifted apart): their gates have the same ids
/// (`acp:0`…), and each card shows its own session's answer, at its own time.
#[test]
fn equal_gate_ids_in_two_sessions_keep_their_own_answers() {
    let dir = scratch("ids");
    shifted(ACP, &dir.join("a.jsonl"), |t| t);
    shifted(ACP, &dir.join("b.jsonl"), |t| t + 5);
    let m = write_manifest(&dir, &[("a", "acp", "a.jsonl"), ("b", "acp", "b.jsonl")]);
    let mut p = open(&m);
    press(&mut p, KeyCode::Home);
    // The first permission is asked at 1100 (a) and 1105 (b), answered at 1110 and 1115.
    ch(&mut p, ']');
    assert_eq!(p.state().selected, 0);
    assert_eq!(p.state().active().unwrap().id, "acp:0");
    let a = p.state().replay.as_ref().unwrap().answers["acp:0"].clone();
    ch(&mut p, ']');
    assert_eq!(p.state().selected, 1);
    assert_eq!(p.state().active().unwrap().id, "acp:0");
    let b = p.state().replay.as_ref().unwrap().answers["acp:0"].clone();
    assert!(a.ends_with(&clock(Some(1110))), "{a}");
    assert!(b.ends_with(&clock(Some(1115))), "{b}");
    // Showing the other session by a key (`g`: the oldest gate anywhere, a's) brings its
    // answers with it.
    assert_eq!(
        p.state().sessions[0].gates.len(),
        1,
        "a's gate is still open"
    );
    p.feeder.state.focus = Focus::Tree;
    ch(&mut p, 'g');
    let s = p.state();
    assert_eq!(s.selected, 0);
    assert_eq!(s.replay.as_ref().unwrap().answers["acp:0"], a);
}

// ---------------------------------------------------------------------------------------------
// Seeking and the end

#[test]
fn seeking_to_the_middle_and_back_equals_stepping() {
    let (_dir, m) = two_sessions("seek");
    let mut p = open(&m);
    press(&mut p, KeyCode::Home);
    let total = p.total();
    let mut stepped = vec![workspace_domain(p.state())];
    while frame(&p) < total {
        ch(&mut p, '.');
        stepped.push(workspace_domain(p.state()));
    }
    for target in [total / 2, total / 3, 2 * total / 3, 1, total - 1] {
        press(&mut p, KeyCode::End);
        p.finish_work();
        assert_eq!(workspace_domain(p.state()), stepped[total]);
        p.seek(target);
        p.finish_work();
        assert_eq!(frame(&p), target);
        assert_eq!(
            workspace_domain(p.state()),
            stepped[target],
            "seek to {target}"
        );
        // And one step back from there.
        ch(&mut p, ',');
        p.finish_work();
        assert_eq!(
            workspace_domain(p.state()),
            stepped[target - 1],
            "back to {}",
            target - 1
        );
        press(&mut p, KeyCode::Home);
        p.seek(target);
        assert_eq!(
            workspace_domain(p.state()),
            stepped[target],
            "forward to {target}"
        );
    }
}

#[test]
fn the_end_has_each_sessions_gates_answered_as_recorded() {
    let (dir, m) = two_sessions("end");
    let mut p = open(&m);
    press(&mut p, KeyCode::End);
    p.finish_work();
    let s = p.state();
    assert_eq!(s.pending_total(), 0);
    let api = &s.sessions[0];
    assert_eq!(api.answered, 3);
    let a = audits(api);
    assert_eq!(a.len(), 3, "{a:?}");
    assert!(a[0].contains("denied"), "{a:?}");
    assert!(
        a[1].contains("allowed") && a[2].contains("allowed"),
        "{a:?}"
    );
    let docs = &s.sessions[1];
    assert_eq!(docs.answered, 3, "permission, write, permission cancelled");
    assert_eq!(docs.session.session_id.as_deref(), Some("sess_1"));
    // Each session ends exactly as its recording replayed alone (the root's name aside: alone,
    // it is the backend's default).
    for (i, file) in ["api.jsonl", "docs.jsonl"].into_iter().enumerate() {
        let mut alone = Player::open_path(&dir.join(file), None).unwrap();
        press(&mut alone, KeyCode::End);
        alone.finish_work();
        assert_eq!(
            domain(&s.sessions[i], false),
            domain(&alone.state().sessions[0], false),
            "{file}"
        );
    }
}

#[test]
fn replay_keys_never_change_the_recorded_workspace() {
    let (_dir, m) = two_sessions("ro");
    let mut p = open(&m);
    ch(&mut p, ']');
    let before = workspace_domain(p.state());
    // The inbox: marking and batch answers are refused; closing, restarting, starting sessions
    // too.
    p.feeder.state.focus = Focus::Tree;
    ch(&mut p, 'I');
    for c in [' ', '=', 'y', 'n', 'a'] {
        ch(&mut p, c);
    }
    press(&mut p, KeyCode::Esc);
    for c in ['x', 'X'] {
        ch(&mut p, c);
    }
    p.key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL));
    assert!(p.state().overlay.is_none());
    assert_eq!(workspace_domain(p.state()), before);
    assert_eq!(p.state().sessions.len(), 2);
    assert!(p.state().sessions.iter().all(|s| !s.closed));
}

// ---------------------------------------------------------------------------------------------
// Hostile manifests

fn open_err(m: &Path) -> String {
    match Player::open_path(m, None) {
        Ok(_) => panic!("{} opened", m.display()),
        Err(e) => e,
    }
}

#[test]
fn a_bad_manifest_is_a_clear_error_never_a_panic() {
    let dir = scratch("bad");
    shifted(CLAUDE, &dir.join("api.jsonl"), |t| t);
    // A listed recording that is missing.
    let m = write_manifest(
        &dir,
        &[
            ("api", "claude", "api.jsonl"),
            ("gone", "acp", "gone.jsonl"),
        ],
    );
    let e = open_err(&m);
    assert!(
        e.contains("session 1 (\"gone\")") && e.contains("gone.jsonl") && e.contains("cannot read"),
        "{e}"
    );
    assert!(e.starts_with("line "), "{e}");
    // A backend no replay reads.
    let m = write_manifest(
        &dir,
        &[("api", "claude", "api.jsonl"), ("eng", "iii", "api.jsonl")],
    );
    let e = open_err(&m);
    assert!(e.contains("backend \"iii\" cannot be replayed"), "{e}");
    // The manifest's backend is not its recording's.
    let m = write_manifest(&dir, &[("api", "acp", "api.jsonl")]);
    let e = open_err(&m);
    assert!(
        e.contains("the manifest says backend \"acp\" but its recording is \"claude\""),
        "{e}"
    );
    // A recording that is a directory, or the manifest itself.
    std::fs::create_dir_all(dir.join("adir")).unwrap();
    let m = write_manifest(&dir, &[("d", "claude", "adir")]);
    assert!(open_err(&m).contains("not a regular file"));
    let m = write_manifest(&dir, &[("self", "claude", "workspace.json")]);
    assert!(open_err(&m).contains("is a workspace manifest"));
    // No sessions.
    let m = write_manifest(&dir, &[]);
    assert!(open_err(&m).contains("lists no sessions"));
    // Schema violations name the line and key; broken JSON is said to be so.
    let bad = dir.join("broken.json");
    std::fs::write(
        &bad,
        "{\"switchboard_workspace\": 1, \"sessions\": [\n  {\"id\": \"x\"}\n]}",
    )
    .unwrap();
    let e = open_err(&bad);
    assert!(e.starts_with("line "), "{e}");
    std::fs::write(&bad, "{\"switchboard_workspace\": 1, \"sess").unwrap();
    assert!(open_err(&bad).contains("not JSON"));
    // A recording of garbage bytes: read as it can be, replayed without a panic.
    std::fs::write(
        dir.join("junk.jsonl"),
        b"\x00\xff{{{\n\n]]]\n{\"ts\":\"x\"}\n",
    )
    .unwrap();
    let m = write_manifest(
        &dir,
        &[
            ("api", "claude", "api.jsonl"),
            ("junk", "claude", "junk.jsonl"),
        ],
    );
    if let Ok(mut p) = Player::open_path(&m, None) {
        press(&mut p, KeyCode::End);
        p.finish_work();
        ch(&mut p, 'i');
    }
    // The binary says which file and why, with exit code 2, before asking for a terminal.
    let m = write_manifest(
        &dir,
        &[
            ("api", "claude", "api.jsonl"),
            ("gone", "acp", "gone.jsonl"),
        ],
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["replay", m.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("workspace.json") && err.contains("gone.jsonl"),
        "{err}"
    );
}
