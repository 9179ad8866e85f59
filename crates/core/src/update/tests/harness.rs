//! iii turn control in the core: the queue view (`u`, `e` edits in the prompt, `d` twice
//! removes) and the new-session dialog's harness choice routed to its engine's session.

use super::*;
use crate::msg::{HarnessSession, Queue, QueuedMessage};
use crate::state::{NewSessionField, SessionId};

const ENGINE: SessionId = SessionId::FIRST;

fn entry(id: &str, text: &str) -> QueuedMessage {
    QueuedMessage {
        entry_id: id.into(),
        text: text.into(),
        queued_at: Some(500),
        exact: true,
    }
}

fn ev_in(s: &mut State, session: SessionId, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        crate::Msg::Backend {
            session,
            at_ms: 1_000,
            event,
        },
    )
}

/// An engine session (live) and one iii root session `root`, shown, with two queued
/// messages; the keyboard on the tree.
fn iii() -> (State, SessionId) {
    let mut s = State::new(crate::BackendKind::Iii, "iii ws://127.0.0.1:49134", 0);
    let root = s.add_session(crate::BackendKind::Iii, "Fix the build");
    ev_in(
        &mut s,
        ENGINE,
        BackendEvent::HarnessHost(Some("ws://127.0.0.1:49134".into())),
    );
    ev_in(
        &mut s,
        root,
        BackendEvent::Queue(Queue {
            entries: vec![
                entry("q-1", "also the CHANGELOG"),
                entry("q-2", "and tag it"),
            ],
            more: 0,
        }),
    );
    s.select_session(1, 0);
    s.focus = Focus::Tree;
    (s, root)
}

fn queue_cursor(s: &State) -> Option<(usize, Option<String>)> {
    match &s.overlay {
        Some(Overlay::Queue {
            cursor,
            confirm_remove,
        }) => Some((*cursor, confirm_remove.clone())),
        _ => None,
    }
}

#[test]
fn q_lists_the_queue_and_e_edits_an_entry_in_place() {
    let (mut s, root) = iii();
    ch(&mut s, 'u');
    assert_eq!(queue_cursor(&s), Some((0, None)));
    press(&mut s, KeyCode::Down);
    assert_eq!(queue_cursor(&s), Some((1, None)));
    ch(&mut s, 'e');
    assert_eq!(s.overlay, None);
    assert_eq!(s.focus, Focus::Prompt);
    assert_eq!(s.prompt_text(), "and tag it");
    // Typed text extends the message; Enter saves it in place, never as a new prompt.
    typ(&mut s, " v2");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            root,
            Command::EditQueued {
                entry_id: "q-2".into(),
                text: "and tag it v2".into()
            }
        )]
    );
    assert_eq!(s.prompt_text(), "");
    assert_eq!(s.queue_edit, None);
    // Nothing was pushed to the transcript as if sent.
    assert!(s.tree.nodes[0].transcript.items.is_empty());
}

#[test]
fn esc_cancels_an_edit_and_the_next_enter_sends_a_prompt() {
    let (mut s, root) = iii();
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    press(&mut s, KeyCode::Esc);
    assert_eq!(s.queue_edit, None);
    assert_eq!(s.prompt_text(), "");
    assert!(s.status_line.as_deref().unwrap().contains("unchanged"));
    ch(&mut s, 'i');
    typ(&mut s, "hello");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(root, Command::Prompt("hello".into()))]
    );
}

#[test]
fn an_entry_that_left_the_queue_is_not_edited_and_the_text_stays() {
    let (mut s, root) = iii();
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    typ(&mut s, "!");
    // The engine drained it meanwhile: the re-read queue no longer holds it.
    ev_in(
        &mut s,
        root,
        BackendEvent::Queue(Queue {
            entries: vec![entry("q-2", "and tag it")],
            more: 0,
        }),
    );
    let fx = press(&mut s, KeyCode::Enter);
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(s.prompt_text(), "also the CHANGELOG!");
    assert!(s.status_line.as_deref().unwrap().contains("left the queue"));
    // The next Enter sends it as a new message.
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            root,
            Command::Prompt("also the CHANGELOG!".into())
        )]
    );
}

#[test]
fn d_twice_removes_an_entry_and_another_key_in_between_cancels() {
    let (mut s, root) = iii();
    ch(&mut s, 'u');
    assert!(ch(&mut s, 'd').is_empty());
    assert_eq!(queue_cursor(&s), Some((0, Some("q-1".into()))));
    assert!(s.status_line.as_deref().unwrap().contains("d again"));
    // Moving away forgets the first press.
    press(&mut s, KeyCode::Down);
    assert!(ch(&mut s, 'd').is_empty());
    let fx = press(&mut s, KeyCode::Delete);
    assert_eq!(
        fx,
        vec![Effect::Send(
            root,
            Command::Unqueue {
                entry_id: "q-2".into()
            }
        )]
    );
    // The re-read drops it; the cursor follows.
    ev_in(
        &mut s,
        root,
        BackendEvent::Queue(Queue {
            entries: vec![entry("q-1", "also the CHANGELOG")],
            more: 0,
        }),
    );
    assert_eq!(queue_cursor(&s), Some((0, None)));
    ch(&mut s, 'q');
    assert_eq!(s.overlay, None);
}

#[test]
fn a_cut_or_neutralized_entry_is_removable_but_not_editable() {
    let (mut s, root) = iii();
    let mut cut = entry("q-9", "very long…");
    cut.exact = false;
    ev_in(
        &mut s,
        root,
        BackendEvent::Queue(Queue {
            entries: vec![cut],
            more: 3,
        }),
    );
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    assert!(s.queue_edit.is_none());
    assert!(queue_cursor(&s).is_some());
    assert!(s.status_line.as_deref().unwrap().contains("d removes"));
}

#[test]
fn a_prompt_with_text_is_never_overwritten_by_an_edit() {
    let (mut s, _) = iii();
    ch(&mut s, 'i');
    typ(&mut s, "draft");
    press(&mut s, KeyCode::Esc);
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    assert_eq!(s.prompt_text(), "draft");
    assert!(s.queue_edit.is_none());
    assert!(s.status_line.as_deref().unwrap().contains("Ctrl-U"));
}

#[test]
fn q_without_a_queue_says_so_and_opens_nothing() {
    let mut s = State::new(crate::BackendKind::Claude, "main", 0);
    s.focus = Focus::Tree;
    ch(&mut s, 'u');
    assert_eq!(s.overlay, None);
    assert!(s.status_line.as_deref().unwrap().contains("no queued"));
}

#[test]
fn the_queue_key_can_be_remapped() {
    let (mut s, _) = iii();
    s.keymap = crate::keymap::build(&std::collections::BTreeMap::from([(
        "queue".to_string(),
        "W".to_string(),
    )]))
    .unwrap();
    ch(&mut s, 'W');
    assert!(queue_cursor(&s).is_some());
}

/// Ctrl-N, then Down past the profiles and the command line to the harness choice.
fn harness_dialog(s: &mut State) {
    ctrl(s, 'n');
    let profiles = s.profiles.len();
    for _ in 0..=profiles {
        press(s, KeyCode::Down);
    }
    let Some(Overlay::NewSession(form)) = &s.overlay else {
        panic!("{:?}", s.overlay)
    };
    assert_eq!(form.harness(profiles), Some(0));
    assert_eq!(form.engine, Some(ENGINE));
}

fn form(s: &State) -> crate::state::NewSessionForm {
    match &s.overlay {
        Some(Overlay::NewSession(f)) => f.clone(),
        o => panic!("{o:?}"),
    }
}

#[test]
fn the_dialog_starts_a_harness_session_on_its_engine() {
    let (mut s, _) = iii();
    s.profiles = vec![crate::state::ProfileChoice {
        name: "api".into(),
        backend: "claude".into(),
        cwd: "/src/api".into(),
        provider: None,
    }];
    harness_dialog(&mut s);
    // Past the last choice the cursor stays on it.
    press(&mut s, KeyCode::Down);
    assert_eq!(form(&s).harness(1), Some(0));
    press(&mut s, KeyCode::Tab);
    assert_eq!(form(&s).field, NewSessionField::Model);
    typ(&mut s, "claude-sonnet");
    press(&mut s, KeyCode::Tab);
    assert_eq!(form(&s).field, NewSessionField::Provider);
    typ(&mut s, " anthropic ");
    press(&mut s, KeyCode::Tab);
    typ(&mut s, "Write the docs");
    press(&mut s, KeyCode::Tab);
    typ(
        &mut s,
        "fs::read, approval::resolve ,shell::exec,, configuration::set",
    );
    press(&mut s, KeyCode::Tab);
    assert_eq!(form(&s).field, NewSessionField::Prompt);
    typ(&mut s, "document the parser");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            ENGINE,
            Command::NewHarnessSession(HarnessSession {
                model: "claude-sonnet".into(),
                provider: Some("anthropic".into()),
                title: "Write the docs".into(),
                allow: vec!["fs::read".into(), "shell::exec".into()],
                message: "document the parser".into(),
            })
        )]
    );
    assert_eq!(s.overlay, None);
    let note = s.status_line.clone().unwrap();
    assert!(
        note.contains("approval::resolve, configuration::set"),
        "{note}"
    );
}

#[test]
fn a_new_session_the_user_asked_for_is_shown_unless_they_are_busy() {
    let (mut s, _) = iii();
    // It opens while the user is idle on the tree: shown.
    let new = s.add_session(crate::BackendKind::Iii, "Write the docs");
    ev_in(&mut s, new, BackendEvent::Reveal);
    assert_eq!(s.sid(), new);
    assert_eq!((s.selected, s.focus), (2, Focus::Tree));
    assert!(s.status_line.clone().unwrap().contains("Write the docs"));
    // Another opens while the user types in the prompt: the selection stays, the status says.
    s.focus = Focus::Prompt;
    typ(&mut s, "half a sentence");
    let other = s.add_session(crate::BackendKind::Iii, "Fix the tests");
    ev_in(&mut s, other, BackendEvent::Reveal);
    assert_eq!(s.sid(), new);
    assert_eq!(s.focus, Focus::Prompt);
    assert!(s.status_line.clone().unwrap().contains("is in the tree"));
    // Nor while an overlay is open; a closed session's reveal changes nothing.
    s.focus = Focus::Tree;
    press(&mut s, KeyCode::Char('?'));
    ev_in(&mut s, other, BackendEvent::Reveal);
    assert_eq!(s.sid(), new);
}

#[test]
fn the_harness_choice_needs_a_model_and_a_message() {
    let (mut s, _) = iii();
    harness_dialog(&mut s);
    assert!(press(&mut s, KeyCode::Enter).is_empty());
    assert_eq!(form(&s).field, NewSessionField::Model);
    typ(&mut s, "m");
    assert!(press(&mut s, KeyCode::Enter).is_empty());
    assert_eq!(form(&s).field, NewSessionField::Prompt);
    assert!(s.status_line.as_deref().unwrap().contains("first message"));
}

/// An engine started from a profile with a provider: the dialog starts with it, sends it, and
/// sends none once it is cleared (the router's default).
#[test]
fn the_provider_comes_from_the_engines_profile_and_empty_sends_none() {
    let (mut s, _) = iii();
    s.sessions[0].profile = Some("engine".into());
    s.profiles = vec![crate::state::ProfileChoice {
        name: "engine".into(),
        backend: "iii".into(),
        cwd: "/".into(),
        provider: Some("openrouter".into()),
    }];
    let start = |s: &mut State, clear: bool| {
        harness_dialog(s);
        assert_eq!(form(s).provider, "openrouter");
        press(s, KeyCode::Tab);
        typ(s, "m");
        press(s, KeyCode::Tab);
        if clear {
            for _ in 0.."openrouter".len() {
                press(s, KeyCode::Backspace);
            }
        }
        for _ in 0..3 {
            press(s, KeyCode::Tab);
        }
        typ(s, "hi");
        match press(s, KeyCode::Enter).as_slice() {
            [Effect::Send(ENGINE, Command::NewHarnessSession(h))] => h.provider.clone(),
            fx => panic!("{fx:?}"),
        }
    };
    assert_eq!(start(&mut s, false), Some("openrouter".into()));
    assert_eq!(start(&mut s, true), None);
    // Moving back to a choice with no profile behind it leaves no provider.
    s.sessions[0].profile = None;
    harness_dialog(&mut s);
    assert_eq!(form(&s).provider, "");
}

/// A provider is sent to the engine and shown: control characters (a paste) and a length past
/// `PROVIDER_MAX` are refused in the dialog, which stays open on the field.
#[test]
fn a_provider_must_be_printable_and_short() {
    let (mut s, _) = iii();
    for bad in [
        "anth\u{1b}[2Jropic".to_string(),
        "a\u{202e}b".to_string(),
        "p".repeat(crate::msg::PROVIDER_MAX + 1),
    ] {
        harness_dialog(&mut s);
        press(&mut s, KeyCode::Tab);
        typ(&mut s, "m");
        press(&mut s, KeyCode::Tab);
        update(&mut s, crate::Msg::Paste(bad.clone()));
        for _ in 0..3 {
            press(&mut s, KeyCode::Tab);
        }
        typ(&mut s, "hi");
        assert!(press(&mut s, KeyCode::Enter).is_empty(), "{bad:?} was sent");
        assert_eq!(form(&s).field, NewSessionField::Provider);
        let why = s.status_line.clone().unwrap();
        assert!(why.starts_with("the provider "), "{why}");
        assert!(
            !why.contains('\u{1b}') && !why.contains('\u{202e}'),
            "{why}"
        );
        press(&mut s, KeyCode::Esc);
    }
}

#[test]
fn an_engine_that_went_offline_is_not_asked() {
    let (mut s, _) = iii();
    harness_dialog(&mut s);
    press(&mut s, KeyCode::Tab);
    typ(&mut s, "m");
    ev_in(&mut s, ENGINE, BackendEvent::HarnessHost(None));
    for _ in 0..4 {
        press(&mut s, KeyCode::Tab);
    }
    typ(&mut s, "hi");
    assert!(press(&mut s, KeyCode::Enter).is_empty());
    assert!(s.status_line.as_deref().unwrap().contains("not live"));
    assert!(matches!(s.overlay, Some(Overlay::NewSession(_))));
}

#[test]
fn no_harness_choice_without_a_live_engine() {
    let mut s = State::new(crate::BackendKind::Claude, "main", 0);
    s.focus = Focus::Tree;
    ctrl(&mut s, 'n');
    for _ in 0..3 {
        press(&mut s, KeyCode::Down);
    }
    let f = form(&s);
    assert!(f.is_command(0));
    assert_eq!(f.harness(0), None);
}

#[test]
fn a_replayed_queue_is_shown_never_changed() {
    let (mut s, _) = iii();
    s.replay = Some(Default::default());
    ch(&mut s, 'u');
    for c in ['e', 'd', 'd'] {
        assert!(ch(&mut s, c).is_empty());
    }
    assert!(s.queue_edit.is_none());
    assert!(queue_cursor(&s).is_some());
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("read-only replay")
    );
}

/// The engine went away while a queued message was edited: Enter keeps the edit and its text
/// (nothing is sent, nothing claims it was saved); `d` cannot remove one either.
#[test]
fn an_edit_or_removal_while_offline_keeps_everything_and_says_so() {
    let (mut s, root) = iii();
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    typ(&mut s, " too");
    ev_in(
        &mut s,
        root,
        BackendEvent::Connection {
            online: false,
            detail: "reconnecting to the engine".into(),
        },
    );
    let fx = press(&mut s, KeyCode::Enter);
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(s.prompt_text(), "also the CHANGELOG too");
    assert!(s.queue_edit.is_some());
    assert!(s.status_line.as_deref().unwrap().starts_with("offline:"));
    press(&mut s, KeyCode::Esc);
    press(&mut s, KeyCode::Esc);
    s.focus = Focus::Tree;
    ch(&mut s, 'u');
    let mut sent = ch(&mut s, 'd');
    sent.extend(ch(&mut s, 'd'));
    assert!(sent.is_empty(), "{sent:?}");
    assert!(s.status_line.as_deref().unwrap().starts_with("offline:"));
}

/// An edit started in one session is never saved into another session's queue.
#[test]
fn an_edit_is_saved_only_in_its_own_session() {
    let (mut s, _root) = iii();
    ch(&mut s, 'u');
    ch(&mut s, 'e');
    s.select_session(0, 0);
    s.focus = Focus::Prompt;
    let fx = press(&mut s, KeyCode::Enter);
    assert!(fx.is_empty(), "{fx:?}");
    assert!(s.queue_edit.is_some());
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("another session")
    );
}

/// The allow-list takes exact function ids only: a pattern could reach `approval::*`.
#[test]
fn the_allow_list_drops_patterns_and_human_only_functions_in_any_case() {
    let (kept, dropped) = crate::msg::split_allow(
        "shell::exec, *, appr*, *::resolve, Approval::resolve, CONFIGURATION::set, fs read, fs::read",
    );
    assert_eq!(kept, vec!["shell::exec", "fs::read"]);
    assert_eq!(dropped.len(), 6, "{dropped:?}");
}
