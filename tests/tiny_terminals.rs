//! No screen size may crash the UI: every gate kind, editor and overlay (help, log, status,
//! mode, rules, quit confirm, detail, the replay inspector, search) and a scrolled-back
//! transcript are drawn at sizes from 1×1 up, as a terminal split shrinks.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};
use switchboard::core::msg::BackendEvent;
use switchboard::core::rules::{Origin, parse_spec_line};
use switchboard::core::state::{Focus, Overlay, State};
use switchboard::core::transcript::{ItemKind, ItemOp};
use switchboard::core::{Msg, update};
use switchboard::ui::theme::Theme;

fn feed(s: &mut State, m: &mut Mapper, line: &str) {
    for event in m.on_line(line).events {
        let _ = update(
            s,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: 1,
                event,
            },
        );
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
            let mut s = State::new(switchboard::core::BackendKind::Claude, "main", 0);
            s.reply_check = switchboard::backend::claude::session::reply_check;
            let mut m = Mapper::new(&[]);
            feed(&mut s, &mut m, gate);
            if let Some(k) = opener {
                key(&mut s, *k);
            }
            for w in [1u16, 2, 5, 10, 12, 20, 40, 80] {
                for h in [1u16, 2, 4, 5, 6, 8, 12, 14, 24] {
                    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
                    switchboard::ui::draw(&mut term, &mut s, &theme)
                        .unwrap_or_else(|e| panic!("{gate} {opener:?} at {w}x{h}: {e:?}"));
                }
            }
        }
    }
}

/// Widths and heights a shrinking split passes through.
const WIDTHS: &[u16] = &[1, 2, 3, 4, 5, 6, 8, 10, 12, 20, 40, 80];
const HEIGHTS: &[u16] = &[1, 2, 3, 4, 5, 6, 8, 12, 14, 24];

/// A session with something in every view: a real recorded session with sub-agents, a long
/// transcript, a stderr log, a rule and a pending gate.
fn busy_state() -> State {
    let mut s = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    s.reply_check = switchboard::backend::claude::session::reply_check;
    let mut m = Mapper::new(&[]);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/recordings/claude/subagents.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut fed = 0;
    for l in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["dir"] == "in" {
            feed(&mut s, &mut m, v["line"].as_str().unwrap());
            fed += 1;
        }
    }
    assert!(
        fed > 10 && s.tree.nodes.len() > 1,
        "{fed} lines, {} nodes",
        s.tree.nodes.len()
    );
    // The modes a Claude session declares when its `initialize` is answered (this recording
    // starts later): what `m` offers.
    s.session.capabilities.modes = switchboard::core::state::PERMISSION_MODES
        .iter()
        .map(|m| m.to_string())
        .collect();
    for i in 0..80 {
        let event = BackendEvent::Item {
            node: None,
            op: ItemOp::Push(ItemKind::Assistant {
                text: format!(
                    "paragraph {i}: a long line of text that wraps on a narrow screen\nand a second line"
                ),
                streaming: false,
                aborted: false,
            }),
        };
        let _ = update(
            &mut s,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: 2,
                event,
            },
        );
    }
    for i in 0..30 {
        let event = BackendEvent::Stderr(format!("stderr line {i} with some width to it"));
        let _ = update(
            &mut s,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: 3,
                event,
            },
        );
    }
    s.rules.add(
        parse_spec_line("allow Bash git status *").unwrap(),
        Origin::Session,
    );
    feed(&mut s, &mut m, GATES[0]);
    assert!(s.gate("p").is_some(), "{:?}", s.gates);
    s.selected_node = 0;
    s
}

/// One view to draw: how to reach it from the transcript, and how to tell it is there.
struct View {
    name: &'static str,
    keys: &'static [KeyCode],
    focus: Focus,
    shown: fn(&State) -> bool,
}

const VIEWS: &[View] = &[
    View {
        name: "help",
        keys: &[KeyCode::Char('?'), KeyCode::PageDown],
        focus: Focus::Transcript,
        shown: |s| s.overlay == Some(Overlay::Help) && s.overlay_scroll > 0,
    },
    View {
        name: "log",
        keys: &[KeyCode::Char('L'), KeyCode::Up],
        focus: Focus::Transcript,
        shown: |s| s.overlay == Some(Overlay::Log) && !s.log.is_empty(),
    },
    View {
        name: "status",
        keys: &[KeyCode::Char('s')],
        focus: Focus::Transcript,
        shown: |s| s.overlay == Some(Overlay::Status),
    },
    View {
        name: "mode",
        keys: &[KeyCode::Char('m'), KeyCode::Down],
        focus: Focus::Transcript,
        shown: |s| matches!(s.overlay, Some(Overlay::Picker { cursor: 1, .. })),
    },
    View {
        name: "rules",
        keys: &[KeyCode::Char('R')],
        focus: Focus::Transcript,
        shown: |s| matches!(s.overlay, Some(Overlay::Rules { .. })) && !s.rules.list.is_empty(),
    },
    View {
        name: "quit confirm",
        keys: &[KeyCode::Char('q')],
        focus: Focus::Transcript,
        shown: |s| s.overlay == Some(Overlay::ConfirmQuit),
    },
    View {
        name: "detail of an item",
        keys: &[KeyCode::Up, KeyCode::Up, KeyCode::Char('v')],
        focus: Focus::Transcript,
        shown: |s| matches!(s.overlay, Some(Overlay::Detail { item: Some(_), .. })),
    },
    View {
        name: "detail of the gate",
        keys: &[KeyCode::Char('v')],
        focus: Focus::Gate,
        shown: |s| matches!(s.overlay, Some(Overlay::Detail { item: None, .. })),
    },
    View {
        name: "search",
        keys: &[KeyCode::Char('/'), KeyCode::Char('p'), KeyCode::Char('a')],
        focus: Focus::Transcript,
        shown: |s| {
            s.search
                .as_ref()
                .is_some_and(|x| x.editing && x.query == "pa")
        },
    },
    View {
        name: "scrolled-back transcript",
        keys: &[KeyCode::PageUp, KeyCode::PageUp, KeyCode::PageUp],
        focus: Focus::Transcript,
        shown: |s| s.overlay.is_none() && s.scroll_back >= 10,
    },
    View {
        name: "transcript at its top",
        keys: &[KeyCode::Home],
        focus: Focus::Transcript,
        shown: |s| s.overlay.is_none() && s.scroll_back > 1000,
    },
];

#[test]
fn every_overlay_and_a_scrolled_back_transcript_survive_every_small_size() {
    let theme = Theme::dark();
    let base = busy_state();
    let mut views: Vec<(&str, State)> = VIEWS
        .iter()
        .map(|v| {
            let mut s = base.clone();
            s.focus = v.focus;
            // Drawn between keys as the app does: page moves use the drawn height.
            let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
            for k in v.keys {
                switchboard::ui::draw(&mut term, &mut s, &theme).unwrap();
                key(&mut s, *k);
            }
            assert!(
                (v.shown)(&s),
                "{}: not open ({:?}, scroll {}, focus {:?}, node {})",
                v.name,
                s.overlay,
                s.scroll_back,
                s.focus,
                s.selected_node
            );
            (v.name, s)
        })
        .collect();
    let mut inspector = base.clone();
    inspector.overlay = Some(Overlay::Text {
        title: "frame 3 of 9".into(),
        body: "{\"type\":\"assistant\"}\n".repeat(40),
    });
    views.push(("replay inspector", inspector));
    for (name, s) in &mut views {
        for &w in WIDTHS {
            for &h in HEIGHTS {
                let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
                switchboard::ui::draw(&mut term, s, &theme)
                    .unwrap_or_else(|e| panic!("{name} at {w}x{h}: {e:?}"));
            }
        }
    }
}

/// With the prompt focused the card is hidden; the prompt's frame says gates still wait.
#[test]
fn a_hidden_gate_is_announced_on_the_prompt() {
    let theme = Theme::dark();
    let mut s = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    let mut m = Mapper::new(&[]);
    feed(&mut s, &mut m, GATES[0]);
    key(&mut s, KeyCode::Char('i'));
    assert_eq!(s.focus, switchboard::core::state::Focus::Prompt);
    let mut term = Terminal::new(TestBackend::new(100, 24)).unwrap();
    switchboard::ui::draw(&mut term, &mut s, &theme).unwrap();
    let text = switchboard::ui::buffer_text(term.backend().buffer());
    assert!(text.contains("‖ 1 waiting · g shows it"), "{text}");
}

/// A key override is what the card shows.
#[test]
fn cards_show_overridden_keys() {
    let theme = Theme::dark();
    let mut s = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    let mut o = std::collections::BTreeMap::new();
    o.insert("allow_once".to_string(), "Y".to_string());
    s.keymap = switchboard::core::keymap::build(&o).unwrap();
    let mut m = Mapper::new(&[]);
    feed(&mut s, &mut m, GATES[0]);
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    switchboard::ui::draw(&mut term, &mut s, &theme).unwrap();
    let text = switchboard::ui::buffer_text(term.backend().buffer());
    assert!(text.contains("[Y] Allow once"), "{text}");
}
