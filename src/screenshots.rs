//! `switchboard screenshots`: drive the scripted demo headless and write SVG pictures of the
//! main states (used by the README).

use std::path::Path;
use std::time::Duration;

use crossterm::event::KeyCode;

use crate::app::headless::Headless;
use crate::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use crate::core::gate::GateKind;
use crate::core::state::State;
use crate::ui::svg::buffer_to_svg;

const WAIT: Duration = Duration::from_secs(30);

fn has_gate(s: &State, f: impl Fn(&GateKind) -> bool) -> bool {
    s.gates.iter().any(|g| f(&g.kind))
}

fn save(h: &mut Headless, dir: &Path, name: &str) -> std::io::Result<()> {
    let svg = buffer_to_svg(h.draw());
    let path = dir.join(format!("{name}.svg"));
    std::fs::write(&path, svg)?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Run the demo to each interesting state and save a picture of it into `dir`.
pub async fn generate(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let work = std::env::temp_dir().join(format!("switchboard-shots-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let config = ClaudeConfig {
        program: std::env::current_exe()?,
        prefix_args: vec!["demo-agent".into()],
        cwd: work.clone(),
        breaks: vec!["Grep".into()],
        prompt: Some("Add audit logging to the auth module.".into()),
        env: vec![("SWITCHBOARD_DEMO_FAST".into(), Some("1".into()))],
        ..ClaudeConfig::default()
    };
    let mut h = Headless::start(Box::new(ClaudeBackend { config }), 120, 40);
    h.wait_until("the Bash permission", WAIT, |s| {
        has_gate(
            s,
            |k| matches!(k, GateKind::Permission(p) if p.tool == "Bash"),
        )
    })
    .await;
    save(&mut h, dir, "permission-bash")?;
    h.key(KeyCode::Char('y'));
    h.wait_until("the Edit permission and the breakpoint", WAIT, |s| {
        has_gate(
            s,
            |k| matches!(k, GateKind::Permission(p) if p.tool == "Edit"),
        ) && has_gate(s, |k| matches!(k, GateKind::Breakpoint(_)))
    })
    .await;
    // Show the Edit card (with its diff) while both gates wait.
    while !matches!(
        h.state().active().map(|g| &g.kind),
        Some(GateKind::Permission(_))
    ) {
        h.key(KeyCode::Char(']'));
    }
    save(&mut h, dir, "main-fanout")?;
    h.key(KeyCode::Char('y'));
    h.wait_until("the breakpoint card", WAIT, |s| {
        matches!(s.active().map(|g| &g.kind), Some(GateKind::Breakpoint(_)))
    })
    .await;
    h.key(KeyCode::Char('y'));
    h.wait_until("the question", WAIT, |s| {
        has_gate(s, |k| matches!(k, GateKind::Question(_)))
    })
    .await;
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Down);
    h.key(KeyCode::Down);
    h.key(KeyCode::Char(' '));
    save(&mut h, dir, "question-multiselect")?;
    h.quit().await;
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}
