//! A small validating JSON scanner for the codec's fast paths.
//!
//! It accepts a subset of what serde_json accepts and nothing more: every method returns
//! `None` when the input is not exactly what it expects (or is anything it is unsure of), and
//! the caller then parses the line on the general serde path, which gives the verdict and the
//! error text. So a fast path can only ever agree with the general one or step aside.
//!
//! What it checks is what serde_json checks while skipping a value (`IgnoredAny`): the JSON
//! grammar, string escapes (`\u` needs four hex digits), no raw control characters in strings,
//! numbers as JSON writes them, only whitespace after the top-level value.

use std::borrow::Cow;

/// Deeper nesting than this takes the general path (serde_json has its own limits).
const MAX_DEPTH: u32 = 64;

pub(super) struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// Skipping inside a value the general path parses whole (a content block): it must also
    /// pass serde_json's own decoding there (no lone surrogate, no number out of range), so
    /// `\u` escapes and numbers with exponents or many digits take the general path.
    strict: bool,
}

impl<'a> Scan<'a> {
    fn new(s: &'a str) -> Scan<'a> {
        Scan {
            s,
            b: s.as_bytes(),
            i: 0,
            depth: 0,
            strict: false,
        }
    }

    /// A scanner inside `line`'s top-level object (depth 1), at byte `at`: for a caller that
    /// matched the object's start as fixed text (see `fast_stream::cli_delta`).
    pub(super) fn inside(line: &'a str, at: usize) -> Scan<'a> {
        Scan {
            i: at,
            depth: 1,
            ..Scan::new(line)
        }
    }

    /// Step over `text` when the input continues with exactly it (no whitespace skipped).
    #[inline]
    pub(super) fn eat(&mut self, text: &str) -> bool {
        let hit = self.b[self.i..].starts_with(text.as_bytes());
        if hit {
            self.i += text.len();
        }
        hit
    }

    /// The rest of the top-level object after a member read by fixed text: each further
    /// member to `member`, the closing brace, then nothing but whitespace.
    pub(super) fn rest_of_document(
        &mut self,
        mut member: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        match self.peek()? {
            b'}' => self.i += 1,
            b',' => {
                self.i += 1;
                self.elements(b'}', |s| s.member(&mut member))?;
            }
            _ => return None,
        }
        self.at_end().then_some(())
    }

    /// `line` as one top-level object, each member handed to `member`, with nothing but
    /// whitespace after it (serde_json's "trailing characters" check).
    #[inline]
    pub(super) fn document(
        line: &'a str,
        member: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        let mut s = Scan::new(line);
        s.object(member)?;
        s.at_end().then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace.
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// Where the next value starts (after whitespace), for `since`.
    pub(super) fn mark(&mut self) -> usize {
        self.ws();
        self.i
    }

    /// The text read since `mark`.
    pub(super) fn since(&self, mark: usize) -> Option<&'a str> {
        self.s.get(mark..self.i)
    }

    /// Only whitespace is left (serde_json's "trailing characters" check).
    fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// `null` (then `true`), or anything else left unread (`false`).
    pub(super) fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal(b"null").is_some()
    }

    /// A string's body (between its quotes) and whether it holds escapes. The cursor is on
    /// the opening quote.
    #[inline(always)]
    fn string_body(&mut self) -> Option<(&'a str, bool)> {
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        loop {
            let k = special(self.b, j)?;
            match self.b[k] {
                b'"' => {
                    self.i = k + 1;
                    // Both ends are ASCII quotes, so this slice is on char boundaries.
                    return Some((self.s.get(start..k)?, escaped));
                }
                b'\\' => {}
                // serde_json refuses raw control characters inside strings.
                _ => return None,
            }
            escaped = true;
            match self.b.get(k + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j = k + 2,
                b'u' if !self.strict => {
                    let hex = self.b.get(k + 2..k + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    j = k + 6;
                }
                _ => return None,
            }
        }
    }

    /// A string value, borrowed from the line when it holds no escapes (as serde borrows).
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let (body, escaped) = self.string_body()?;
        if !escaped {
            return Some(Cow::Borrowed(body));
        }
        unescape(body).map(Cow::Owned)
    }

    /// `null`, or what `read` reads: as serde reads an `Option<T>`.
    #[inline]
    pub(super) fn nullable<T>(
        &mut self,
        read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.null() {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// `null` or a string, as serde reads an `Option<String>`.
    pub(super) fn opt_string(&mut self) -> Option<Option<String>> {
        self.nullable(|s| s.string().map(Cow::into_owned))
    }

    /// A `u32` written as JSON writes integers (no sign, fraction or exponent).
    pub(super) fn u32(&mut self) -> Option<u32> {
        self.ws();
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
            n = n * 10 + u64::from(c - b'0');
            self.i += 1;
            if n > u64::from(u32::MAX) {
                return None;
            }
        }
        let len = self.i - start;
        if len == 0 || (len > 1 && self.b[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        u32::try_from(n).ok()
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, checked as serde_json's `ignore_integer`/`ignore_decimal`/`ignore_exponent`.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.b.get(self.i) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 || self.strict {
                return None;
            }
        }
        if self.strict && self.i - start > 18 {
            return None;
        }
        Some(())
    }

    /// Skip one value that the general path parses into a `Value` (see `strict`).
    pub(super) fn skip_strict(&mut self) -> Option<()> {
        let was = std::mem::replace(&mut self.strict, true);
        let r = self.skip();
        self.strict = was;
        r
    }

    /// Skip one value of any kind, checking it.
    pub(super) fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string_body().map(drop),
            b'{' => self.object(|s, _| s.skip()),
            b'[' => self.items(|s| s.skip()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An array, each element handed to `item`.
    #[inline]
    pub(super) fn items(&mut self, item: impl FnMut(&mut Scan<'a>) -> Option<()>) -> Option<()> {
        self.sequence(b'[', b']', item)
    }

    /// One value of any kind, checked and skipped, as the text it was written as.
    pub(super) fn raw(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.skip()?;
        self.s.get(start..self.i)
    }

    /// One value as a `serde_json::Value`, parsed by serde_json from its text (so it is the
    /// value the general path builds; what serde_json refuses, such as a lone surrogate or a
    /// number out of range, takes the general path).
    pub(super) fn value(&mut self) -> Option<serde_json::Value> {
        serde_json::from_str(self.raw()?).ok()
    }

    /// `null` or a value, as serde reads an `Option<Value>`.
    pub(super) fn opt_value(&mut self) -> Option<Option<serde_json::Value>> {
        self.nullable(Scan::value)
    }

    /// `null` or a boolean, as serde reads an `Option<bool>`.
    pub(super) fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }

    /// One value, sorted the way `Block::from_map` looks at a block's fields.
    pub(super) fn field(&mut self) -> Option<Field<'a>> {
        Some(match self.peek()? {
            b'"' => Field::Str(self.string()?),
            b'n' => self.literal(b"null").map(|()| Field::Null)?,
            b't' => self.literal(b"true").map(|()| Field::Bool(true))?,
            b'f' => self.literal(b"false").map(|()| Field::Bool(false))?,
            _ => Field::Raw(self.raw()?),
        })
    }

    /// An object, each member handed to `member` with its key (a key with escapes takes the
    /// general path: serde decodes keys before matching them to fields).
    #[inline]
    pub(super) fn object(
        &mut self,
        mut member: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.sequence(b'{', b'}', |s| s.member(&mut member))
    }

    /// One `"key": value` member, the value read by `member`.
    #[inline]
    fn member(
        &mut self,
        member: &mut impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let (key, escaped) = self.string_body()?;
        if escaped || self.peek()? != b':' {
            return None;
        }
        self.i += 1;
        member(self, key)
    }

    /// `open`, elements separated by commas (each read by `element`), `close`: an array or
    /// an object, nested at most `MAX_DEPTH` deep.
    #[inline]
    fn sequence(
        &mut self,
        open: u8,
        close: u8,
        element: impl FnMut(&mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.peek()? != open {
            return None;
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        if self.peek()? == close {
            self.i += 1;
        } else {
            self.elements(close, element)?;
        }
        self.depth -= 1;
        Some(())
    }

    /// One or more elements, separated by commas, then `close`.
    #[inline]
    fn elements(
        &mut self,
        close: u8,
        mut element: impl FnMut(&mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// A string body's escapes decoded, as serde_json decodes them, into a string sized once
/// (serde_json grows its scratch buffer as it goes). A lone surrogate, which serde_json
/// refuses, gives `None`: the general path. The escapes were checked by `string_body`.
fn unescape(body: &str) -> Option<String> {
    let b = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[from..]).map(|k| from + k) {
        out.push_str(body.get(from..k)?);
        from = k + 2;
        out.push(match *b.get(k + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let n = hex4(b, k + 2)?;
                from = k + 6;
                if (0xD800..0xDC00).contains(&n) && b.get(k + 6..k + 8) == Some(b"\\u") {
                    // A surrogate pair: one char.
                    let low = hex4(b, k + 8)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    from = k + 12;
                    char::from_u32(0x10000 + ((n - 0xD800) << 10) + (low - 0xDC00))?
                } else {
                    // A lone surrogate is not a char: `None`.
                    char::from_u32(n)?
                }
            }
            _ => return None,
        });
    }
    out.push_str(body.get(from..)?);
    Some(out)
}

/// Four hex digits at `at`.
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)?
        .iter()
        .try_fold(0, |n, &h| Some(n * 16 + char::from(h).to_digit(16)?))
}

/// The first `"`, `\\` or control character at or after `from`, sixteen bytes at a time
/// with SSE2 (part of every x86-64 CPU, so no runtime check). Strings are short, so the
/// window reads on past the closing quote into the rest of the line rather than stopping
/// at the string's end; only the line's last bytes go through a padded copy.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
fn special(b: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    /// The bit of each byte of `v` that is one of the three.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn hits(v: __m128i) -> u32 {
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // v <= 0x1f exactly where min(v, 0x1f) == v (unsigned bytes).
        let ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), ctl)) as u32
    }
    let rest = b.get(from..)?;
    let mut chunks = rest.chunks_exact(16);
    let mut at = from;
    for chunk in chunks.by_ref() {
        // SAFETY: `chunk` is 16 readable bytes, and `loadu` needs no alignment.
        // `hits` needs SSE2, which this build has (the cfg above).
        let m = unsafe { hits(_mm_loadu_si128(chunk.as_ptr().cast())) };
        if m != 0 {
            return Some(at + m.trailing_zeros() as usize);
        }
        at += 16;
    }
    let tail = chunks.remainder();
    if tail.is_empty() {
        return None;
    }
    // A space is none of the three, so the padding never matches.
    let mut pad = [b' '; 16];
    pad[..tail.len()].copy_from_slice(tail);
    // SAFETY: `pad` is 16 bytes; SSE2 as above.
    let m = unsafe { hits(_mm_loadu_si128(pad.as_ptr().cast())) };
    (m != 0).then(|| at + m.trailing_zeros() as usize)
}

/// The same, eight bytes at a time in a `u64`, where SSE2 is not there.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn special(b: &[u8], from: usize) -> Option<usize> {
    special_swar(b, from)
}

/// `special` without SIMD: the fallback, and the reference the SSE2 version is tested with.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
fn special_swar(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let rest = b.get(from..)?;
    let mut chunks = rest.chunks_exact(8);
    let mut at = from;
    for chunk in chunks.by_ref() {
        let mut w = [0; 8];
        w.copy_from_slice(chunk);
        let v = u64::from_le_bytes(w);
        // The classic "has a zero byte" test, for each of the three: the lowest flagged byte
        // is exact (a borrow can only flag bytes above a real match).
        let ctrl = v.wrapping_sub(ONES * 0x20) & !v;
        let q = v ^ (ONES * u64::from(b'"'));
        let quote = q.wrapping_sub(ONES) & !q;
        let s = v ^ (ONES * u64::from(b'\\'));
        let slash = s.wrapping_sub(ONES) & !s;
        let hit = (ctrl | quote | slash) & HIGH;
        if hit != 0 {
            return Some(at + hit.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| at + p)
}

/// A value as `Block::from_map` sorts it: a string, null, a boolean, or anything else (kept as
/// its text).
pub(super) enum Field<'a> {
    Str(Cow<'a, str>),
    Null,
    Bool(bool),
    Raw(&'a str),
}

impl Field<'_> {
    /// The `serde_json::Value` the general path would hold.
    pub(super) fn into_value(self) -> Option<serde_json::Value> {
        use serde_json::Value;
        Some(match self {
            Field::Str(s) => Value::String(s.into_owned()),
            Field::Null => Value::Null,
            Field::Bool(b) => Value::Bool(b),
            Field::Raw(r) => serde_json::from_str(r).ok()?,
        })
    }
}

/// Set a field once: a second occurrence is serde's "duplicate field" error (the general
/// path reports it).
pub(super) fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE2 scan finds what the portable one finds, from every start, at every length
    /// and 16-byte boundary, for each of the three bytes, controls, and bytes above 0x7f.
    #[test]
    fn the_simd_scan_agrees_with_the_portable_one() {
        let specials = [b'"', b'\\', 0x00, 0x1f, 0x0a];
        let plain = [
            b' ', b'a', 0x20, 0x7f, 0x80, 0xc3, 0xff, b'!', b'#', b'[', b']',
        ];
        let mut rng = crate::test_gen::Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.next();
        for len in 0..70 {
            for _ in 0..60 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        let r = next();
                        if r % 23 == 0 {
                            specials[(r >> 8) as usize % specials.len()]
                        } else {
                            plain[(r >> 8) as usize % plain.len()]
                        }
                    })
                    .collect();
                for from in 0..=len + 1 {
                    assert_eq!(
                        special(&bytes, from),
                        special_swar(&bytes, from),
                        "{bytes:?} from {from}"
                    );
                }
            }
        }
    }
}
