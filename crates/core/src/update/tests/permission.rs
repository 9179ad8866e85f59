//! Permission gates: allow once/always, deny with a message, edit the input, default-to-no.

use super::*;

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
        crate::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
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
        crate::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
    );
    open(&mut s, bash("g2", "touch y"));
    assert_eq!(s.focus, Focus::Gate);
    // `i` leaves the card for the prompt without answering.
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Prompt);
    assert_eq!(s.gates.len(), 1);
}

/// What "allow always" on the Bash card for `command` sends: the session's exact rule (for
/// the manifest), then the answer.
fn always_fx(id: &str, command: &str) -> Vec<Effect> {
    let mut fx = vec![Effect::SessionRule {
        session: crate::state::SessionId::FIRST,
        spec: crate::rules::RuleSpec {
            action: crate::rules::Action::Allow,
            tool: "Bash".into(),
            pattern: Some(command.into()),
            exact: true,
        },
        kept: true,
    }];
    fx.extend(answer_fx(
        id,
        Decision::Allow {
            updated_input: None,
            always: true,
        },
    ));
    fx
}

#[test]
fn permission_allow_always() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    let fx = ch(&mut s, 'a');
    assert_eq!(fx, always_fx("g1", "touch x"));
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
        // `"suppress_always_allow_rule": true` in the request.
        bash_where("g1", "touch x", |p| p.always_allowed = false),
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
            "allowed with an edit: Bash `touch y` (asked: `touch x`)".to_string(),
            Tone::Allowed
        )
    );
}

#[test]
fn permission_arrows_and_enter() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    // Nothing is highlighted: Enter alone never allows, it says how to answer.
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert!(s.active_ui().unwrap().error.is_some());
    assert_eq!(s.gates.len(), 1);
    // Choices: Allow once, Allow always, Deny…, Deny & stop, Edit input…; the first move
    // highlights the first.
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().choice, 0);
    press(&mut s, KeyCode::Right);
    assert_eq!(s.active_ui().unwrap().choice, 1);
    press(&mut s, KeyCode::Right);
    assert_eq!(press(&mut s, KeyCode::Enter), vec![]);
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    press(&mut s, KeyCode::Esc);
    press(&mut s, KeyCode::Left);
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(fx, always_fx("g1", "touch x"));
}

#[test]
fn default_to_no_disables_y() {
    let mut s = st();
    open(
        &mut s,
        // `"default_to_no": true` in the request.
        bash_where("g1", "rm -r build", |p| p.default_to_no = true),
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

/// Issue 22 item 4: the human confirms a typed deny reason with Enter twice; the second
/// Enter lands on the next card, which it must not answer.
#[test]
fn an_enter_right_after_answering_one_card_does_not_answer_the_next() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    open(&mut s, bash("g2", "rm -rf build"));
    ch(&mut s, 'n');
    typ(&mut s, "not now");
    press(&mut s, KeyCode::Enter);
    assert!(s.gate("g1").is_none());
    assert_eq!(s.active_gate.as_deref(), Some("g2"));
    assert_eq!(press(&mut s, KeyCode::Enter), vec![], "the extra Enter");
    assert!(s.gate("g2").is_some(), "the next card still waits");
    assert_eq!(s.answered, 1);
}

/// An edit the summary does not show (a file's content, an option) reads differently from
/// the request: the row names the fields the edit changed, since "Write `/w/a.txt` (asked:
/// `/w/a.txt`)" would say nothing ran but what was asked.
#[test]
fn an_edit_the_summary_hides_names_what_it_changed() {
    let write = |input: Value| {
        let mut card = bash_card("");
        card.tool = "Write".into();
        card.command = None;
        card.shell = false;
        card.summary = "/w/a.txt".into();
        card.input = input.to_string();
        gate(
            "g1",
            "root",
            GateKind::Permission(card),
            json!({"behavior":"allow"}),
            "AllowBody|DenyBody",
        )
    };
    let asked = json!({"file_path": "/w/a.txt", "content": "old", "mode": "w"});
    let g = write(asked.clone());
    let allow = |edit: Value| Decision::Allow {
        updated_input: Some(edit),
        always: false,
    };
    let text = |d: Decision| crate::update::decide::audit_text(&g, &d).0;
    assert_eq!(
        text(allow(
            json!({"file_path": "/w/a.txt", "content": "new", "mode": "w"})
        )),
        "allowed with an edit: Write `/w/a.txt` (asked: `/w/a.txt`; the edit changed content)"
    );
    // Added and removed fields count, in the edit's order then the removed ones.
    assert_eq!(
        text(allow(
            json!({"file_path": "/w/a.txt", "content": "old", "append": true})
        )),
        "allowed with an edit: Write `/w/a.txt` (asked: `/w/a.txt`; the edit changed append, mode)"
    );
    assert_eq!(
        text(allow(asked.clone())),
        "allowed with an edit: Write `/w/a.txt` (asked: `/w/a.txt`; the edit changed nothing)"
    );
    // Many fields: four named; a hostile name is shown on one line.
    let many = json!({"file_path": "/w/a.txt", "a\nb": 1, "c": 2, "d": 3, "e": 4, "f": 5});
    assert_eq!(
        text(allow(many)),
        "allowed with an edit: Write `/w/a.txt` (asked: `/w/a.txt`; the edit changed a^Jb, c, d, e, 3 more)"
    );
    // A path the edit changed shows on its own, as before.
    assert_eq!(
        text(allow(
            json!({"file_path": "/w/b.txt", "content": "old", "mode": "w"})
        )),
        "allowed with an edit: Write `/w/b.txt` (asked: `/w/a.txt`)"
    );
}
