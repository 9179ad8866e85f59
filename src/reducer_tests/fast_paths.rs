//! The reducer's fast paths against its general ones, state for state: a transcript's
//! recent-key look-up (a run of deltas skips the key table) and the root's node key (not
//! hashed). Each input runs twice, once with `SLOW_LOOKUPS` forcing the general paths, on the
//! real recordings, the generated stream and hostile variants of it.

use crate::test_gen as generator;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::backend::claude::mapping::Mapper;
use crate::core::Msg;
use crate::core::msg::BackendEvent;
use crate::core::state::{SessionId, State};
use crate::core::transcript::{ItemKind, ItemOp, KEY_CAP, SLOW_LOOKUPS, Transcript};
use crate::core::update::update;
use generator::{ClaudeGen, Rng};

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
    let mut s = State::new(crate::core::BackendKind::Claude, "main", 0);
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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recordings/claude");
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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/recordings/claude");
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

/// Row operations straight at a transcript: random keys from a pool larger than `KEY_CAP`
/// (forgotten keys, reused keys), runs and switches, upserts, stream ends by prefix.
#[test]
fn random_row_operations_apply_the_same_both_ways() {
    let mut rng = Rng::new(99);
    let mut ops = Vec::new();
    let mut key = 0usize;
    for _ in 0..60_000 {
        if rng.chance(20) {
            key = if rng.chance(50) {
                rng.range(0, KEY_CAP * 2)
            } else {
                key.saturating_sub(rng.range(0, 4))
            };
        }
        let k = format!("m{}#{}", key / 3, key % 3);
        ops.push(match rng.range(0, 10) {
            0 => ItemOp::Upsert {
                key: k,
                kind: ItemKind::Assistant {
                    text: "settled".into(),
                    streaming: rng.chance(30),
                    aborted: false,
                },
            },
            1 => ItemOp::EndStreaming {
                key_prefix: format!("m{}#", key / 3),
                aborted: rng.chance(50),
            },
            2 => ItemOp::Push(ItemKind::User { text: "u".into() }),
            3 => ItemOp::Upsert {
                key: format!("tool:{key}"),
                kind: ItemKind::System {
                    label: "t".into(),
                    text: String::new(),
                },
            },
            _ => ItemOp::AppendText {
                key: k,
                thinking: rng.chance(30),
                delta: "δ".into(),
            },
        });
    }
    let run = |slow: bool| {
        SLOW_LOOKUPS.with(|c| c.set(slow));
        let mut t = Transcript::default();
        let seen: Vec<usize> = ops.iter().map(|op| t.apply(op.clone(), 0)).collect();
        SLOW_LOOKUPS.with(|c| c.set(false));
        (t, seen)
    };
    let ((fast, a), (slow, b)) = (run(false), run(true));
    assert_eq!(a, b);
    assert_eq!(fast.len(), slow.len());
    for (x, y) in fast.items.iter().zip(&slow.items) {
        assert_eq!((&x.kind, x.rev), (&y.kind, y.rev));
    }
    assert_eq!(fast.has_streaming(), slow.has_streaming());
    assert_eq!(fast.generation(), slow.generation());
    // The forgotten keys were exercised: more rows than the key table holds.
    assert!(fast.len() > KEY_CAP);
}

/// Node updates naming the root land on it, also after a sub-agent claimed the root's key.
#[test]
fn root_node_updates_land_on_the_root_both_ways() {
    for slow in [false, true] {
        SLOW_LOOKUPS.with(|c| c.set(slow));
        let mut s = State::new(crate::core::BackendKind::Claude, "main", 0);
        // A sub-agent keyed like the root is the root (`open` keeps existing keys).
        let _ = update(
            &mut s,
            Msg::Backend {
                session: SessionId::FIRST,
                at_ms: 0,
                event: BackendEvent::NodeOpen {
                    key: "root".into(),
                    parent: None,
                    patch: Default::default(),
                },
            },
        );
        let _ = update(
            &mut s,
            Msg::Backend {
                session: SessionId::FIRST,
                at_ms: 0,
                event: BackendEvent::NodeUpdate {
                    key: "root".into(),
                    patch: crate::core::tree::NodePatch {
                        last_tool: Some("Read".into()),
                        ..Default::default()
                    },
                },
            },
        );
        SLOW_LOOKUPS.with(|c| c.set(false));
        assert_eq!(s.tree.nodes.len(), 1);
        assert_eq!(s.tree.nodes[0].last_tool.as_deref(), Some("Read"));
    }
}
