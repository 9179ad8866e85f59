//! Differential tests for the mapper's fast paths: each must give exactly what the plain
//! version gives, on the real recordings, on the generated benchmark stream, and on hostile
//! variants of both (control characters, colour sequences, C1 bytes placed around the
//! 16-byte blocks the fast scan works in).

#[path = "../benches/support/gen.rs"]
mod generator;

use std::borrow::Cow;

use serde_json::Value;
use switchboard::core::text::{neutralize, sanitize, sanitize_owned};

/// `sanitize` as it was before the fast path: one character at a time.
fn sanitize_reference(s: &str) -> String {
    fn sgr_len(s: &str) -> Option<usize> {
        let body = s.strip_prefix("\u{1b}[")?;
        let params = body
            .bytes()
            .take(33)
            .take_while(|b| b.is_ascii_digit() || *b == b';' || *b == b':')
            .count();
        (params <= 32 && body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}'
            && let Some(n) = sgr_len(rest)
        {
            rest = &rest[n..];
            continue;
        }
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() => out.push_str(&neutralize(c.encode_utf8(&mut [0; 4]))),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn check(s: &str) {
    let want = sanitize_reference(s);
    assert_eq!(sanitize(s), want, "sanitize({s:?})");
    assert_eq!(sanitize_owned(Cow::Borrowed(s)), want, "borrowed {s:?}");
    assert_eq!(
        sanitize_owned(Cow::Owned(s.to_string())),
        want,
        "owned {s:?}"
    );
}

/// Every string value inside a JSON document (decoded, so escapes are real characters).
fn strings_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings_in(v, out)),
        Value::Object(o) => o.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings_in(v, out)
        }),
        _ => {}
    }
}

/// The lines the agents wrote in every recording, and the strings inside them.
fn recorded() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["claude", "acp"] {
        let dir = format!("{}/fixtures/recordings/{dir}", env!("CARGO_MANIFEST_DIR"));
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            for rec in std::fs::read_to_string(&path).unwrap().lines() {
                out.push(rec.to_string());
                if let Ok(v) = serde_json::from_str::<Value>(rec) {
                    if let Some(line) = v.get("line").and_then(Value::as_str)
                        && let Ok(inner) = serde_json::from_str::<Value>(line)
                    {
                        strings_in(&inner, &mut out);
                    }
                    strings_in(&v, &mut out);
                }
            }
        }
    }
    assert!(out.len() > 5000, "only {} strings read", out.len());
    out
}

fn generated() -> Vec<String> {
    let mut out = Vec::new();
    for line in generator::ClaudeGen::lines(7, 20_000) {
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            strings_in(&v, &mut out);
        }
        out.push(line);
    }
    out
}

/// What a hostile agent puts in text: every kind of character `sanitize` treats specially,
/// and near misses (`©` shares C1's lead byte, an SGR cut short, one with 33 parameters).
const HOSTILE: &[&str] = &[
    "\u{1b}",
    "\u{1b}[31m",
    "\u{1b}[0m",
    "\u{1b}[1;2:3m",
    "\u{1b}[",
    "\u{1b}[31",
    "\u{1b}]0;title\u{7}",
    "\r",
    "\r\n",
    "\n",
    "\t",
    "\u{0}",
    "\u{7}",
    "\u{7f}",
    "\u{80}",
    "\u{85}",
    "\u{9b}",
    "\u{9f}",
    "\u{a0}",
    "©",
    "é",
    "日本",
    "\u{202e}",
    "\u{e0041}",
    "🦀",
    "\u{1b}[11111111111111111111111111111111m",
    "\u{1b}[111111111111111111111111111111111m",
];

/// `s` with a hostile piece put at offsets around the scan's 16-byte blocks.
fn mutated(s: &str, k: usize) -> Vec<String> {
    let piece = HOSTILE[k % HOSTILE.len()];
    let mut out = Vec::new();
    for at in [0, 1, 14, 15, 16, 17, 31, 32, 33, s.len() / 2, s.len()] {
        let mut at = at.min(s.len());
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        out.push(format!("{}{piece}{}", &s[..at], &s[at..]));
    }
    out
}

/// Every string, and hostile mutations of every `every`-th one.
fn check_with_mutations(strings: &[String], every: usize) {
    for (k, s) in strings.iter().enumerate() {
        check(s);
        if k % every == 0 {
            mutated(s, k).iter().for_each(|m| check(m));
        }
    }
}

#[test]
fn sanitize_fast_path_matches_the_reference_on_recordings_and_their_mutations() {
    check_with_mutations(&recorded(), 7);
}

#[test]
fn sanitize_fast_path_matches_the_reference_on_the_generated_stream_and_its_mutations() {
    check_with_mutations(&generated(), 13);
}

#[test]
fn sanitize_fast_path_matches_the_reference_on_random_hostile_text() {
    let mut rng = generator::Rng::new(99);
    let alphabet: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .chain([
            "a",
            "b",
            " ",
            "m",
            "[",
            ";",
            "1",
            "x y z",
            "0123456789abcdef",
        ])
        .collect();
    for _ in 0..50_000 {
        let n = rng.range(0, 40);
        let s: String = (0..n)
            .map(|_| alphabet[rng.range(0, alphabet.len() - 1)])
            .collect();
        check(&s);
    }
    // Every character of the first two planes' interesting ranges, alone and in a block.
    for c in ('\u{0}'..='\u{3ff}').chain('\u{2000}'..='\u{20ff}') {
        check(&c.to_string());
        check(&format!("0123456789abcde{c}0123456789abcdef"));
    }
}
