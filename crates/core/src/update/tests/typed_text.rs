//! `[keys]` overrides translate command keys only: text typed into any input keeps its key.

use std::collections::BTreeMap;

use super::*;

/// Overrides whose keys are letters a person types: `S` searches, `D` denies, `W` opens the
/// raw reply, `H` shows help, `Q` quits, `E` edits the input.
fn remapped() -> State {
    let mut o = BTreeMap::new();
    for (action, key) in [
        ("search", "S"),
        ("deny", "D"),
        ("raw_reply", "W"),
        ("help", "H"),
        ("quit", "Q"),
        ("edit_input", "E"),
    ] {
        o.insert(action.to_string(), key.to_string());
    }
    let mut s = st();
    s.keymap = crate::keymap::build(&o).unwrap();
    s
}

const TYPED: &str = "SDWHQE";

#[test]
fn search_box_keeps_remapped_letters() {
    let mut s = remapped();
    s.focus = Focus::Transcript;
    // `S` is a command here: it opens the search box.
    ch(&mut s, 'S');
    assert!(s.search.as_ref().is_some_and(|q| q.editing));
    typ(&mut s, TYPED);
    assert_eq!(s.search.as_ref().unwrap().query, TYPED);
    assert_eq!(s.overlay, None, "H typed into the query must not open help");
}

#[test]
fn prompt_keeps_remapped_letters() {
    let mut s = remapped();
    s.focus = Focus::Transcript;
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Prompt);
    typ(&mut s, TYPED);
    assert_eq!(s.prompt_text(), TYPED);
}

#[test]
fn every_gate_editor_keeps_remapped_letters() {
    let mut s = remapped();
    open(&mut s, bash("g1", "touch x"));
    s.focus = Focus::Gate;
    // Deny message: `D` is deny here, then typed text.
    ch(&mut s, 'D');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::DenyMessage));
    typ(&mut s, TYPED);
    assert_eq!(editor_text(&s), TYPED);
    press(&mut s, KeyCode::Esc);
    // Raw reply (multi-line).
    ch(&mut s, 'W');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::RawReply));
    clear_editor(&mut s);
    typ(&mut s, TYPED);
    assert_eq!(editor_text(&s), TYPED);
    press(&mut s, KeyCode::Esc);
    // Edited input.
    ch(&mut s, 'E');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::EditInput));
    clear_editor(&mut s);
    typ(&mut s, TYPED);
    assert_eq!(editor_text(&s), TYPED);
    press(&mut s, KeyCode::Esc);
    // Rule editor.
    ch(&mut s, 'A');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Rule));
    clear_editor(&mut s);
    typ(&mut s, TYPED);
    assert_eq!(editor_text(&s), TYPED);
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.gates.len(), 1, "nothing typed answered the gate");
}

#[test]
fn form_field_keeps_remapped_letters() {
    let mut s = remapped();
    open(&mut s, ticket_form("f1"));
    s.focus = Focus::Gate;
    ch(&mut s, 'e');
    assert_eq!(editor_purpose(&s), Some(EditorPurpose::Field));
    typ(&mut s, TYPED);
    assert_eq!(editor_text(&s), TYPED);
}

#[test]
fn commands_still_follow_the_overrides() {
    let mut s = remapped();
    s.focus = Focus::Transcript;
    ch(&mut s, 'H');
    assert_eq!(s.overlay, Some(Overlay::Help));
}
