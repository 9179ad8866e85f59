//! Replays end in the recorded state and equal the live mapper and reducer, stepping both ways.

use super::*;

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
        let mut s = State::new(switchboard::core::BackendKind::Claude, "main", t0);
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
                        session: switchboard::core::state::SessionId::FIRST,
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
