//! The fast reader of a recording entry, `{"ts":N,"dir":"in","line":"…"}`, exactly as our
//! recorder writes it (`record.rs`: those keys, in that order, no spaces): the fixed keys are
//! matched as text and the inner line is unescaped once into a buffer the caller reuses. This
//! is the replay's counterpart of the live codec's fast path; a general JSON parse of every
//! entry cost more than mapping and reducing its frame.
//!
//! Anything else (keys in another order, spaces, a missing `ts`, an escape we do not expect, a
//! raw control character that JSON forbids) answers `None`, and the caller reads the entry with
//! serde, which also says what is wrong with it. So the fast path can only ever agree with
//! serde: a line either decodes the same both ways or is not taken here (tested below and by the
//! fuzz-style test over generated and hostile entries).

use super::load::Frame;
use crate::record::Dir;

/// One entry line as a frame: the recorder's own shape through `decode` (into `text`'s
/// buffer), anything else through serde. `Err` holds serde's reason, for the caller's note.
pub fn frame(src_line: usize, raw: &[u8], mut text: String) -> Result<Frame, String> {
    if let Some((ts, dir)) = decode(raw, &mut text) {
        return Ok(Frame {
            src_line,
            ts: Some(ts),
            dir,
            text,
        });
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        ts: Option<u64>,
        dir: String,
        line: String,
    }
    let e: Entry = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
    Ok(Frame {
        src_line,
        ts: e.ts,
        dir: match e.dir.as_str() {
            "in" => Dir::In,
            "out" => Dir::Out,
            "err" => Dir::Err,
            _ => Dir::Note,
        },
        text: e.line,
    })
}

/// Decode one entry line (without its newline). On success `line` holds the inner line.
pub fn decode(b: &[u8], line: &mut String) -> Option<(u64, Dir)> {
    let rest = b.strip_prefix(br#"{"ts":"#)?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 20 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let ts: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(br#","dir":""#)?;
    let (dir, rest) = if let Some(r) = rest.strip_prefix(b"in") {
        (Dir::In, r)
    } else if let Some(r) = rest.strip_prefix(b"out") {
        (Dir::Out, r)
    } else if let Some(r) = rest.strip_prefix(b"err") {
        (Dir::Err, r)
    } else if let Some(r) = rest.strip_prefix(b"note") {
        (Dir::Note, r)
    } else {
        return None;
    };
    let body = rest.strip_prefix(br#"","line":""#)?;
    let body = body.strip_suffix(br#""}"#)?;
    unescape(body, line)?;
    Some((ts, dir))
}

/// Unescape the inside of a JSON string into `out` (cleared first). `None` when it is not
/// exactly one valid JSON string body (an unescaped quote, a raw control character, a bad
/// escape, an unpaired surrogate, invalid UTF-8).
fn unescape(b: &[u8], out: &mut String) -> Option<()> {
    out.clear();
    let mut bytes = std::mem::take(out).into_bytes();
    let mut at = 0;
    while at < b.len() {
        // Copy the plain run up to the next quote or backslash in one go. Inner lines are
        // JSON themselves, with an escape every few bytes: look at the first bytes one by one
        // before handing a longer run to memchr.
        let near = b[at..]
            .iter()
            .take(16)
            .position(|&c| c == b'"' || c == b'\\');
        let next = match near {
            Some(i) => at + i,
            None if b.len() - at <= 16 => b.len(),
            None => memchr::memchr2(b'"', b'\\', &b[at + 16..]).map_or(b.len(), |i| at + 16 + i),
        };
        let run = &b[at..next];
        if run.iter().any(|&c| c < 0x20) {
            return None;
        }
        bytes.extend_from_slice(run);
        if next == b.len() {
            break;
        }
        if b[next] == b'"' {
            return None;
        }
        let esc = *b.get(next + 1)?;
        at = next + 2;
        match esc {
            b'"' => bytes.push(b'"'),
            b'\\' => bytes.push(b'\\'),
            b'/' => bytes.push(b'/'),
            b'b' => bytes.push(0x08),
            b'f' => bytes.push(0x0c),
            b'n' => bytes.push(b'\n'),
            b'r' => bytes.push(b'\r'),
            b't' => bytes.push(b'\t'),
            b'u' => {
                let hi = hex4(b.get(at..at + 4)?)?;
                at += 4;
                let c = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate needs its low half right after it.
                    let lo = match b.get(at..at + 6) {
                        Some([b'\\', b'u', h @ ..]) => hex4(h)?,
                        _ => return None,
                    };
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    at += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    char::from_u32(hi)?
                };
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => return None,
        }
    }
    *out = String::from_utf8(bytes).ok()?;
    Some(())
}

fn hex4(h: &[u8]) -> Option<u32> {
    if h.len() != 4 {
        return None;
    }
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct E {
        ts: u64,
        dir: String,
        line: String,
    }

    /// What serde makes of the entry (the reference), as the fast path would return it.
    fn slow(b: &[u8]) -> Option<(u64, &'static str, String)> {
        let e: E = serde_json::from_slice(b).ok()?;
        let dir = match e.dir.as_str() {
            "in" => "in",
            "out" => "out",
            "err" => "err",
            "note" => "note",
            _ => return None,
        };
        Some((e.ts, dir, e.line))
    }

    fn fast(b: &[u8]) -> Option<(u64, &'static str, String)> {
        let mut s = String::from("left over");
        let (ts, dir) = decode(b, &mut s)?;
        let d = match dir {
            Dir::In => "in",
            Dir::Out => "out",
            Dir::Err => "err",
            Dir::Note => "note",
        };
        Some((ts, d, s))
    }

    /// Entries as the recorder writes them (serde_json): every one takes the fast path and
    /// reads back exactly.
    #[test]
    fn every_recorded_entry_reads_back_exactly() {
        let lines = [
            String::new(),
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi \"there\""}]}}"#
                .to_string(),
            "tab\tnewline\ncr\rbell\u{7}esc\u{1b}[31mdel\u{7f}nul\u{0}".to_string(),
            "bidi \u{202e}evil\u{202c} emoji 🦀 cjk 漢字 nbsp\u{a0} ls\u{2028}ps\u{2029}"
                .to_string(),
            "back\\slash / slash \u{fffd}".to_string(),
            "x".repeat(100_000),
        ];
        #[derive(serde::Serialize)]
        struct W<'a> {
            ts: u64,
            dir: Dir,
            line: &'a str,
        }
        for (i, l) in lines.iter().enumerate() {
            for dir in [Dir::In, Dir::Out, Dir::Err, Dir::Note] {
                let ts = [0, 1, 1_733_000_000_000, u64::MAX][i % 4];
                let text = serde_json::to_string(&W { ts, dir, line: l }).unwrap();
                let got = fast(text.as_bytes());
                assert!(got.is_some(), "not taken: {text:.200}");
                assert_eq!(got, slow(text.as_bytes()), "{text:.200}");
            }
        }
    }

    /// Anything the recorder would not write is left to serde; never a different reading.
    #[test]
    fn other_shapes_and_hostile_entries_fall_back_never_disagree() {
        let cases: &[&[u8]] = &[
            br#"{"dir":"in","ts":1,"line":"a"}"#,
            br#"{"ts": 1,"dir":"in","line":"a"}"#,
            br#"{"ts":01,"dir":"in","line":"a"}"#,
            br#"{"ts":-1,"dir":"in","line":"a"}"#,
            br#"{"ts":1.5,"dir":"in","line":"a"}"#,
            br#"{"ts":99999999999999999999,"dir":"in","line":"a"}"#,
            br#"{"ts":1,"dir":"sideways","line":"a"}"#,
            br#"{"ts":1,"dir":"in","line":"a"} "#,
            br#"{"ts":1,"dir":"in","line":"a"}x"#,
            br#"{"ts":1,"dir":"in","line":"a"b"}"#,
            br#"{"ts":1,"dir":"in","line":"a\"}"#,
            br#"{"ts":1,"dir":"in","line":"a\x"}"#,
            br#"{"ts":1,"dir":"in","line":"\ud800"}"#,
            br#"{"ts":1,"dir":"in","line":"\ud800\u0041"}"#,
            br#"{"ts":1,"dir":"in","line":"\udc00"}"#,
            br#"{"ts":1,"dir":"in","line":"\u12"}"#,
            br#"{"ts":1,"dir":"in","line":"\uD83E\uDD80 ok"}"#,
            b"{\"ts\":1,\"dir\":\"in\",\"line\":\"raw\ttab\"}",
            b"{\"ts\":1,\"dir\":\"in\",\"line\":\"bad \xff utf8\"}",
            br#"{"ts":1,"dir":"in","line":"a","extra":1}"#,
            br#"{"ts":1,"dir":"in"}"#,
            br#"{"ts":1,"dir":"in","line":"#,
            b"",
        ];
        for c in cases {
            let f = fast(c);
            if let Some(got) = &f {
                assert_eq!(Some(got.clone()), slow(c), "{}", String::from_utf8_lossy(c));
            }
        }
        // The escapes JSON allows, written by hand: the same as serde's reading.
        let c = br#"{"ts":7,"dir":"out","line":"\"\\\/\b\f\n\r\t\u0041\u00e9\uD83E\uDD80"}"#;
        assert_eq!(fast(c), slow(c));
        assert!(fast(c).is_some());
    }
}
