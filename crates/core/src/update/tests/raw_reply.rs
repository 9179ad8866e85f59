//! Raw replies: schema-checked, default bodies, refused without a schema.
//!
//! The check here is a stand-in for a backend's schema, written as plain data (which field
//! each reply definition requires, and its values); Claude's real schema takes the same
//! default bodies and refuses the same bad one (`crates/claude/tests/reducer.rs`).

use super::*;

/// A reply schema in miniature: per definition, the field a body must hold and its values
/// (`None`: any object).
fn reply_check(definition: &str, body: &Value) -> Result<(), String> {
    let (field, values): (&str, &[&str]) = match definition {
        "AllowBody|DenyBody" => ("behavior", &["allow", "deny"]),
        "DialogResponseBody" => ("behavior", &["completed", "cancelled"]),
        "ElicitResponseBody" => ("action", &["accept", "decline", "cancel"]),
        "HookOutputBody" => ("", &[]),
        other => return Err(format!("no definition {other}")),
    };
    if !body.is_object() {
        return Err("not an object".into());
    }
    if field.is_empty() {
        return Ok(());
    }
    match body[field].as_str() {
        Some(v) if values.contains(&v) => Ok(()),
        v => Err(format!("{field}: {v:?} is not one of {values:?}")),
    }
}

// ---- raw reply

#[test]
fn raw_reply_is_schema_checked() {
    let mut s = st();
    s.reply_check = reply_check;
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
    s.reply_check = reply_check;
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
                crate::state::SessionId::FIRST,
                Command::Answer {
                    decision: Decision::Raw { .. },
                    ..
                }
            )
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
