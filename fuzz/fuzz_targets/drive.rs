//! Shared driver of the two wire targets: bytes become agent lines and keys, pushed through a
//! backend's mapping and the reducer, with the properties every run must keep checked as it
//! goes. Included by `claude_line.rs` and `acp_line.rs` with `#[path]`.
//!
//! Input: lines. A line that starts with byte 0x01 is keys (each further byte picks one from
//! `KEYS`); any other line is one line of agent stdout.

use std::collections::HashSet;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};
use switchboard::core::msg::{BackendEvent, Command, Effect};
use switchboard::core::state::State;
use switchboard::core::{Msg, update};
use switchboard::ui::theme::Theme;

/// One backend's mapping, both directions.
pub trait Wire {
    /// An agent stdout line → events, and lines written straight back to the agent.
    fn inbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<String>);
    /// A command of the core → events and lines to the agent.
    fn command(&mut self, c: &Command) -> (Vec<BackendEvent>, Vec<String>);
    /// The fail-closed answers written when switchboard exits.
    fn exit(&mut self) -> Vec<String>;
}

const KEYS: &[(KeyCode, KeyModifiers)] = &[
    (KeyCode::Char('y'), KeyModifiers::NONE),
    (KeyCode::Char('a'), KeyModifiers::NONE),
    (KeyCode::Char('n'), KeyModifiers::NONE),
    (KeyCode::Char('N'), KeyModifiers::NONE),
    (KeyCode::Char('e'), KeyModifiers::NONE),
    (KeyCode::Char('r'), KeyModifiers::NONE),
    (KeyCode::Char('b'), KeyModifiers::NONE),
    (KeyCode::Char('c'), KeyModifiers::NONE),
    (KeyCode::Char('A'), KeyModifiers::NONE),
    (KeyCode::Char('1'), KeyModifiers::NONE),
    (KeyCode::Char('2'), KeyModifiers::NONE),
    (KeyCode::Char(' '), KeyModifiers::NONE),
    (KeyCode::Char(']'), KeyModifiers::NONE),
    (KeyCode::Char('['), KeyModifiers::NONE),
    (KeyCode::Char('m'), KeyModifiers::NONE),
    (KeyCode::Char('i'), KeyModifiers::NONE),
    (KeyCode::Char('x'), KeyModifiers::NONE),
    (KeyCode::Char('s'), KeyModifiers::CONTROL),
    (KeyCode::Char('c'), KeyModifiers::CONTROL),
    (KeyCode::Enter, KeyModifiers::NONE),
    (KeyCode::Esc, KeyModifiers::NONE),
    (KeyCode::Tab, KeyModifiers::NONE),
    (KeyCode::Up, KeyModifiers::NONE),
    (KeyCode::Down, KeyModifiers::NONE),
    (KeyCode::Left, KeyModifiers::NONE),
    (KeyCode::Right, KeyModifiers::NONE),
    (KeyCode::Backspace, KeyModifiers::NONE),
];

/// Every line switchboard writes to an agent is one JSON value on one line.
fn check_lines(lines: &[String]) {
    for l in lines {
        assert!(!l.contains('\n'), "a reply spans lines: {l:?}");
        if let Err(e) = serde_json::from_str::<serde_json::Value>(l) {
            panic!("a reply is not JSON ({e}): {l:?}");
        }
    }
}

pub fn run(backend: switchboard::core::BackendKind, wire: &mut dyn Wire, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut state = State::new(backend, "main", 0);
    let mut at = 0u64;
    for line in text.split('\n') {
        at += 1;
        let mut msgs: Vec<Msg> = Vec::new();
        if let Some(keys) = line.strip_prefix('\u{1}') {
            for b in keys.bytes() {
                let (code, mods) = KEYS[b as usize % KEYS.len()];
                msgs.push(Msg::Key(KeyEvent::new(code, mods)));
            }
        } else {
            let (events, lines) = wire.inbound(line);
            check_lines(&lines);
            msgs.extend(
                events
                    .into_iter()
                    .map(|event| Msg::Backend { at_ms: at, event }),
            );
        }
        let mut queue: std::collections::VecDeque<Msg> = msgs.into();
        while let Some(msg) = queue.pop_front() {
            let pending: HashSet<String> = state.gates.iter().map(|g| g.id.clone()).collect();
            let opened = match &msg {
                Msg::Backend {
                    event: BackendEvent::GateOpen(g),
                    ..
                } => Some(g.id.clone()),
                _ => None,
            };
            let mut answered = HashSet::new();
            for fx in update(&mut state, msg) {
                let Effect::Send(cmd) = fx else { continue };
                if let Command::Answer { gate_id, .. } = &cmd {
                    // One answer per pending request, and only for a pending request.
                    assert!(
                        pending.contains(gate_id) || opened.as_deref() == Some(gate_id.as_str()),
                        "answer for {gate_id}, which was not pending"
                    );
                    assert!(answered.insert(gate_id.clone()), "{gate_id} answered twice");
                    assert!(
                        state.gate(gate_id).is_none(),
                        "{gate_id} still open after its answer"
                    );
                }
                let (events, lines) = wire.command(&cmd);
                check_lines(&lines);
                queue.extend(
                    events
                        .into_iter()
                        .map(|event| Msg::Backend { at_ms: at, event }),
                );
            }
            if let Some(id) = &state.active_gate {
                assert!(
                    state.gate(id).is_some(),
                    "the active gate {id} is not pending"
                );
            }
            assert!(state.selected_node < state.tree.nodes.len());
        }
    }
    check_lines(&wire.exit());
    let theme = Theme::dark();
    for (w, h) in [(80, 24), (7, 3)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        switchboard::ui::draw(&mut term, &mut state, &theme).unwrap();
    }
}
