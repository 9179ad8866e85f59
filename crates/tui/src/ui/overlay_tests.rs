//! Snapshots of the iii turn-control views: the queue view and the new-session dialog's
//! harness choice. Update with `INSTA_UPDATE=always cargo test --lib ui::overlay`.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard_core::input::{KeyCode, KeyEvent, KeyModifiers};

use crate::ui::theme::Theme;
use switchboard_core::msg::{BackendEvent, Queue, QueuedMessage};
use switchboard_core::state::{Focus, ProfileChoice, SessionId, State};
use switchboard_core::{Msg, update};

const T0: u64 = 1_764_000_000_000;
const URL: &str = "ws://127.0.0.1:49134";

fn key(s: &mut State, code: KeyCode, mods: KeyModifiers) {
    update(s, Msg::Key(KeyEvent::new(code, mods)));
}

fn typ(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

fn ev(s: &mut State, session: SessionId, event: BackendEvent) {
    update(
        s,
        Msg::Backend {
            session,
            at_ms: T0,
            event,
        },
    );
}

/// An engine session (live) and one iii root, shown, with a queue.
fn iii() -> State {
    let mut s = State::new(
        switchboard_core::BackendKind::Iii,
        &format!("iii {URL}"),
        T0,
    );
    s.settings.bell = false;
    let root = s.add_session(switchboard_core::BackendKind::Iii, "Tidy the notes");
    ev(
        &mut s,
        SessionId::FIRST,
        BackendEvent::HarnessHost(Some(URL.into())),
    );
    let q = |id: &str, text: &str, ago: u64, exact: bool| QueuedMessage {
        entry_id: id.into(),
        text: text.into(),
        queued_at: Some(T0 - ago),
        exact,
    };
    ev(
        &mut s,
        root,
        BackendEvent::Queue(Queue {
            entries: vec![
                q("q-1", "also fold in the CHANGELOG", 95_000, true),
                q("q-2", "and tag the release\nwith v2", 40_000, true),
                q("q-3", "rm -rf ^[[2J<U+202E>tmp", 12_000, false),
            ],
            more: 2,
        }),
    );
    s.select_session(1, 0);
    s.focus = Focus::Tree;
    s
}

fn screen(s: &State, w: u16, h: u16) -> String {
    let mut s = s.clone();
    update(&mut s, Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    crate::ui::draw(&mut t, &mut s, &Theme::dark()).unwrap();
    crate::ui::buffer_text(t.backend().buffer())
}

fn snap(s: &State, name: &str) {
    for (w, h) in [(80, 24), (120, 40)] {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen(s, w, h));
    }
}

#[test]
fn help_and_footer_show_the_users_keys() {
    let mut s = iii();
    s.keymap = switchboard_core::keymap::build(&std::collections::BTreeMap::from([
        ("focus_subtree".to_string(), "u".to_string()),
        ("queue".to_string(), "U".to_string()),
        ("allow_once".to_string(), "Y".to_string()),
    ]))
    .unwrap();
    let footer = screen(&s, 120, 40);
    assert!(footer.contains("U queued messages"), "{footer}");
    assert!(!footer.contains("u queued messages"), "{footer}");
    key(&mut s, KeyCode::Char('?'), KeyModifiers::NONE);
    // Tall enough for every context of the binding tables.
    let help = screen(&s, 120, 120);
    assert!(help.contains("  u/f   "), "{help}");
    assert!(help.contains("Y/y "), "{help}");
    assert!(help.contains("  U   "), "the queue row shows U: {help}");
}

#[test]
fn queue_view_with_a_removal_to_confirm() {
    let mut s = iii();
    key(&mut s, KeyCode::Char('u'), KeyModifiers::NONE);
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    key(&mut s, KeyCode::Char('d'), KeyModifiers::NONE);
    snap(&s, "iii_queue_view");
}

#[test]
fn editing_a_queued_message_in_the_prompt() {
    let mut s = iii();
    key(&mut s, KeyCode::Char('u'), KeyModifiers::NONE);
    key(&mut s, KeyCode::Char('e'), KeyModifiers::NONE);
    typ(&mut s, " too");
    snap(&s, "iii_queue_edit");
}

#[test]
fn new_session_dialog_harness_choice() {
    let mut s = iii();
    s.profiles = vec![ProfileChoice {
        name: "api".into(),
        backend: "claude".into(),
        cwd: "/home/dev/src/api".into(),
        provider: None,
    }];
    key(&mut s, KeyCode::Char('n'), KeyModifiers::CONTROL);
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    typ(&mut s, "claude-sonnet-4");
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    typ(&mut s, "anthropic");
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    typ(&mut s, "Write the docs");
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    typ(&mut s, "filesystem::read, approval::resolve");
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    typ(&mut s, "document the parser");
    snap(&s, "iii_new_harness_session");
}

#[test]
fn the_views_draw_at_any_size_without_panicking() {
    let mut queue = iii();
    key(&mut queue, KeyCode::Char('u'), KeyModifiers::NONE);
    key(&mut queue, KeyCode::End, KeyModifiers::NONE);
    let mut dialog = iii();
    key(&mut dialog, KeyCode::Char('n'), KeyModifiers::CONTROL);
    key(&mut dialog, KeyCode::Down, KeyModifiers::NONE);
    for s in [&queue, &dialog] {
        for w in [1, 2, 5, 12, 30] {
            for h in [1, 2, 4, 8] {
                screen(s, w, h);
            }
        }
    }
}
