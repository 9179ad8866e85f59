//! AskUserQuestion gates: pages, multi-select, "Other" text, decline, malformed input.

use super::*;

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
    // An `AskUserQuestion` with `"questions": []`: Claude's card says why it is malformed.
    let mut g = question("q1", json!({"questions":[]}));
    if let GateKind::Question(q) = &mut g.kind {
        q.malformed = Some("the request holds no questions".into());
    }
    open(&mut s, g);
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

/// Issue 22 item 3: a question with no options (the gateway's `workspace_ask`) opens with its
/// answer field focused: letters are the answer, never card keys; Enter sends it, an empty
/// one is refused in place, Esc declines.
#[test]
fn a_question_without_options_takes_typing_at_once() {
    let free = json!({"questions":[{"question":"Shall I also add a CHANGELOG.md?","header":"Ask",
        "multiSelect":false,"options":[]}]});
    let mut s = st();
    open(&mut s, question("q1", free.clone()));
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Other));
    // `r` would open the raw editor on a card; here it is a letter of the answer.
    assert_eq!(press(&mut s, KeyCode::Enter), vec![], "empty: nothing sent");
    assert_eq!(
        editor_purpose(&s),
        Some(EditorPurpose::Other),
        "still typing"
    );
    typ(&mut s, "yes, release notes too");
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Other));
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "q1",
            Decision::Answer {
                answers: vec![(
                    "Shall I also add a CHANGELOG.md?".into(),
                    "yes, release notes too".into()
                )]
            }
        )
    );
    // Esc declines.
    let mut s = st();
    open(&mut s, question("q2", free));
    typ(&mut s, "never mind");
    let fx = press(&mut s, KeyCode::Esc);
    assert_eq!(
        fx,
        answer_fx(
            "q2",
            Decision::Deny {
                message: "The user declined to answer.".into(),
                interrupt: false
            }
        )
    );
}
