//! Screens of an iii workspace: the deny prompt whose text is the reason the model reads, and
//! the greyed, read-only screen while the engine connection is down.
//!
//! Built from the real iii mapper fed by an in-memory engine (no socket), its events and our
//! keys through the reducer, a fake clock.
//!
//! Update with `INSTA_UPDATE=always cargo test --test iii_ui`.

use std::collections::HashMap;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Modifier;
use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

use switchboard::backend::iii::mapping::{Mapper, Out, OutCall};
use switchboard::core::msg::{Command, Effect};
use switchboard::core::state::{Focus, SessionId};
use switchboard::core::{Msg, State, update};
use switchboard::ui::theme::Theme;

#[path = "support/scene.rs"]
mod scene;

const T0: u64 = 1_000_000;

/// The workspace: the engine's own session first, then one session per iii root.
struct Iii {
    s: State,
    m: Mapper,
    roots: HashMap<String, SessionId>,
    t: u64,
    held: bool,
}

/// The engine's answers; `held`: s1's call c1 waits on the approval gate.
fn engine(c: &OutCall, held: bool) -> Value {
    let sid = c.payload["session_id"].as_str().unwrap_or("");
    match c.function_id.as_str() {
        "session::list" => json!({"sessions": [
            {"session_id": "s1", "title": "Fix the build", "status": "working"},
            {"session_id": "s2", "title": "Write the docs", "status": "idle"}]}),
        "harness::status" if sid == "s1" => {
            json!({"session_id": "s1", "status": "awaiting_functions", "pending_function_calls": ["c1"]})
        }
        "session::messages" if sid == "s1" => json!({"messages": [
            {"entry_id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": "The build fails after the rename; fix it."}]}},
            {"entry_id": "e2", "message": {"role": "assistant", "stop_reason": "function_call", "content": [
                {"type": "text", "text": "Stale artifacts break the build; I'll remove them."},
                {"type": "function_call", "id": "c1", "function_id": "shell::exec", "arguments": {"command": "rm -rf build"}}]}}]}),
        "session::messages" => json!({"messages": [
            {"entry_id": "d1", "message": {"role": "assistant", "content": [{"type": "text", "text": "The docs are written."}]}}]}),
        "approval::list-pending" if held && (sid.is_empty() || sid == "s1") => {
            json!({"pending": [held_call()]})
        }
        "approval::list-pending" => json!({"pending": []}),
        "approval::resolve" => json!({"resolved": true, "turn_resumed": true}),
        "harness::status" => Value::Null,
        "harness::session-tree" => {
            let root = c.payload["root_session_id"].as_str().unwrap_or("");
            json!({"root_session_id": root, "complete": true, "sessions": [{"session_id": root}]})
        }
        "harness::metrics" => {
            let root = c.payload["root_session_id"].as_str().unwrap_or("");
            json!({"root_session_id": root, "complete": true, "by_session": [],
                   "totals": {"sessions": 1, "turns": 1, "function_calls": 1, "function_call_errors": 0}})
        }
        // Discovery: the kebab-case approval gate, bound on its hook, our binding placed.
        "engine::functions::list" => json!({"functions": [
            {"function_id": "harness::send", "worker_name": "harness"},
            {"function_id": "approval::list-pending", "worker_name": "approval-gate"}]}),
        "engine::registered-triggers::list" => json!({"registered_triggers": [
            {"trigger_type": "harness::hook::pre-trigger", "function_id": "approval::gate"},
            {"trigger_type": "approval::pending-created", "function_id": "switchboard::t::on-approval-pending-created"}]}),
        "engine::workers::list" => json!({"workers": [{"name": "harness", "version": "1.8.25"}]}),
        _ => json!({}),
    }
}

fn held_call() -> Value {
    json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1", "function_id": "shell::exec",
        "kind": "function", "pending_at": T0 + 500, "arguments_excerpt": "{\"command\":\"rm -rf build\"}", "depth": 0})
}

impl Iii {
    fn new() -> Iii {
        let mut s = State::new(
            switchboard::core::BackendKind::Iii,
            "ws://127.0.0.1:49134",
            T0,
        );
        s.settings.bell = false;
        let mut x = Iii {
            s,
            m: Mapper::new("ui"),
            roots: HashMap::new(),
            t: T0,
            held: false,
        };
        let out = x.m.reconnected();
        x.apply(out);
        // The call is held after the transcript was read: its card shows the full arguments.
        x.held = true;
        let out = x.m.on_event("approval::pending-created", &held_call(), x.t);
        x.apply(out);
        x
    }

    fn apply(&mut self, out: Out) {
        let mut queue = std::collections::VecDeque::from([out]);
        while let Some(out) = queue.pop_front() {
            for r in out.roots {
                let id = self
                    .s
                    .add_session(switchboard::core::BackendKind::Iii, &r.title);
                self.roots.insert(r.key, id);
            }
            for (root, event) in out.events {
                let session = match self.roots.get(&root) {
                    Some(id) => *id,
                    None => SessionId::FIRST,
                };
                self.t += 250;
                let fx = update(
                    &mut self.s,
                    Msg::Backend {
                        session,
                        at_ms: self.t,
                        event,
                    },
                );
                queue.extend(self.commands(fx));
            }
            for c in out.calls {
                if c.function_id == "approval::resolve" {
                    self.held = false;
                }
                let r = engine(&c, self.held);
                queue.push_back(self.m.on_result(&c.function_id, &c.payload, &r, self.t));
            }
        }
    }

    fn commands(&mut self, fx: Vec<Effect>) -> Vec<Out> {
        let mut outs = Vec::new();
        for e in fx {
            if let Effect::Send(sid, cmd) = e
                && let Some((root, _)) = self.roots.iter().find(|(_, id)| **id == sid)
            {
                let root = root.clone();
                outs.push(self.m.command(&root, &cmd, self.t));
            }
        }
        outs
    }

    fn key(&mut self, code: KeyCode) -> Vec<Effect> {
        let fx = update(
            &mut self.s,
            Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)),
        );
        for out in self.commands(fx.clone()) {
            self.apply(out);
        }
        fx
    }

    fn draw(&mut self, w: u16, h: u16) -> Buffer {
        let _ = update(&mut self.s, Msg::Resize(w, h));
        self.s.now_ms = self.t + 1_500;
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        switchboard::ui::draw(&mut term, &mut self.s, &Theme::dark()).unwrap();
        term.backend().buffer().clone()
    }

    fn screen(&mut self, w: u16, h: u16) -> String {
        switchboard::ui::buffer_text(&self.draw(w, h))
    }

    /// Show s1's card.
    fn card(&mut self) {
        self.s.focus = Focus::Transcript;
        self.key(KeyCode::Char('g'));
        assert_eq!(self.s.focus, Focus::Gate);
        assert_eq!(self.s.sid(), self.roots["s1"]);
    }
}

fn has_row(screen: &str, text: &str) -> usize {
    screen
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no row with {text:?} in\n{screen}"))
}

#[test]
fn snap_iii_deny_reason_prompt() {
    let mut x = Iii::new();
    x.card();
    x.key(KeyCode::Char('n'));
    for c in "use cargo clean instead".chars() {
        assert!(x.key(KeyCode::Char(c)).is_empty());
    }
    let screen = x.screen(120, 30);
    has_row(&screen, "the reason the model reads");
    has_row(&screen, "reject once: Deny…");
    insta::assert_snapshot!("iii_deny_reason_prompt_120x30", screen);
    let fx = x.key(KeyCode::Enter);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Send(_, Command::Answer { .. })))
    );
    assert!(x.s.gates.is_empty());
}

#[test]
fn snap_iii_offline_greyed() {
    let mut x = Iii::new();
    x.card();
    let out = x.m.offline();
    x.apply(out);
    // A decision key is refused and says why; the screen stays.
    assert!(x.key(KeyCode::Char('y')).is_empty());
    let buf = x.draw(120, 30);
    let screen = switchboard::ui::buffer_text(&buf);
    assert_eq!(
        has_row(
            &screen,
            "reconnecting to the engine: the last state is shown greyed"
        ),
        0
    );
    has_row(
        &screen,
        "offline: reconnecting to the engine; decisions are disabled",
    );
    has_row(&screen, "reconnecting to the engine: decisions disabled");
    // The transcript text is drawn dim.
    let y = has_row(&screen, "Stale artifacts break the build") as u16;
    let line: String = (0..buf.area.width)
        .map(|x| buf[(x, y)].symbol().to_string())
        .collect();
    let x0 = line.find("Stale").unwrap();
    let x0 = line[..x0].chars().count() as u16;
    assert!(buf[(x0, y)].modifier.contains(Modifier::DIM));
    insta::assert_snapshot!("iii_offline_greyed_120x30", screen);
    insta::assert_snapshot!(
        "iii_offline_greyed_styled_120x30",
        scene::styled(&buf, 0..30)
    );
    // Back online: nothing greyed, the card answers.
    let out = x.m.reconnected();
    x.apply(out);
    let screen = x.screen(120, 30);
    assert!(!screen.contains("greyed"), "{screen}");
    x.s.status_line = None;
    x.key(KeyCode::Char('g'));
    let fx = x.key(KeyCode::Char('y'));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Send(_, Command::Answer { .. })))
    );
}
