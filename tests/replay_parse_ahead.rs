//! Replay's background pass parses each frame on its reader thread (`registry::parser`) and
//! hands the result to the mapping (`inbound_parsed` / `outbound_parsed`); every other way of
//! replaying (seeks, export, the index pass) parses in the mapping. Both must build the same
//! state, frame for frame: checked on the real ACP recordings, our fixtures, and the bench's
//! generated sessions of each kind (gates, fs and terminal requests, reads, edits, messages).

#![allow(dead_code)]

#[path = "../benches/support/gen_remote.rs"]
mod gen_remote;
#[path = "../benches/support/gen.rs"]
mod generator;

use std::path::Path;

use switchboard::core::BackendKind;
use switchboard::core::State;
use switchboard::record::Dir;
use switchboard::registry;
use switchboard::replay::feed::{Feeder, Seen};
use switchboard::replay::load::{self, Frame};

/// What a state shows and holds, in a fixed order (a `Debug` of the whole state prints hash
/// maps in their own order): each node with its rows, each session's gates, answered count
/// and session info, and the log.
fn view(s: &State) -> String {
    let mut out = String::new();
    for sess in &s.sessions {
        for n in &sess.tree.nodes {
            out += &format!(
                "node {:?} {:?} {:?} {:?} {:?} {} {} {:?} {} {:?}\n",
                n.key,
                n.parent,
                n.name,
                n.description,
                n.status,
                n.tokens,
                n.tool_uses,
                n.last_tool,
                n.started_ms,
                n.ended_ms
            );
            for row in n.transcript.items.iter() {
                out += &format!("  {row:?}\n");
            }
        }
        out += &format!(
            "gates {:?}\nactive {:?} answered {} closed {}\nsession {:?}\n",
            sess.gates, sess.active_gate, sess.answered, sess.closed, sess.session
        );
    }
    out += &format!("log {:?}\n", s.log);
    out
}

/// Feed `frames` both ways and compare the states every `every` frames and at the end.
fn same_both_ways(name: &str, kind: BackendKind, frames: &[Frame]) {
    let parser = registry::parser(kind).unwrap_or_else(|| panic!("{name}: {kind:?} has a parser"));
    let start = frames.iter().find_map(|f| f.ts).unwrap_or(0);
    let mut plain = Feeder::with(kind, start);
    let mut ahead = Feeder::with(kind, start);
    let mut parsed_some = 0;
    for (i, f) in frames.iter().enumerate() {
        let (mut seen_plain, mut seen_ahead) = (Seen::default(), Seen::default());
        plain.apply_seeing(0, f, None, Some(&mut seen_plain));
        let mut parsed = matches!(f.dir, Dir::In | Dir::Out)
            .then(|| parser(f.dir, &f.text))
            .flatten();
        parsed_some += usize::from(parsed.is_some());
        ahead.apply_seeing(0, f, parsed.as_mut(), Some(&mut seen_ahead));
        // What the gate index records of the frame: the same gate opened, the same answers.
        assert_eq!(
            (seen_plain.opened_gate, &seen_plain.answered),
            (seen_ahead.opened_gate, &seen_ahead.answered),
            "{name}: frame {i}"
        );
        if i % 997 == 0 || i + 1 == frames.len() {
            let (a, b) = (view(&plain.state), view(&ahead.state));
            if a != b {
                let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                panic!(
                    "{name}: the states differ after frame {i} ({:?}): plain …{}… / ahead …{}…",
                    f.text.get(..f.text.len().min(200)),
                    &a[at.saturating_sub(200)..(at + 200).min(a.len())],
                    &b[at.saturating_sub(200)..(at + 200).min(b.len())],
                );
            }
        }
    }
    assert!(parsed_some > 0, "{name}: nothing was parsed ahead");
}

fn frames_of(lines: impl Iterator<Item = (Dir, String)>) -> Vec<Frame> {
    lines
        .enumerate()
        .map(|(i, (dir, text))| Frame {
            src_line: i + 2,
            ts: Some(1_764_900_000_000 + 7 * i as u64),
            dir,
            text,
        })
        .collect()
}

fn remote(l: gen_remote::RecLine) -> (Dir, String) {
    let dir = match l.way {
        gen_remote::Way::In => Dir::In,
        gen_remote::Way::Out => Dir::Out,
        gen_remote::Way::Note => Dir::Note,
    };
    (dir, l.line)
}

#[test]
fn generated_sessions_map_the_same_parsed_ahead() {
    let acp = frames_of(generator::AcpGen::new(5).take(12_000).map(|l| {
        let dir = if l.out { Dir::Out } else { Dir::In };
        (dir, l.line)
    }));
    same_both_ways("generated ACP", BackendKind::Acp, &acp);
    let gw = frames_of(gen_remote::GatewayGen::new(5).take(12_000).map(remote));
    same_both_ways("generated gateway", BackendKind::Gateway, &gw);
    let iii = frames_of(gen_remote::IiiGen::new(5).take(12_000).map(remote));
    same_both_ways("generated iii", BackendKind::Iii, &iii);
}

#[test]
fn real_and_fixture_recordings_map_the_same_parsed_ahead() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        root.join("../shared/recordings/acp"),
        root.join("fixtures/recordings/acp"),
    ] {
        let mut here: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        here.sort();
        files.extend(here);
    }
    let mut seen = 0;
    for p in files {
        let Ok(loaded) = load::load(&p, None) else {
            continue;
        };
        if registry::parser(loaded.backend).is_none() {
            continue;
        }
        same_both_ways(&p.display().to_string(), loaded.backend, &loaded.frames);
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} recordings were read");
}
