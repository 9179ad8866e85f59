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

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

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

use common::{all_audits, audits, manifest, shared_dir_or_skip};

// The tests, by topic (the snapshots stay here: insta names them after this module).
#[path = "support/common.rs"]
mod common;
#[path = "replay/export.rs"]
mod export;
#[path = "replay/final_state.rs"]
mod final_state;
#[path = "replay/gates.rs"]
mod gates;
#[path = "replay/hostile.rs"]
mod hostile;
#[path = "replay/import.rs"]
mod import;
#[path = "replay/inspector.rs"]
mod inspector;
#[path = "replay/validate.rs"]
mod validate;

// ---------------------------------------------------------------------------------------------
// Inputs

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
    let dir = shared_dir_or_skip("the cassette checks", "recordings/claude")?;
    let v = sorted_files(&dir, ".cassette.json");
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

/// The screen as text, one trimmed line per row (as tests/ui_snapshots.rs does).
fn screen(s: &State, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let theme = Theme::dark();
    // A picture only: nothing is driven after it, so what the frame measured is not kept.
    term.draw(|f| {
        let _ = switchboard::ui::render(s, &theme, f);
    })
    .unwrap();
    switchboard::ui::buffer_text(term.backend().buffer())
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
