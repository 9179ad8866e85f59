//! The Claude codec's fast paths (`codec::parse_fast`) against its general serde path
//! (`codec::parse_reference`): whenever a fast path reads a line, its result must be the one
//! the general path gives. On the real CLI's lines (our recordings and the cowork-harness
//! cassettes), on the benchmarks' generated stream, and on mutated and hostile variants of
//! them (cut short, bytes inserted or dropped, duplicate keys, wrong types, escapes).
//! The fuzz target `claude_codec` does the same on what libFuzzer makes.

use std::path::Path;

use switchboard::backend::claude::codec::{Inbound, parse, parse_fast, parse_reference};
use switchboard::record::Dir;
use switchboard::replay::load::load;

#[path = "support/common.rs"]
mod common;
#[path = "../benches/support/gen.rs"]
mod generator;

use generator::{ClaudeGen, Rng};

/// Checks one line; true when a fast path read it.
fn same(line: &str) -> bool {
    let reference = format!("{:?}", parse_reference(line));
    assert_eq!(
        format!("{:?}", parse(line)),
        reference,
        "parse differs from the reference on {line:?}"
    );
    match parse_fast(line) {
        Some(fast) => {
            assert_eq!(
                format!("{fast:?}"),
                reference,
                "the fast path differs from the reference on {line:?}"
            );
            true
        }
        None => false,
    }
}

fn agent_lines(path: &Path) -> Vec<String> {
    let loaded = load(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    loaded
        .frames
        .into_iter()
        .filter(|f| f.dir == Dir::In)
        .map(|f| f.text)
        .collect()
}

fn recorded_lines() -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(common::manifest("fixtures/recordings/claude"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    if let Some(d) = common::shared_dir_or_skip("recorded_lines", "recordings/claude") {
        files.extend(std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()));
    }
    files.sort();
    files.iter().flat_map(|p| agent_lines(p)).collect()
}

/// One line of each shape (its `type`, the event's `type`, the delta's or block's `type`):
/// the lines the exhaustive mutations run on.
fn one_of_each_shape(lines: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines
        .iter()
        .filter(|l| {
            let shape: Vec<&str> = l
                .split("\"type\":\"")
                .skip(1)
                .take(3)
                .map(|t| t.split('"').next().unwrap_or(""))
                .collect();
            seen.insert(shape.join("/"))
        })
        .cloned()
        .collect()
}

/// The kinds with a fast path.
fn fast_kind(i: &Inbound) -> bool {
    matches!(
        i,
        Inbound::StreamEvent(_) | Inbound::Assistant(_) | Inbound::User(_)
    )
}

#[test]
fn recorded_lines_agree_and_take_the_fast_path() {
    let lines = recorded_lines();
    assert!(lines.len() > 500, "only {} lines", lines.len());
    let (mut kinds, mut fast) = (0, 0);
    for l in &lines {
        let took = same(l);
        if fast_kind(&parse_reference(l)) {
            kinds += 1;
            fast += usize::from(took);
        } else {
            assert!(!took, "a fast path read a line of another kind: {l}");
        }
    }
    assert!(kinds > 100, "only {kinds} lines of the fast kinds");
    assert_eq!(
        fast, kinds,
        "every recorded line of a fast kind takes the fast path"
    );
}

#[test]
fn generated_lines_agree_and_take_the_fast_path() {
    let lines = ClaudeGen::lines(7, 30_000);
    let mut fast = 0;
    for l in &lines {
        if fast_kind(&parse_reference(l)) {
            fast += 1;
            assert!(same(l), "not on the fast path: {l}");
        } else {
            same(l);
        }
    }
    assert!(fast > 25_000, "only {fast} lines on the fast path");
}

/// Every cut, every dropped character and a set of inserted tokens at every position, on one
/// line of each shape.
#[test]
fn exhaustive_mutations_agree() {
    let mut lines = one_of_each_shape(&recorded_lines());
    lines.extend(one_of_each_shape(&ClaudeGen::lines(11, 5_000)));
    const TOKENS: &[&str] = &[
        "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "0", "-", "1.5e3", "n", "null", "\u{1}",
        "\\u12", "\\ud800", "é", "\"x\":1,", "e", ".",
    ];
    let mut fast = 0;
    for line in &lines {
        let cuts: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
        for &i in &cuts {
            same(&line[..i]);
            let c = line[i..].chars().next().unwrap();
            same(&format!("{}{}", &line[..i], &line[i + c.len_utf8()..]));
            for t in TOKENS {
                fast += usize::from(same(&format!("{}{t}{}", &line[..i], &line[i..])));
            }
        }
    }
    assert!(fast > 1000, "the fast path read only {fast} mutated lines");
}

/// Random edits (from JSON's own tokens) to the generated stream, one to three per line.
#[test]
fn random_mutations_agree() {
    const TOKENS: &[&str] = &[
        "\"",
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "0",
        "01",
        "-",
        "null",
        "true",
        "\"a\"",
        "\u{7f}",
        "\t",
        "\\n",
        "\\u0041",
        "\\uDC00",
        "1e999",
        "4294967296",
    ];
    let mut rng = Rng::new(3);
    let (mut fast, mut n) = (0, 0);
    for line in ClaudeGen::lines(5, 20_000) {
        let mut l = line.clone();
        for _ in 0..rng.range(1, 3) {
            let at = rng.range(0, l.len());
            if !l.is_char_boundary(at) {
                continue;
            }
            if rng.chance(30) {
                let end = (at + rng.range(1, 3)).min(l.len());
                if l.is_char_boundary(end) {
                    l.replace_range(at..end, "");
                }
            } else {
                l.insert_str(at, TOKENS[rng.range(0, TOKENS.len() - 1)]);
            }
        }
        fast += usize::from(same(&l));
        n += 1;
    }
    assert!(fast > n / 10, "the fast path read only {fast} of {n}");
}

/// Shapes serde reads its own way: each must agree (most take the general path).
#[test]
fn hostile_variants_agree() {
    let base = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"hi"}},"parent_tool_use_id":null,"session_id":"s"}"#;
    let variants = [
        // Duplicate fields serde reads (an error) and fields it skips (fine).
        base.replace(r#""index":3"#, r#""index":3,"index":4"#),
        base.replace(r#""index":3"#, r#""index":null,"index":4"#),
        base.replace(r#""text":"hi""#, r#""text":"hi","text":"ho""#),
        base.replace(r#""session_id":"s""#, r#""session_id":"s","session_id":1"#),
        base.replace(r#""parent_tool_use_id":null"#, r#""parent_tool_use_id":null,"parent_tool_use_id":"t""#),
        base.replace(r#","session_id""#, r#","event":{},"session_id""#),
        // Wrong types and missing fields.
        base.replace(r#""index":3"#, r#""index":-3"#),
        base.replace(r#""index":3"#, r#""index":3.0"#),
        base.replace(r#""index":3"#, r#""index":3e0"#),
        base.replace(r#""index":3"#, r#""index":"3""#),
        base.replace(r#""index":3"#, r#""index":4294967296"#),
        base.replace(r#""index":3"#, r#""index":4294967295"#),
        base.replace(r#""index":3"#, r#""index":03"#),
        base.replace(r#""index":3,"#, ""),
        base.replace(r#""text":"hi""#, r#""text":7"#),
        base.replace(r#""text":"hi""#, r#""text":null"#),
        base.replace(r#""text":"hi""#, r#""thinking":"hi""#),
        base.replace(r#""type":"text_delta""#, r#""type":null"#),
        base.replace(r#""type":"text_delta""#, r#""type":7"#),
        base.replace(r#""type":"content_block_delta""#, r#""type":null"#),
        base.replace(r#""type":"content_block_delta""#, r#""type":"content_block_start""#),
        base.replace(r#""type":"content_block_delta""#, r#""type":"message_start""#),
        base.replace(r#""type":"content_block_delta""#, r#""type":"ping""#),
        base.replace(r#""delta":{"type":"text_delta","text":"hi"}"#, r#""delta":["text_delta","hi"]"#),
        base.replace(r#""delta":{"type":"text_delta","text":"hi"}"#, r#""delta":null"#),
        base.replace(r#""parent_tool_use_id":null"#, r#""parent_tool_use_id":7"#),
        base.replace(r#""parent_tool_use_id":null"#, r#""parent_tool_use_id":"t\u00e9""#),
        base.replace(r#""event":{"#, r#""event":["#).replace("}},", "]},"),
        // Escapes: in keys (serde decodes them before matching), in values, lone surrogates.
        base.replace(r#""text":"hi""#, r#""t\u0065xt":"hi""#),
        base.replace(r#""text":"hi""#, r#""text":"h\"i\n\u00e9\ud83d\ude00""#),
        base.replace(r#""text":"hi""#, r#""text":"\ud800""#),
        base.replace(r#""session_id":"s""#, r#""session_id":"\ud800""#),
        base.replace(r#""session_id":"s""#, r#""session_id":"\x""#),
        base.replace(r#""type":"text_delta""#, r#""type":"text\u005fdelta""#),
        base.replace(r#""text":"hi""#, r#""text":"\u0000\u001f\/\b\f\r\t\\ \uD83D\uDE00 \ud83d\u0041 \udc00\ud800""#),
        base.replace(r#""text":"hi""#, r#""text":"\ud83d\ude00\u00E9\uFFFF""#),
        // Raw control characters, whitespace, trailing bytes.
        base.replace("hi", "h\u{1}i"),
        base.replace("hi", "h\u{7f}i"),
        base.replace(",", " ,\n\t"),
        format!("{base} \r\n"),
        format!("{base}x"),
        format!("{base}{{}}"),
        // Nesting deeper than the scanner goes, in a skipped field.
        base.replace(r#""s"}"#, &format!(r#""s","deep":{}{}}}"#, "[".repeat(200), "]".repeat(200))),
        base.replace(r#""s"}"#, &format!(r#""s","deep":{}}}"#, "[".repeat(200))),
        // Content-block starts and message starts with odd fields.
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","input":{}}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":null}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Bash","name":"X"}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":5}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":null,"usage":{"input_tokens":-0.5e-3}}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":7}}}"#.into(),
        r#"{"type":"stream_event","event":{"type":"message_start"}}"#.into(),
        r#"{"type":"stream_event"}"#.into(),
        r#"{"type":"stream_event","event":null}"#.into(),
    ];
    for v in &variants {
        same(v);
    }
    for v in block_variants() {
        same(&v);
    }
    // The plain ones do take the fast path.
    assert!(same(base));
    assert!(
        same(&variants[3]),
        "a field we do not read, given twice, is fine"
    );
    assert!(
        same(&variants[29]),
        "escaped text is decoded on the fast path"
    );
}

/// Content blocks of every kind and shape `Block::from_map` tells apart, and line-level oddities
/// of `assistant` and `user` lines.
fn block_variants() -> Vec<String> {
    let blocks = [
        r#"{"type":"text","text":"hi"}"#,
        r#"{"type":"text","text":"h\"i\n\u00e9"}"#,
        r#"{"type":"text","text":"\ud800"}"#,
        r#"{"type":"text"}"#,
        r#"{"type":"text","text":null}"#,
        r#"{"type":"text","text":7}"#,
        r#"{"type":"text","text":"a","text":"b"}"#,
        r#"{"type":"text","text":"a","extra":[1,{"x":null}],"extra":2}"#,
        r#"{"type":"thinking","thinking":"t","signature":"s"}"#,
        r#"{"type":"thinking","thinking":"t"}"#,
        r#"{"type":"thinking","thinking":"t","signature":false}"#,
        r#"{"type":"redacted_thinking","data":"x"}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls","n":[1,2.5,-3e2]}}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash"}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":null}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":"s"}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":true}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"a":1,"a":2}}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"big":1e999}}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"s":"\udc00"}}"#,
        r#"{"type":"tool_use","id":"t1","input":{}}"#,
        r#"{"type":"tool_use","id":null,"name":"Bash","input":{}}"#,
        r#"{"type":"tool_use","id":1,"name":"Bash","input":{}}"#,
        r#"{"type":"tool_result","tool_use_id":"t1","content":"out","is_error":false}"#,
        r#"{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"o"}]}"#,
        r#"{"type":"tool_result","tool_use_id":"t1","content":null,"is_error":null}"#,
        r#"{"type":"tool_result","tool_use_id":"t1","content":3,"is_error":"yes"}"#,
        r#"{"type":"tool_result","content":"out"}"#,
        r#"{"type":"tool_result","tool_use_id":7,"content":"out"}"#,
        r#"{"type":"image","source":{"type":"base64","data":"AAAA"}}"#,
        r#"{"type":"document"}"#,
        r#"{"type":"server_tool_use","id":"x","input":{}}"#,
        r#"{"type":7}"#,
        r#"{"type":null,"text":"x"}"#,
        r#"{"text":"x"}"#,
        r#"{}"#,
        r#""bare""#,
        r#"7"#,
        r#"null"#,
        r#"[{"type":"text","text":"x"}]"#,
        r#"{"ty\u0070e":"text","text":"x"}"#,
        r#"{"type":"te\u0078t","text":"x"}"#,
    ];
    let mut out = Vec::new();
    for b in blocks {
        out.push(format!(
            r#"{{"type":"assistant","message":{{"id":"m","model":"x","content":[{b}],"usage":{{"input_tokens":1}}}},"parent_tool_use_id":null,"session_id":"s"}}"#
        ));
        out.push(format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{b},{b}]}},"parent_tool_use_id":"p","tool_use_result":{{"stdout":"x"}},"uuid":"u"}}"#
        ));
    }
    let a = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null,"aborted":false,"error":null}"#;
    let u = r#"{"type":"user","message":{"content":"plain"},"isSynthetic":true,"isReplay":false,"tool_use_result":null}"#;
    for (from, to) in [
        (r#""aborted":false"#, r#""aborted":"no""#),
        (r#""aborted":false"#, r#""aborted":null,"aborted":true"#),
        (r#""error":null"#, r#""error":{"type":"overloaded"}"#),
        (r#""error":null"#, r#""error":"x","error":"y""#),
        (r#""error":null"#, r#""error":12345678901234567890123"#),
        (
            r#""content":[{"type":"text","text":"hi"}]"#,
            r#""content":null"#,
        ),
        (
            r#""content":[{"type":"text","text":"hi"}]"#,
            r#""content":7"#,
        ),
        (
            r#""content":[{"type":"text","text":"hi"}]"#,
            r#""content":[]"#,
        ),
        (
            r#""content":[{"type":"text","text":"hi"}]"#,
            r#""content":[],"content":[]"#,
        ),
        (
            r#""content":[{"type":"text","text":"hi"}]"#,
            r#""content":"s\"x""#,
        ),
        (r#","content":[{"type":"text","text":"hi"}]"#, ""),
        (r#""id":"m""#, r#""id":null"#),
        (r#""id":"m""#, r#""id":5"#),
        (r#""message":{"#, r#""message":null,"x":{"#),
        (
            r#""parent_tool_use_id":null"#,
            r#""parent_tool_use_id":"p","parent_tool_use_id":"q""#,
        ),
    ] {
        out.push(a.replace(from, to));
    }
    for (from, to) in [
        (r#""isSynthetic":true"#, r#""isSynthetic":1"#),
        (r#""isReplay":false"#, r#""isReplay":null"#),
        (
            r#""tool_use_result":null"#,
            r#""tool_use_result":[1,"a",{"b":false}]"#,
        ),
        (
            r#""tool_use_result":null"#,
            r#""tool_use_result":1,"tool_use_result":2"#,
        ),
        (r#""content":"plain""#, r#""content":"\ud800""#),
        (r#""message":{"content":"plain"}"#, r#""message":["plain"]"#),
        (r#""message":{"content":"plain"},"#, ""),
    ] {
        out.push(u.replace(from, to));
    }
    out.push(a.into());
    out.push(u.into());
    out
}

/// serde_json reads a whole content block into a `Value` before it looks at its type, so a
/// number out of range or a lone surrogate anywhere in the block refuses the line, even in a
/// field that block kind does not use (found by review: the fast path used to accept these).
#[test]
fn unused_block_fields_are_checked_as_serde_reads_them() {
    let bad_values = [
        r#"1e400"#,
        r#"["\ud800"]"#,
        r#"{"x":-1e999}"#,
        &"9".repeat(400),
    ];
    let good_values = [r#"1e3"#, r#"["\ud83d\ude00"]"#, r#"{"x":[1,2.5,null]}"#];
    let blocks = [
        r#"{"type":"text","text":"hi","id":V}"#,
        r#"{"type":"thinking","thinking":"t","signature":"s","input":V}"#,
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{},"content":V}"#,
        r#"{"type":"tool_result","tool_use_id":"t1","name":V}"#,
        r#"{"type":"redacted_thinking","text":V}"#,
        r#"{"type":"image","is_error":V}"#,
        r#"{"type":"document","signature":V}"#,
    ];
    for block in blocks {
        for (v, ok) in bad_values
            .iter()
            .map(|v| (*v, false))
            .chain(good_values.iter().map(|v| (*v, true)))
        {
            let b = block.replace('V', v);
            for line in [
                format!(r#"{{"type":"assistant","message":{{"content":[{b}]}}}}"#),
                format!(r#"{{"type":"user","message":{{"content":[{b}]}}}}"#),
            ] {
                same(&line);
                assert_eq!(
                    !matches!(parse_reference(&line), Inbound::NotJson { .. }),
                    ok,
                    "{line}"
                );
            }
        }
    }
}
