//! No screen size may crash the UI: every gate kind, editor and overlay is drawn at sizes from
//! 1×1 up, as a terminal split shrinks.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::state::State;
use switchboard::core::{Msg, update};
use switchboard::ui::theme::Theme;

fn feed(s: &mut State, m: &mut Mapper, line: &str) {
    for event in m.on_line(line).events {
        let _ = update(s, Msg::Backend { at_ms: 1, event });
    }
}

fn key(s: &mut State, c: KeyCode) {
    let _ = update(s, Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

const GATES: &[&str] = &[
    r#"{"type":"control_request","request_id":"p","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"title":"Claude wants to run touch x","description":"d","permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}}"#,
    r#"{"type":"control_request","request_id":"e","request":{"subtype":"can_use_tool","tool_name":"Edit","input":{"file_path":"/w/a.rs","old_string":"a\nb","new_string":"a\nc\nd"}}}"#,
    r#"{"type":"control_request","request_id":"q","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Which?","header":"H","multiSelect":true,"options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}}}"#,
    r#"{"type":"control_request","request_id":"d","request":{"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt","payload":{"title":"T","options":["x","y"]}}}"#,
    r#"{"type":"control_request","request_id":"l","request":{"subtype":"elicitation","mcp_server_name":"s","message":"m","requested_schema":{"type":"object","properties":{"t":{"type":"string"},"n":{"type":"number"}}}}}"#,
];

/// Keys that open an editor or an overlay on top of the card.
const OPENERS: &[Option<KeyCode>] = &[
    None,
    Some(KeyCode::Char('e')),
    Some(KeyCode::Char('n')),
    Some(KeyCode::Char('r')),
    Some(KeyCode::Char('A')),
    Some(KeyCode::Char('?')),
    Some(KeyCode::Char('v')),
];

#[test]
fn every_view_survives_every_small_size() {
    let theme = Theme::dark();
    for gate in GATES {
        for opener in OPENERS {
            let mut s = State::new("claude", "main", 0);
            s.reply_check = switchboard::backend::claude::session::reply_check;
            let mut m = Mapper::new(&[]);
            feed(&mut s, &mut m, gate);
            if let Some(k) = opener {
                key(&mut s, *k);
            }
            for w in [1u16, 2, 5, 10, 12, 20, 40, 80] {
                for h in [1u16, 2, 4, 5, 6, 8, 12, 14, 24] {
                    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
                    term.draw(|f| switchboard::ui::render(&s, &theme, f))
                        .unwrap_or_else(|e| panic!("{gate} {opener:?} at {w}x{h}: {e:?}"));
                }
            }
        }
    }
}

/// With the prompt focused the card is hidden; the prompt's frame says gates still wait.
#[test]
fn a_hidden_gate_is_announced_on_the_prompt() {
    let theme = Theme::dark();
    let mut s = State::new("claude", "main", 0);
    let mut m = Mapper::new(&[]);
    feed(&mut s, &mut m, GATES[0]);
    key(&mut s, KeyCode::Char('i'));
    assert_eq!(s.focus, switchboard::core::state::Focus::Prompt);
    let mut term = Terminal::new(TestBackend::new(100, 24)).unwrap();
    term.draw(|f| switchboard::ui::render(&s, &theme, f))
        .unwrap();
    let text = switchboard::ui::buffer_text(term.backend().buffer());
    assert!(text.contains("‖ 1 waiting · g shows it"), "{text}");
}

/// A key override is what the card shows.
#[test]
fn cards_show_overridden_keys() {
    let theme = Theme::dark();
    let mut s = State::new("claude", "main", 0);
    let mut o = std::collections::BTreeMap::new();
    o.insert("allow_once".to_string(), "Y".to_string());
    s.keymap = switchboard::core::keymap::build(&o).unwrap();
    let mut m = Mapper::new(&[]);
    feed(&mut s, &mut m, GATES[0]);
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    term.draw(|f| switchboard::ui::render(&s, &theme, f))
        .unwrap();
    let text = switchboard::ui::buffer_text(term.backend().buffer());
    assert!(text.contains("[Y] Allow once"), "{text}");
}
