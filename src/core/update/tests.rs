//! Reducer tests: no terminal, no IO.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

use super::update;
use crate::backend::claude::gates;
use crate::core::gate::{Decision, Gate, GateKind};
use crate::core::msg::{BackendEvent, Command, Effect, SessionPatch, TurnState};
use crate::core::state::{EditorPurpose, Focus, Overlay, State};
use crate::core::transcript::{ItemKind, ItemOp, Level, Tone};
use crate::core::tree::{NodePatch, NodeStatus};

// ---- helpers

fn st() -> State {
    State::new("claude", "main", 0)
}

fn ev(s: &mut State, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        crate::core::Msg::Backend {
            at_ms: 1_000,
            event,
        },
    )
}

fn press(s: &mut State, code: KeyCode) -> Vec<Effect> {
    update(
        s,
        crate::core::Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)),
    )
}

fn ch(s: &mut State, c: char) -> Vec<Effect> {
    press(s, KeyCode::Char(c))
}

fn chord(s: &mut State, c: char, mods: KeyModifiers) -> Vec<Effect> {
    update(
        s,
        crate::core::Msg::Key(KeyEvent::new(KeyCode::Char(c), mods)),
    )
}

fn ctrl(s: &mut State, c: char) -> Vec<Effect> {
    chord(s, c, KeyModifiers::CONTROL)
}

/// Type text key by key; no key may produce an effect.
fn typ(s: &mut State, text: &str) {
    for c in text.chars() {
        assert_eq!(ch(s, c), vec![], "typing {c:?} produced effects");
    }
}

/// Delete everything in the open editor with Backspace (lines join as the cursor backs up).
fn clear_editor(s: &mut State) {
    let n = editor_text(s).chars().count();
    for _ in 0..n + 1 {
        press(s, KeyCode::Backspace);
    }
    assert_eq!(editor_text(s), "");
}

fn editor_text(s: &State) -> String {
    s.active_ui()
        .and_then(|ui| ui.editor.as_ref())
        .map(|e| e.area.lines().join("\n"))
        .expect("an editor is open")
}

fn editor_purpose(s: &State) -> Option<EditorPurpose> {
    s.active_ui()
        .and_then(|ui| ui.editor.as_ref())
        .map(|e| e.purpose)
}

fn ui_error(s: &State) -> Option<String> {
    s.active_ui().and_then(|ui| ui.error.clone())
}

fn gate(id: &str, node: &str, kind: GateKind, reply: Value, def: &'static str) -> Gate {
    Gate {
        id: id.into(),
        node_key: node.into(),
        asked_by: None,
        kind,
        opened_ms: 1_000,
        default_reply: crate::core::text::pretty_json(&reply),
        reply_definition: def,
    }
}

fn bash(id: &str, command: &str) -> Gate {
    let req = json!({"subtype":"can_use_tool","tool_name":"Bash","input":{"command":command}});
    gate(
        id,
        "root",
        gates::permission(&req),
        json!({"behavior":"allow","updatedInput":{"command":command}}),
        "AllowBody|DenyBody",
    )
}

fn permission_req(id: &str, req: Value) -> Gate {
    let input = req["input"].clone();
    gate(
        id,
        "root",
        gates::permission(&req),
        json!({"behavior":"allow","updatedInput":input}),
        "AllowBody|DenyBody",
    )
}

const Q1: &str = "Which modules should log?";
const Q2: &str = "How should it roll out?";

fn questions_input() -> Value {
    json!({"questions":[
        {"question":Q1,"header":"Modules","multiSelect":true,"options":[
            {"label":"Auth","description":"Logins"},
            {"label":"Billing","description":"Payments"},
            {"label":"Search","description":"Queries"},
            {"label":"Admin","description":"Back office"}]},
        {"question":Q2,"header":"Rollout","multiSelect":false,"options":[
            {"label":"Behind a flag","description":"Ship dark"},
            {"label":"Everywhere at once","description":"One deploy"}]}
    ]})
}

fn question(id: &str, input: Value) -> Gate {
    let req = json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":input});
    gate(
        id,
        "root",
        gates::question(&req),
        json!({"behavior":"allow","updatedInput":{"questions":input["questions"].clone(),"answers":{}}}),
        "AllowBody|DenyBody",
    )
}

fn dialog(id: &str, options: Value) -> Gate {
    let req = json!({"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt",
        "payload":{"title":"Use a fallback model?","message":"Retry?","options":options}});
    gate(
        id,
        "root",
        gates::dialog(&req, "refusal_fallback_prompt"),
        json!({"behavior":"completed","result":true}),
        "DialogResponseBody",
    )
}

fn ticket_form(id: &str) -> Gate {
    let req = json!({"subtype":"elicitation","mcp_server_name":"tickets",
        "message":"Create a ticket?","mode":"form",
        "requested_schema":{"type":"object","properties":{
            "title":{"type":"string","title":"Title"},
            "priority":{"type":"string","enum":["low","medium","high"]},
            "estimate":{"type":"number","title":"Estimate (days)"},
            "count":{"type":"integer","title":"Count"},
            "notify":{"type":"boolean","title":"Notify the team"}},
        "required":["title"]}});
    gate(
        id,
        "root",
        gates::elicitation(&req),
        json!({"action":"accept","content":{}}),
        "ElicitResponseBody",
    )
}

fn breakpoint(id: &str) -> Gate {
    let req = json!({"subtype":"hook_callback","callback_id":"sb-break-Grep","input":{
        "hook_event_name":"PreToolUse","tool_name":"Grep",
        "tool_input":{"pattern":"fn authenticate","path":"src"}}});
    gate(
        id,
        "root",
        gates::breakpoint(&req),
        json!({}),
        "HookOutputBody",
    )
}

fn open(s: &mut State, g: Gate) -> Vec<Effect> {
    ev(s, BackendEvent::GateOpen(g))
}

fn answer_fx(id: &str, decision: Decision) -> Vec<Effect> {
    vec![Effect::Send(Command::Answer {
        gate_id: id.into(),
        decision,
    })]
}

/// The last row of `node`'s transcript.
fn last(s: &State, node: usize) -> &ItemKind {
    &s.tree.nodes[node]
        .transcript
        .items
        .last()
        .expect("the transcript has rows")
        .kind
}

fn last_audit(s: &State, node: usize) -> (String, Tone) {
    match last(s, node) {
        ItemKind::Audit { text, tone } => (text.clone(), *tone),
        other => panic!("last row is not an audit row: {other:?}"),
    }
}

fn sub_agent(s: &mut State, key: &str, parent: Option<&str>, name: &str) {
    ev(
        s,
        BackendEvent::NodeOpen {
            key: key.into(),
            parent: parent.map(str::to_string),
            patch: NodePatch {
                name: Some(name.into()),
                status: Some(NodeStatus::Running),
                ..NodePatch::default()
            },
        },
    );
}

fn running(s: &mut State, interruptible: bool) {
    ev(
        s,
        BackendEvent::Session(SessionPatch {
            interruptible: Some(interruptible),
            ..SessionPatch::default()
        }),
    );
    ev(s, BackendEvent::Turn(TurnState::Running));
}

// ---- opening and closing gates

#[test]
fn gate_open_takes_focus_and_rings() {
    let mut s = st();
    assert_eq!(s.focus, Focus::Prompt);
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.gates.len(), 1);
    // A second gate queues behind the first without stealing the card.
    let fx = open(&mut s, bash("g2", "touch y"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.gates.len(), 2);
}

#[test]
fn gate_open_does_not_steal_focus_while_typing() {
    let mut s = st();
    typ(&mut s, "half a thought");
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Prompt, "typing keeps the prompt focused");
    assert_eq!(s.prompt_text(), "half a thought");
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    // `y` goes into the prompt, not to the gate.
    assert_eq!(ch(&mut s, 'y'), vec![]);
    assert_eq!(s.gates.len(), 1);
    assert_eq!(s.prompt_text(), "half a thoughty");
    // `g` from another pane reaches it.
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.focus, Focus::Transcript);
    ch(&mut s, 'g');
    assert_eq!(s.focus, Focus::Gate);
}

#[test]
fn bell_only_when_enabled() {
    let mut s = st();
    s.settings.bell = false;
    let fx = open(&mut s, bash("g1", "touch x"));
    assert_eq!(fx, vec![]);
    assert_eq!(s.focus, Focus::Gate);
}

#[test]
fn gate_open_while_an_overlay_is_up_keeps_the_overlay() {
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    ch(&mut s, '?');
    assert_eq!(s.overlay, Some(Overlay::Help));
    open(&mut s, bash("g1", "touch x"));
    assert_eq!(s.overlay, Some(Overlay::Help));
    assert_eq!(s.focus, Focus::Transcript);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
}

#[test]
fn duplicate_gate_id_keeps_the_first() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = open(&mut s, bash("g1", "rm -rf /"));
    assert_eq!(fx, vec![], "a duplicate neither rings nor opens");
    assert_eq!(s.gates.len(), 1);
    let GateKind::Permission(p) = &s.gates[0].kind else {
        panic!("not a permission")
    };
    assert_eq!(p.summary, "touch x");
    match last(&s, 0) {
        ItemKind::Protocol { level, text } => {
            assert_eq!(*level, Level::Error);
            assert!(text.contains("duplicate request_id g1"), "{text}");
        }
        other => panic!("expected a protocol row, got {other:?}"),
    }
    // Answering still sends exactly one answer, for the first gate.
    let fx = ch(&mut s, 'y');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: false
            }
        )
    );
    assert_eq!(s.gates.len(), 0);
}

#[test]
fn reused_id_after_answer_warns_but_opens() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'y');
    let fx = open(&mut s, bash("g1", "touch y"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.gates.len(), 1);
    let rows = &s.tree.nodes[0].transcript.items;
    assert!(rows.iter().any(|i| matches!(&i.kind,
        ItemKind::Protocol { level: Level::Warn, text } if text.contains("reused after it was answered"))));
}

#[test]
fn withdrawn_gate_is_removed_and_never_answered() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ev(&mut s, BackendEvent::GateWithdrawn { id: "g1".into() });
    assert_eq!(fx, vec![]);
    assert!(s.gates.is_empty());
    assert_eq!(s.active_gate, None);
    assert_eq!(s.focus, Focus::Transcript);
    assert!(s.closed_gates.contains(&"g1".to_string()));
    assert!(!s.gate_ui.contains_key("g1"));
    assert_eq!(
        last_audit(&s, 0),
        (
            "withdrawn by the agent: Bash `touch x`".to_string(),
            Tone::Neutral
        )
    );
    // Neither a key nor a direct answer can answer it any more.
    assert_eq!(ch(&mut s, 'y'), vec![]);
    let fx = super::answer(
        &mut s,
        "g1",
        Decision::Allow {
            updated_input: None,
            always: false,
        },
    );
    assert_eq!(fx, vec![]);
    assert_eq!(s.answered, 0);
    // Withdrawing an unknown id is a protocol warning, not a crash.
    ev(&mut s, BackendEvent::GateWithdrawn { id: "nope".into() });
    assert!(
        matches!(last(&s, 0), ItemKind::Protocol { level: Level::Warn, text } if text.contains("nope"))
    );
}

#[test]
fn withdrawing_the_active_gate_shows_the_next() {
    let mut s = st();
    sub_agent(&mut s, "toolu_a", None, "Explore");
    open(&mut s, bash("g1", "touch x"));
    let mut g2 = bash("g2", "touch y");
    g2.node_key = "toolu_a".into();
    open(&mut s, g2);
    ev(&mut s, BackendEvent::GateWithdrawn { id: "g1".into() });
    assert_eq!(s.active_gate.as_deref(), Some("g2"));
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.selected_node, 1);
}

// ---- permission

#[test]
fn permission_allow_once() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ch(&mut s, 'y');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: false
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0),
        ("allowed once: Bash `touch x`".to_string(), Tone::Allowed)
    );
    assert_eq!(s.answered, 1);
    assert!(s.gates.is_empty());
    assert_eq!(s.focus, Focus::Transcript);
    // Once: a second `y` answers nothing.
    assert_eq!(ch(&mut s, 'y'), vec![]);
    assert_eq!(s.answered, 1);
}

#[test]
fn a_gate_never_takes_the_keyboard_from_someone_typing() {
    let mut s = st();
    // Enter sends; the next letter typed before the gate arrives marks the user as typing.
    for c in "bash".chars() {
        ch(&mut s, c);
    }
    let _ = update(
        &mut s,
        crate::core::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    ch(&mut s, 'y');
    open(&mut s, bash("g1", "touch x"));
    assert_eq!(s.focus, Focus::Prompt, "the gate waits for `g`");
    assert_eq!(s.prompt_text(), "y", "the letter went to the prompt");
    assert_eq!(s.answered, 0);
    // Right after a send, with nothing typed since, the gate takes focus as usual.
    let mut s = st();
    for c in "go".chars() {
        ch(&mut s, c);
    }
    let _ = update(
        &mut s,
        crate::core::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    open(&mut s, bash("g2", "touch y"));
    assert_eq!(s.focus, Focus::Gate);
    // `i` leaves the card for the prompt without answering.
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Prompt);
    assert_eq!(s.gates.len(), 1);
}

#[test]
fn permission_allow_always() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ch(&mut s, 'a');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: true
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0).0,
        "allowed always (session rule): Bash `touch x`"
    );
}

#[test]
fn permission_without_always_ignores_a() {
    let mut s = st();
    open(
        &mut s,
        permission_req(
            "g1",
            json!({"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},
                "suppress_always_allow_rule":true}),
        ),
    );
    assert_eq!(ch(&mut s, 'a'), vec![]);
    assert_eq!(s.gates.len(), 1);
}

#[test]
fn permission_deny_with_message() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    assert_eq!(ch(&mut s, 'n'), vec![]);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    // Letters go to the editor, not to the card: `y` here is text.
    typ(&mut s, "not in my repo");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Deny {
                message: "not in my repo".into(),
                interrupt: false
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0),
        (
            "denied: Bash `touch x` — not in my repo".to_string(),
            Tone::Denied
        )
    );
}

#[test]
fn permission_deny_with_empty_message_uses_a_default() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Deny {
                message: "The user denied this request.".into(),
                interrupt: false
            }
        )
    );
}

#[test]
fn permission_deny_editor_esc_goes_back_to_the_card() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    typ(&mut s, "hmm");
    assert_eq!(press(&mut s, KeyCode::Esc), vec![]);
    assert_eq!(editor_purpose(&s), None);
    assert_eq!(s.gates.len(), 1);
    assert_eq!(s.focus, Focus::Gate);
}

#[test]
fn permission_deny_and_stop() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ch(&mut s, 'N');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Deny {
                message: "The user denied this and stopped the turn.".into(),
                interrupt: true
            }
        )
    );
    assert!(
        last_audit(&s, 0)
            .0
            .starts_with("denied and interrupted: Bash `touch x`")
    );
}

#[test]
fn permission_edit_input() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'e');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::EditInput));
    assert_eq!(editor_text(&s), "{\n  \"command\": \"touch x\"\n}");
    // Invalid JSON: an error, the gate stays, nothing is sent.
    clear_editor(&mut s);
    typ(&mut s, "{bad");
    assert_eq!(ctrl(&mut s, 's'), vec![]);
    assert!(ui_error(&s).unwrap().starts_with("not valid JSON"));
    assert_eq!(s.gates.len(), 1);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::EditInput));
    // JSON but not an object.
    clear_editor(&mut s);
    typ(&mut s, "[1]");
    assert_eq!(ctrl(&mut s, 's'), vec![]);
    assert_eq!(
        ui_error(&s).as_deref(),
        Some("the tool input must be a JSON object")
    );
    // Enter is a newline in this editor, not a submit.
    clear_editor(&mut s);
    typ(&mut s, "{\"command\":");
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    typ(&mut s, "\"touch y\"}");
    assert_eq!(editor_text(&s), "{\"command\":\n\"touch y\"}");
    let fx = ctrl(&mut s, 's');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: Some(json!({"command":"touch y"})),
                always: false
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0),
        (
            "allowed with edited input: Bash `touch x`".to_string(),
            Tone::Allowed
        )
    );
}

#[test]
fn permission_arrows_and_enter() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    // Choices: Allow once, Allow always, Deny…, Deny & stop, Edit input…
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().choice, 1);
    press(&mut s, KeyCode::Right);
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    press(&mut s, KeyCode::Esc);
    press(&mut s, KeyCode::Left);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: true
            }
        )
    );
}

#[test]
fn default_to_no_disables_y() {
    let mut s = st();
    open(
        &mut s,
        permission_req(
            "g1",
            json!({"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -r build"},
                "default_to_no":true}),
        ),
    );
    // The highlight starts on Deny.
    assert_eq!(s.active_ui().unwrap().choice, 2);
    assert_eq!(ch(&mut s, 'y'), vec![]);
    assert!(ui_error(&s).unwrap().contains("defaults to no"));
    assert_eq!(s.gates.len(), 1);
    // Enter on the default opens the deny editor…
    press(&mut s, KeyCode::Enter);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    press(&mut s, KeyCode::Esc);
    // …and allowing takes a deliberate move to "Allow once".
    press(&mut s, KeyCode::Up);
    press(&mut s, KeyCode::Up);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: false
            }
        )
    );
}

// ---- AskUserQuestion

#[test]
fn question_multiselect_other_then_single_select() {
    let mut s = st();
    open(&mut s, question("q1", questions_input()));
    // Toggle in a scrambled order: Admin, Auth, Search, then Search off again.
    for c in ['4', '1', '3'] {
        assert_eq!(ch(&mut s, c), vec![]);
    }
    // A digit also moves the cursor: back on Search (row 2) after a round trip, untoggle it.
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Up);
    assert_eq!(s.active_ui().unwrap().cursor, 2);
    assert_eq!(ch(&mut s, ' '), vec![]);
    assert_eq!(
        s.active_ui().unwrap().chosen[0],
        vec![true, false, false, true]
    );
    // Other: the row after the options opens a one-line editor.
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Down);
    assert_eq!(s.active_ui().unwrap().cursor, 4);
    press(&mut s, KeyCode::Down);
    assert_eq!(s.active_ui().unwrap().cursor, 4, "Other is the last row");
    assert_eq!(ch(&mut s, ' '), vec![]);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Other));
    typ(&mut s, "Ops");
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(editor_purpose(&s), None);
    assert!(s.active_ui().unwrap().other_on[0]);
    // Enter confirms page 1 and moves on: it never submits while a page is left.
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(s.active_ui().unwrap().page, 1);
    assert_eq!(s.gates.len(), 1);
    // Page 2 is single-select: Enter picks the highlighted row and submits.
    press(&mut s, KeyCode::Down);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Answer {
                answers: vec![
                    (Q1.into(), "Auth, Admin, Ops".into()),
                    (Q2.into(), "Everywhere at once".into()),
                ]
            }
        )
    );
    let (text, tone) = last_audit(&s, 0);
    assert_eq!(tone, Tone::Allowed);
    assert!(text.starts_with("answered: "), "{text}");
    assert!(text.contains("= Auth, Admin, Ops"), "{text}");
    assert!(text.contains("= Everywhere at once"), "{text}");
}

#[test]
fn question_enter_after_first_toggle_does_not_submit() {
    let mut s = st();
    let one = json!({"questions":[{"question":Q1,"header":"Modules","multiSelect":true,
        "options":[{"label":"Auth"},{"label":"Billing"}]}]});
    open(&mut s, question("q1", one));
    // Space toggles; Enter with nothing chosen is an error, not an empty answer.
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert!(ui_error(&s).unwrap().contains("choose at least one"));
    assert_eq!(ch(&mut s, ' '), vec![]);
    assert_eq!(ui_error(&s), None);
    assert_eq!(ch(&mut s, ' '), vec![], "Space toggles off again");
    assert_eq!(s.active_ui().unwrap().chosen[0], vec![false, false]);
    press(&mut s, KeyCode::Down);
    assert_eq!(ch(&mut s, ' '), vec![]);
    assert_eq!(s.gates.len(), 1);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Answer {
                answers: vec![(Q1.into(), "Billing".into())]
            }
        )
    );
}

#[test]
fn question_pages_with_arrows() {
    let mut s = st();
    open(&mut s, question("q1", questions_input()));
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().page, 1);
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().page, 1);
    // Page 2 answered first: it is confirmed, and Enter goes back to page 1.
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(fx, vec![]);
    assert_eq!(s.active_ui().unwrap().page, 0);
    assert_eq!(s.active_ui().unwrap().chosen[1], vec![true, false]);
    ch(&mut s, '2');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Answer {
                answers: vec![
                    (Q1.into(), "Billing".into()),
                    (Q2.into(), "Behind a flag".into()),
                ]
            }
        )
    );
}

#[test]
fn question_single_select_other_submits_text() {
    let mut s = st();
    let one = json!({"questions":[{"question":Q2,"header":"Rollout","multiSelect":false,
        "options":[{"label":"Flag"},{"label":"All"}]}]});
    open(&mut s, question("q1", one));
    ch(&mut s, '1');
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Enter);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Other));
    typ(&mut s, "canary first");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Answer {
                answers: vec![(Q2.into(), "canary first".into())]
            }
        )
    );
}

#[test]
fn question_esc_declines() {
    let mut s = st();
    open(&mut s, question("q1", questions_input()));
    ch(&mut s, '1');
    let fx = press(&mut s, KeyCode::Esc);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Deny {
                message: "The user declined to answer.".into(),
                interrupt: false
            }
        )
    );
    let (text, tone) = last_audit(&s, 0);
    assert_eq!(tone, Tone::Denied);
    assert!(
        text.starts_with("declined to answer: Which modules should log? (+1 more)"),
        "{text}"
    );
}

#[test]
fn malformed_question_only_allows_a_deny() {
    let mut s = st();
    open(&mut s, question("q1", json!({"questions":[]})));
    let GateKind::Question(q) = &s.gates[0].kind else {
        panic!()
    };
    assert!(q.malformed.is_some());
    for code in [
        KeyCode::Enter,
        KeyCode::Char(' '),
        KeyCode::Char('1'),
        KeyCode::Char('y'),
        KeyCode::Esc,
        KeyCode::Down,
    ] {
        assert_eq!(press(&mut s, code), vec![], "{code:?}");
        assert_eq!(editor_purpose(&s), None);
    }
    assert_eq!(s.gates.len(), 1);
    ch(&mut s, 'n');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    typ(&mut s, "fix the request");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Deny {
                message: "fix the request".into(),
                interrupt: false
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0).0,
        "declined to answer: an empty question — fix the request"
    );
}

#[test]
fn question_without_text_is_malformed() {
    let q = gates::question(&json!({"input":{"questions":[{"header":"H","options":[]}]}}));
    let GateKind::Question(q) = q else { panic!() };
    assert!(q.malformed.unwrap().contains("no text"));
}

// ---- dialog

#[test]
fn dialog_enter_completes_with_the_highlighted_option() {
    let mut s = st();
    open(
        &mut s,
        dialog(
            "d1",
            json!([{"value":"retry","label":"Retry"},{"value":"skip","label":"Skip"}]),
        ),
    );
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Down);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "d1",
            Decision::DialogComplete {
                result: json!("Skip")
            }
        )
    );
    let (text, tone) = last_audit(&s, 0);
    assert_eq!(tone, Tone::Allowed);
    assert_eq!(
        text,
        "dialog completed: refusal_fallback_prompt dialog → \"Skip\""
    );
}

#[test]
fn dialog_without_options_completes_true_and_esc_cancels() {
    let mut s = st();
    open(&mut s, dialog("d1", json!(null)));
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "d1",
            Decision::DialogComplete {
                result: json!(true)
            }
        )
    );
    open(&mut s, dialog("d2", json!(["a", "b"])));
    let fx = press(&mut s, KeyCode::Esc);
    assert_eq!(fx, answer_fx("d2", Decision::DialogCancel));
    assert_eq!(
        last_audit(&s, 0),
        (
            "dialog cancelled: refusal_fallback_prompt dialog".to_string(),
            Tone::Denied
        )
    );
}

// ---- elicitation

#[test]
fn elicitation_form() {
    let mut s = st();
    open(&mut s, ticket_form("e1"));
    let ui = s.active_ui().unwrap();
    assert_eq!(ui.fields, vec!["", "", "", "", "false"]);
    // Required field missing.
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(ui_error(&s).as_deref(), Some("Title is required"));
    // String via the editor.
    ch(&mut s, ' ');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Field));
    typ(&mut s, "Audit log");
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(s.active_ui().unwrap().fields[0], "Audit log");
    // Enum cycling, both ways, wrapping.
    ch(&mut s, 'j');
    ch(&mut s, ' ');
    assert_eq!(s.active_ui().unwrap().fields[1], "low");
    press(&mut s, KeyCode::Right);
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().fields[1], "high");
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().fields[1], "low");
    press(&mut s, KeyCode::Left);
    press(&mut s, KeyCode::Left);
    assert_eq!(s.active_ui().unwrap().fields[1], "medium");
    // Number: a parse error names the field, and the gate stays.
    ch(&mut s, 'j');
    ch(&mut s, 'e');
    typ(&mut s, "two");
    press(&mut s, KeyCode::Enter);
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(
        ui_error(&s).as_deref(),
        Some("Estimate (days) must be a number")
    );
    assert_eq!(s.gates.len(), 1);
    ch(&mut s, 'e');
    assert_eq!(editor_text(&s), "two");
    clear_editor(&mut s);
    typ(&mut s, "2.5");
    press(&mut s, KeyCode::Enter);
    // Integer rejects fractions.
    ch(&mut s, 'j');
    ch(&mut s, 'e');
    typ(&mut s, "1.5");
    press(&mut s, KeyCode::Enter);
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(
        ui_error(&s).as_deref(),
        Some("Count must be a whole number")
    );
    ch(&mut s, 'e');
    clear_editor(&mut s);
    typ(&mut s, "3");
    press(&mut s, KeyCode::Enter);
    // Boolean toggles.
    ch(&mut s, 'j');
    ch(&mut s, ' ');
    assert_eq!(s.active_ui().unwrap().fields[4], "true");
    ch(&mut s, ' ');
    ch(&mut s, ' ');
    ch(&mut s, 'j');
    assert_eq!(
        s.active_ui().unwrap().cursor,
        4,
        "the cursor stops at the end"
    );
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "e1",
            Decision::ElicitAccept {
                content: json!({"title":"Audit log","priority":"medium","estimate":2.5,"count":3,"notify":true})
            }
        )
    );
    let (text, tone) = last_audit(&s, 0);
    assert_eq!(tone, Tone::Allowed);
    assert!(
        text.starts_with("accepted: tickets: Create a ticket? {"),
        "{text}"
    );
}

#[test]
fn elicitation_optional_fields_may_stay_empty() {
    let mut s = st();
    open(&mut s, ticket_form("e1"));
    ch(&mut s, 'e');
    typ(&mut s, "  Just a title  ");
    press(&mut s, KeyCode::Enter);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "e1",
            Decision::ElicitAccept {
                content: json!({"title":"Just a title","notify":false})
            }
        )
    );
}

#[test]
fn elicitation_decline_and_cancel() {
    let mut s = st();
    open(&mut s, ticket_form("e1"));
    let fx = ch(&mut s, 'd');
    assert_eq!(fx, answer_fx("e1", Decision::ElicitDecline));
    assert_eq!(
        last_audit(&s, 0),
        (
            "declined: tickets: Create a ticket?".to_string(),
            Tone::Denied
        )
    );
    open(&mut s, ticket_form("e2"));
    let fx = press(&mut s, KeyCode::Esc);
    assert_eq!(fx, answer_fx("e2", Decision::ElicitCancel));
}

#[test]
fn url_elicitation_accepts_with_empty_content() {
    let mut s = st();
    let req = json!({"subtype":"elicitation","mcp_server_name":"github","message":"Sign in",
        "mode":"url","url":"https://example.com/login"});
    open(
        &mut s,
        gate(
            "e1",
            "root",
            gates::elicitation(&req),
            json!({"action":"accept","content":{}}),
            "ElicitResponseBody",
        ),
    );
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx("e1", Decision::ElicitAccept { content: json!({}) })
    );
}

// ---- breakpoint

#[test]
fn breakpoint_continue() {
    let mut s = st();
    open(&mut s, breakpoint("b1"));
    let fx = ch(&mut s, 'y');
    assert_eq!(fx, answer_fx("b1", Decision::Continue));
    assert_eq!(
        last_audit(&s, 0),
        (
            "continued at breakpoint: Grep `fn authenticate in src`".to_string(),
            Tone::Allowed
        )
    );
}

#[test]
fn breakpoint_block_with_reason() {
    let mut s = st();
    open(&mut s, breakpoint("b1"));
    ch(&mut s, 'b');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::BlockReason));
    typ(&mut s, "search tests/ instead");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "b1",
            Decision::Block {
                reason: "search tests/ instead".into()
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0),
        (
            "blocked at breakpoint: Grep `fn authenticate in src` — search tests/ instead"
                .to_string(),
            Tone::Denied
        )
    );
}

#[test]
fn breakpoint_enter_follows_the_highlight() {
    let mut s = st();
    open(&mut s, breakpoint("b1"));
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Enter);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::BlockReason));
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "b1",
            Decision::Block {
                reason: "Blocked by the user at a breakpoint.".into()
            }
        )
    );
}

// ---- raw reply

#[test]
fn raw_reply_is_schema_checked() {
    let mut s = st();
    s.reply_check = crate::backend::claude::session::reply_check;
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'r');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::RawReply));
    assert_eq!(
        editor_text(&s),
        "{\n  \"behavior\": \"allow\",\n  \"updatedInput\": {\n    \"command\": \"touch x\"\n  }\n}"
    );
    // Not JSON.
    clear_editor(&mut s);
    typ(&mut s, "{nope");
    assert_eq!(ctrl(&mut s, 's'), vec![]);
    assert!(ui_error(&s).unwrap().starts_with("not valid JSON"));
    // JSON that the schema rejects: the gate stays, with the reason.
    clear_editor(&mut s);
    typ(&mut s, r#"{"behavior":"maybe"}"#);
    assert_eq!(ctrl(&mut s, 's'), vec![]);
    assert!(ui_error(&s).is_some());
    assert_eq!(s.gates.len(), 1);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::RawReply));
    // A valid deny body goes out verbatim.
    clear_editor(&mut s);
    typ(&mut s, r#"{"behavior":"deny","message":"by hand"}"#);
    let fx = ctrl(&mut s, 's');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Raw {
                body: json!({"behavior":"deny","message":"by hand"})
            }
        )
    );
    let (text, tone) = last_audit(&s, 0);
    assert_eq!(tone, Tone::Neutral);
    assert!(
        text.starts_with("raw reply sent: Bash `touch x` {"),
        "{text}"
    );
}

#[test]
fn raw_reply_default_body_passes_for_every_kind() {
    let mut s = st();
    s.reply_check = crate::backend::claude::session::reply_check;
    for (i, g) in [
        bash("a", "touch x"),
        question("b", questions_input()),
        dialog("c", json!(["x"])),
        ticket_form("d"),
        breakpoint("e"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = g.id.clone();
        open(&mut s, g);
        assert_eq!(s.active_gate.as_deref(), Some(id.as_str()), "gate {i}");
        ch(&mut s, 'r');
        let fx = ctrl(&mut s, 's');
        assert_eq!(
            fx.len(),
            1,
            "default reply of {id} rejected: {:?}",
            ui_error(&s)
        );
        assert!(matches!(
            &fx[0],
            Effect::Send(Command::Answer {
                decision: Decision::Raw { .. },
                ..
            })
        ));
    }
}

#[test]
fn raw_reply_without_a_schema_is_refused() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'r');
    assert_eq!(ctrl(&mut s, 's'), vec![]);
    assert!(ui_error(&s).unwrap().contains("no schema is loaded"));
    assert_eq!(s.gates.len(), 1);
}

// ---- several gates

fn three_gates(s: &mut State) {
    sub_agent(s, "toolu_a", None, "Explore");
    sub_agent(s, "toolu_b", Some("toolu_a"), "general-purpose");
    open(s, bash("g1", "touch x"));
    let mut g2 = breakpoint("g2");
    g2.node_key = "toolu_b".into();
    open(s, g2);
    let mut g3 = dialog("g3", json!(["x"]));
    g3.node_key = "toolu_a".into();
    open(s, g3);
}

#[test]
fn brackets_cycle_gates() {
    let mut s = st();
    three_gates(&mut s);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g2"));
    assert_eq!(s.selected_node, 2, "the card's node is shown");
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    assert_eq!(s.selected_node, 1);
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    ch(&mut s, '[');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    // Answering the shown gate goes to the oldest remaining one.
    press(&mut s, KeyCode::Enter);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
    assert_eq!(s.gates_within(0), 2);
    assert_eq!(s.gates_within(1), 1);
    assert_eq!(s.gates_on(1), 0);
}

#[test]
fn g_jumps_to_the_oldest_gate() {
    let mut s = st();
    ch(&mut s, 'x');
    press(&mut s, KeyCode::Esc);
    ch(&mut s, 'g');
    assert_eq!(s.status_line.as_deref(), Some("no pending gates"));
    three_gates(&mut s);
    ch(&mut s, ']');
    ch(&mut s, ']');
    assert_eq!(s.active_gate.as_deref(), Some("g3"));
    press(&mut s, KeyCode::Tab); // gate → prompt
    assert_eq!(s.focus, Focus::Prompt);
    press(&mut s, KeyCode::Tab); // prompt → tree
    assert_eq!(s.focus, Focus::Tree);
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    ch(&mut s, 'g');
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.active_gate.as_deref(), Some("g1"));
    assert_eq!(s.selected_node, 0);
}

// ---- quitting

#[test]
fn quit_with_gates_pending_asks_then_answers_each() {
    let mut s = st();
    three_gates(&mut s);
    open(&mut s, ticket_form("g4"));
    open(&mut s, question("g5", questions_input()));
    assert_eq!(ch(&mut s, 'q'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::ConfirmQuit));
    assert_eq!(ch(&mut s, 'n'), vec![]);
    assert_eq!(s.overlay, None);
    assert_eq!(s.gates.len(), 5);
    assert_eq!(ctrl(&mut s, 'd'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::ConfirmQuit));
    let fx = ch(&mut s, 'y');
    let exited = "switchboard exited".to_string();
    assert_eq!(
        fx,
        vec![
            Effect::Send(Command::Answer {
                gate_id: "g1".into(),
                decision: Decision::Deny {
                    message: exited.clone(),
                    interrupt: false
                }
            }),
            Effect::Send(Command::Answer {
                gate_id: "g2".into(),
                decision: Decision::Block {
                    reason: exited.clone()
                }
            }),
            Effect::Send(Command::Answer {
                gate_id: "g3".into(),
                decision: Decision::DialogCancel
            }),
            Effect::Send(Command::Answer {
                gate_id: "g4".into(),
                decision: Decision::ElicitCancel
            }),
            Effect::Send(Command::Answer {
                gate_id: "g5".into(),
                decision: Decision::Deny {
                    message: exited.clone(),
                    interrupt: false
                }
            }),
            Effect::Send(Command::Shutdown),
            Effect::Quit,
        ]
    );
    assert!(s.quitting);
    assert!(s.gates.is_empty());
    assert_eq!(s.answered, 5);
}

#[test]
fn quit_without_gates_is_immediate() {
    let mut s = st();
    assert_eq!(
        ctrl(&mut s, 'd'),
        vec![Effect::Send(Command::Shutdown), Effect::Quit]
    );
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    assert_eq!(
        ch(&mut s, 'q'),
        vec![Effect::Send(Command::Shutdown), Effect::Quit]
    );
    // In the prompt, `q` is text.
    let mut s = st();
    assert_eq!(ch(&mut s, 'q'), vec![]);
    assert_eq!(s.prompt_text(), "q");
}

#[test]
fn quit_after_the_agent_exited_only_leaves() {
    let mut s = st();
    ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(0),
            detail: "exit code 0".into(),
            stderr_tail: vec![],
        },
    );
    assert_eq!(ctrl(&mut s, 'd'), vec![Effect::Quit]);
}

// ---- interrupt

#[test]
fn ctrl_c_interrupts_only_a_running_interruptible_turn() {
    let mut s = st();
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("nothing to interrupt")
    );
    running(&mut s, false);
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("cannot take an interrupt")
    );
    running(&mut s, true);
    assert_eq!(ctrl(&mut s, 'c'), vec![Effect::Send(Command::Interrupt)]);
    ev(&mut s, BackendEvent::Turn(TurnState::RequiresAction));
    assert_eq!(ctrl(&mut s, 'c'), vec![Effect::Send(Command::Interrupt)]);
    // Even inside an editor.
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    assert_eq!(ctrl(&mut s, 'c'), vec![Effect::Send(Command::Interrupt)]);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    ev(&mut s, BackendEvent::Turn(TurnState::Idle));
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(0),
            detail: "exit code 0".into(),
            stderr_tail: vec![],
        },
    );
    running(&mut s, true);
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert!(s.status_line.as_deref().unwrap().contains("has exited"));
}

// ---- agent exit

#[test]
fn agent_exit_closes_gates() {
    let mut s = st();
    three_gates(&mut s);
    let fx = ev(
        &mut s,
        BackendEvent::Exited {
            code: Some(1),
            detail: "exit code 1".into(),
            stderr_tail: vec!["boom".into()],
        },
    );
    assert_eq!(fx, vec![], "nothing is answered: the agent is gone");
    assert!(s.gates.is_empty());
    assert_eq!(s.active_gate, None);
    assert_ne!(s.focus, Focus::Gate);
    for id in ["g1", "g2", "g3"] {
        assert!(s.closed_gates.contains(&id.to_string()));
    }
    assert_eq!(s.tree.nodes[0].status, NodeStatus::Failed);
    assert_eq!(
        last_audit(&s, 0).0,
        "closed, the agent exited: Bash `touch x`"
    );
    assert_eq!(
        last_audit(&s, 2).0,
        "closed, the agent exited: Grep `fn authenticate in src`"
    );
    assert!(s.tree.nodes[0].transcript.items.iter().any(|i| matches!(&i.kind,
        ItemKind::Protocol { level: Level::Error, text } if text.contains("agent exited: exit code 1") && text.contains("boom"))));
    assert_eq!(s.session.turn, None);
    // The prompt refuses to send.
    while s.focus != Focus::Prompt {
        press(&mut s, KeyCode::Tab);
    }
    typ(&mut s, "hello?");
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert!(s.status_line.as_deref().unwrap().contains("has exited"));
}

// ---- panes

#[test]
fn tree_selection_keys() {
    let mut s = st();
    sub_agent(&mut s, "toolu_a", None, "Explore");
    sub_agent(&mut s, "toolu_b", None, "code-reviewer");
    sub_agent(&mut s, "toolu_c", Some("toolu_a"), "general-purpose");
    assert_eq!(s.tree.preorder(), vec![0, 1, 3, 2]);
    press(&mut s, KeyCode::Tab);
    assert_eq!(s.focus, Focus::Tree);
    let mut seen = vec![];
    for _ in 0..5 {
        ch(&mut s, 'j');
        seen.push(s.selected_node);
    }
    assert_eq!(seen, vec![1, 3, 2, 2, 2]);
    press(&mut s, KeyCode::Up);
    assert_eq!(s.selected_node, 3);
    press(&mut s, KeyCode::Home);
    assert_eq!(s.selected_node, 0);
    press(&mut s, KeyCode::End);
    assert_eq!(s.selected_node, 2);
    press(&mut s, KeyCode::Enter);
    assert_eq!(s.focus, Focus::Transcript);
    ch(&mut s, 'h');
    assert_eq!(s.focus, Focus::Tree);
    // Overlays from the tree.
    ch(&mut s, 's');
    assert_eq!(s.overlay, Some(Overlay::Status));
    ch(&mut s, 's');
    assert_eq!(s.overlay, None);
    ch(&mut s, 'L');
    assert_eq!(s.overlay, Some(Overlay::Log));
    press(&mut s, KeyCode::Esc);
    ch(&mut s, '?');
    assert_eq!(s.overlay, Some(Overlay::Help));
    ch(&mut s, 'q');
    assert_eq!(s.overlay, None, "q closes an overlay before it quits");
}

fn push(s: &mut State, kind: ItemKind) {
    ev(
        s,
        BackendEvent::Item {
            node: None,
            op: ItemOp::Push(kind),
        },
    );
}

#[test]
fn transcript_scroll_and_expand_keys() {
    let mut s = st();
    push(&mut s, ItemKind::User { text: "hi".into() });
    push(
        &mut s,
        ItemKind::ToolCall {
            id: "t1".into(),
            name: "Bash".into(),
            summary: "ls".into(),
            input: "{\"command\":\"ls\"}".into(),
            diff: None,
        },
    );
    push(
        &mut s,
        ItemKind::Assistant {
            text: "done".into(),
            streaming: false,
            aborted: false,
        },
    );
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.focus, Focus::Transcript);
    press(&mut s, KeyCode::Up);
    assert_eq!(s.selected_item, Some(2));
    // Not expandable: Enter does nothing.
    press(&mut s, KeyCode::Enter);
    assert!(!s.tree.nodes[0].transcript.items[2].expanded);
    ch(&mut s, 'k');
    assert_eq!(s.selected_item, Some(1));
    press(&mut s, KeyCode::Enter);
    assert!(s.tree.nodes[0].transcript.items[1].expanded);
    ch(&mut s, ' ');
    assert!(!s.tree.nodes[0].transcript.items[1].expanded);
    ch(&mut s, 'k');
    ch(&mut s, 'k');
    assert_eq!(s.selected_item, Some(0));
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    assert_eq!(s.selected_item, Some(2));
    ch(&mut s, 'j');
    assert_eq!(s.selected_item, None, "past the end follows the tail");
    // Paging uses what the renderer measured.
    s.view.transcript_height.set(11);
    s.view.drawn_scroll_back.set(4);
    press(&mut s, KeyCode::PageUp);
    assert_eq!(s.scroll_back, 14);
    s.view.drawn_scroll_back.set(14);
    press(&mut s, KeyCode::PageDown);
    assert_eq!(s.scroll_back, 4);
    s.view.drawn_scroll_back.set(4);
    press(&mut s, KeyCode::PageDown);
    assert_eq!(s.scroll_back, 0);
    press(&mut s, KeyCode::Home);
    assert!(s.scroll_back > 1_000_000);
    press(&mut s, KeyCode::End);
    assert_eq!(s.scroll_back, 0);
    // The mouse wheel scrolls the transcript when the pointer is over it, and nothing else.
    s.view
        .transcript_area
        .set(ratatui::layout::Rect::new(30, 0, 50, 20));
    let wheel = |s: &mut State, column: u16, row: u16| {
        update(
            s,
            crate::core::Msg::Mouse(crossterm::event::MouseEvent {
                kind: crossterm::event::MouseEventKind::ScrollUp,
                column,
                row,
                modifiers: KeyModifiers::NONE,
            }),
        );
    };
    wheel(&mut s, 40, 5);
    assert_eq!(s.scroll_back, 3);
    wheel(&mut s, 40, 22);
    assert_eq!(
        s.scroll_back, 3,
        "the wheel over the gate card or footer does nothing"
    );
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Prompt);
}

#[test]
fn streaming_rows_end_with_the_turn() {
    let mut s = st();
    ev(
        &mut s,
        BackendEvent::Item {
            node: None,
            op: ItemOp::AppendText {
                key: "m1#0".into(),
                thinking: false,
                delta: "Hel".into(),
            },
        },
    );
    ev(&mut s, BackendEvent::Turn(TurnState::Idle));
    assert_eq!(
        last(&s, 0),
        &ItemKind::Assistant {
            text: "Hel".into(),
            streaming: false,
            aborted: false
        }
    );
    assert_eq!(s.tree.nodes[0].status, NodeStatus::Idle);
}

// ---- prompt

#[test]
fn sending_a_prompt() {
    let mut s = st();
    assert_eq!(
        press(&mut s, KeyCode::Enter),
        vec![],
        "an empty prompt sends nothing"
    );
    typ(&mut s, "first linex");
    press(&mut s, KeyCode::Backspace);
    update(
        &mut s,
        crate::core::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)),
    );
    typ(&mut s, "second");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Command::Prompt("first line\nsecond".into()))]
    );
    assert_eq!(
        last(&s, 0),
        &ItemKind::User {
            text: "first line\nsecond".into()
        }
    );
    assert_eq!(s.prompt_text(), "");
    assert_eq!(s.focus, Focus::Prompt);
    // A paste lands in the prompt.
    update(&mut s, crate::core::Msg::Paste("pasted\r\ntext".into()));
    assert_eq!(s.prompt_text(), "pasted\ntext");
}

#[test]
fn paste_goes_into_an_open_gate_editor() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    update(&mut s, crate::core::Msg::Paste("two\nlines".into()));
    assert_eq!(
        editor_text(&s),
        "two lines",
        "one-line editors flatten pastes"
    );
    assert_eq!(s.prompt_text(), "");
}

#[test]
fn mode_picker_sends_set_mode() {
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    ch(&mut s, 'm');
    assert_eq!(s.overlay, Some(Overlay::ModePicker { cursor: 0 }));
    ch(&mut s, 'j');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(Command::SetMode("acceptEdits".into()))]
    );
    assert_eq!(s.overlay, None);
}

#[test]
fn usage_accumulates() {
    let mut s = st();
    for _ in 0..2 {
        ev(
            &mut s,
            BackendEvent::Usage {
                input_tokens: 100,
                output_tokens: 20,
                cost_usd: 0.5,
            },
        );
    }
    assert_eq!(s.session.input_tokens, 200);
    assert_eq!(s.session.output_tokens, 40);
    assert_eq!(s.session.turns, 2);
    assert_eq!(s.tree.nodes[0].tokens, 240);
    assert!((s.session.cost_usd - 1.0).abs() < 1e-9);
}
