//! Bad input never panics or breaks the state: real recorded lines, cut and mangled, fed through
//! both backends' mappings and the reducer with random keys (every overlay's key included),
//! pastes, mouse events and resizes down to 1×1 in between. After EVERY message the state's
//! invariants are checked (`check`), and the screen is drawn at the current size.

use std::collections::HashSet;
use std::path::Path;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::core::BackendKind;
use switchboard::core::gate::GateKind;
use switchboard::core::input::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use switchboard::core::msg::{BackendEvent, Command, Effect};
use switchboard::core::state::{CLOSED_CAP, Focus, LOG_CAP, Overlay, State};
use switchboard::core::{Msg, update};
use switchboard::registry::replay_mapper;
use switchboard::ui::theme::Theme;

/// A small deterministic generator (no dependency, same inputs every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return lines;
    };
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines().skip(1) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l)
                && let Some(line) = v.get("line").and_then(|x| x.as_str())
            {
                lines.push(line.to_string());
            }
        }
    }
    lines
}

fn mangle(rng: &mut Lcg, line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    match rng.below(6) {
        0 => chars[..rng.below(chars.len() + 1)].iter().collect(),
        1 => {
            let mut c = chars.clone();
            for _ in 0..3 {
                if !c.is_empty() {
                    let i = rng.below(c.len());
                    c[i] = ['{', '}', '"', '\u{0}', 'é', '\u{1b}', ':', '['][rng.below(8)];
                }
            }
            c.into_iter().collect()
        }
        2 => line.replace("\"request_id\"", "\"request_idx\""),
        3 => line.replace("\"type\":\"", "\"type\":\"x_"),
        4 => format!("{line}{line}"),
        _ => line.to_string(),
    }
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

/// Every key the reducer gives a meaning to somewhere: gate answers, editors, navigation, and
/// every overlay's opener and closer (help `?`, log `L`, status `s`, mode `m`, rules `R`, quit
/// confirm `q`/Ctrl-D, detail `v`, search `/` and Ctrl-F), plus letters typed into editors.
const KEYS: &[(KeyCode, KeyModifiers)] = &[
    (KeyCode::Char('y'), NONE),
    (KeyCode::Char('Y'), NONE),
    (KeyCode::Char('a'), NONE),
    (KeyCode::Char('n'), NONE),
    (KeyCode::Char('N'), NONE),
    (KeyCode::Char('e'), NONE),
    (KeyCode::Char('r'), NONE),
    (KeyCode::Char('b'), NONE),
    (KeyCode::Char('c'), NONE),
    (KeyCode::Char('d'), NONE),
    (KeyCode::Char('o'), NONE),
    (KeyCode::Char('1'), NONE),
    (KeyCode::Char('2'), NONE),
    (KeyCode::Char(' '), NONE),
    (KeyCode::Char(']'), NONE),
    (KeyCode::Char('['), NONE),
    (KeyCode::Char('/'), NONE),
    (KeyCode::Char('v'), NONE),
    (KeyCode::Char('A'), NONE),
    (KeyCode::Char('R'), NONE),
    (KeyCode::Char('?'), NONE),
    (KeyCode::Char('L'), NONE),
    (KeyCode::Char('s'), NONE),
    (KeyCode::Char('m'), NONE),
    (KeyCode::Char('O'), NONE),
    (KeyCode::Char('q'), NONE),
    (KeyCode::Char('g'), NONE),
    (KeyCode::Char('i'), NONE),
    (KeyCode::Char('f'), NONE),
    (KeyCode::Char('F'), NONE),
    (KeyCode::Char('t'), NONE),
    (KeyCode::Char('h'), NONE),
    (KeyCode::Char('j'), NONE),
    (KeyCode::Char('k'), NONE),
    (KeyCode::Char('l'), NONE),
    (KeyCode::Char('x'), NONE),
    (KeyCode::Char('X'), NONE),
    (KeyCode::Char('I'), NONE),
    (KeyCode::Char('='), NONE),
    (KeyCode::Char('u'), NONE),
    (KeyCode::Char('z'), NONE),
    (KeyCode::Char('é'), NONE),
    (KeyCode::Char('n'), CTRL),
    (KeyCode::Char('c'), CTRL),
    (KeyCode::Char('d'), CTRL),
    (KeyCode::Char('f'), CTRL),
    (KeyCode::Char('s'), CTRL),
    (KeyCode::Char('u'), CTRL),
    (KeyCode::Enter, NONE),
    (KeyCode::Enter, KeyModifiers::ALT),
    (KeyCode::Esc, NONE),
    (KeyCode::Tab, NONE),
    (KeyCode::BackTab, KeyModifiers::SHIFT),
    (KeyCode::Up, NONE),
    (KeyCode::Down, NONE),
    (KeyCode::Left, NONE),
    (KeyCode::Right, NONE),
    (KeyCode::Home, NONE),
    (KeyCode::End, NONE),
    (KeyCode::PageUp, NONE),
    (KeyCode::PageDown, NONE),
    (KeyCode::Backspace, NONE),
    (KeyCode::Delete, NONE),
];

/// Sizes a split terminal passes through, down to nothing.
const SIZES: &[(u16, u16)] = &[
    (90, 28),
    (120, 40),
    (40, 12),
    (20, 6),
    (12, 5),
    (8, 3),
    (3, 2),
    (1, 1),
    (200, 8),
    (6, 60),
];

fn input(rng: &mut Lcg, size: (u16, u16)) -> Msg {
    match rng.below(20) {
        0 => {
            let (w, h) = SIZES[rng.below(SIZES.len())];
            Msg::Resize(w, h)
        }
        1 => Msg::Paste(["text", "a\nb\u{1b}[31m", "{\"x\":1}", ""][rng.below(4)].to_string()),
        2 => {
            let kind = [
                MouseEventKind::ScrollUp,
                MouseEventKind::ScrollDown,
                MouseEventKind::Down(MouseButton::Left),
            ][rng.below(3)];
            Msg::Mouse(MouseEvent {
                kind,
                column: rng.below(size.0 as usize + 2) as u16,
                row: rng.below(size.1 as usize + 2) as u16,
                modifiers: NONE,
            })
        }
        3 => Msg::Tick(rng.next()),
        _ => {
            let (code, mods) = KEYS[rng.below(KEYS.len())];
            Msg::Key(KeyEvent::new(code, mods))
        }
    }
}

/// What must hold after every message, whatever came in. `pending` is the set of gate ids
/// pending before the message, `opened` the gate the message itself opened.
fn check(state: &State, fx: &[Effect], pending: &HashSet<String>, opened: Option<&str>, at: &str) {
    let ids: Vec<&str> = state.gates.iter().map(|g| g.id.as_str()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "{at}: a gate id is pending twice: {ids:?}"
    );
    // A gate is pending or closed, never both.
    for id in &ids {
        assert!(
            !state.closed_gates.iter().any(|c| c == id),
            "{at}: gate {id} is pending and closed"
        );
    }
    // The active gate exists; a pending gate is always on show; the card's UI state is kept
    // for exactly the pending gates.
    match &state.active_gate {
        Some(id) => assert!(
            state.gate(id).is_some(),
            "{at}: active gate {id} is not pending"
        ),
        None => assert!(ids.is_empty(), "{at}: gates {ids:?} pending, none active"),
    }
    let ui: HashSet<&str> = state.gate_ui.keys().map(String::as_str).collect();
    assert_eq!(
        ui, unique,
        "{at}: card state kept for other gates than the pending ones"
    );
    if state.focus == Focus::Gate {
        assert!(!ids.is_empty(), "{at}: focus on the gate card with no gate");
    }
    // At most one answer per gate, and only for a gate that was pending.
    let mut answered = HashSet::new();
    for e in fx {
        if let Effect::Send(_, Command::Answer { gate_id, .. }) = e {
            assert!(
                pending.contains(gate_id) || opened == Some(gate_id.as_str()),
                "{at}: answer for {gate_id}, which was not pending"
            );
            assert!(answered.insert(gate_id), "{at}: {gate_id} answered twice");
            assert!(
                state.gate(gate_id).is_none(),
                "{at}: {gate_id} pending after its answer"
            );
        }
    }
    // Quitting answers everything first (unless the agent is gone and nothing can be sent).
    if fx.contains(&Effect::Quit) && state.session.exited.is_none() {
        assert!(ids.is_empty(), "{at}: quit with {ids:?} unanswered");
    }
    // Every selection points at something that exists.
    let nodes = state.tree.nodes.len();
    assert!(
        state.selected_node < nodes,
        "{at}: selected node out of range"
    );
    if let Some(i) = state.selected_item {
        let n = state.tree.nodes[state.selected_node].transcript.items.len();
        assert!(i < n, "{at}: selected item {i} of {n}");
    }
    if let Some(r) = state.focus_root {
        assert!(r < nodes, "{at}: focus root {r} of {nodes}");
    }
    let rules = state.rules.list.len();
    if let Some(d) = state.pending_delete {
        assert!(d < rules, "{at}: pending delete {d} of {rules}");
    }
    match &state.overlay {
        Some(Overlay::Picker { pick, cursor }) => {
            let n = state.pick_choices(pick).len();
            assert!(*cursor < n.max(1), "{at}: picker cursor {cursor} of {n}");
        }
        Some(Overlay::Options { cursor }) => {
            let n = state.option_rows().len();
            assert!(*cursor < n.max(1), "{at}: options cursor {cursor} of {n}");
        }
        Some(Overlay::Rules { cursor }) => {
            assert!(
                *cursor < rules.max(1),
                "{at}: rules cursor {cursor} of {rules}"
            );
        }
        Some(Overlay::Detail { node, item }) => {
            assert!(*node < nodes, "{at}: detail of node {node} of {nodes}");
            if let Some(i) = item {
                let n = state.tree.nodes[*node].transcript.items.len();
                assert!(*i < n, "{at}: detail of item {i} of {n}");
            }
        }
        _ => {}
    }
    if let Some(search) = &state.search {
        if let Some(c) = search.current {
            assert!(
                c < search.hits.len(),
                "{at}: search hit {c} of {}",
                search.hits.len()
            );
        }
        for (node, item) in &search.hits {
            assert!(*node < nodes, "{at}: search hit in node {node} of {nodes}");
            let n = state.tree.nodes[*node].transcript.items.len();
            assert!(*item < n, "{at}: search hit item {item} of {n}");
        }
    }
    if let (Some(g), Some(ui)) = (state.active(), state.active_ui()) {
        match &g.kind {
            GateKind::Permission(p) => {
                let n = p.choices().len();
                assert!(ui.choice < n, "{at}: choice {} of {n}", ui.choice);
            }
            GateKind::Question(q) if !q.questions.is_empty() => {
                assert!(
                    ui.page < q.questions.len(),
                    "{at}: question page {}",
                    ui.page
                );
            }
            GateKind::Elicitation(e) => {
                assert_eq!(ui.fields.len(), e.fields.len(), "{at}: form fields");
            }
            _ => {}
        }
    }
    // Everything an agent can grow is bounded.
    assert!(state.log.len() <= LOG_CAP, "{at}: log {}", state.log.len());
    assert!(
        state.closed_gates.len() <= CLOSED_CAP,
        "{at}: closed ids {}",
        state.closed_gates.len()
    );
}

/// Apply `msg` and check the invariants.
fn step(state: &mut State, msg: Msg, at: &str) -> Vec<Effect> {
    let pending: HashSet<String> = state.gates.iter().map(|g| g.id.clone()).collect();
    let opened = match &msg {
        Msg::Backend {
            event: BackendEvent::GateOpen(g),
            ..
        } => Some(g.id.clone()),
        _ => None,
    };
    // Backend events are described by the line they came from (in `at`): formatting each one
    // would cost more than the run.
    let desc = match &msg {
        Msg::Backend { .. } => at.to_string(),
        other => format!("{at} {other:?}"),
    };
    let fx = update(state, msg);
    check(state, &fx, &pending, opened.as_deref(), &desc);
    fx
}

fn run(backend: BackendKind, dir: &str, seed: u64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let lines = corpus(&root);
    assert!(!lines.is_empty(), "no corpus in {}", root.display());
    let mut rng = Lcg(seed);
    let mut state = State::new(backend, "main", 0);
    state.reply_check = switchboard::backend::claude::session::reply_check;
    let mut mapper = replay_mapper(backend);
    let theme = Theme::dark();
    let mut size = (90u16, 28u16);
    let mut term = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    let mut seen = HashSet::new();
    for n in 0..1500u64 {
        let pick = rng.below(lines.len());
        let line = mangle(&mut rng, &lines[pick]);
        let at = format!("{backend} seed {seed} step {n} after {line:?}:");
        let events = if rng.below(4) == 0 {
            mapper.outbound(&line).0
        } else {
            mapper.inbound(&line)
        };
        for event in events {
            step(
                &mut state,
                Msg::Backend {
                    session: switchboard::core::state::SessionId::FIRST,
                    at_ms: n,
                    event,
                },
                &at,
            );
        }
        for _ in 0..rng.below(4) {
            let msg = input(&mut rng, size);
            if let Msg::Resize(w, h) = msg {
                size = (w, h);
                term.backend_mut().resize(w, h);
            }
            match &msg {
                Msg::Key(k) => seen.insert(format!("{:?}{:?}", k.code, k.modifiers)),
                other => seen.insert(format!("{:?}", std::mem::discriminant(other))),
            };
            step(&mut state, msg, &at);
        }
        if state.quitting {
            state.quitting = false;
        }
        switchboard::ui::draw(&mut term, &mut state, &theme)
            .unwrap_or_else(|e| panic!("{at} at {size:?}: {e:?}"));
    }
    // The run really pressed every key and sent every other kind of input.
    assert_eq!(seen.len(), KEYS.len() + 4, "{seen:?}");
}

#[test]
fn mangled_claude_traffic_never_panics() {
    for seed in [1, 7, 42] {
        run(BackendKind::Claude, "fixtures/recordings/claude", seed);
    }
}

#[test]
fn mangled_acp_traffic_never_panics() {
    for seed in [3, 11] {
        run(BackendKind::Acp, "fixtures/recordings/acp", seed);
    }
}

/// Found by the invariants above: an agent that reuses an answered request id opens a gate that
/// was still listed as closed.
#[test]
fn a_reused_request_id_is_pending_not_closed() {
    let line = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#;
    let mut state = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    let mut mapper = switchboard::backend::claude::mapping::Mapper::new(&[]);
    for event in mapper.on_line(line).events {
        step(
            &mut state,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: 1,
                event,
            },
            "first",
        );
    }
    state.focus = Focus::Gate;
    let fx = step(
        &mut state,
        Msg::Key(KeyEvent::new(KeyCode::Char('y'), NONE)),
        "y",
    );
    let [Effect::Send(_, answer)] = &fx[..] else {
        panic!("{fx:?}")
    };
    assert_eq!(mapper.command(answer).replies.len(), 1);
    for event in mapper.on_line(line).events {
        step(
            &mut state,
            Msg::Backend {
                session: switchboard::core::state::SessionId::FIRST,
                at_ms: 2,
                event,
            },
            "again",
        );
    }
    assert!(state.gate("r1").is_some(), "{:?}", state.gates);
}

/// Found by the invariants above (seed 109): `↑` in an empty transcript selected item 0 of 0.
#[test]
fn up_in_an_empty_transcript_selects_nothing() {
    let mut state = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    state.focus = Focus::Transcript;
    step(&mut state, Msg::Key(KeyEvent::new(KeyCode::Up, NONE)), "up");
    assert_eq!(state.selected_item, None);
    let fx = step(
        &mut state,
        Msg::Key(KeyEvent::new(KeyCode::Char('v'), NONE)),
        "v",
    );
    assert!(
        fx.is_empty() && state.overlay.is_none(),
        "{:?}",
        state.overlay
    );
}

/// Found by the invariants above (ACP seed 305): `n` after the matches went away (another node
/// selected) left the search pointing at match 1 of 0.
#[test]
fn a_search_never_points_past_its_matches() {
    let mut state = State::new(switchboard::core::BackendKind::Claude, "main", 0);
    let item = |text: &str| BackendEvent::Item {
        node: None,
        op: switchboard::core::transcript::ItemOp::Push(
            switchboard::core::transcript::ItemKind::User { text: text.into() },
        ),
    };
    step(
        &mut state,
        Msg::Backend {
            session: switchboard::core::state::SessionId::FIRST,
            at_ms: 1,
            event: item("foo"),
        },
        "item",
    );
    let open = BackendEvent::NodeOpen {
        key: "sub".into(),
        parent: None,
        patch: Default::default(),
    };
    step(
        &mut state,
        Msg::Backend {
            session: switchboard::core::state::SessionId::FIRST,
            at_ms: 1,
            event: open,
        },
        "node",
    );
    state.focus = Focus::Transcript;
    for k in ['/', 'f', 'o', 'o'] {
        step(
            &mut state,
            Msg::Key(KeyEvent::new(KeyCode::Char(k), NONE)),
            "type",
        );
    }
    step(
        &mut state,
        Msg::Key(KeyEvent::new(KeyCode::Enter, NONE)),
        "enter",
    );
    assert_eq!(state.search.as_ref().unwrap().current, Some(0));
    state.selected_node = state.tree.nodes.len() - 1;
    state.selected_item = None;
    step(
        &mut state,
        Msg::Key(KeyEvent::new(KeyCode::Char('n'), NONE)),
        "n",
    );
    assert_eq!(state.search.as_ref().unwrap().current, None);
}
