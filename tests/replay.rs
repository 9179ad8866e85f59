//! `replay`, `validate`, `import`, `export` and `sessions` on real recordings.
//!
//! Inputs: our own recordings of the real CLI (`fixtures/recordings/claude/*.jsonl`), the six
//! cowork-harness cassettes in `../shared/recordings/claude/` (skipped with a note when that
//! folder is absent and `CI` is unset) and the hand-made broken files in `fixtures/corrupt/`
//! (each described in its README).
//!
//! The player is driven headless with keys and checked on its `State`; the replay footer, a gate
//! card with its recorded answer and the frame inspector are insta snapshots at 120x40; the other
//! subcommands run as the built binary.
//!
//! Update the snapshots with `INSTA_UPDATE=always cargo test --test replay`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::msg::BackendEvent;
use switchboard::core::state::{Focus, Overlay};
use switchboard::core::transcript::ItemKind;
use switchboard::core::tree::NodeStatus;
use switchboard::core::{Msg, State, update};
use switchboard::record::Dir;
use switchboard::replay::load::{Format, Loaded, load, load_str};
use switchboard::replay::player::{Player, SPEEDS};
use switchboard::ui::theme::Theme;

// ---------------------------------------------------------------------------------------------
// Inputs

fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn sorted_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Our own recordings of the real CLI.
fn ours() -> Vec<PathBuf> {
    let v = sorted_files(&manifest("fixtures/recordings/claude"), ".jsonl");
    assert!(v.len() >= 10, "fixtures/recordings/claude holds {v:?}");
    v
}

fn our(name: &str) -> PathBuf {
    manifest(&format!("fixtures/recordings/claude/{name}.jsonl"))
}

fn corrupt(name: &str) -> PathBuf {
    manifest(&format!("fixtures/corrupt/{name}"))
}

/// The six cowork-harness cassettes, or `None` (with a note) when the shared folder is absent
/// outside CI.
fn cassettes() -> Option<Vec<PathBuf>> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/recordings/claude"
    ));
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing (required under CI)",
            dir.display()
        );
        eprintln!(
            "note: {} is absent; skipping the cassette checks",
            dir.display()
        );
        return None;
    }
    let v = sorted_files(dir, ".cassette.json");
    assert_eq!(v.len(), 6, "{v:?}");
    Some(v)
}

fn cassette(name: &str) -> Option<PathBuf> {
    cassettes()?
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
}

fn open(path: &Path) -> Player {
    Player::open(load(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Our recordings open lazily (indexed by line offsets) through `open_path`: every frame and
/// the final state must equal the fully loaded replay.
#[test]
fn lazy_open_equals_full_load() {
    for path in ours() {
        let name = stem(&path);
        let mut lazy = Player::open_path(&path, None).unwrap();
        let mut full = open(&path);
        assert_eq!(lazy.total(), full.total(), "{name}");
        for i in 0..full.total() {
            let (a, b) = (lazy.frame(i), full.frame(i));
            assert_eq!(
                (a.src_line, a.ts, a.dir, &a.text),
                (b.src_line, b.ts, b.dir, &b.text),
                "{name} frame {i}"
            );
        }
        press(&mut lazy, KeyCode::End);
        press(&mut full, KeyCode::End);
        assert_eq!(all_audits(lazy.state()), all_audits(full.state()), "{name}");
        assert_eq!(
            lazy.indexed(),
            lazy.total(),
            "{name}: small files are indexed up front"
        );
    }
}

fn stem(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// A scratch directory, emptied first.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---------------------------------------------------------------------------------------------
// Driving the player

fn press(p: &mut Player, code: KeyCode) {
    p.key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn ch(p: &mut Player, c: char) {
    press(p, KeyCode::Char(c));
}

fn frame(p: &Player) -> usize {
    p.state().replay.as_ref().expect("replay view").frame
}

/// Everything the reducer built that a replay must reproduce: tree, transcripts, gates,
/// answers and session facts. `times` includes the recorded timestamps.
#[derive(Debug, PartialEq)]
struct Domain {
    nodes: Vec<String>,
    gates: Vec<String>,
    answered: u64,
    closed: Vec<String>,
    session: String,
}

fn domain(s: &State, times: bool) -> Domain {
    let nodes = s
        .tree
        .nodes
        .iter()
        .map(|n| {
            let items: Vec<String> = n
                .transcript
                .items
                .iter()
                .map(|i| {
                    if times {
                        format!("{} {:?}", i.at_ms, i.kind)
                    } else {
                        format!("{:?}", i.kind)
                    }
                })
                .collect();
            let t = if times {
                format!(" {}..{:?}", n.started_ms, n.ended_ms)
            } else {
                String::new()
            };
            format!(
                "{} parent={:?} {} {:?} {:?} tokens={} tools={} last={:?}{t}\n  {}",
                n.key,
                n.parent,
                n.name,
                n.description,
                n.status,
                n.tokens,
                n.tool_uses,
                n.last_tool,
                items.join("\n  ")
            )
        })
        .collect();
    let gates = s
        .gates
        .iter()
        .map(|g| {
            let t = if times {
                format!(" @{}", g.opened_ms)
            } else {
                String::new()
            };
            format!("{} on {} {:?}{t}", g.id, g.node_key, g.kind)
        })
        .collect();
    let x = &s.session;
    Domain {
        nodes,
        gates,
        answered: s.answered,
        closed: s.closed_gates.iter().cloned().collect(),
        session: format!(
            "{:?} {:?} {:?} {:?} turn={:?} turns={} tokens={}/{} cost={}",
            x.session_id,
            x.model,
            x.permission_mode,
            x.cwd,
            x.turn,
            x.turns,
            x.input_tokens,
            x.output_tokens,
            x.cost_usd
        ),
    }
}

fn audits(s: &State, node: usize) -> Vec<String> {
    s.tree.nodes[node]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn all_audits(s: &State) -> usize {
    (0..s.tree.nodes.len()).map(|n| audits(s, n).len()).sum()
}

/// The screen as text, one trimmed line per row (as tests/ui_snapshots.rs does).
fn screen(s: &State, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let theme = Theme::dark();
    term.draw(|f| switchboard::ui::render(s, &theme, f))
        .unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn sized(path: &Path) -> Player {
    let mut p = open(path);
    p.feeder.state.size = (120, 40);
    p
}

/// 1-based frame positions whose frame is an inbound control_request that asks the user
/// something (everything but `mcp_message`, which is answered automatically), with its id:
/// computed from the raw frames, independently of the player.
fn gate_positions(l: &Loaded) -> Vec<(usize, String)> {
    l.frames
        .iter()
        .enumerate()
        .filter(|(_, f)| f.dir == Dir::In)
        .filter_map(|(i, f)| {
            let v: Value = serde_json::from_str(&f.text).ok()?;
            (v["type"] == "control_request" && v["request"]["subtype"] != "mcp_message")
                .then(|| (i + 1, v["request_id"].as_str().unwrap().to_string()))
        })
        .collect()
}

/// Request ids that have a recorded outbound reply.
fn replied(l: &Loaded) -> Vec<String> {
    l.frames
        .iter()
        .filter(|f| f.dir == Dir::Out)
        .filter_map(|f| {
            let v: Value = serde_json::from_str(&f.text).ok()?;
            (v["type"] == "control_response")
                .then(|| v["response"]["request_id"].as_str().map(str::to_string))
                .flatten()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Replay driven with keys

/// (file, node statuses, audit rows, gates answered, gates opened) once the whole recording
/// has been replayed.
const OURS_FINAL: &[(&str, &[NodeStatus], usize, u64, usize)] = {
    use NodeStatus::{Completed, Idle};
    &[
        ("ask_multiselect", &[Idle], 2, 2, 2),
        ("bash_write", &[Idle], 3, 3, 3),
        ("breakpoint", &[Idle], 2, 2, 2),
        ("edit", &[Idle], 2, 2, 2),
        ("interrupt_pending", &[Idle], 1, 0, 1),
        ("interrupt_stream", &[Idle], 0, 0, 0),
        ("parallel_reads", &[Idle], 3, 3, 3),
        ("quit_pending", &[Idle], 1, 1, 1),
        ("subagents", &[Idle, Completed, Completed], 1, 1, 1),
        (
            "subagents_background",
            &[Idle, Completed, Completed],
            1,
            1,
            1,
        ),
    ]
};

const CASSETTES_FINAL: &[(&str, &[NodeStatus], usize, u64, usize)] = {
    use NodeStatus::Idle;
    &[
        (
            "cowork-hostloop-computer-links.agent-2.1.202",
            &[Idle],
            1,
            1,
            1,
        ),
        (
            "cowork-hostloop-computer-links.agent-2.1.237",
            &[Idle],
            1,
            1,
            1,
        ),
        ("cowork-multiselect-gate.agent-2.1.220", &[Idle], 1, 1, 1),
        ("cowork-multiselect-gate.agent-2.1.238", &[Idle], 1, 1, 1),
        ("cowork-pdf-skill.agent-2.1.197", &[Idle], 0, 0, 0),
        ("cowork-pdf-skill.agent-2.1.237", &[Idle], 0, 0, 0),
    ]
};

fn check_final(
    path: &Path,
    statuses: &[NodeStatus],
    audit_rows: usize,
    answered: u64,
    gates: usize,
) {
    let name = stem(path);
    let mut p = open(path);
    assert_eq!(frame(&p), 1, "{name}: opens on the first frame");
    press(&mut p, KeyCode::End);
    let s = p.state();
    assert_eq!(frame(&p), p.total(), "{name}");
    let got: Vec<NodeStatus> = s.tree.nodes.iter().map(|n| n.status).collect();
    assert_eq!(got, statuses, "{name}: node statuses");
    assert!(s.gates.is_empty(), "{name}: nothing left pending");
    assert_eq!(all_audits(s), audit_rows, "{name}: audit rows");
    assert_eq!(s.answered, answered, "{name}: gates answered");
    assert_eq!(
        gate_positions(&load(path, None).unwrap()).len(),
        gates,
        "{name}: gates opened"
    );
    assert!(!p.state().replay.as_ref().unwrap().playing);
}

#[test]
fn replaying_our_recordings_ends_in_the_recorded_state() {
    let files = ours();
    assert_eq!(
        files.len(),
        OURS_FINAL.len(),
        "a recording without expectations"
    );
    for (name, statuses, audit_rows, answered, gates) in OURS_FINAL {
        check_final(&our(name), statuses, *audit_rows, *answered, *gates);
    }
}

#[test]
fn replaying_the_cassettes_ends_in_the_recorded_state() {
    let Some(_) = cassettes() else { return };
    for (name, statuses, audit_rows, answered, gates) in CASSETTES_FINAL {
        check_final(
            &cassette(name).unwrap(),
            statuses,
            *audit_rows,
            *answered,
            *gates,
        );
    }
}

/// The audit rows of a replay are the live ones (the e2e tests in tests/e2e_claude.rs assert
/// the same texts on the live session that produced these recordings) marked "(recorded)".
#[test]
fn replay_audit_rows_are_the_live_ones() {
    let rec = |s: &str| format!("{s} (recorded)");
    let end = |name: &str| {
        let mut p = open(&our(name));
        press(&mut p, KeyCode::End);
        p
    };
    let p = end("bash_write");
    assert_eq!(
        audits(p.state(), 0),
        vec![
            rec("denied: Bash `touch created.txt` — Not in this directory, please."),
            rec("allowed once: Bash `touch created.txt`"),
            rec("allowed always (session rule): Bash `touch created.txt`"),
        ]
    );
    let p = end("breakpoint");
    assert_eq!(
        audits(p.state(), 0),
        vec![
            rec("blocked at breakpoint: Bash `echo safe` — Stepping through, not yet."),
            rec("continued at breakpoint: Bash `echo safe`"),
        ]
    );
    let p = end("interrupt_pending");
    assert_eq!(
        audits(p.state(), 0),
        vec!["withdrawn by the agent: Bash `touch created.txt`".to_string()]
    );
    for name in ["subagents", "subagents_background"] {
        let p = end(name);
        let s = p.state();
        assert_eq!(s.tree.nodes.len(), 3, "{name}: root + two children");
        let a = s.tree.get("toolu_agent_a").expect("child a");
        assert_eq!(
            audits(s, a),
            vec![rec("allowed once: Bash `touch sub.txt`")],
            "{name}: the audit row is on the child"
        );
        assert!(audits(s, 0).is_empty(), "{name}");
    }
}

/// The player's state equals the one built by hand from the live pieces: the backend's
/// `Mapper` for each line and the pure reducer for each event (what `Session` does live).
#[test]
fn replay_is_the_live_mapper_and_reducer() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    for path in files {
        let loaded = load(&path, None).unwrap();
        let t0 = loaded.frames.iter().find_map(|f| f.ts).unwrap_or(0);
        let mut s = State::new("claude", "main", t0);
        s.reply_check = switchboard::backend::claude::session::reply_check;
        let mut m = Mapper::new(&[]);
        for f in &loaded.frames {
            let events: Vec<BackendEvent> = match f.dir {
                Dir::In => m.on_line(&f.text).events,
                Dir::Out => m.on_outbound(&f.text).0.events,
                Dir::Err => vec![BackendEvent::Stderr(f.text.clone())],
                Dir::Note => Vec::new(),
            };
            for event in events {
                let _ = update(
                    &mut s,
                    Msg::Backend {
                        at_ms: f.ts.unwrap_or(t0),
                        event,
                    },
                );
            }
        }
        let mut p = Player::open(loaded);
        press(&mut p, KeyCode::End);
        assert_eq!(domain(p.state(), true), domain(&s, true), "{}", stem(&path));
    }
}

/// Stepping forward frame by frame, then back frame by frame, then forward again: the state
/// at each position is the same every time.
#[test]
fn stepping_back_then_forward_gives_the_same_state() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    for path in files {
        let name = stem(&path);
        let mut p = open(&path);
        press(&mut p, KeyCode::Home);
        assert_eq!(frame(&p), 0, "{name}: Home");
        assert_eq!(p.state().tree.nodes.len(), 1, "{name}");
        assert!(p.state().tree.nodes[0].transcript.is_empty(), "{name}");
        let n = p.total();
        let mut at = vec![domain(p.state(), true)];
        for k in 1..=n {
            ch(&mut p, '.');
            assert_eq!(frame(&p), k, "{name}");
            at.push(domain(p.state(), true));
        }
        ch(&mut p, '.');
        assert_eq!(frame(&p), n, "{name}: `.` stops at the end");
        for k in (0..n).rev() {
            ch(&mut p, ',');
            assert_eq!(frame(&p), k, "{name}");
            assert_eq!(domain(p.state(), true), at[k], "{name}: back to frame {k}");
        }
        ch(&mut p, ',');
        assert_eq!(frame(&p), 0, "{name}: `,` stops at the start");
        for (k, want) in at.iter().enumerate().skip(1).take(25) {
            ch(&mut p, '.');
            assert_eq!(&domain(p.state(), true), want, "{name}: forward to {k}");
        }
        press(&mut p, KeyCode::End);
        assert_eq!(domain(p.state(), true), at[n], "{name}: End");
        press(&mut p, KeyCode::Home);
        assert_eq!(domain(p.state(), true), at[0], "{name}: Home");
    }
}

/// `]` stops exactly on each frame that opens a gate, with that gate pending and its card
/// showing the recorded answer; `[` walks them back.
#[test]
fn gate_jumps_stop_at_each_gate_and_show_the_recorded_answer() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    for path in files {
        let name = stem(&path);
        let mut p = sized(&path);
        let loaded = load(&path, None).unwrap();
        let want = gate_positions(&loaded);
        let replies = replied(&loaded);
        press(&mut p, KeyCode::Home);
        for (pos, id) in &want {
            ch(&mut p, ']');
            assert_eq!(frame(&p), *pos, "{name}: `]` stops on the gate's frame");
            let s = p.state();
            assert!(
                s.gates.iter().any(|g| &g.id == id),
                "{name}: gate {id} pending at {pos}"
            );
            assert_eq!(s.focus, Focus::Gate, "{name}: the new gate takes focus");
            let active = s.active_gate.clone().expect("a gate card");
            let answer = s.replay.as_ref().unwrap().answers.get(&active).cloned();
            assert_eq!(
                answer.is_some(),
                replies.contains(&active),
                "{name}: recorded answer of {active}"
            );
            let text = screen(s, 120, 40);
            match answer {
                Some(a) => {
                    let head: String = a.chars().take(40).collect();
                    assert!(
                        text.contains(&format!("recorded answer: {head}")),
                        "{name}: card of {active} should show {a:?}:\n{text}"
                    );
                }
                None => assert!(!text.contains("recorded answer"), "{name}:\n{text}"),
            }
            assert!(
                text.contains(&format!("frame {pos}/{}", p.total())),
                "{name}: footer\n{text}"
            );
        }
        let last = frame(&p);
        ch(&mut p, ']');
        if want.last().is_some_and(|(pos, _)| *pos == last) || want.is_empty() {
            assert_eq!(frame(&p), last, "{name}: no later gate");
            assert_eq!(p.state().status_line.as_deref(), Some("no later gate"));
        }
        press(&mut p, KeyCode::End);
        for (pos, _) in want.iter().rev() {
            ch(&mut p, '[');
            assert_eq!(frame(&p), *pos, "{name}: `[` goes back to the gate");
        }
        let first = frame(&p);
        ch(&mut p, '[');
        assert_eq!(frame(&p), first, "{name}: no earlier gate");
        assert_eq!(p.state().status_line.as_deref(), Some("no earlier gate"));
    }
}

#[test]
fn gate_cards_show_what_was_answered_and_when() {
    let mut p = sized(&our("bash_write"));
    let want = [
        "denied: Not in this directory, please. at 1970-01-01T00:00:00.627Z",
        "allowed once at 1970-01-01T00:00:00.794Z",
        "allowed always at 1970-01-01T00:00:00.963Z",
    ];
    for (turn, w) in want.iter().enumerate() {
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(text.contains(&format!("recorded answer: {w}")), "{text}");
        // The transcript so far: one user turn, one Bash call and one audit row per earlier
        // gate; the gate itself is pending on the root.
        let s = p.state();
        let items = &s.tree.nodes[0].transcript.items;
        let users = items
            .iter()
            .filter(|i| matches!(i.kind, ItemKind::User { .. }))
            .count();
        let calls: Vec<&str> = items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::ToolCall { name, summary, .. } => {
                    assert_eq!(summary, "touch created.txt");
                    Some(name.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(users, turn + 1);
        assert_eq!(calls, vec!["Bash"; turn + 1]);
        assert_eq!(audits(s, 0).len(), turn);
        assert_eq!(s.gates.len(), 1);
        assert_eq!(s.gates[0].node_key, "root");
        assert_eq!(s.gates[0].kind.label(), "permission");
    }
    // A sub-agent's gate opens on the child, in a tree of three.
    let mut p = sized(&our("subagents"));
    ch(&mut p, ']');
    let s = p.state();
    assert_eq!(s.tree.nodes.len(), 3);
    let a = s.tree.get("toolu_agent_a").unwrap();
    assert_eq!(s.gates[0].node_key, "toolu_agent_a");
    assert_eq!(s.tree.nodes[a].status, NodeStatus::Running);
    assert_eq!(s.tree.nodes[a].parent, Some(0));
    let text = screen(s, 120, 40);
    assert!(
        text.contains("recorded answer: allowed once at 1970-01-01T00:00:00.383Z"),
        "{text}"
    );
    let mut p = sized(&our("breakpoint"));
    for w in [
        "blocked: Stepping through, not yet. at 1970-01-01T00:00:00.756Z",
        "continued at 1970-01-01T00:00:00.820Z",
    ] {
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(text.contains(&format!("recorded answer: {w}")), "{text}");
    }
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        let mut p = sized(&c);
        ch(&mut p, ']');
        let text = screen(p.state(), 120, 40);
        assert!(
            text.contains(
                "recorded answer: Which features should be enabled? = Auth, Audit at no recorded time"
            ),
            "{text}"
        );
    }
}

/// Keys that answer a gate live do nothing in a replay: not on the card, not elsewhere.
#[test]
fn answer_keys_change_nothing_in_replay() {
    let mut cases: Vec<(PathBuf, usize)> = vec![
        (our("bash_write"), 1),      // permission
        (our("ask_multiselect"), 1), // question
        (our("breakpoint"), 1),      // breakpoint
        (our("parallel_reads"), 3),  // three pending permissions
    ];
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        cases.push((c, 1));
    }
    let keys = [
        KeyCode::Char('y'),
        KeyCode::Char('n'),
        KeyCode::Enter,
        KeyCode::Char('a'),
        KeyCode::Char('N'),
        KeyCode::Char('b'),
        KeyCode::Char('e'),
        KeyCode::Char('r'),
        KeyCode::Char('1'),
        KeyCode::Char('2'),
        KeyCode::Esc,
        KeyCode::Char('d'),
        KeyCode::Char('m'),
        KeyCode::Enter,
    ];
    for (path, jumps) in cases {
        let name = stem(&path);
        for focus_first in [None, Some(KeyCode::Tab), Some(KeyCode::BackTab)] {
            let mut p = sized(&path);
            for _ in 0..jumps {
                ch(&mut p, ']');
            }
            if let Some(k) = focus_first {
                press(&mut p, k);
            }
            let pos = frame(&p);
            let before = domain(p.state(), true);
            assert!(!before.gates.is_empty(), "{name}");
            for k in keys {
                press(&mut p, k);
                // Each key again on the card itself.
                if p.state().focus != Focus::Gate {
                    ch(&mut p, 'g');
                    press(&mut p, k);
                }
                assert_eq!(frame(&p), pos, "{name}: {k:?} moved the replay");
                assert_eq!(
                    domain(p.state(), true),
                    before,
                    "{name}: {k:?} (focus first {focus_first:?}) changed the state"
                );
                assert!(
                    !matches!(
                        p.state().overlay,
                        Some(Overlay::ConfirmQuit | Overlay::ModePicker { .. })
                    ),
                    "{name}: {k:?} opened {:?}",
                    p.state().overlay
                );
                assert!(!p.quit, "{name}");
            }
            // The recording goes on as recorded afterwards.
            press(&mut p, KeyCode::Esc);
            press(&mut p, KeyCode::End);
            assert!(p.state().gates.is_empty(), "{name}");
        }
    }
}

#[test]
fn the_inspector_shows_the_frame_pretty_with_its_schema_verdict() {
    let path = our("bash_write");
    let mut p = sized(&path);
    ch(&mut p, ']');
    assert_eq!(frame(&p), 19);
    ch(&mut p, 'i');
    let Some(Overlay::Text { title, body }) = p.state().overlay.clone() else {
        panic!("no inspector: {:?}", p.state().overlay);
    };
    assert_eq!(title, " frame 19/121 (Esc closes) ");
    let raw = &p.frame(18).text;
    let (head, json_part) = body.split_once("\n\n").unwrap();
    assert_eq!(
        head,
        "direction: in (agent → switchboard)\nsource line: 20\ntime: 1970-01-01T00:00:00.626Z\nschema: valid (schema: Message)"
    );
    let v: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(json_part, serde_json::to_string_pretty(&v).unwrap());
    assert!(json_part.contains("\n  \"request\": {\n    \"subtype\": \"can_use_tool\","));
    // The file really holds that frame on line 20.
    let line20 = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .nth(19)
        .unwrap()
        .to_string();
    let e: Value = serde_json::from_str(&line20).unwrap();
    assert_eq!(e["line"].as_str().unwrap(), raw);

    // Stepping works behind the inspector, which follows the frame; Esc closes it.
    ch(&mut p, '.');
    assert_eq!(frame(&p), 20);
    match &p.state().overlay {
        Some(Overlay::Text { title, .. }) => assert!(title.contains("frame 20/"), "{title}"),
        other => panic!("the inspector should stay open: {other:?}"),
    }
    ch(&mut p, ',');
    assert_eq!(frame(&p), 19);
    press(&mut p, KeyCode::Esc);
    assert!(p.state().overlay.is_none());
    // A frame or two later: our reply.
    while p.frame(frame(&p) - 1).dir != Dir::Out {
        ch(&mut p, '.');
    }
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: out (switchboard → agent)\nsource line: 22\n"),
        "{body}"
    );
    assert!(
        body.contains("schema: valid (schema: outbound line)"),
        "{body}"
    );
    assert!(body.contains("\"behavior\": \"deny\""), "{body}");
    press(&mut p, KeyCode::Esc);

    // Not a control frame, stderr/notes, and a frame before the first.
    press(&mut p, KeyCode::End);
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: note\nsource line: 122\n"),
        "{body}"
    );
    assert!(body.contains("schema: not JSON"), "{body}");
    press(&mut p, KeyCode::Esc);
    press(&mut p, KeyCode::Home);
    ch(&mut p, 'i');
    assert!(
        matches!(&p.state().overlay, Some(Overlay::Text { body, .. }) if body == "no frame applied yet")
    );
    press(&mut p, KeyCode::Esc);
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.contains("schema: valid (schema: outbound line)"),
        "user turn: {body}"
    );
    press(&mut p, KeyCode::Esc);
    ch(&mut p, '.');
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.contains("schema: not a control frame"),
        "system/init: {body}"
    );
}

#[test]
fn the_inspector_flags_schema_violations() {
    let mut p = open(&corrupt("flattened_envelope.jsonl"));
    press(&mut p, KeyCode::End);
    // The flattened reply is frame 5 (file line 6).
    while frame(&p) > 5 {
        ch(&mut p, ',');
    }
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(body.contains("source line: 6\n"), "{body}");
    assert!(body.contains("schema: INVALID: does not match"), "{body}");
    // Frames: initialize, its reply, the user turn, then the non-JSON line (file line 6: the
    // file has a blank line 5).
    let mut p = open(&corrupt("not_json.jsonl"));
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, '.');
    assert_eq!(frame(&p), 4);
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: in (agent → switchboard)\nsource line: 6\n"),
        "{body}"
    );
    assert!(body.contains("schema: not JSON"), "{body}");
    assert!(body.ends_with("Error: the agent crashed {"), "{body}");
}

/// Every frame's source line points at the line of the file that holds it (recordings: the
/// entry's `line`; cassettes: the array element in the pretty-printed file).
#[test]
fn source_lines_point_at_the_frame_in_the_file() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    files.push(corrupt("unanswered.cassette.json"));
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let l = load(&path, None).unwrap();
        for f in &l.frames {
            let at = lines[f.src_line - 1].trim().trim_end_matches(',');
            let held = match l.format {
                Format::Recording => serde_json::from_str::<Value>(at).unwrap()["line"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                _ => serde_json::from_str::<String>(at).unwrap(),
            };
            assert_eq!(held, f.text, "{}:{}", stem(&path), f.src_line);
        }
    }
}

#[test]
fn play_pause_and_speed() {
    let mut p = open(&our("bash_write"));
    let view = |p: &Player| p.state().replay.clone().unwrap();
    assert_eq!(view(&p).speed, "1×");
    assert!(!view(&p).playing);
    assert_eq!(p.next_delay(), None, "paused");
    ch(&mut p, ' ');
    assert!(view(&p).playing);
    // In recorded time: the gap to the next frame.
    let gap = |p: &Player| {
        let i = frame(p);
        p.frame(i).ts.unwrap() - p.frame(i - 1).ts.unwrap()
    };
    // Find a frame followed by a gap.
    while gap(&p) == 0 {
        p.tick();
    }
    let g = gap(&p);
    assert!(g > 0 && g < 2000, "{g}");
    let ms = |p: &Player| p.next_delay().unwrap().as_secs_f64() * 1000.0;
    assert!((ms(&p) - g as f64).abs() < 0.01, "1×: {} vs {g}", ms(&p));
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "2×");
    assert!((ms(&p) - g as f64 / 2.0).abs() < 0.01);
    ch(&mut p, '+');
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "100×");
    assert!((ms(&p) - g as f64 / 100.0).abs() < 0.01);
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "max");
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "max", "clamped");
    for _ in 0..SPEEDS.len() + 1 {
        ch(&mut p, '-');
    }
    assert_eq!(view(&p).speed, "0.5×", "clamped");
    assert!((ms(&p) - g as f64 * 2.0).abs() < 0.01);
    // One frame per tick at a finite speed.
    let at = frame(&p);
    p.tick();
    assert_eq!(frame(&p), at + 1);
    // Pause: ticks do nothing.
    ch(&mut p, ' ');
    assert!(!view(&p).playing);
    p.tick();
    assert_eq!(frame(&p), at + 1);
    // As fast as possible: batches until the end, then stops.
    for _ in 0..SPEEDS.len() {
        ch(&mut p, '+');
    }
    ch(&mut p, ' ');
    while view(&p).playing {
        p.tick();
    }
    assert_eq!(frame(&p), p.total());
    // Space at the end plays again from the start.
    ch(&mut p, ' ');
    assert!(view(&p).playing);
    assert_eq!(frame(&p), 0);
    // Stepping pauses.
    ch(&mut p, '.');
    assert!(!view(&p).playing);
    assert_eq!(frame(&p), 1);
    // The footer says so.
    p.feeder.state.size = (120, 40);
    let text = screen(p.state(), 120, 40);
    assert!(
        text.contains("replay · frame 1/121 · 1970-01-01T00:00:00.001Z · ‖ paused max"),
        "{text}"
    );
    // q quits.
    ch(&mut p, 'q');
    assert!(p.quit);
}

// ---------------------------------------------------------------------------------------------
// 2. Snapshots

#[test]
fn snapshot_replay_footer_and_gate_card_with_recorded_answer() {
    let mut p = sized(&our("bash_write"));
    ch(&mut p, ']');
    ch(&mut p, ']');
    insta::assert_snapshot!(
        "footer_permission_recorded_answer_120x40",
        screen(p.state(), 120, 40)
    );
    let mut p = sized(&our("ask_multiselect"));
    ch(&mut p, ']');
    insta::assert_snapshot!(
        "footer_question_recorded_answer_120x40",
        screen(p.state(), 120, 40)
    );
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        let mut p = sized(&c);
        ch(&mut p, ']');
        insta::assert_snapshot!(
            "cassette_question_recorded_answer_120x40",
            screen(p.state(), 120, 40)
        );
    }
}

#[test]
fn snapshot_frame_inspector() {
    let mut p = sized(&our("bash_write"));
    ch(&mut p, ']');
    ch(&mut p, 'i');
    insta::assert_snapshot!("inspector_gate_request_120x40", screen(p.state(), 120, 40));
    press(&mut p, KeyCode::Esc);
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, 'i');
    insta::assert_snapshot!(
        "inspector_recorded_reply_120x40",
        screen(p.state(), 120, 40)
    );
}

// ---------------------------------------------------------------------------------------------
// 3. validate (the built binary)

fn bin() -> Command {
    // One throwaway data dir for every run of this process (logs land there).
    static DATA: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.env("SWITCHBOARD_DATA_DIR", DATA.get_or_init(|| scratch("data")));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run switchboard")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn validate(files: &[PathBuf], extra: &[&str]) -> Output {
    let mut c = bin();
    c.arg("validate").args(files).args(extra);
    c.output().unwrap()
}

fn frames_in(files: &[PathBuf]) -> usize {
    files
        .iter()
        .map(|f| load(f, None).unwrap().frames.len())
        .sum()
}

fn assert_clean(files: &[PathBuf]) {
    let o = validate(files, &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(
        out,
        format!(
            "{} file(s), {} frame(s), 0 problem(s), 0 unreadable\n",
            files.len(),
            frames_in(files)
        )
    );
}

#[test]
fn validate_is_clean_on_our_recordings() {
    assert_clean(&ours());
}

#[test]
fn validate_is_clean_on_the_cassettes_and_their_imports() {
    let Some(cs) = cassettes() else { return };
    assert_clean(&cs);
    let dir = scratch("validate-imports");
    let mut imported = Vec::new();
    for c in &cs {
        let dst = dir.join(stem(c).replace(".cassette.json", ".jsonl"));
        let o = run(&["import", c.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        imported.push(dst);
    }
    assert_clean(&imported);
    std::fs::remove_dir_all(dir).ok();
}

/// (file, [(line, rule)]) of each broken fixture: exactly these findings, nothing else.
const CORRUPT: &[(&str, &[(usize, &str)])] = &[
    ("reply_to_withdrawn.jsonl", &[(7, "reply-to-withdrawn")]),
    ("answered_twice.jsonl", &[(7, "answered-twice")]),
    (
        "unknown_request_id.jsonl",
        &[(7, "unknown-request-id"), (8, "unknown-request-id")],
    ),
    ("unanswered.jsonl", &[(5, "unanswered")]),
    (
        "ask_keyed_by_header.jsonl",
        &[(6, "answers"), (6, "answers")],
    ),
    (
        "ask_array_value.jsonl",
        &[(6, "answers"), (6, "decision-fidelity")],
    ),
    (
        "flattened_envelope.jsonl",
        &[(6, "schema"), (6, "decision-fidelity")],
    ),
    ("fidelity_extra_field.jsonl", &[(6, "decision-fidelity")]),
    ("not_json.jsonl", &[(6, "not-json"), (7, "unreadable")]),
    (
        "unanswered.cassette.json",
        &[(6, "unanswered"), (12, "unknown-request-id")],
    ),
];

/// `FILE:LINE: rule: message` lines (continuation lines of a message start with spaces).
fn findings(out: &str) -> Vec<(String, usize, String, String)> {
    out.lines()
        .filter(|l| !l.starts_with(' ') && l.contains(": "))
        .filter(|l| !l.ends_with(" unreadable") || l.contains(":0: "))
        .map(|l| {
            let (file, rest) = l.split_once(':').unwrap();
            let (line, rest) = rest.split_once(": ").unwrap();
            let (rule, msg) = rest.split_once(": ").unwrap();
            (
                file.to_string(),
                line.parse().unwrap_or_else(|_| panic!("{l}")),
                rule.to_string(),
                msg.to_string(),
            )
        })
        .collect()
}

#[test]
fn validate_reports_each_violation_on_its_line() {
    for (name, want) in CORRUPT {
        let path = corrupt(name);
        let o = validate(std::slice::from_ref(&path), &[]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{name}:\n{out}");
        let got: Vec<(usize, String)> = findings(&out)
            .into_iter()
            .map(|(f, l, r, _)| {
                assert_eq!(f, path.display().to_string());
                (l, r)
            })
            .collect();
        let want: Vec<(usize, String)> = want.iter().map(|(l, r)| (*l, r.to_string())).collect();
        assert_eq!(got, want, "{name}:\n{out}");
        assert!(
            out.ends_with(&format!(
                "1 file(s), {} frame(s), {} problem(s), 0 unreadable\n",
                frames_in(std::slice::from_ref(&path)),
                want.len()
            )),
            "{out}"
        );
    }
    // The messages say what is wrong.
    let msg = |name: &str| {
        let out = stdout(&validate(&[corrupt(name)], &[]));
        findings(&out)
            .into_iter()
            .map(|(_, _, _, m)| m)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        msg("reply_to_withdrawn.jsonl"),
        ["answered req-1 after the agent withdrew it"]
    );
    assert_eq!(msg("answered_twice.jsonl"), ["req-1 was already answered"]);
    assert_eq!(
        msg("unknown_request_id.jsonl"),
        [
            "reply to req-404, which no request of the agent carries",
            "the agent answered sb-99, which we never asked"
        ]
    );
    assert_eq!(
        msg("unanswered.jsonl"),
        ["can_use_tool request req-1 was never answered"]
    );
    assert_eq!(
        msg("ask_keyed_by_header.jsonl"),
        [
            "answer keyed by \"Format\", which is no question's text",
            "question \"Which log format should we use?\" has no answer"
        ]
    );
    assert_eq!(
        msg("ask_array_value.jsonl")[0],
        "answer to \"Which log format should we use?\" is not a string: [\"JSON\"]"
    );
    let flat = msg("flattened_envelope.jsonl");
    assert!(
        flat[0].contains("\"response\" is a required property"),
        "{flat:?}"
    );
    // The fidelity finding shows the envelope that was sent, not a bare `null`.
    assert!(
        flat[1].ends_with(
            "{\"behavior\":\"allow\",\"request_id\":\"req-1\",\"subtype\":\"success\",\"updatedInput\":{\"command\":\"touch created.txt\",\"description\":\"Create an empty file\"}}"
        ),
        "{flat:?}"
    );
    let out = stdout(&validate(&[corrupt("fidelity_extra_field.jsonl")], &[]));
    assert!(out.contains("\"toolUseID\":\"toolu_bash_1\""), "{out}");
    assert!(
        out.contains(
            "ours:     {\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"touch created.txt\""
        ),
        "{out}"
    );
}

#[test]
fn validate_many_files_and_unreadable_input() {
    let all: Vec<PathBuf> = CORRUPT.iter().map(|(n, _)| corrupt(n)).collect();
    let o = validate(&all, &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let n: usize = CORRUPT.iter().map(|(_, w)| w.len()).sum();
    assert_eq!(findings(&out).len(), n, "{out}");
    // Clean plus broken: 1.
    let o = validate(&[our("edit"), corrupt("unanswered.jsonl")], &[]);
    assert_eq!(o.status.code(), Some(1));
    // A missing file or a bad header: 2, even next to problems.
    let missing = manifest("fixtures/corrupt/does-not-exist.jsonl");
    for bad in [missing.clone(), corrupt("bad_header.jsonl")] {
        let o = validate(std::slice::from_ref(&bad), &[]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.starts_with(&format!("{}:0: unreadable: ", bad.display())),
            "{out}"
        );
        assert!(
            out.ends_with("1 file(s), 0 frame(s), 0 problem(s), 1 unreadable\n"),
            "{out}"
        );
        let o = validate(&[corrupt("answered_twice.jsonl"), bad], &[]);
        assert_eq!(o.status.code(), Some(2));
    }
    let out = stdout(&validate(&[corrupt("bad_header.jsonl")], &[]));
    assert!(out.contains("unsupported recording version 2"), "{out}");
    let out = stdout(&validate(&[missing], &[]));
    assert!(out.contains("cannot read"), "{out}");
}

#[test]
fn validate_json_report_has_the_same_findings() {
    let mut files: Vec<PathBuf> = CORRUPT.iter().map(|(n, _)| corrupt(n)).collect();
    files.push(our("bash_write"));
    let text = stdout(&validate(&files, &[]));
    let o = validate(&files, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    let mut from_json = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        let file = f["file"].as_str().unwrap();
        for x in f["report"]["findings"].as_array().unwrap() {
            from_json.push((
                file.to_string(),
                x["line"].as_u64().unwrap() as usize,
                x["rule"].as_str().unwrap().to_string(),
                x["message"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap()
                    .to_string(),
            ));
        }
    }
    assert_eq!(from_json, findings(&text));
    assert_eq!(doc["problems"].as_u64().unwrap() as usize, from_json.len());
    assert_eq!(doc["unreadable"], 0);
    assert_eq!(doc["frames"].as_u64().unwrap() as usize, frames_in(&files));
    let formats: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["format"].as_str().unwrap())
        .collect();
    assert!(formats.contains(&"cassette") && formats.contains(&"recording"));
    // Unreadable input in JSON.
    let o = validate(&[corrupt("bad_header.jsonl")], &["--json"]);
    assert_eq!(o.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["unreadable"], 1);
    assert!(
        doc["files"][0]["error"]
            .as_str()
            .unwrap()
            .contains("unsupported recording version")
    );
}

/// The raw wire lines of a recording (in and out, no stderr or notes), one per line.
fn wire_log(path: &Path) -> String {
    let l = load(path, Some(Format::Recording)).unwrap();
    let mut s = String::new();
    for f in l
        .frames
        .iter()
        .filter(|f| matches!(f.dir, Dir::In | Dir::Out))
    {
        s.push_str(&f.text);
        s.push('\n');
    }
    s
}

#[test]
fn validate_format_forcing_and_jsonl_wire_logs() {
    let dir = scratch("jsonl");
    // Directions of a plain wire log are inferred: they match what was recorded.
    for path in ours() {
        let rec = load(&path, None).unwrap();
        let wire: Vec<Dir> = rec
            .frames
            .iter()
            .map(|f| f.dir)
            .filter(|d| matches!(d, Dir::In | Dir::Out))
            .collect();
        let log = wire_log(&path);
        let l = load_str(&log, Some(Format::Jsonl)).unwrap();
        let got: Vec<Dir> = l.frames.iter().map(|f| f.dir).collect();
        assert_eq!(got, wire, "{}", stem(&path));
    }
    let log = dir.join("bash_write.wire.jsonl");
    std::fs::write(&log, wire_log(&our("bash_write"))).unwrap();
    let n = std::fs::read_to_string(&log).unwrap().lines().count();
    for extra in [&["--format", "jsonl"][..], &[]] {
        let o = validate(std::slice::from_ref(&log), extra);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stdout(&o));
        assert!(stdout(&o).ends_with(&format!(
            "1 file(s), {n} frame(s), 0 problem(s), 0 unreadable\n"
        )));
    }
    let o = validate(std::slice::from_ref(&log), &["--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["files"][0]["format"], "jsonl");
    // Forced to the wrong format: unreadable.
    let o = validate(std::slice::from_ref(&log), &["--format", "recording"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let o = validate(&[our("edit")], &["--format", "cassette"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    // A broken recording as a wire log: the same finding, one line up (no header).
    let bad = dir.join("withdrawn.wire.jsonl");
    std::fs::write(&bad, wire_log(&corrupt("reply_to_withdrawn.jsonl"))).unwrap();
    let o = validate(std::slice::from_ref(&bad), &["--format", "jsonl"]);
    assert_eq!(o.status.code(), Some(1));
    let f = findings(&stdout(&o));
    assert_eq!(
        f.iter().map(|x| (x.1, x.2.as_str())).collect::<Vec<_>>(),
        [(6, "reply-to-withdrawn")]
    );
    // And the replay opens a wire log too.
    let mut p = Player::open(load(&log, None).unwrap());
    press(&mut p, KeyCode::End);
    assert_eq!(audits(p.state(), 0).len(), 3);
    std::fs::remove_dir_all(dir).ok();
}

// ---------------------------------------------------------------------------------------------
// 4. import round trip

#[test]
fn import_round_trip() {
    let Some(cs) = cassettes() else { return };
    let dir = scratch("import");
    for c in cs {
        let name = stem(&c);
        let dst = dir.join(name.replace(".cassette.json", ".jsonl"));
        let o = run(&["import", c.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let direct = load(&c, None).unwrap();
        assert_eq!(
            stdout(&o),
            format!(
                "imported {} frames into {}\n",
                direct.frames.len(),
                dst.display()
            )
        );
        // A valid recording by the schema, and clean.
        check_recording_schema(&dst);
        assert_clean(std::slice::from_ref(&dst));
        let imported = load(&dst, None).unwrap();
        assert_eq!(imported.format, Format::Recording, "{name}");
        // Frames: every events line once as `in` (in order), every controlOut line once as
        // `out`, each reply after its request; one provenance note first.
        let cas: Value = serde_json::from_str(&std::fs::read_to_string(&c).unwrap()).unwrap();
        let strings = |k: &str| -> Vec<String> {
            cas[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        let (events, control_out) = (strings("events"), strings("controlOut"));
        let fr = &imported.frames;
        assert_eq!(fr[0].dir, Dir::Note, "{name}");
        assert!(fr[0].text.starts_with("imported from "), "{name}");
        assert_eq!(fr.len(), 1 + events.len() + control_out.len(), "{name}");
        let ins: Vec<String> = fr
            .iter()
            .filter(|f| f.dir == Dir::In)
            .map(|f| f.text.clone())
            .collect();
        assert_eq!(ins, events, "{name}: events, in order");
        let mut outs: Vec<String> = fr
            .iter()
            .filter(|f| f.dir == Dir::Out)
            .map(|f| f.text.clone())
            .collect();
        let mut want = control_out.clone();
        outs.sort();
        want.sort();
        assert_eq!(outs, want, "{name}: controlOut, each once");
        assert!(
            fr.iter()
                .skip(1)
                .all(|f| matches!(f.dir, Dir::In | Dir::Out))
        );
        let ts: Vec<u64> = fr.iter().map(|f| f.ts.unwrap()).collect();
        assert!(
            ts.windows(2).all(|w| w[0] < w[1]),
            "{name}: increasing times"
        );
        let id_of = |f: &switchboard::replay::load::Frame, ty: &str| -> Option<String> {
            let v: Value = serde_json::from_str(&f.text).ok()?;
            if v["type"] != ty {
                return None;
            }
            let id = if ty == "control_request" {
                &v["request_id"]
            } else {
                &v["response"]["request_id"]
            };
            id.as_str().map(str::to_string)
        };
        let mut requests: HashMap<String, usize> = HashMap::new();
        for (i, f) in fr.iter().enumerate() {
            if let Some(id) = id_of(f, "control_request") {
                requests.insert(id, i);
            }
        }
        let mut replies = 0;
        for (i, f) in fr.iter().enumerate() {
            if let Some(id) = id_of(f, "control_response") {
                let req = requests
                    .get(&id)
                    .unwrap_or_else(|| panic!("{name}: reply to unknown {id}"));
                assert!(
                    req < &i,
                    "{name}: reply to {id} at {i} before its request at {req}"
                );
                replies += 1;
            }
        }
        assert!(replies > 0, "{name}");
        // The same final state as replaying the cassette directly (times are synthetic).
        let mut a = Player::open(direct);
        let mut b = Player::open(imported);
        press(&mut a, KeyCode::End);
        press(&mut b, KeyCode::End);
        assert_eq!(domain(b.state(), false), domain(a.state(), false), "{name}");
        assert_eq!(a.total() + 1, b.total());
    }
    // Import refuses what is not a cassette.
    let o = run(&[
        "import",
        our("edit").to_str().unwrap(),
        "-o",
        dir.join("x.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

// ---------------------------------------------------------------------------------------------
// 5. export and sessions

#[test]
fn export_markdown_has_tree_prompt_tools_and_decisions() {
    let o = run(&["export", our("bash_write").to_str().unwrap(), "--markdown"]);
    assert_eq!(o.status.code(), Some(0));
    let md = stdout(&o);
    for want in [
        "# switchboard session: bash_write.jsonl",
        "## Session tree",
        "- **main**",
        "**User:**\n\n> BASH_WRITE please",
        "> BASH_AGAIN",
        "**Tool `Bash`** `touch created.txt`",
        "> **✘ denied: Bash `touch created.txt` — Not in this directory, please. (recorded)**",
        "> **✔ allowed once: Bash `touch created.txt` (recorded)**",
        "> **✔ allowed always (session rule): Bash `touch created.txt` (recorded)**",
        "3 gate(s) answered",
        "Result (error):",
    ] {
        assert!(md.contains(want), "missing {want:?} in\n{md}");
    }
    let o = run(&["export", our("subagents").to_str().unwrap(), "--markdown"]);
    let md = stdout(&o);
    let tree: Vec<&str> = md
        .split("## Session tree\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(tree.len(), 3, "{md}");
    assert!(tree[0].starts_with("- **main**"), "{tree:?}");
    assert!(tree[1].starts_with("  - **general-purpose**"), "{tree:?}");
    assert!(tree[2].starts_with("  - **general-purpose**"), "{tree:?}");
    assert!(
        md.contains("allowed once: Bash `touch sub.txt` (recorded)"),
        "{md}"
    );
    // -o writes a file; a cassette exports too.
    let dir = scratch("export");
    let out = dir.join("t.md");
    let o = run(&[
        "export",
        our("edit").to_str().unwrap(),
        "--markdown",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("```diff"), "{md}");
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        let md = stdout(&run(&["export", c.to_str().unwrap(), "--markdown"]));
        assert!(
            md.contains("answered: Which features should be enabled? = Auth, Audit (recorded)"),
            "{md}"
        );
    }
    let o = run(&["export", "/nonexistent/x.jsonl", "--markdown"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sessions_lists_recordings_newest_first() {
    let data = scratch("sessions");
    let recs = data.join("recordings");
    std::fs::create_dir_all(&recs).unwrap();
    let with_time = |src: &str, dst: &str, ms: u64, started: &str| {
        let text = std::fs::read_to_string(our(src)).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let mut h: Value = serde_json::from_str(head).unwrap();
        h["started_ms"] = json!(ms);
        h["started"] = json!(started);
        h["cwd"] = json!(format!("/work/{src}"));
        std::fs::write(recs.join(dst), format!("{h}\n{rest}")).unwrap();
    };
    with_time("edit", "a.jsonl", 1_796_000_000_000, "2026-11-29T23:33:20Z");
    with_time(
        "bash_write",
        "b.jsonl",
        1_796_103_653_603,
        "2026-12-01T05:40:53Z",
    );
    with_time(
        "breakpoint",
        "c.jsonl",
        1_795_000_000_000,
        "2026-11-18T11:46:40Z",
    );
    std::fs::write(recs.join("junk.jsonl"), "not a recording\n").unwrap();
    std::fs::write(recs.join("notes.txt"), "ignored\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("sessions")
        .env("SWITCHBOARD_DATA_DIR", &data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("started"), "{out}");
    let rows: Vec<&str> = lines[1..].iter().step_by(2).copied().collect();
    let paths: Vec<&str> = lines[1..]
        .iter()
        .skip(1)
        .step_by(2)
        .map(|l| l.trim())
        .collect();
    assert_eq!(
        paths,
        ["b.jsonl", "a.jsonl", "c.jsonl"].map(|f| recs.join(f).display().to_string()),
        "{out}"
    );
    assert!(rows[0].starts_with("2026-12-01T05:40:53Z  claude"), "{out}");
    for (row, want) in rows.iter().zip([
        ["    3", "success", "/work/bash_write", "BASH_WRITE please"],
        ["    2", "success", "/work/edit", "EDIT"],
        ["    2", "success", "/work/breakpoint", "BREAKPOINT here"],
    ]) {
        for w in want {
            assert!(row.contains(w), "{w:?} not in {row:?}\n{out}");
        }
    }
    // An empty data dir.
    let empty = scratch("sessions-empty");
    let o = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("sessions")
        .env("SWITCHBOARD_DATA_DIR", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("no recordings in "));
    std::fs::remove_dir_all(data).ok();
    std::fs::remove_dir_all(empty).ok();
}

// ---------------------------------------------------------------------------------------------
// The recording format schema

fn recording_validators() -> (jsonschema::Validator, jsonschema::Validator) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(manifest("schema/recording.v1.json")).unwrap(),
    )
    .unwrap();
    let def = |name: &str| {
        jsonschema::draft7::new(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$ref": format!("#/definitions/{name}"),
            "definitions": doc["definitions"],
        }))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    // The whole document compiles too.
    jsonschema::draft7::new(&doc).expect("recording.v1.json compiles");
    (def("Header"), def("Entry"))
}

fn check_recording_schema(path: &Path) {
    let (header, entry) = recording_validators();
    let text = std::fs::read_to_string(path).unwrap();
    for (i, l) in text.lines().enumerate() {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
        let (name, val) = if i == 0 {
            ("Header", &header)
        } else {
            ("Entry", &entry)
        };
        let errors: Vec<String> = val.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{}:{}: not a {name}: {errors:?}",
            path.display(),
            i + 1
        );
    }
}

#[test]
fn our_recordings_match_the_recording_schema() {
    for path in ours() {
        check_recording_schema(&path);
    }
    // The schema has teeth.
    let (header, entry) = recording_validators();
    assert!(!entry.is_valid(&json!({"ts": 1, "dir": "sideways", "line": "x"})));
    assert!(!entry.is_valid(&json!({"ts": -1, "dir": "in", "line": "x"})));
    assert!(!entry.is_valid(&json!({"ts": 1, "dir": "in", "line": "x", "extra": 1})));
    assert!(!entry.is_valid(&json!({"dir": "in", "line": "x"})));
    let h: Value = serde_json::from_str(
        std::fs::read_to_string(our("edit"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(header.is_valid(&h));
    let mut h2 = h.clone();
    h2["switchboard_recording"] = json!(2);
    assert!(!header.is_valid(&h2));
    let mut h3 = h;
    h3.as_object_mut().unwrap().remove("argv");
    assert!(!header.is_valid(&h3));
}
