//! The core's own input types: keys, mouse, and the screen rectangles the mouse hits.
//!
//! The reducer knows no terminal library (as helix-view keeps its own `KeyEvent`): the terminal
//! edge converts crossterm's events into these (`tui`'s `convert`), so the core builds and is
//! tested without a terminal crate. The names follow crossterm's, so a reader of either knows
//! both.

use std::ops::{BitAnd, BitOr, BitOrAssign, Sub};

use serde::{Deserialize, Serialize};

/// Modifier keys held with a key or a click: a small bit set.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyModifiers(u8);

impl KeyModifiers {
    pub const NONE: KeyModifiers = KeyModifiers(0);
    pub const SHIFT: KeyModifiers = KeyModifiers(1);
    pub const CONTROL: KeyModifiers = KeyModifiers(2);
    pub const ALT: KeyModifiers = KeyModifiers(4);
    /// The other modifiers a terminal reports (super, hyper, meta): kept so a chord with one
    /// of them never matches a plain binding.
    pub const OTHER: KeyModifiers = KeyModifiers(8);

    pub const fn empty() -> KeyModifiers {
        KeyModifiers::NONE
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub const fn contains(self, other: KeyModifiers) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn intersects(self, other: KeyModifiers) -> bool {
        self.0 & other.0 != 0
    }
    pub fn insert(&mut self, other: KeyModifiers) {
        self.0 |= other.0;
    }
    pub fn remove(&mut self, other: KeyModifiers) {
        self.0 &= !other.0;
    }
    pub const fn bits(self) -> u8 {
        self.0
    }
}

impl BitOr for KeyModifiers {
    type Output = KeyModifiers;
    fn bitor(self, rhs: KeyModifiers) -> KeyModifiers {
        KeyModifiers(self.0 | rhs.0)
    }
}

impl BitOrAssign for KeyModifiers {
    fn bitor_assign(&mut self, rhs: KeyModifiers) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for KeyModifiers {
    type Output = KeyModifiers;
    fn bitand(self, rhs: KeyModifiers) -> KeyModifiers {
        KeyModifiers(self.0 & rhs.0)
    }
}

impl Sub for KeyModifiers {
    type Output = KeyModifiers;
    fn sub(self, rhs: KeyModifiers) -> KeyModifiers {
        KeyModifiers(self.0 & !rhs.0)
    }
}

impl std::fmt::Debug for KeyModifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = [
            (KeyModifiers::SHIFT, "SHIFT"),
            (KeyModifiers::CONTROL, "CONTROL"),
            (KeyModifiers::ALT, "ALT"),
            (KeyModifiers::OTHER, "OTHER"),
        ];
        let held: Vec<&str> = names
            .iter()
            .filter(|(m, _)| self.contains(*m))
            .map(|(_, n)| *n)
            .collect();
        if held.is_empty() {
            f.write_str("NONE")
        } else {
            f.write_str(&held.join(" | "))
        }
    }
}

/// A key. Keys the reducer has no use for (media keys, lone modifiers, …) arrive as `Null`
/// and do nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyCode {
    Backspace,
    Enter,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    PageUp,
    PageDown,
    Tab,
    BackTab,
    Delete,
    Insert,
    F(u8),
    Char(char),
    Null,
    Esc,
}

/// Whether the key went down, repeats, or came up (only terminals with the kitty protocol
/// report the last two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyEventKind {
    #[default]
    Press,
    Repeat,
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyEvent {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    pub kind: KeyEventKind,
}

impl KeyEvent {
    pub const fn new(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
        }
    }
    pub const fn new_with_kind(
        code: KeyCode,
        modifiers: KeyModifiers,
        kind: KeyEventKind,
    ) -> KeyEvent {
        KeyEvent {
            code,
            modifiers,
            kind,
        }
    }
}

impl From<KeyCode> for KeyEvent {
    fn from(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MouseButton {
    Left,
    Right,
    Middle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MouseEventKind {
    Down(MouseButton),
    Up(MouseButton),
    Drag(MouseButton),
    Moved,
    ScrollDown,
    ScrollUp,
    ScrollLeft,
    ScrollRight,
}

/// A mouse event at a screen cell (0-based column and row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MouseEvent {
    pub kind: MouseEventKind,
    pub column: u16,
    pub row: u16,
    pub modifiers: KeyModifiers,
}

/// A screen rectangle in cells: where the renderer last drew a pane, for mouse hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rect {
    pub x: u16,
    pub y: u16,
    pub width: u16,
    pub height: u16,
}

impl Rect {
    pub const fn new(x: u16, y: u16, width: u16, height: u16) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }
    /// Whether the cell at (`column`, `row`) lies inside.
    pub const fn contains(self, column: u16, row: u16) -> bool {
        column >= self.x
            && row >= self.y
            && (column as u32) < self.x as u32 + self.width as u32
            && (row as u32) < self.y as u32 + self.height as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifiers_are_a_set() {
        let m = KeyModifiers::CONTROL | KeyModifiers::SHIFT;
        assert!(m.contains(KeyModifiers::CONTROL));
        assert!(!m.contains(KeyModifiers::ALT));
        assert!(!m.contains(KeyModifiers::CONTROL | KeyModifiers::ALT));
        assert!(m.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT));
        assert_eq!(m - KeyModifiers::SHIFT, KeyModifiers::CONTROL);
        assert!(KeyModifiers::NONE.is_empty() && KeyModifiers::NONE.contains(KeyModifiers::NONE));
        assert_eq!(format!("{m:?}"), "SHIFT | CONTROL");
    }

    #[test]
    fn a_rect_holds_its_cells_and_no_more() {
        let r = Rect::new(2, 3, 4, 2);
        assert!(r.contains(2, 3) && r.contains(5, 4));
        assert!(!r.contains(6, 3) && !r.contains(2, 5) && !r.contains(1, 3));
        assert!(!Rect::default().contains(0, 0));
        let edge = Rect::new(u16::MAX - 1, 0, 5, 1);
        assert!(edge.contains(u16::MAX, 0));
    }
}
