//! A multi-line text field's state: its lines and cursor, and the editing keys.
//!
//! The prompt and a card's editor are core data (the reducer reads what was typed), so they are
//! plain state here rather than a widget: the renderer draws a field from its lines and cursor.
//! The keys follow the emacs-style set of the textarea widget the fields used to be (Ctrl-A/E,
//! Ctrl-B/F/N/P, Ctrl-K, Ctrl-W, Alt-B/F, …), so no typing habit changed with the move.

use super::input::{KeyCode, KeyEvent, KeyModifiers};

/// Spaces a Tab inserts up to (the next multiple of).
const TAB: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextField {
    /// Never empty: an empty field is one empty line.
    lines: Vec<String>,
    /// Cursor line, and column in chars within it.
    row: usize,
    col: usize,
}

impl Default for TextField {
    fn default() -> Self {
        TextField {
            lines: vec![String::new()],
            row: 0,
            col: 0,
        }
    }
}

/// Where a char sits for word motions: runs of one class make a word.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Class {
    Space,
    Word,
    Punct,
}

fn class(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if c.is_alphanumeric() || c == '_' {
        Class::Word
    } else {
        Class::Punct
    }
}

/// The byte offset of char `col` in `s` (its length past the end).
fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

impl TextField {
    /// A field holding `text`, the cursor at its end.
    pub fn new(text: &str) -> TextField {
        let mut f = TextField::default();
        f.insert_str(text);
        f
    }

    /// A field of these lines (none: one empty line), the cursor at the end of the last.
    pub fn from_lines(mut lines: Vec<String>) -> TextField {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let row = lines.len() - 1;
        let col = lines[row].chars().count();
        TextField { lines, row, col }
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// (line, column in chars).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    fn line_len(&self, row: usize) -> usize {
        self.lines[row].chars().count()
    }

    pub fn clear(&mut self) {
        *self = TextField::default();
    }

    /// Insert at the cursor; `\n`, `\r\n` and a lone `\r` start new lines (a paste from any
    /// terminal).
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.insert_newline();
            }
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.insert_str(at, part);
            self.col += part.chars().count();
        }
    }

    pub fn insert_char(&mut self, c: char) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.insert(at, c);
        self.col += 1;
    }

    pub fn insert_newline(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        let rest = line.split_off(at);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    /// Backspace: the char before the cursor, or the line break before the line.
    fn delete_char(&mut self) -> bool {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
            true
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.line_len(self.row);
            self.lines[self.row].push_str(&line);
            true
        } else {
            false
        }
    }

    /// Delete: the char under the cursor, or the line break after the line.
    fn delete_next_char(&mut self) -> bool {
        if self.col < self.line_len(self.row) {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
            true
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
            true
        } else {
            false
        }
    }

    /// Delete from the line's start to the cursor.
    pub fn delete_line_by_head(&mut self) -> bool {
        if self.col == 0 {
            return self.delete_char();
        }
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.replace_range(..at, "");
        self.col = 0;
        true
    }

    /// Delete from the cursor to the line's end.
    fn delete_line_by_end(&mut self) -> bool {
        if self.col == self.line_len(self.row) {
            return self.delete_next_char();
        }
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.truncate(at);
        true
    }

    /// The column where the word before the cursor starts (0 at a line's start).
    fn word_back(&self) -> usize {
        let chars: Vec<char> = self.lines[self.row].chars().take(self.col).collect();
        let mut i = chars.len();
        while i > 0 && class(chars[i - 1]) == Class::Space {
            i -= 1;
        }
        if i > 0 {
            let c = class(chars[i - 1]);
            while i > 0 && class(chars[i - 1]) == c {
                i -= 1;
            }
        }
        i
    }

    /// The column just past the word at or after the cursor.
    fn word_forward(&self) -> usize {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut i = self.col;
        while i < chars.len() && class(chars[i]) == Class::Space {
            i += 1;
        }
        if i < chars.len() {
            let c = class(chars[i]);
            while i < chars.len() && class(chars[i]) == c {
                i += 1;
            }
        }
        i
    }

    fn delete_word(&mut self) -> bool {
        if self.col == 0 {
            return self.delete_char();
        }
        let from = self.word_back();
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, from), byte_at(line, self.col));
        line.replace_range(a..b, "");
        self.col = from;
        true
    }

    fn delete_next_word(&mut self) -> bool {
        if self.col == self.line_len(self.row) {
            return self.delete_next_char();
        }
        let to = self.word_forward();
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, self.col), byte_at(line, to));
        line.replace_range(a..b, "");
        true
    }

    fn insert_tab(&mut self) -> bool {
        let n = TAB - self.col % TAB;
        self.insert_str(&" ".repeat(n));
        true
    }

    fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.line_len(self.row));
        }
    }

    fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.line_len(self.row));
        }
    }

    fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line_len(self.row);
        }
    }

    fn right(&mut self) {
        if self.col < self.line_len(self.row) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// One editing key; true when the text changed. Keys with no meaning here do nothing.
    pub fn input(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match (key.code, ctrl, alt) {
            (KeyCode::Enter, _, _) | (KeyCode::Char('m'), true, false) => {
                self.insert_newline();
                true
            }
            (KeyCode::Char(c), false, false) => {
                self.insert_char(c);
                true
            }
            (KeyCode::Tab, false, false) => self.insert_tab(),
            (KeyCode::Backspace, false, false) | (KeyCode::Char('h'), true, false) => {
                self.delete_char()
            }
            (KeyCode::Delete, false, false) | (KeyCode::Char('d'), true, false) => {
                self.delete_next_char()
            }
            (KeyCode::Char('k'), true, false) => self.delete_line_by_end(),
            (KeyCode::Char('j'), true, false) => self.delete_line_by_head(),
            (KeyCode::Char('w'), true, false)
            | (KeyCode::Char('h'), false, true)
            | (KeyCode::Backspace, false, true) => self.delete_word(),
            (KeyCode::Delete, false, true) | (KeyCode::Char('d'), false, true) => {
                self.delete_next_word()
            }
            (KeyCode::Down, false, false) | (KeyCode::Char('n'), true, false) => {
                self.down();
                false
            }
            (KeyCode::Up, false, false) | (KeyCode::Char('p'), true, false) => {
                self.up();
                false
            }
            (KeyCode::Right, false, false) | (KeyCode::Char('f'), true, false) => {
                self.right();
                false
            }
            (KeyCode::Left, false, false) | (KeyCode::Char('b'), true, false) => {
                self.left();
                false
            }
            (KeyCode::Home, _, false) | (KeyCode::Char('a'), true, false) => {
                if ctrl && key.code == KeyCode::Home {
                    self.row = 0;
                }
                self.col = 0;
                false
            }
            (KeyCode::End, _, false) | (KeyCode::Char('e'), true, false) => {
                if ctrl && key.code == KeyCode::End {
                    self.row = self.lines.len() - 1;
                }
                self.col = self.line_len(self.row);
                false
            }
            (KeyCode::Right, true, false) | (KeyCode::Char('f'), false, true) => {
                self.col = self.word_forward();
                false
            }
            (KeyCode::Left, true, false) | (KeyCode::Char('b'), false, true) => {
                self.col = self.word_back();
                false
            }
            (KeyCode::Char('<'), false, true) => {
                (self.row, self.col) = (0, 0);
                false
            }
            (KeyCode::Char('>'), false, true) => {
                self.row = self.lines.len() - 1;
                self.col = self.line_len(self.row);
                false
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }
    fn typed(f: &mut TextField, s: &str) {
        for c in s.chars() {
            f.input(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    #[test]
    fn typing_and_deleting_across_lines() {
        let mut f = TextField::default();
        assert!(f.is_empty());
        typed(&mut f, "héllo");
        f.input(key(KeyCode::Enter, KeyModifiers::NONE));
        typed(&mut f, "wörld");
        assert_eq!(f.lines(), ["héllo", "wörld"]);
        assert_eq!(f.cursor(), (1, 5));
        f.input(key(KeyCode::Home, KeyModifiers::NONE));
        assert!(f.input(key(KeyCode::Backspace, KeyModifiers::NONE)));
        assert_eq!(f.text(), "héllowörld");
        assert_eq!(f.cursor(), (0, 5));
        assert!(f.input(key(KeyCode::Delete, KeyModifiers::NONE)));
        assert_eq!(f.text(), "hélloörld");
        f.input(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
        assert!(!f.input(key(KeyCode::Backspace, KeyModifiers::NONE)));
        f.input(key(KeyCode::Char('e'), KeyModifiers::CONTROL));
        assert!(!f.input(key(KeyCode::Delete, KeyModifiers::NONE)));
        assert_eq!(f.cursor(), (0, 9));
    }

    #[test]
    fn paste_splits_lines_from_any_terminal() {
        let mut f = TextField::new("ab");
        f.input(key(KeyCode::Left, KeyModifiers::NONE));
        f.insert_str("1\r\n2\r3\n4");
        assert_eq!(f.lines(), ["a1", "2", "3", "4b"]);
        assert_eq!(f.cursor(), (3, 1));
    }

    #[test]
    fn words_and_line_kills() {
        let mut f = TextField::new("let x = foo.bar(1);");
        f.input(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(f.text(), "let x = foo.bar(1");
        f.input(key(KeyCode::Char('b'), KeyModifiers::ALT));
        assert_eq!(f.cursor(), (0, 16));
        f.input(key(KeyCode::Left, KeyModifiers::CONTROL));
        assert_eq!(f.cursor(), (0, 15));
        f.input(key(KeyCode::Left, KeyModifiers::CONTROL));
        assert_eq!(f.cursor(), (0, 12));
        f.input(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
        assert_eq!(f.text(), "let x = foo.");
        f.input(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
        f.input(key(KeyCode::Char('f'), KeyModifiers::ALT));
        assert_eq!(f.cursor(), (0, 3));
        f.input(key(KeyCode::Char('d'), KeyModifiers::ALT));
        assert_eq!(f.text(), "let = foo.");
        f.input(key(KeyCode::End, KeyModifiers::NONE));
        assert!(f.delete_line_by_head());
        assert!(f.is_empty());
    }

    #[test]
    fn cursor_moves_stay_inside_the_text() {
        let mut f = TextField::new("long line\nab");
        f.input(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(f.cursor(), (0, 2));
        f.input(key(KeyCode::End, KeyModifiers::NONE));
        f.input(key(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(f.cursor(), (1, 2));
        f.input(key(KeyCode::Right, KeyModifiers::NONE));
        assert_eq!(f.cursor(), (1, 2));
        f.input(key(KeyCode::Home, KeyModifiers::NONE));
        f.input(key(KeyCode::Left, KeyModifiers::NONE));
        assert_eq!(f.cursor(), (0, 9));
        f.input(key(KeyCode::Tab, KeyModifiers::NONE));
        assert_eq!(f.lines()[0], "long line   ");
        f.input(key(KeyCode::Char('<'), KeyModifiers::ALT));
        assert_eq!(f.cursor(), (0, 0));
        // Chords with no meaning type nothing.
        assert!(!f.input(key(KeyCode::Char('x'), KeyModifiers::CONTROL)));
        assert!(!f.input(key(KeyCode::F(2), KeyModifiers::NONE)));
        assert_eq!(f.text(), "long line   \nab");
    }
}
