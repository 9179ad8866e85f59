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

use crate::Dir;
use crate::load::Frame;

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
    // By hand: the digits are ASCII already, and `str::parse` after a UTF-8 check cost a
    // tenth of reading a short line. Past `u64::MAX` is no fast-path entry (serde says why).
    let ts = rest[..digits].iter().try_fold(0u64, |n, &c| {
        n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })?;
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
    // The buffer keeps its old bytes (overwritten below, the rest cut off at the end): only
    // its growth is zeroed, not every line's length.
    let mut buf = std::mem::take(out).into_bytes();
    // The output is never longer than the input (every escape shrinks), so it is written into
    // a buffer of the input's length by index, a run at a time while no byte needs a look (a
    // quote, a backslash, a control character). Inner lines are JSON themselves, with an
    // escape every few bytes: a per-run memchr and copy cost more than the copying.
    if buf.len() < b.len() {
        buf.resize(b.len(), 0);
    }
    let (mut i, mut w) = (0, 0);
    // Whether a byte of 0x80 or above was copied (the scanner may say so falsely, never
    // miss one): without one the output is ASCII plus escapes' whole characters.
    let mut wide = false;
    loop {
        (i, w) = plain_run(b, i, &mut buf, w, &mut wide);
        // One byte at a time near the end, and at the byte the run stopped at.
        let Some(&c) = b.get(i) else { break };
        if c != b'\\' {
            if c == b'"' || c < 0x20 {
                return None;
            }
            wide |= c >= 0x80;
            buf[w] = c;
            i += 1;
            w += 1;
            continue;
        }
        let esc = *b.get(i + 1)?;
        i += 2;
        let one = match esc {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let hi = hex4(b.get(i..i + 4)?)?;
                i += 4;
                let c = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate needs its low half right after it.
                    let lo = match b.get(i..i + 6) {
                        Some([b'\\', b'u', h @ ..]) => hex4(h)?,
                        _ => return None,
                    };
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    char::from_u32(hi)?
                };
                // At most as long as the escape it replaces (6 or 12 bytes).
                let n = c.encode_utf8(&mut buf[w..]).len();
                w += n;
                continue;
            }
            _ => return None,
        };
        buf[w] = one;
        w += 1;
    }
    buf.truncate(w);
    *out = if wide {
        String::from_utf8(buf).ok()?
    } else {
        // SAFETY: no copied byte was 0x80 or above, so the bytes are ASCII, single-byte
        // escapes and whole characters written by `encode_utf8`: valid UTF-8 throughout.
        // (A line of ASCII is most lines: checking it again cost a sixth of the unescape.)
        unsafe { String::from_utf8_unchecked(buf) }
    };
    Some(())
}

/// Copies bytes from `b[i..]` to `buf[w..]` while none needs a look, sixteen at a time
/// (`scan::block`, SSE2), and answers where both stand at the first byte that does (or
/// with fewer than sixteen left). Sets `wide` when a copied byte is 0x80 or above.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn plain_run(
    b: &[u8],
    mut i: usize,
    buf: &mut [u8],
    mut w: usize,
    wide: &mut bool,
) -> (usize, usize) {
    let mut high = 0;
    while let (Some(src), Some(dst)) = (b.get(i..i + 16), buf.get_mut(w..w + 16)) {
        dst.copy_from_slice(src);
        let (m, top) = crate::scan::block(src.try_into().expect("sixteen bytes"));
        if m == 0 {
            high |= top;
            i += 16;
            w += 16;
            continue;
        }
        let k = m.trailing_zeros() as usize;
        // Only the bytes copied: those past the stop are looked at again.
        high |= top & ((1 << k) - 1);
        i += k;
        w += k;
        // An inner line's quotes are escaped (`\"`), one every few bytes: the escapes that
        // stand for themselves are written here without leaving the loop.
        match (src[k], b.get(i + 1)) {
            (b'\\', Some(&e @ (b'"' | b'\\' | b'/'))) => {
                buf[w] = e;
                i += 2;
                w += 1;
            }
            _ => break,
        }
    }
    *wide |= high != 0;
    (i, w)
}

/// The same, eight bytes at a time with word-wide bit tests, where SSE2 is not there; it
/// leaves every line to the UTF-8 check.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn plain_run(
    b: &[u8],
    mut i: usize,
    buf: &mut [u8],
    mut w: usize,
    wide: &mut bool,
) -> (usize, usize) {
    *wide = true;
    while let Some(word) = b.get(i..i + 8) {
        buf[w..w + 8].copy_from_slice(word);
        let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let m = special(x);
        if m == 0 {
            i += 8;
            w += 8;
            continue;
        }
        // The lowest flagged byte is exact (a borrow only flags bytes above a true one).
        let k = (m.trailing_zeros() / 8) as usize;
        i += k;
        w += k;
        break;
    }
    (i, w)
}

#[cfg(not(target_arch = "x86_64"))]
/// A mask with the high bit set in each byte of `x` that is a quote, a backslash or below
/// 0x20 (exact for the lowest such byte; bytes above it may be flagged falsely).
#[inline]
fn special(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    below_space | zero(x ^ (ONES * b'"' as u64)) | zero(x ^ (ONES * b'\\' as u64))
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

    /// Escapes and multi-byte characters at every offset of the blocks the reader
    /// tests at once, written by serde and then damaged a byte at a time: the fast reading is
    /// serde's or none.
    #[test]
    fn escapes_at_every_word_offset_read_as_serde_reads() {
        let alphabet = [
            "a", "\"", "\\", "\n", "é", "🦀", "\u{1}", "/", "\u{7f}", "\u{2028}",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = (next() % 40) as usize;
            let line: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let text = format!(
                r#"{{"ts":3,"dir":"in","line":{}}}"#,
                serde_json::to_string(&line).unwrap()
            );
            assert_eq!(fast(text.as_bytes()), slow(text.as_bytes()), "{text}");
            assert!(fast(text.as_bytes()).is_some());
            let mut bad = text.clone().into_bytes();
            let at = (next() % bad.len() as u64) as usize;
            bad[at] = [b'"', b'\\', b'\t', 0xff, b'u', b'x'][(next() % 6) as usize];
            if let Some(got) = fast(&bad) {
                assert_eq!(Some(got), slow(&bad), "{}", String::from_utf8_lossy(&bad));
            }
        }
    }

    /// The unchecked UTF-8 conversion rests on every byte of 0x80 and above being seen: a
    /// stray one (a lone continuation byte, a cut character, a byte UTF-8 never uses) at any
    /// offset of a run, before or after an escape, is refused, and a whole one is kept.
    #[test]
    fn a_bad_utf8_byte_anywhere_in_a_run_is_refused() {
        for len in [1, 15, 16, 17, 31, 32, 33, 47, 70] {
            for at in 0..len {
                for esc in [None, Some(0), Some(len / 2), Some(len - 1)] {
                    for bad in [
                        &[0x80u8][..],
                        &[0xff],
                        &[0xc3],
                        &[0xe2, 0x82],
                        &[0xed, 0xa0, 0x80],
                    ] {
                        let mut body: Vec<u8> = (0..len).map(|k| b'a' + (k % 26) as u8).collect();
                        body.splice(at..at + 1, bad.iter().copied());
                        if let Some(e) = esc {
                            body.splice(e..e, br#"\""#.iter().copied());
                        }
                        let mut line = br#"{"ts":1,"dir":"in","line":""#.to_vec();
                        line.extend_from_slice(&body);
                        line.extend_from_slice(br#""}"#);
                        assert_eq!(fast(&line), None, "{line:?}");
                        assert_eq!(slow(&line), None);
                    }
                    let mut good: Vec<u8> = (0..len).map(|k| b'a' + (k % 26) as u8).collect();
                    good.splice(at..at + 1, "é🦀".bytes());
                    let mut line = br#"{"ts":1,"dir":"in","line":""#.to_vec();
                    line.extend_from_slice(&good);
                    line.extend_from_slice(br#""}"#);
                    assert!(fast(&line).is_some());
                    assert_eq!(fast(&line), slow(&line));
                }
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
            br#"{"ts":18446744073709551616,"dir":"in","line":"a"}"#,
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
