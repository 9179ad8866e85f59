//! Reducer tests: no terminal, no IO. This file holds the shared helpers (states, keys,
//! gate builders); the tests live in the topical modules below.

mod cancel_grace;
mod fast_paths;
mod forms;
mod gates_open;
mod harness;
mod iii_gates;
mod navigation;
mod permission;
mod prompt;
mod question;
mod quit_interrupt;
mod raw_reply;
mod tree_flat;
mod typed_text;
mod workspace;

use crate::core::input::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

use crate::backend::claude::gates;
use crate::core::gate::{Decision, Gate, GateKind};
use crate::core::msg::{BackendEvent, Command, Effect, SessionPatch, TurnState};
use crate::core::state::{EditorPurpose, Focus, Overlay, State};
use crate::core::transcript::{ItemKind, ItemOp, Level, Tone};
use crate::core::tree::{NodePatch, NodeStatus};
use crate::core::update;

// ---- helpers

fn st() -> State {
    State::new(crate::core::BackendKind::Claude, "main", 0)
}

fn ev(s: &mut State, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        crate::core::Msg::Backend {
            session: crate::core::state::SessionId::FIRST,
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
    ev(s, BackendEvent::GateOpen(Box::new(g)))
}

fn answer_fx(id: &str, decision: Decision) -> Vec<Effect> {
    vec![Effect::Send(
        crate::core::state::SessionId::FIRST,
        Command::Answer {
            gate_id: id.into(),
            decision,
        },
    )]
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

/// A Bash gate on the root, a breakpoint on a nested helper and a dialog on its parent.
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
