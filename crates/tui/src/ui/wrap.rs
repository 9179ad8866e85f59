//! Word wrapping into styled lines, measured in terminal cells. Both helpers neutralize
//! what they are given (`<U+202E>`, `^[`): nearly all agent text is drawn through them.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use switchboard_core::text::{neutralize, visible_line};

/// Wrap `text` to `width` cells. The first line starts with `first` (a styled prefix), the
/// following ones with `rest` (usually spaces of the same width).
pub fn wrap(
    text: &str,
    width: u16,
    style: Style,
    first: Span<'static>,
    rest: Span<'static>,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut prefix = first;
    for raw in text.split('\n') {
        let raw = neutralize(raw).replace('\t', "    ");
        let avail = (width as usize).saturating_sub(prefix.width()).max(1);
        for piece in wrap_line(&raw, avail) {
            out.push(Line::from(vec![prefix.clone(), Span::styled(piece, style)]));
            prefix = rest.clone();
        }
    }
    if out.is_empty() {
        out.push(Line::from(vec![prefix]));
    }
    out
}

/// Split one line into pieces of at most `width` cells, at spaces when possible.
pub fn wrap_line(s: &str, width: usize) -> Vec<String> {
    if s.width() <= width {
        return vec![s.to_string()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    let mut last_space: Option<(usize, usize)> = None; // (byte index in cur, width up to it)
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if c == ' ' && cur_w + w > width && !cur.is_empty() {
            // The line is full exactly at a space: break there and drop the space.
            out.push(std::mem::take(&mut cur));
            cur_w = 0;
            last_space = None;
            continue;
        }
        if cur_w + w > width && !cur.is_empty() {
            match last_space {
                Some((i, wi)) if i > 0 => {
                    let tail = cur[i + 1..].to_string();
                    cur.truncate(i);
                    out.push(std::mem::take(&mut cur));
                    cur = tail;
                    cur_w -= wi + 1;
                }
                _ => {
                    out.push(std::mem::take(&mut cur));
                    cur_w = 0;
                }
            }
            last_space = None;
        }
        if c == ' ' {
            last_space = Some((cur.len(), cur_w));
        }
        cur.push(c);
        cur_w += w;
    }
    out.push(cur);
    out
}

/// Cut a line to `width` cells with an ellipsis (hostile characters shown visibly first, a
/// newline or tab too: the terminal would drop it and join what it separates).
pub fn clip(s: &str, width: usize) -> String {
    let s = &*visible_line(s);
    if s.width() <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces() {
        assert_eq!(wrap_line("hello big world", 9), vec!["hello big", "world"]);
        assert_eq!(wrap_line("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap_line("", 4), vec![""]);
    }

    #[test]
    fn wide_chars_count_two() {
        assert_eq!(wrap_line("日本語です", 4), vec!["日本", "語で", "す"]);
        assert_eq!(clip("日本語です", 5), "日本…");
    }
}
