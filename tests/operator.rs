//! The operator features of issue 6, end to end: approval rules, the rules view and the rule
//! editor, search, copy and the pager, subtree focus, the detail view, diffs, themes, mouse,
//! key overrides and the config commands.
//!
//! Screens are built the way `tests/ui_snapshots.rs` builds them: real Claude stream-json lines
//! through the pure `Mapper`, its events and our keys through the reducer, a fake clock. Views
//! whose point is colour (search highlights, word-level diffs, themes) are snapshotted as a
//! styled dump: each row's text plus its non-default style runs.
//!
//! Update with `INSTA_UPDATE=always cargo test --test operator`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyModifiers};

use switchboard::core::State;
use switchboard::core::gate::{Decision, GateKind};
use switchboard::core::msg::{Command, Effect};
use switchboard::core::rules::{Action, Origin, RuleSpec};
use switchboard::core::state::{Focus, Overlay};
use switchboard::core::transcript::ItemKind;
use switchboard::ui::theme::Theme;

#[path = "support/scene.rs"]
mod scene;
use scene::*;

const RULES_FILE: &str = "/home/dev/.config/switchboard/rules.toml";

// The tests, by topic (the snapshots stay here: insta names them after this module).
#[path = "operator/config.rs"]
mod config;
#[path = "operator/demo.rs"]
mod demo;
#[path = "operator/rules.rs"]
mod rules;
#[path = "operator/views.rs"]
mod views;

impl Scene {
    fn snap(&mut self, name: &str, w: u16, h: u16) {
        let screen = self.screen(w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }

    fn snap_styled(&mut self, name: &str, w: u16, h: u16, theme: &Theme) {
        let buf = self.draw_with(w, h, theme);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), styled(&buf, 0..h));
    }
}

// ---------------------------------------------------------------------------------------------
// The demo conversation's gates (the scene and the wire lines are in tests/support/scene.rs).

/// A `can_use_tool` for a Bash command.
fn bash_request(id: &str, command: &str) -> Value {
    control(
        id,
        json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":format!("toolu_{id}"),
            "input":{"command":command,"description":"Create a scratch file for notes"},
            "title":format!("Claude wants to run {command}"),
            "permission_suggestions":[
                {"type":"addRules","rules":[{"toolName":"Bash","ruleContent":command}],"behavior":"allow","destination":"localSettings"}]}),
    )
}

fn bash_gate() -> Scene {
    let mut sc = base(Opening::Plain);
    sc.line(assistant(
        "msg_2",
        None,
        json!([
            text("Before changing anything I'll create a scratch file for my notes."),
            tool_use("toolu_req-bash", "Bash", json!({"command":"touch demo-output.txt","description":"Create a scratch file for notes"})),
        ]),
    ))
    .line(bash_request("req-bash", "touch demo-output.txt"));
    sc
}

fn fan_out_scene() -> Scene {
    let mut sc = base(Opening::Plain);
    fan_out(&mut sc, Helper::Busy);
    sc
}

fn edit_gate() -> Scene {
    let mut sc = fan_out_scene();
    sc.line(edit_request());
    assert_eq!(sc.s.focus, Focus::Gate, "a new gate takes the focus");
    sc
}

fn question_request() -> Value {
    control(
        "req-ask",
        json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"toolu_ask",
            "input":{"questions":[{"question":"Which modules?","header":"Modules","multiSelect":false,
                "options":[{"label":"Auth","description":"Logins"},{"label":"Billing","description":"Payments"}]}]}}),
    )
}

fn file_rule(action: Action, tool: &str, pattern: Option<&str>) -> (RuleSpec, Origin) {
    (
        RuleSpec {
            action,
            tool: tool.into(),
            pattern: pattern.map(str::to_string),
            exact: false,
        },
        Origin::File(RULES_FILE.into()),
    )
}

fn add_file_rule(sc: &mut Scene, action: Action, tool: &str, pattern: Option<&str>) {
    let (spec, origin) = file_rule(action, tool, pattern);
    sc.s.rules.add(spec, origin);
}

fn is_answer(e: &Effect) -> bool {
    matches!(e, Effect::Send(_, Command::Answer { .. }))
}

// ---------------------------------------------------------------------------------------------
// 0. The keys a host lets through its one-answer guard.

/// `leaves_gates_alone` mirrors `on_key`'s order for the host (docs/host.md): every key it
/// lets through whatever changed must reach no gate. Checked against the reducer itself, on a
/// card and on a card with its deny editor open, for every key a terminal sends: none answers
/// the gate, and the keys meant for a card (`y`, Enter, typed text in an editor) are judged.
#[test]
fn keys_the_host_lets_through_never_answer_a_card() {
    use switchboard::core::input::KeyEvent;
    use switchboard::core::update::leaves_gates_alone;
    let mut keys: Vec<KeyEvent> = (' '..='~')
        .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
        .collect();
    keys.extend(
        ('a'..='z')
            .chain(['\\', '4'])
            .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)),
    );
    for code in [
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::Backspace,
    ] {
        keys.push(KeyEvent::new(code, KeyModifiers::NONE));
    }
    let card = || {
        let sc = bash_gate();
        assert_eq!(sc.s.focus, Focus::Gate);
        sc
    };
    let editor = || {
        let mut sc = card();
        sc.keys("n");
        assert_eq!(sc.s.pending_total(), 1, "`n` opens the deny message");
        sc
    };
    for (what, scene) in [
        ("a card", &card as &dyn Fn() -> Scene),
        ("a deny editor", &editor),
    ] {
        let mut passed = Vec::new();
        for &key in &keys {
            let mut sc = scene();
            if !leaves_gates_alone(&sc.s, key) {
                continue;
            }
            passed.push(key.code);
            let fx = sc.msg(switchboard::core::Msg::Key(key));
            let answered = fx
                .iter()
                .any(|e| matches!(e, Effect::Send(_, Command::Answer { .. })));
            assert!(
                !answered && sc.s.pending_total() == 1,
                "{key:?} on {what} passes the host's guard but answered the gate: {fx:?}"
            );
        }
        // Not vacuous: the global chords pass, the card's own keys are judged.
        assert!(passed.contains(&KeyCode::Char('d')), "{what}: {passed:?}");
        let y = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE);
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        let sc = scene();
        assert!(!leaves_gates_alone(&sc.s, y), "{what}: y is judged");
        assert!(!leaves_gates_alone(&sc.s, enter), "{what}: Enter is judged");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Snapshots of the new views.

#[test]
fn snap_rules_view_with_session_and_file_rules() {
    let mut sc = bash_gate();
    sc.s.rules_file = Some(RULES_FILE.into());
    add_file_rule(&mut sc, Action::Deny, "Bash", Some("rm -rf *"));
    add_file_rule(&mut sc, Action::Allow, "Read", None);
    add_file_rule(&mut sc, Action::Ask, "mcp__github__*", None);
    // `a`: allow always, which also adds a session rule for exactly this command.
    sc.keys("a");
    assert!(sc.s.gates.is_empty());
    // Hits: the same command again (session rule), then an rm (file deny rule).
    sc.line(bash_request("req-bash-2", "touch demo-output.txt"));
    sc.line(bash_request("req-rm", "rm -rf build/"));
    assert!(sc.s.gates.is_empty(), "both were answered by rules");
    sc.s.focus = Focus::Transcript;
    sc.keys("R");
    assert_eq!(sc.s.overlay, Some(Overlay::Rules { cursor: 0 }));
    sc.key(KeyCode::Down);
    sc.snap("rules_view", 120, 24);
}

#[test]
fn snap_rule_editor_shows_the_exact_rule() {
    let mut sc = bash_gate();
    sc.s.rules_file = Some(RULES_FILE.into());
    sc.keys("A");
    sc.snap("rule_editor", 120, 30);
    // Edited before saving: the card shows exactly what will be saved.
    for _ in 0.."touch *".len() {
        sc.key(KeyCode::Backspace);
    }
    sc.keys("touch demo-*");
    sc.snap("rule_editor_edited", 120, 30);
}

#[test]
fn snap_search_footer_and_highlights() {
    let mut sc = base(Opening::Plain);
    sc.key(KeyCode::Esc).keys("/auth");
    sc.snap("search_typing", 100, 24);
    sc.key(KeyCode::Enter);
    sc.snap_styled("search_matches", 100, 24, &Theme::dark());
}

#[test]
fn snap_focused_subtree() {
    let mut sc = fan_out_scene();
    let ex = sc.node("Explore");
    sc.select_node(ex);
    sc.keys("f");
    sc.snap("focus_subtree", 120, 24);
}

#[test]
fn snap_detail_of_a_tool_call_with_a_diff() {
    let mut sc = fan_out_scene();
    let rv = sc.node("code-reviewer");
    sc.select_node(rv);
    let items = &sc.s.tree.nodes[rv].transcript.items;
    let edit = items
        .iter()
        .position(|i| matches!(&i.kind, ItemKind::ToolCall { diff: Some(_), .. }))
        .expect("the Edit call has a diff");
    sc.select_item(edit);
    sc.keys("v");
    assert!(matches!(
        sc.s.overlay,
        Some(Overlay::Detail { item: Some(_), .. })
    ));
    sc.snap("detail_tool_call_diff", 100, 24);
}

#[test]
fn snap_detail_of_a_gate() {
    let mut sc = edit_gate();
    sc.keys("v");
    assert!(matches!(
        sc.s.overlay,
        Some(Overlay::Detail { item: None, .. })
    ));
    sc.snap("detail_gate", 100, 30);
    sc.key(KeyCode::Esc);
    assert_eq!(sc.s.overlay, None);
    assert_eq!(sc.s.gates.len(), 1, "Esc closed the view, not the gate");
}

#[test]
fn snap_side_by_side_diff_in_a_permission_card() {
    let mut sc = edit_gate();
    sc.keys("t");
    assert!(sc.s.side_by_side);
    sc.snap("side_by_side_diff", 140, 40);
}

#[test]
fn snap_word_level_diff_highlight() {
    let mut sc = base(Opening::Plain);
    let input = json!({"file_path":"/home/dev/shop/src/session.rs",
        "old_string":"const TIMEOUT_SECS: u64 = 30;\nfn expire(s: &Session) {}",
        "new_string":"const TIMEOUT_SECS: u64 = 900;\nfn expire(s: &Session) {}"});
    sc.line(assistant(
        "msg_w",
        None,
        json!([tool_use("toolu_w", "Edit", input.clone())]),
    ))
    .line(control(
        "req-w",
        json!({"subtype":"can_use_tool","tool_name":"Edit","tool_use_id":"toolu_w","input":input,
            "title":"Claude wants to edit src/session.rs"}),
    ));
    let buf = sc.draw_with(100, 24, &Theme::dark());
    let text = switchboard::ui::buffer_text(&buf);
    let top = text
        .lines()
        .position(|l| l.contains("Permission · Edit"))
        .expect("the card") as u16;
    insta::assert_snapshot!("word_diff_100x24", styled(&buf, top..24));
}

fn theme_scene() -> Scene {
    let mut sc = edit_gate();
    // Back to the root, with the gate still pending.
    sc.s.focus = Focus::Tree;
    sc.key(KeyCode::Home);
    sc.s.focus = Focus::Gate;
    sc
}

#[test]
fn snap_themes_on_the_main_layout() {
    let none = Path::new("/nonexistent");
    for name in ["dark", "light", "high-contrast"] {
        let theme = Theme::load(name, none).unwrap();
        theme_scene().snap_styled(&format!("theme_{name}"), 100, 30, &theme);
    }
    theme_scene().snap_styled("theme_no_color", 100, 30, &Theme::no_color());
}

/// A fresh scratch directory for this process.
fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-operator-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
