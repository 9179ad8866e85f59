//! `switchboard screenshots`: drive the scripted demo headless and write SVG pictures of the
//! main states (used by the README).

use std::path::Path;
use std::time::Duration;

use crate::core::input::KeyCode;

use crate::app::headless::Headless;
use crate::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use crate::core::gate::GateKind;
use crate::core::state::State;
use crate::ui::svg::buffer_to_svg;
use crate::ui::theme::Theme;

const WAIT: Duration = Duration::from_secs(30);

fn has_gate(s: &State, f: impl Fn(&GateKind) -> bool) -> bool {
    s.gates.iter().any(|g| f(&g.kind))
}

fn save(h: &mut Headless, dir: &Path, name: &str) -> std::io::Result<()> {
    let palette = if name.contains("light") {
        crate::ui::svg::LIGHT
    } else {
        crate::ui::svg::DARK
    };
    let svg = crate::ui::svg::buffer_to_svg_on(h.draw(), palette);
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
        record: Some(work.join("demo.jsonl")),
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
    for theme in ["light", "high-contrast"] {
        h.app.theme =
            Theme::load(theme, Path::new("/nonexistent")).map_err(std::io::Error::other)?;
        save(&mut h, dir, &format!("theme-{theme}"))?;
    }
    h.app.theme = Theme::dark();
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
    replay_shot(&work.join("demo.jsonl"), dir)?;
    inbox_shot(&work, dir).await?;
    std::fs::remove_dir_all(&work).ok();
    Ok(())
}

/// Replay mode: the recording just made, stopped at its second gate.
fn replay_shot(recording: &Path, dir: &Path) -> std::io::Result<()> {
    use crate::core::input::{KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let loaded = crate::replay::load::load(recording, None).map_err(std::io::Error::other)?;
    let mut player = crate::replay::player::Player::open(loaded);
    for _ in 0..2 {
        player.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
    }
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("TestBackend never fails");
    let theme = Theme::dark();
    player
        .draw(&mut term, &theme)
        .expect("TestBackend never fails");
    let path = dir.join("replay.svg");
    std::fs::write(&path, buffer_to_svg(term.backend().buffer()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The demo workspace (auth, web, docs) with its gates in the inbox, the two identical
/// `npm test` requests marked for a batch.
async fn inbox_shot(work: &Path, dir: &Path) -> std::io::Result<()> {
    let sessions = switchboard_sim::demo::demo_workspace();
    let config = |d: &switchboard_sim::demo::DemoSession| -> std::io::Result<ClaudeConfig> {
        let mut prefix_args = vec!["demo-agent".to_string()];
        prefix_args.extend(d.agent_args());
        Ok(ClaudeConfig {
            program: std::env::current_exe()?,
            prefix_args,
            cwd: work.to_path_buf(),
            prompt: Some(d.prompt.clone()),
            env: vec![("SWITCHBOARD_DEMO_FAST".into(), Some("1".into()))],
            ..ClaudeConfig::default()
        })
    };
    let mut h = Headless::start(
        Box::new(ClaudeBackend {
            config: config(&sessions[0])?,
        }),
        120,
        40,
    );
    h.app.state.sessions[0].tree.nodes[0].name = sessions[0].name.clone();
    for d in &sessions[1..] {
        h.app.add_session(
            &d.name,
            Box::new(ClaudeBackend { config: config(d)? }),
            Default::default(),
        );
    }
    h.wait_until("gates in all three sessions", WAIT, |s| {
        s.sessions.iter().all(|x| !x.gates.is_empty()) && s.pending_total() >= 6
    })
    .await;
    // Highlight the oldest `npm test` and mark every identical one.
    h.key(KeyCode::Char('I'));
    let npm = h
        .state()
        .inbox()
        .iter()
        .position(|(_, _, g)| {
            matches!(&g.kind, GateKind::Permission(p) if p.tool == "Bash" && p.rule_arg == "npm test")
        })
        .unwrap_or(0);
    for _ in 0..npm {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Char('='));
    save(&mut h, dir, "inbox")?;
    h.key(KeyCode::Esc);
    save(&mut h, dir, "workspace")?;
    h.quit().await;
    Ok(())
}
