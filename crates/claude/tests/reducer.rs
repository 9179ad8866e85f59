//! The core's reducer driven with this backend's own parts, where a test needs them: the raw
//! reply checked against Claude's reply schema, the cards Claude's `gates` build, the commands
//! Claude's mapper does not take. The reducer's own tests, with cards as plain data, are in
//! `crates/core/src/update/tests/` (docs/architecture.md).

use serde_json::{Value, json};

use switchboard_claude::gates;
use switchboard_claude::mapping::Mapper;
use switchboard_claude::session;
use switchboard_core::gate::{Decision, Gate, GateKind};
use switchboard_core::msg::{BackendEvent, Command, Effect, HarnessSession};
use switchboard_core::state::{EditorPurpose, SessionId};
use switchboard_core::testing::{
    answer_fx, ch, clear_editor, ctrl, editor_purpose, editor_text, last_audit, open, st, typ,
    ui_error,
};
use switchboard_core::transcript::Tone;

// ---- the cards, from Claude's requests by Claude's `gates`

fn gate(id: &str, kind: GateKind, reply: Value, def: &'static str) -> Gate {
    Gate {
        id: id.into(),
        node_key: "root".into(),
        asked_by: None,
        kind,
        opened_ms: 1_000,
        default_reply: switchboard_core::text::pretty_json(&reply),
        reply_definition: def,
    }
}

fn bash(id: &str, command: &str) -> Gate {
    let req = json!({"subtype":"can_use_tool","tool_name":"Bash","input":{"command":command}});
    let reply = json!({"behavior":"allow","updatedInput":{"command":command}});
    gate(id, gates::permission(&req), reply, "AllowBody|DenyBody")
}

fn questions_input() -> Value {
    json!({"questions":[
        {"question":"Which modules should log?","header":"Modules","multiSelect":true,"options":[
            {"label":"Auth","description":"Logins"},
            {"label":"Billing","description":"Payments"},
            {"label":"Search","description":"Queries"},
            {"label":"Admin","description":"Back office"}]},
        {"question":"How should it roll out?","header":"Rollout","multiSelect":false,"options":[
            {"label":"Behind a flag","description":"Ship dark"},
            {"label":"Everywhere at once","description":"One deploy"}]}
    ]})
}

fn question(id: &str, input: Value) -> Gate {
    let req = json!({"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":input});
    let reply = json!({"behavior":"allow","updatedInput":{"questions":input["questions"].clone(),"answers":{}}});
    gate(id, gates::question(&req), reply, "AllowBody|DenyBody")
}

fn dialog(id: &str, options: Value) -> Gate {
    let req = json!({"subtype":"request_user_dialog","dialog_kind":"refusal_fallback_prompt",
        "payload":{"title":"Use a fallback model?","message":"Retry?","options":options}});
    let kind = gates::dialog(&req, "refusal_fallback_prompt");
    gate(
        id,
        kind,
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
    let reply = json!({"action":"accept","content":{}});
    gate(id, gates::elicitation(&req), reply, "ElicitResponseBody")
}

fn breakpoint(id: &str) -> Gate {
    let req = json!({"subtype":"hook_callback","callback_id":"sb-break-Grep","input":{
        "hook_event_name":"PreToolUse","tool_name":"Grep",
        "tool_input":{"pattern":"fn authenticate","path":"src"}}});
    gate(id, gates::breakpoint(&req), json!({}), "HookOutputBody")
}

// ---- raw reply: Claude's schema

#[test]
fn raw_reply_is_schema_checked() {
    let mut s = st();
    s.reply_check = session::reply_check;
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
    s.reply_check = session::reply_check;
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
            Effect::Send(
                SessionId::FIRST,
                Command::Answer {
                    decision: Decision::Raw { .. },
                    ..
                }
            )
        ));
    }
}

// ---- cards Claude's `gates` build

#[test]
fn question_without_text_is_malformed() {
    let q = gates::question(&json!({"input":{"questions":[{"header":"H","options":[]}]}}));
    let GateKind::Question(q) = q else { panic!() };
    assert!(q.malformed.unwrap().contains("no text"));
}

/// The core's malformed-question test opens this card (written out there as plain data).
#[test]
fn a_request_without_questions_is_malformed() {
    let g = question("q1", json!({"questions":[]}));
    let GateKind::Question(q) = g.kind else {
        panic!()
    };
    assert_eq!(
        q.malformed.as_deref(),
        Some("the request holds no questions")
    );
    assert!(q.questions.is_empty());
}

// ---- commands of other backends

#[test]
fn claude_says_it_does_not_support_the_iii_commands() {
    for c in [
        Command::EditQueued {
            entry_id: "q".into(),
            text: "t".into(),
        },
        Command::Unqueue {
            entry_id: "q".into(),
        },
        Command::NewHarnessSession(HarnessSession::default()),
    ] {
        let mut claude = Mapper::new(&[]);
        let out = claude.command(&c);
        assert!(out.replies.is_empty());
        assert!(
            out.events.iter().any(|e| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("not supported by this backend"))),
            "{:?}",
            out.events
        );
    }
}
