//! The terminal's events as the core's input (the core knows no crossterm): the one place a
//! crossterm key or mouse event becomes a `Msg`.

use crossterm::event as ct;

use switchboard_core::Msg;
use switchboard_core::input::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

pub fn modifiers(m: ct::KeyModifiers) -> KeyModifiers {
    let mut out = KeyModifiers::NONE;
    for (theirs, ours) in [
        (ct::KeyModifiers::SHIFT, KeyModifiers::SHIFT),
        (ct::KeyModifiers::CONTROL, KeyModifiers::CONTROL),
        (ct::KeyModifiers::ALT, KeyModifiers::ALT),
        (
            ct::KeyModifiers::SUPER | ct::KeyModifiers::HYPER | ct::KeyModifiers::META,
            KeyModifiers::OTHER,
        ),
    ] {
        if m.intersects(theirs) {
            out |= ours;
        }
    }
    out
}

pub fn key_code(c: ct::KeyCode) -> KeyCode {
    match c {
        ct::KeyCode::Backspace => KeyCode::Backspace,
        ct::KeyCode::Enter => KeyCode::Enter,
        ct::KeyCode::Left => KeyCode::Left,
        ct::KeyCode::Right => KeyCode::Right,
        ct::KeyCode::Up => KeyCode::Up,
        ct::KeyCode::Down => KeyCode::Down,
        ct::KeyCode::Home => KeyCode::Home,
        ct::KeyCode::End => KeyCode::End,
        ct::KeyCode::PageUp => KeyCode::PageUp,
        ct::KeyCode::PageDown => KeyCode::PageDown,
        ct::KeyCode::Tab => KeyCode::Tab,
        ct::KeyCode::BackTab => KeyCode::BackTab,
        ct::KeyCode::Delete => KeyCode::Delete,
        ct::KeyCode::Insert => KeyCode::Insert,
        ct::KeyCode::F(n) => KeyCode::F(n),
        ct::KeyCode::Char(c) => KeyCode::Char(c),
        ct::KeyCode::Esc => KeyCode::Esc,
        // Keys no binding uses (media keys, lone modifiers, caps lock, …).
        _ => KeyCode::Null,
    }
}

pub fn key(k: ct::KeyEvent) -> KeyEvent {
    let kind = match k.kind {
        ct::KeyEventKind::Press => KeyEventKind::Press,
        ct::KeyEventKind::Repeat => KeyEventKind::Repeat,
        ct::KeyEventKind::Release => KeyEventKind::Release,
    };
    KeyEvent::new_with_kind(key_code(k.code), modifiers(k.modifiers), kind)
}

fn button(b: ct::MouseButton) -> MouseButton {
    match b {
        ct::MouseButton::Left => MouseButton::Left,
        ct::MouseButton::Right => MouseButton::Right,
        ct::MouseButton::Middle => MouseButton::Middle,
    }
}

pub fn mouse(m: ct::MouseEvent) -> MouseEvent {
    let kind = match m.kind {
        ct::MouseEventKind::Down(b) => MouseEventKind::Down(button(b)),
        ct::MouseEventKind::Up(b) => MouseEventKind::Up(button(b)),
        ct::MouseEventKind::Drag(b) => MouseEventKind::Drag(button(b)),
        ct::MouseEventKind::Moved => MouseEventKind::Moved,
        ct::MouseEventKind::ScrollDown => MouseEventKind::ScrollDown,
        ct::MouseEventKind::ScrollUp => MouseEventKind::ScrollUp,
        ct::MouseEventKind::ScrollLeft => MouseEventKind::ScrollLeft,
        ct::MouseEventKind::ScrollRight => MouseEventKind::ScrollRight,
    };
    MouseEvent {
        kind,
        column: m.column,
        row: m.row,
        modifiers: modifiers(m.modifiers),
    }
}

/// The message a terminal event makes, if any: key releases (kitty protocol), pointer moves
/// and drags, and focus changes mean nothing to the reducer and would only cost redraws.
pub fn msg(e: ct::Event) -> Option<Msg> {
    match e {
        ct::Event::Key(k) if k.kind != ct::KeyEventKind::Release => Some(Msg::Key(key(k))),
        ct::Event::Paste(p) => Some(Msg::Paste(p)),
        ct::Event::Mouse(m)
            if matches!(
                m.kind,
                ct::MouseEventKind::Moved | ct::MouseEventKind::Drag(_)
            ) =>
        {
            None
        }
        ct::Event::Mouse(m) => Some(Msg::Mouse(mouse(m))),
        ct::Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_keep_their_modifiers_and_unknown_keys_do_nothing() {
        let k = key(ct::KeyEvent::new(
            ct::KeyCode::Char('c'),
            ct::KeyModifiers::CONTROL | ct::KeyModifiers::SHIFT,
        ));
        assert_eq!(k.code, KeyCode::Char('c'));
        assert_eq!(k.modifiers, KeyModifiers::CONTROL | KeyModifiers::SHIFT);
        let sup = key(ct::KeyEvent::new(
            ct::KeyCode::Char('q'),
            ct::KeyModifiers::SUPER,
        ));
        assert!(sup.modifiers.contains(KeyModifiers::OTHER) && sup.modifiers != KeyModifiers::NONE);
        assert_eq!(key_code(ct::KeyCode::CapsLock), KeyCode::Null);
        let release = ct::KeyEvent::new_with_kind(
            ct::KeyCode::Char('y'),
            ct::KeyModifiers::NONE,
            ct::KeyEventKind::Release,
        );
        assert!(msg(ct::Event::Key(release)).is_none());
        let moved = ct::MouseEvent {
            kind: ct::MouseEventKind::Moved,
            column: 1,
            row: 2,
            modifiers: ct::KeyModifiers::NONE,
        };
        assert!(msg(ct::Event::Mouse(moved)).is_none());
        let click = ct::MouseEvent {
            kind: ct::MouseEventKind::Down(ct::MouseButton::Left),
            ..moved
        };
        match msg(ct::Event::Mouse(click)) {
            Some(Msg::Mouse(m)) => {
                assert_eq!(
                    (m.kind, m.column, m.row),
                    (MouseEventKind::Down(MouseButton::Left), 1, 2)
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
