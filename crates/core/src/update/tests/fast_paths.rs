//! The reducer's fast paths against its general ones, state for state: a transcript's
//! recent-key look-up (a run of deltas skips the key table) and the root's node key (not
//! hashed). Each input runs twice, once with `SLOW_LOOKUPS` forcing the general paths. The
//! same on Claude's real recordings, the generated stream and hostile variants of it (read
//! through Claude's mapper) is in `crates/claude/tests/fast_paths.rs`.

use crate::Msg;
use crate::msg::BackendEvent;
use crate::state::{SessionId, State};
use crate::test_gen::Rng;
use crate::transcript::{ItemKind, ItemOp, KEY_CAP, SLOW_LOOKUPS, Transcript};
use crate::update::update;

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
        let mut s = State::new(crate::BackendKind::Claude, "main", 0);
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
                    patch: crate::tree::NodePatch {
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
