//! A multi-line text field's state: its lines and cursor, and the editing keys.
//!
//! The prompt and a card's editor are core data (the reducer reads what was typed), so they are
//! plain state here rather than a widget: the renderer draws a field from its lines and cursor.
//! The keys follow the emacs-style set of the textarea widget the fields used to be (Ctrl-A/E,
//! Ctrl-B/F/N/P, Ctrl-K, Ctrl-W, Alt-B/F, …), so no typing habit changed with the move.
//!
//! A field is typed into by whoever holds a terminal attached to a host, so it is bounded
//! (`MAX_BYTES`, what does not fit is refused and counted) and a key or a paste costs what it
//! touches: the cursor is a byte offset (no walk from the line's start per key), a paste of
//! many lines is spliced in once, and the renderer takes only the part around the cursor
//! (`window`). What is left O(line) per key: keys that keep a column in chars across lines
//! (Up, Down, Tab's stop) and a line split or joined amid a long line (the move of its rest).

use super::input::{KeyCode, KeyEvent, KeyModifiers};

/// Spaces a Tab inserts up to (the next multiple of).
const TAB: usize = 4;

/// The most a field holds, in bytes (lines and their breaks): a prompt of a megabyte is far
/// more than anyone types, and keeps every frame and every message built from it cheap.
pub const MAX_BYTES: usize = 1 << 20;

#[derive(Clone, Debug)]
pub struct TextField {
    /// Never empty: an empty field is one empty line.
    lines: Vec<String>,
    /// Cursor line, and byte offset within it (always on a char boundary).
    row: usize,
    at: usize,
    /// Bytes held: the lines' lengths and a break between each two.
    len: usize,
    /// Inputs refused because the field was full, ever (a caller compares before and after).
    refused: u64,
}

/// Two fields are equal when they hold the same text with the cursor in the same place (what
/// was refused along the way is not the field's content).
impl PartialEq for TextField {
    fn eq(&self, other: &Self) -> bool {
        self.lines == other.lines && self.row == other.row && self.at == other.at
    }
}

impl Eq for TextField {}

impl Default for TextField {
    fn default() -> Self {
        TextField {
            lines: vec![String::new()],
            row: 0,
            at: 0,
            len: 0,
            refused: 0,
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

/// The parts of `text` between line breaks: `\n`, `\r\n` and a lone `\r` each end a line (a
/// paste from any terminal). One pass, no copy.
fn parts(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let s = rest?;
        match s.find(['\r', '\n']) {
            Some(i) => {
                let skip = if s[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&s[i + skip..]);
                Some(&s[..i])
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
}

impl TextField {
    /// A field holding `text`, the cursor at its end.
    pub fn new(text: &str) -> TextField {
        let mut f = TextField::default();
        f.insert_str(text);
        f
    }

    /// A field of these lines (none: one empty line), the cursor at the end of the last. They
    /// are taken whole (an agent's text to edit); typing stops at `MAX_BYTES`.
    pub fn from_lines(mut lines: Vec<String>) -> TextField {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let row = lines.len() - 1;
        let at = lines[row].len();
        let len = lines.iter().map(String::len).sum::<usize>() + lines.len() - 1;
        TextField {
            lines,
            row,
            at,
            len,
            refused: 0,
        }
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

    /// Bytes held (the text's length).
    pub fn len(&self) -> usize {
        self.len
    }

    /// How many inputs (a char, a line break, a paste's rest) were refused because the field
    /// was full, ever: whoever typed is told when it grows.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// (line, column in chars). O(the cursor's column): for a frame, not for every key.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.lines[self.row][..self.at].chars().count())
    }

    /// What a view of at most `rows` × `cols` cells around the cursor can show: up to `rows`
    /// lines either side of the cursor's, each cut to `cols` chars either side of its column,
    /// and the cursor within them. A widget scrolled to the cursor shows the same as with the
    /// whole text, at the cost of the view, not of the field.
    pub fn window(&self, rows: usize, cols: usize) -> (Vec<String>, (usize, usize)) {
        let (row, col) = self.cursor();
        let first = row.saturating_sub(rows);
        let last = (row + rows).min(self.lines.len() - 1);
        let from = col.saturating_sub(cols);
        let lines = self.lines[first..=last]
            .iter()
            .map(|l| {
                // Lines other than the cursor's are cut at the same columns, so what scrolls
                // sideways scrolls together.
                let start = byte_at(l, from);
                let rest = &l[start..];
                rest[..byte_at(rest, cols * 2)].to_string()
            })
            .collect();
        (lines, (row - first, col - from))
    }

    /// The cursor's column in chars.
    fn col(&self) -> usize {
        self.lines[self.row][..self.at].chars().count()
    }

    pub fn clear(&mut self) {
        let refused = self.refused;
        *self = TextField::default();
        self.refused = refused;
    }

    /// Room for `n` more bytes; when there is none, the input is counted as refused.
    fn room(&mut self, n: usize) -> bool {
        let ok = self.len + n <= MAX_BYTES;
        if !ok {
            self.refused += 1;
        }
        ok
    }

    /// Insert at the cursor; `\n`, `\r\n` and a lone `\r` start new lines (a paste from any
    /// terminal). What does not fit in `MAX_BYTES` is refused (counted in `refused`); returns
    /// whether all of it went in. O(text + the lines after the cursor), in one splice.
    pub fn insert_str(&mut self, text: &str) -> bool {
        let room = MAX_BYTES.saturating_sub(self.len);
        // (A `\r\n` counts as two bytes here and one in the field: never over the bound.)
        let whole = text.len() <= room;
        let text = &text[..crate::text::floor_boundary(text, room.min(text.len()))];
        if !whole {
            self.refused += 1;
        }
        let mut parts = parts(text);
        let first = parts.next().unwrap_or("");
        let line = &mut self.lines[self.row];
        let mut added: Vec<String> = parts.map(str::to_string).collect();
        if added.is_empty() {
            line.insert_str(self.at, first);
            self.at += first.len();
            self.len += first.len();
            return whole;
        }
        // The cursor's line ends with the first part; the text after the cursor goes to the
        // end of the last line, where the cursor stays.
        let tail = line.split_off(self.at);
        line.push_str(first);
        self.len += first.len() + added.iter().map(|p| p.len() + 1).sum::<usize>();
        let last = added.last_mut().expect("not empty");
        self.at = last.len();
        last.push_str(&tail);
        let n = added.len();
        self.lines.splice(self.row + 1..self.row + 1, added);
        self.row += n;
        whole
    }

    pub fn insert_char(&mut self, c: char) {
        if !self.room(c.len_utf8()) {
            return;
        }
        self.lines[self.row].insert(self.at, c);
        self.at += c.len_utf8();
        self.len += c.len_utf8();
    }

    pub fn insert_newline(&mut self) {
        if !self.room(1) {
            return;
        }
        let rest = self.lines[self.row].split_off(self.at);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.at = 0;
        self.len += 1;
    }

    /// Backspace: the char before the cursor, or the line break before the line.
    fn delete_char(&mut self) -> bool {
        if self.at > 0 {
            let line = &mut self.lines[self.row];
            let c = line[..self.at].chars().next_back().expect("a char before");
            self.at -= c.len_utf8();
            line.remove(self.at);
            self.len -= c.len_utf8();
            true
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.at = self.lines[self.row].len();
            self.lines[self.row].push_str(&line);
            self.len -= 1;
            true
        } else {
            false
        }
    }

    /// Delete: the char under the cursor, or the line break after the line.
    fn delete_next_char(&mut self) -> bool {
        if self.at < self.lines[self.row].len() {
            let c = self.lines[self.row].remove(self.at);
            self.len -= c.len_utf8();
            true
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
            self.len -= 1;
            true
        } else {
            false
        }
    }

    /// Delete from the line's start to the cursor.
    pub fn delete_line_by_head(&mut self) -> bool {
        if self.at == 0 {
            return self.delete_char();
        }
        self.lines[self.row].replace_range(..self.at, "");
        self.len -= self.at;
        self.at = 0;
        true
    }

    /// Delete from the cursor to the line's end.
    fn delete_line_by_end(&mut self) -> bool {
        let line = &mut self.lines[self.row];
        if self.at == line.len() {
            return self.delete_next_char();
        }
        self.len -= line.len() - self.at;
        line.truncate(self.at);
        true
    }

    /// The byte offset where the word before the cursor starts (0 at a line's start): a walk
    /// back over that word only.
    fn word_back(&self) -> usize {
        let mut it = self.lines[self.row][..self.at]
            .char_indices()
            .rev()
            .peekable();
        while it.next_if(|(_, c)| class(*c) == Class::Space).is_some() {}
        if let Some(&(_, c)) = it.peek() {
            let k = class(c);
            while it.next_if(|(_, c)| class(*c) == k).is_some() {}
        }
        it.peek().map_or(0, |(i, c)| i + c.len_utf8())
    }

    /// The byte offset just past the word at or after the cursor.
    fn word_forward(&self) -> usize {
        let line = &self.lines[self.row];
        let mut it = line[self.at..].char_indices().peekable();
        while it.next_if(|(_, c)| class(*c) == Class::Space).is_some() {}
        if let Some(&(_, c)) = it.peek() {
            let k = class(c);
            while it.next_if(|(_, c)| class(*c) == k).is_some() {}
        }
        self.at + it.peek().map_or(line.len() - self.at, |(i, _)| *i)
    }

    fn delete_word(&mut self) -> bool {
        if self.at == 0 {
            return self.delete_char();
        }
        let from = self.word_back();
        self.lines[self.row].replace_range(from..self.at, "");
        self.len -= self.at - from;
        self.at = from;
        true
    }

    fn delete_next_word(&mut self) -> bool {
        if self.at == self.lines[self.row].len() {
            return self.delete_next_char();
        }
        let to = self.word_forward();
        self.lines[self.row].replace_range(self.at..to, "");
        self.len -= to - self.at;
        true
    }

    fn insert_tab(&mut self) -> bool {
        let (n, len) = (TAB - self.col() % TAB, self.len);
        self.insert_str(&" ".repeat(n));
        self.len != len
    }

    /// To line `row`, at the same column in chars (or its end).
    fn move_to_row(&mut self, row: usize) {
        let col = self.col();
        self.row = row;
        self.at = byte_at(&self.lines[row], col);
    }

    fn up(&mut self) {
        if self.row > 0 {
            self.move_to_row(self.row - 1);
        }
    }

    fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.move_to_row(self.row + 1);
        }
    }

    fn left(&mut self) {
        if let Some(c) = self.lines[self.row][..self.at].chars().next_back() {
            self.at -= c.len_utf8();
        } else if self.row > 0 {
            self.row -= 1;
            self.at = self.lines[self.row].len();
        }
    }

    fn right(&mut self) {
        if let Some(c) = self.lines[self.row][self.at..].chars().next() {
            self.at += c.len_utf8();
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.at = 0;
        }
    }

    /// One editing key; true when the text changed. Keys with no meaning here do nothing.
    pub fn input(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let len = self.len;
        match (key.code, ctrl, alt) {
            (KeyCode::Enter, _, _) | (KeyCode::Char('m'), true, false) => {
                self.insert_newline();
                self.len != len
            }
            (KeyCode::Char(c), false, false) => {
                self.insert_char(c);
                self.len != len
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
                self.at = 0;
                false
            }
            (KeyCode::End, _, false) | (KeyCode::Char('e'), true, false) => {
                if ctrl && key.code == KeyCode::End {
                    self.row = self.lines.len() - 1;
                }
                self.at = self.lines[self.row].len();
                false
            }
            (KeyCode::Right, true, false) | (KeyCode::Char('f'), false, true) => {
                self.at = self.word_forward();
                false
            }
            (KeyCode::Left, true, false) | (KeyCode::Char('b'), false, true) => {
                self.at = self.word_back();
                false
            }
            (KeyCode::Char('<'), false, true) => {
                (self.row, self.at) = (0, 0);
                false
            }
            (KeyCode::Char('>'), false, true) => {
                self.row = self.lines.len() - 1;
                self.at = self.lines[self.row].len();
                false
            }
            _ => false,
        }
    }
}

#[cfg(test)]
#[path = "text_field_tests.rs"]
mod tests;
