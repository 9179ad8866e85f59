//! serde_json's pretty printing, from its compact printing of the same value.
//!
//! A mapping that keeps both forms of a tool's arguments (the compact one for the card's
//! summary and the answer, the pretty one for the row) printed the value twice, and most of
//! printing is escaping strings a byte at a time: an iii replay spent a tenth of its mapping
//! there. The compact text already holds every string escaped, so the pretty form is the
//! same bytes with whitespace put in between tokens.

/// `serde_json::to_string_pretty(v)`, byte for byte, given `serde_json::to_string(v)`:
/// two-space indents, `": "` between key and value, `{}` and `[]` for empty containers.
/// Text that is not compact JSON gets whitespace after its brackets and separators outside
/// strings, and nothing is lost.
pub fn pretty_from_compact(compact: &str) -> String {
    let b = compact.as_bytes();
    let mut out = Vec::with_capacity(b.len() + b.len() / 4);
    let mut depth = 0usize;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                // A string, copied whole: up to the quote no backslash escapes.
                let mut j = i + 1;
                loop {
                    if j >= b.len() {
                        j = b.len();
                        break;
                    }
                    match memchr::memchr2(b'"', b'\\', &b[j..]) {
                        Some(k) if b[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k + 1;
                            break;
                        }
                        None => {
                            j = b.len();
                            break;
                        }
                    }
                }
                out.extend_from_slice(&b[i..j]);
                i = j;
                continue;
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                if b.get(i + 1) == Some(&close) {
                    out.extend_from_slice(&[c, close]);
                    i += 2;
                    continue;
                }
                out.push(c);
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(b',');
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(c),
        }
        i += 1;
    }
    // Only ASCII was added, between whole characters of valid UTF-8 (a string ends at a
    // quote, never inside a character), so this never fails.
    String::from_utf8(out).unwrap_or_else(|e| {
        debug_assert!(false, "whitespace put inside a character");
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn same(v: &Value) {
        let compact = serde_json::to_string(v).unwrap();
        let want = serde_json::to_string_pretty(v).unwrap();
        assert_eq!(pretty_from_compact(&compact), want, "{compact}");
    }

    /// Every shape serde prints: nesting, empty containers at every depth, escapes of
    /// every kind (quotes and backslashes before brackets and commas, control characters,
    /// a backslash last in a string), characters of every width, numbers of every form.
    #[test]
    fn matches_serde_pretty_for_every_shape() {
        for v in [
            json!(null),
            json!(true),
            json!(-1.5e-7),
            json!(u64::MAX),
            json!("plain"),
            json!(""),
            json!({}),
            json!([]),
            json!([{}, [], [[]], {"a": {}}, {"b": []}]),
            json!({"k": "v", "n": 1, "f": 2.5, "t": true, "z": null}),
            json!({"q\"uo:te": "a\"},{[\\", "bs\\": "\\", "end": "x\\\\"}),
            json!({"ctl": "\u{0}\u{1f}\n\t\r\u{8}\u{c}", "uni": "naïve → 日本 🦀", "e\u{301}": 1}),
            json!({"cmd": "rm -rf / ; echo \"}\" , [1,2]", "args": ["a", "b c", ""]}),
            json!([1, [2, [3, [4, {"deep": [5, {"deeper": []}]}]]]]),
        ] {
            same(&v);
        }
    }

    /// Generated values (seeded, so a failure repeats): random trees of the shapes above.
    #[test]
    fn matches_serde_pretty_for_generated_values() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        const PIECES: [&str; 12] = [
            "a", "\"", "\\", "{", "}", "[", "]", ",", ":", "é", "\u{1}", "日本",
        ];
        fn string(next: &mut impl FnMut(u64) -> u64) -> String {
            (0..next(6))
                .map(|_| PIECES[next(PIECES.len() as u64) as usize])
                .collect()
        }
        fn tree(next: &mut impl FnMut(u64) -> u64, depth: u32) -> Value {
            match if depth == 0 { next(4) } else { next(6) } {
                0 => Value::String(string(next)),
                1 => json!(next(1000) as i64 - 500),
                2 => json!(next(1000) as f64 / 7.0),
                3 => [Value::Null, Value::Bool(true), Value::Bool(false)][next(3) as usize].clone(),
                4 => Value::Array((0..next(4)).map(|_| tree(next, depth - 1)).collect()),
                _ => {
                    let mut o = serde_json::Map::new();
                    for _ in 0..next(4) {
                        let k = string(next);
                        let v = tree(next, depth - 1);
                        o.insert(k, v);
                    }
                    Value::Object(o)
                }
            }
        }
        for _ in 0..2000 {
            same(&tree(&mut next, 5));
        }
    }

    /// Text that is not compact JSON (none of it whitespace) loses nothing and never panics,
    /// a cut string included: taking out what was put in gives it back.
    #[test]
    fn anything_else_is_kept() {
        for s in [
            "",
            "\"unterminated\\",
            "\\",
            "}}]]",
            "{\"a\":\"b\\\"",
            "x\u{1}日本",
            "[{,:}]",
        ] {
            let p = pretty_from_compact(s);
            let strip = |t: &str| {
                t.chars()
                    .filter(|c| *c != ' ' && *c != '\n')
                    .collect::<String>()
            };
            assert_eq!(strip(&p), s, "{s:?}");
        }
    }
}
