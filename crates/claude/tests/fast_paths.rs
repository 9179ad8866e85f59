//! The reducer's fast paths against its general ones, state for state, on Claude's streams
//! read through Claude's mapper: a transcript's recent-key look-up (a run of deltas skips the
//! key table) and the root's node key (not hashed). Each input runs twice, once with
//! `SLOW_LOOKUPS` (the core's `test-hooks`) forcing the general paths, on the real
//! recordings, the generated stream and hostile variants of it. The same on row operations
//! straight at a transcript is in the core (`crates/core/src/update/tests/fast_paths.rs`).

#[path = "../../../benches/support/gen.rs"]
mod generator;

use std::path::{Path, PathBuf};

use serde_json::Value;

use generator::{ClaudeGen, Rng};
use switchboard_claude::mapping::Mapper;
use switchboard_core::Msg;
use switchboard_core::state::{SessionId, State};
use switchboard_core::transcript::{ItemKind, SLOW_LOOKUPS};
use switchboard_core::update::update;

/// Everything a transcript shows or a renderer reads, node by node.
type Shown = Vec<(String, Vec<(ItemKind, u32, u64)>, bool, u64)>;

fn shown(s: &State) -> Shown {
    s.tree
        .nodes
        .iter()
        .map(|n| {
            let t = &n.transcript;
            let rows = t
                .items
                .iter()
                .map(|i| (i.kind.clone(), i.rev, i.at_ms))
                .collect();
            (n.key.clone(), rows, t.has_streaming(), t.generation())
        })
        .collect()
}

fn ingest(lines: &[String], slow: bool) -> State {
    SLOW_LOOKUPS.with(|c| c.set(slow));
    let mut s = State::new(switchboard_core::BackendKind::Claude, "main", 0);
    let mut mapper = Mapper::new(&[]);
    for (n, l) in lines.iter().enumerate() {
        for event in mapper.on_line(l).events {
            let _ = update(
                &mut s,
                Msg::Backend {
                    session: SessionId::FIRST,
                    at_ms: n as u64,
                    event,
                },
            );
        }
    }
    SLOW_LOOKUPS.with(|c| c.set(false));
    s
}

fn same_both_ways(what: &str, lines: &[String]) {
    let fast = ingest(lines, false);
    let slow = ingest(lines, true);
    let (f, s) = (shown(&fast), shown(&slow));
    assert_eq!(f.len(), s.len(), "{what}: nodes");
    for (a, b) in f.iter().zip(&s) {
        assert_eq!(a, b, "{what}: node {}", a.0);
    }
    assert_eq!(fast.session.tools, slow.session.tools, "{what}");
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.to_string_lossy().ends_with(suffix));
    v.sort();
    v
}

/// Our recordings of the real CLI: the agent's lines (`dir` = `in`).
#[test]
fn recordings_reduce_the_same_both_ways() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/recordings/claude");
    let all = files(&dir, ".jsonl");
    assert!(all.len() >= 10, "{dir:?} holds {all:?}");
    for p in all {
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["dir"] == "in")
            .filter_map(|v| v["line"].as_str().map(str::to_string))
            .collect();
        assert!(!lines.is_empty(), "{p:?}");
        same_both_ways(&p.to_string_lossy(), &lines);
    }
}

/// The cowork-harness cassettes (agent stdout in `events`), when the shared folder is here.
#[test]
fn cassettes_reduce_the_same_both_ways() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/recordings/claude");
    for p in files(&dir, ".cassette.json") {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let lines: Vec<String> = v["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str().map(str::to_string))
            .collect();
        same_both_ways(&p.to_string_lossy(), &lines);
    }
}

#[test]
fn generated_stream_reduces_the_same_both_ways() {
    same_both_ways("generated", &ClaudeGen::lines(7, 30_000));
}

/// Hostile variants: lines shuffled in windows (deltas before their block, stops before
/// deltas, settled rows appended to), message ids folded onto a few (keys reused across
/// messages), and sub-agent lines moved to the root.
#[test]
fn hostile_variants_reduce_the_same_both_ways() {
    let base = ClaudeGen::lines(11, 20_000);
    let mut rng = Rng::new(5);
    let mut shuffled = base.clone();
    for w in shuffled.chunks_mut(7) {
        for i in (1..w.len()).rev() {
            w.swap(i, rng.range(0, i));
        }
    }
    same_both_ways("shuffled", &shuffled);
    let folded: Vec<String> = base
        .iter()
        .map(|l| {
            // msg_0100…0042 → msg_0100…0002: the same few keys over and over.
            let mut out = String::with_capacity(l.len());
            let mut rest = l.as_str();
            while let Some(at) = rest.find("msg_") {
                let (head, tail) = rest.split_at(at + 4);
                out.push_str(head);
                let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
                let id: u64 = tail[digits.saturating_sub(6)..digits].parse().unwrap_or(0);
                out.push_str(&format!("{:0w$}", id % 3, w = digits.max(1)));
                rest = &tail[digits..];
            }
            out.push_str(rest);
            out
        })
        .collect();
    same_both_ways("folded ids", &folded);
    let rooted: Vec<String> = base
        .iter()
        .map(|l| l.replace("\"parent_tool_use_id\":\"", "\"parent_tool_use_id_x\":\""))
        .collect();
    same_both_ways("sub-agents at the root", &rooted);
}
