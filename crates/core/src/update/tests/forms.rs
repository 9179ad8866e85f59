//! Dialog, elicitation (form and URL) and breakpoint gates.

use super::*;

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
    // `"mode": "url"` from server `github`: no fields.
    open(
        &mut s,
        elicitation(
            "e1",
            "github",
            "Sign in",
            Some("https://example.com/login"),
            Vec::new(),
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
    // Nothing is highlighted yet: Enter alone does nothing (it never lets a tool run).
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(s.gates.len(), 1);
    // The first move highlights Continue, the second Block.
    press(&mut s, KeyCode::Down);
    assert_eq!(s.active_ui().unwrap().choice, 0);
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

/// Issue 22 item 3: a form that is one string answer opens with its field focused: the
/// letters are the answer (never card keys such as `d`), Enter sends it, Esc declines.
#[test]
fn a_one_string_form_takes_typing_at_once() {
    // A schema of one required string, `branch` ("Branch").
    let one = |id: &str| {
        let branch = field("branch", "Branch", FieldKind::String, true);
        elicitation(id, "deploy", "Which branch?", None, vec![branch])
    };
    let mut s = st();
    open(&mut s, one("e1"));
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Field));
    typ(&mut s, "dev");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "e1",
            Decision::ElicitAccept {
                content: json!({"branch": "dev"})
            }
        )
    );
    let mut s = st();
    open(&mut s, one("e2"));
    let fx = press(&mut s, KeyCode::Esc);
    assert_eq!(fx, answer_fx("e2", Decision::ElicitDecline));
}
