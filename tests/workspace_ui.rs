//! Screen snapshots of a workspace of three sessions: the tree with every session, the gate
//! inbox with marks, the new-session dialog and the close-with-pending confirmation.
//!
//! Each session is fed real Claude stream-json lines through its own pure `Mapper` and the
//! reducer, with a fake clock, as `tests/support/scene.rs` does for one session.
//!
//! Update with `INSTA_UPDATE=always cargo test --test workspace_ui`.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};

use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::msg::{BackendEvent, Effect};
use switchboard::core::state::{Focus, Overlay, ProfileChoice, SessionId};
use switchboard::core::{Msg, State, update};
use switchboard::ui::theme::Theme;

#[path = "support/scene.rs"]
mod scene;
use scene::{
    Opening, assistant, control, init, init_reply, result_ok, task_started, text, tool_use,
};

const T0: u64 = 1_000_000;

/// A workspace under construction: one mapper per session, a fake clock.
struct Ws {
    s: State,
    maps: Vec<(SessionId, Mapper)>,
    t: u64,
}

impl Ws {
    fn new(names: &[&str]) -> Ws {
        let mut s = State::new(switchboard::core::BackendKind::Claude, names[0], T0);
        s.settings.bell = false;
        let mut ids = vec![SessionId::FIRST];
        for n in &names[1..] {
            ids.push(s.add_session(switchboard::core::BackendKind::Claude, n));
        }
        let mut ws = Ws {
            s,
            maps: ids
                .into_iter()
                .map(|id| {
                    let mut m = Mapper::new(&[]);
                    let _ = m.initialize_line();
                    (id, m)
                })
                .collect(),
            t: T0,
        };
        for i in 0..names.len() {
            ws.event(
                i,
                BackendEvent::Started {
                    program: "claude -p --verbose --output-format stream-json".into(),
                    pid: Some(4242 + i as u32),
                },
            );
            ws.line(i, init_reply(Opening::Plain));
            ws.line(i, init(Opening::Plain));
        }
        ws
    }

    fn event(&mut self, i: usize, e: BackendEvent) {
        self.t += 250;
        let session = self.maps[i].0;
        let fx = update(
            &mut self.s,
            Msg::Backend {
                session,
                at_ms: self.t,
                event: e,
            },
        );
        self.effects(fx);
    }

    fn line(&mut self, i: usize, v: Value) -> &mut Ws {
        let out = self.maps[i].1.on_line(&v.to_string());
        for e in out.events {
            self.event(i, e);
        }
        self
    }

    fn effects(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Send(sid, cmd) = &e
                && let Some(i) = self.maps.iter().position(|(id, _)| id == sid)
            {
                let out = self.maps[i].1.command(cmd);
                for ev in out.events {
                    self.event(i, ev);
                }
            }
        }
    }

    fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) -> &mut Ws {
        let fx = update(&mut self.s, Msg::Key(KeyEvent::new(code, mods)));
        self.effects(fx);
        self
    }

    fn key(&mut self, code: KeyCode) -> &mut Ws {
        self.key_mod(code, KeyModifiers::NONE)
    }

    fn screen(&mut self, w: u16, h: u16) -> String {
        let _ = update(&mut self.s, Msg::Resize(w, h));
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        switchboard::ui::draw(&mut term, &mut self.s, &Theme::dark()).unwrap();
        switchboard::ui::buffer_text(term.backend().buffer())
    }
}

fn bash(id: &str, tool_use_id: &str, command: &str) -> Value {
    control(
        id,
        json!({"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":tool_use_id,
            "input":{"command":command}}),
    )
}

/// `api` fans out a sub-agent and waits on `npm test`; `web` waits on `npm test` and a
/// question; `docs` finished its turn.
fn three_sessions() -> Ws {
    let mut ws = Ws::new(&["api", "web", "docs"]);
    ws.line(
        0,
        assistant(
            "m1",
            None,
            json!([text("I'll look for the flaky test with a helper."),
                tool_use("toolu_task", "Agent", json!({"description":"Find the flaky test","prompt":"find it","subagent_type":"Explore"}))]),
        ),
    )
    .line(
        0,
        task_started("t1", "toolu_task", None, "Find the flaky test", "Explore"),
    )
    .line(
        0,
        assistant("m2", None, json!([tool_use("toolu_npm_a", "Bash", json!({"command":"npm test"}))])),
    )
    .line(0, bash("req-a1", "toolu_npm_a", "npm test"));
    ws.line(
        1,
        assistant(
            "m1",
            None,
            json!([tool_use(
                "toolu_npm_b",
                "Bash",
                json!({"command":"npm test"})
            )]),
        ),
    )
    .line(1, bash("req-b1", "toolu_npm_b", "npm test"))
    .line(
        1,
        assistant(
            "m2",
            None,
            json!([tool_use("toolu_ask", "AskUserQuestion", json!({}))]),
        ),
    )
    .line(
        1,
        control(
            "req-b2",
            json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"toolu_ask",
                "input":{"questions":[{"question":"Which snapshot should win?","header":"Snapshot",
                    "multiSelect":false,"options":[{"label":"Old","description":"keep"},
                    {"label":"New","description":"update"}]}]}}),
        ),
    );
    ws.line(
        2,
        assistant("m1", None, json!([text("The changelog is updated.")])),
    )
    .line(2, result_ok("The changelog is updated."));
    ws.line(
        2,
        assistant(
            "m2",
            None,
            json!([tool_use(
                "toolu_rm",
                "Bash",
                json!({"command":"rm -rf docs/_build"})
            )]),
        ),
    )
    .line(2, bash("req-c1", "toolu_rm", "rm -rf docs/_build"));
    ws.s.focus = Focus::Tree;
    ws
}

fn snap(ws: &mut Ws, name: &str) {
    for (w, h) in [(80, 24), (120, 40)] {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), ws.screen(w, h));
    }
}

#[test]
fn tree_with_three_sessions() {
    let mut ws = three_sessions();
    // The first session's card is up (its gate opened while it was shown); the others wait.
    assert_eq!(ws.s.pending_total(), 4);
    snap(&mut ws, "ws_tree_three_sessions");
}

#[test]
fn inbox_with_marks() {
    let mut ws = three_sessions();
    ws.key(KeyCode::Char('I'));
    assert_eq!(ws.s.overlay, Some(Overlay::Inbox));
    // `=` on the oldest (npm test in api) marks the identical one in web too.
    ws.key(KeyCode::Char('='));
    assert_eq!(ws.s.inbox.marked.len(), 2);
    ws.key(KeyCode::Down);
    snap(&mut ws, "ws_inbox_marks");
}

#[test]
fn new_session_dialog() {
    let mut ws = three_sessions();
    ws.s.profiles = vec![
        ProfileChoice {
            name: "api".into(),
            backend: "claude".into(),
            cwd: "/home/dev/src/api".into(),
            provider: None,
        },
        ProfileChoice {
            name: "review".into(),
            backend: "acp".into(),
            cwd: "/home/dev/src/web".into(),
            provider: None,
        },
    ];
    ws.key_mod(KeyCode::Char('n'), KeyModifiers::CONTROL);
    ws.key(KeyCode::Down);
    ws.key(KeyCode::Tab);
    ws.key(KeyCode::Tab);
    for c in "review the open PR".chars() {
        ws.key(KeyCode::Char(c));
    }
    snap(&mut ws, "ws_new_session_dialog");
}

#[test]
fn close_with_pending_confirm() {
    let mut ws = three_sessions();
    ws.key(KeyCode::Char('x'));
    assert!(matches!(ws.s.overlay, Some(Overlay::ConfirmClose { .. })));
    snap(&mut ws, "ws_close_with_pending_confirm");
}

#[test]
fn the_quit_confirmation_says_which_gates_stay_held() {
    let mut ws = three_sessions();
    // `web` stands for an engine's session: its two gates are durable holds.
    ws.s.sessions[1].keeps_gates_on_quit = true;
    ws.key(KeyCode::Char('q'));
    let screen = ws.screen(120, 40);
    assert!(
        screen.contains("Quitting answers 2 (deny...), leaves 2 held."),
        "{screen}"
    );
    ws.key(KeyCode::Esc);
    ws.s.select_session(1, 0);
    ws.s.focus = Focus::Tree;
    ws.key(KeyCode::Char('x'));
    let screen = ws.screen(120, 40);
    assert!(
        screen.contains("Closing leaves them held where they live"),
        "{screen}"
    );
}
