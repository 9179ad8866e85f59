use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;
use switchboard::core::transcript::ItemKind;
use switchboard::replay::load::load;
use switchboard::replay::player::Player;

#[test]
fn explore() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/recordings/claude"
    ))
    .unwrap()
    .map(|e| e.unwrap().path())
    .collect();
    files.extend(
        std::fs::read_dir(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/recordings/claude"
        ))
        .unwrap()
        .map(|e| e.unwrap().path()),
    );
    files.sort();
    for f in files {
        let mut p = Player::open(load(&f, None).unwrap());
        println!("=== {} frames={}", f.display(), p.total());
        loop {
            let before = p.state().replay.as_ref().unwrap().frame;
            p.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
            let r = p.state().replay.as_ref().unwrap();
            if r.frame == before {
                break;
            }
            println!(
                "  gate at frame {} gates={:?} focus={:?} answers={:?}",
                r.frame,
                p.state()
                    .gates
                    .iter()
                    .map(|g| (&g.id, g.kind.label()))
                    .collect::<Vec<_>>(),
                p.state().focus,
                r.answers.values().collect::<Vec<_>>()
            );
        }
        p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        let s = p.state();
        println!(
            "  end: answered={} gates={} nodes={:?}",
            s.answered,
            s.gates.len(),
            s.tree
                .nodes
                .iter()
                .map(|n| (
                    n.name.clone(),
                    n.status,
                    n.transcript.len(),
                    n.transcript
                        .items
                        .iter()
                        .filter(|i| matches!(i.kind, ItemKind::Audit { .. }))
                        .count()
                ))
                .collect::<Vec<_>>()
        );
        for n in &s.tree.nodes {
            for i in &n.transcript.items {
                if let ItemKind::Audit { text, .. } = &i.kind {
                    println!("    audit: {text}");
                }
                if let ItemKind::Protocol { text, .. } = &i.kind {
                    println!("    protocol: {text}");
                }
            }
        }
    }
}
