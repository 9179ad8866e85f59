//! Reducer tests: no terminal, no IO, no backend. This file holds the shared helpers (states,
//! keys, cards); the tests live in the topical modules below.
//!
//! The cards are plain data: each is the `Gate` a backend builds for the request named beside
//! it (Claude's `gates`, the adopted sessions' `gates`), written out, so these tests read
//! only the core. What needs a backend's own parts (its mapper, its reply schema) is tested in
//! that backend's crate (docs/architecture.md).

mod acp_options;
mod adopted;
mod cancel_grace;
mod fast_paths;
mod forms;
mod gates_open;
mod harness;
mod navigation;
mod permission;
mod prompt;
mod question;
mod quit_interrupt;
mod raw_reply;
mod resumed;
mod tree_flat;
mod typed_text;
mod workspace;

use crate::input::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

use crate::gate::{
    Breakpoint, Decision, Dialog, Elicitation, Field, FieldKind, Gate, GateKind, Permission,
    QOption, QSpec, Question,
};
use crate::msg::{BackendEvent, Command, Effect, SessionPatch, TurnState};
use crate::state::{EditorPurpose, Focus, Overlay, State};
use crate::transcript::{ItemKind, ItemOp, Level, Tone};
use crate::tree::{NodePatch, NodeStatus};
use crate::update;

// ---- helpers (the key-driving ones are `crate::testing`'s)

use crate::testing::{
    answer_fx, ch, clear_editor, ctrl, editor_purpose, editor_text, ev, last, last_audit, open,
    press, st, typ, ui_error,
};

fn gate(id: &str, node: &str, kind: GateKind, reply: Value, def: &'static str) -> Gate {
    Gate {
        id: id.into(),
        node_key: node.into(),
        asked_by: None,
        kind,
        opened_ms: 1_000,
        default_reply: crate::text::pretty_json(&reply),
        reply_definition: def,
    }
}

/// A Bash permission card as Claude's `gates::permission` builds it for a `can_use_tool`
/// request with `{"command": command}` and no suggestions of the CLI's.
fn bash_card(command: &str) -> Permission {
    Permission {
        tool: "Bash".into(),
        summary: crate::gate::command_summary(command),
        rule_arg: command.into(),
        input: json!({ "command": command }).to_string(),
        title: None,
        description: None,
        decision_reason: None,
        blocked_path: None,
        suggestions: vec!["Bash exactly as shown (switchboard's rule)".into()],
        always_allowed: true,
        default_to_no: false,
        diff: None,
        options: Vec::new(),
        shell: true,
        command: Some(command.into()),
        env: Vec::new(),
        covered_by: None,
        deny_reason: None,
        editable: true,
        environment: Vec::new(),
        own_terminal: None,
    }
}

fn bash(id: &str, command: &str) -> Gate {
    bash_where(id, command, |_| {})
}

/// A Bash card with some of the request's flags set (`suppress_always_allow_rule`: no
/// always; `default_to_no`).
fn bash_where(id: &str, command: &str, flags: impl FnOnce(&mut Permission)) -> Gate {
    let mut card = bash_card(command);
    flags(&mut card);
    gate(
        id,
        "root",
        GateKind::Permission(card),
        json!({"behavior":"allow","updatedInput":{"command":command}}),
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

/// The questions of an `AskUserQuestion` input, read field by field (test data, well-formed:
/// a test of a malformed card says so itself).
fn qspecs(input: &Value) -> Vec<QSpec> {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    input["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| QSpec {
            question: text(q, "question"),
            header: text(q, "header"),
            multi: q["multiSelect"].as_bool().unwrap_or(false),
            options: q["options"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| QOption {
                    label: text(o, "label"),
                    description: text(o, "description"),
                })
                .collect(),
        })
        .collect()
}

/// A question card as Claude's `gates::question` builds it for an `AskUserQuestion` request
/// with `input`.
fn question(id: &str, input: Value) -> Gate {
    gate(
        id,
        "root",
        GateKind::Question(Question {
            questions: qspecs(&input),
            malformed: None,
            own_terminal: None,
        }),
        json!({"behavior":"allow","updatedInput":{"questions":input["questions"].clone(),"answers":{}}}),
        "AllowBody|DenyBody",
    )
}

/// A `refusal_fallback_prompt` dialog as Claude's `gates::dialog` builds it, with `options`
/// (an array of labels or of `{"value", "label"}`, or null for none).
fn dialog(id: &str, options: Value) -> Gate {
    let payload = json!({"title":"Use a fallback model?","message":"Retry?","options":options});
    gate(
        id,
        "root",
        GateKind::Dialog(Dialog {
            dialog_kind: "refusal_fallback_prompt".into(),
            title: Some("Use a fallback model?".into()),
            message: Some("Retry?".into()),
            options: options
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().or(o["label"].as_str()))
                .map(str::to_string)
                .collect(),
            payload: crate::text::pretty_json(&payload),
        }),
        json!({"behavior":"completed","result":true}),
        "DialogResponseBody",
    )
}

/// A form field as an elicitation's schema names it.
fn field(name: &str, title: &str, kind: FieldKind, required: bool) -> Field {
    Field {
        name: name.into(),
        default: (kind == FieldKind::Boolean).then(|| "false".into()),
        title: title.into(),
        description: None,
        kind,
        required,
    }
}

/// An elicitation card as Claude's `gates::elicitation` builds it.
fn elicitation(
    id: &str,
    server: &str,
    message: &str,
    url: Option<&str>,
    fields: Vec<Field>,
) -> Gate {
    gate(
        id,
        "root",
        GateKind::Elicitation(Elicitation {
            server: server.into(),
            message: message.into(),
            url: url.map(str::to_string),
            fields,
        }),
        json!({"action":"accept","content":{}}),
        "ElicitResponseBody",
    )
}

/// The form of an `elicitation` request from server `tickets`, "Create a ticket?", whose
/// schema has a required string `title` ("Title"), an enum `priority` (low, medium, high), a
/// number `estimate` ("Estimate (days)"), an integer `count` ("Count") and a boolean
/// `notify` ("Notify the team").
fn ticket_form(id: &str) -> Gate {
    let priority = ["low", "medium", "high"].map(String::from).to_vec();
    elicitation(
        id,
        "tickets",
        "Create a ticket?",
        None,
        vec![
            field("title", "Title", FieldKind::String, true),
            field("priority", "priority", FieldKind::Enum(priority), false),
            field("estimate", "Estimate (days)", FieldKind::Number, false),
            field("count", "Count", FieldKind::Integer, false),
            field("notify", "Notify the team", FieldKind::Boolean, false),
        ],
    )
}

/// A breakpoint on Grep (`{"pattern":"fn authenticate","path":"src"}`) as Claude's
/// `gates::breakpoint` builds it for the `hook_callback` of `PreToolUse`.
fn breakpoint(id: &str) -> Gate {
    gate(
        id,
        "root",
        GateKind::Breakpoint(Breakpoint {
            tool: "Grep".into(),
            summary: "fn authenticate in src".into(),
            input: crate::text::pretty_json(&json!({"pattern":"fn authenticate","path":"src"})),
            hook_event: "PreToolUse".into(),
        }),
        json!({}),
        "HookOutputBody",
    )
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
