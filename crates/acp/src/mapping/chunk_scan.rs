//! A text chunk read by hand: most lines of an ACP session are message and thought chunks,
//! and serde's typed read of one (each key through a visitor, each string field through a
//! `Cow`) was the largest single part of a replay's mapping. This reads exactly the chunk's
//! shape, its keys in any order, no whitespace, each key once, and answers `None` for
//! anything else: an escaped key, a number, a space, an unknown or repeated key. `fast::chunk`
//! then reads the line with serde, which decides. So this can only ever agree with serde
//! (tested against it on every line of the tests, the real recordings and mutated lines).

use std::borrow::Cow;

use switchboard_record::scan::plain_prefix;

/// A text chunk read off the fast path (here or by `fast::serde_chunk`).
pub(super) struct Chunk<'a> {
    pub thinking: bool,
    pub text: Cow<'a, str>,
    pub message_id: Option<Cow<'a, str>>,
}

/// The chunk `line` carries, in the exact shape (see the module).
pub(super) fn chunk(line: &str) -> Option<Chunk<'_>> {
    let mut s = Scan {
        b: line.as_bytes(),
        line,
        at: 0,
    };
    let (mut rpc, mut method, mut update) = (false, false, None);
    s.object(|s, key| match key {
        b"jsonrpc" if !rpc => {
            rpc = s.literal(b"2.0");
            rpc
        }
        b"method" if !method => {
            method = s.literal(b"session/update");
            method
        }
        b"params" if update.is_none() => {
            update = s.params();
            update.is_some()
        }
        _ => false,
    })?;
    (s.at == s.b.len() && rpc && method).then_some(())?;
    update
}

struct Scan<'a> {
    b: &'a [u8],
    line: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn eat(&mut self, c: u8) -> bool {
        let ok = self.b.get(self.at) == Some(&c);
        self.at += usize::from(ok);
        ok
    }

    /// An object whose every key `f` reads the value of (`false`: not this shape).
    fn object(&mut self, mut f: impl FnMut(&mut Self, &[u8]) -> bool) -> Option<()> {
        self.eat(b'{').then_some(())?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.plain_string()?;
            self.eat(b':').then_some(())?;
            f(self, key).then_some(())?;
            if self.eat(b'}') {
                return Some(());
            }
            self.eat(b',').then_some(())?;
        }
    }

    /// A string without escapes or control characters (keys, and values compared as text),
    /// its bytes between the quotes.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"').then_some(())?;
        let rest = &self.b[self.at..];
        let len = plain_prefix(rest);
        (rest.get(len) == Some(&b'"')).then_some(())?;
        self.at += len + 1;
        Some(&rest[..len])
    }

    fn literal(&mut self, want: &[u8]) -> bool {
        self.plain_string() == Some(want)
    }

    /// Any JSON string, as serde reads it: borrowed when it has no escape, else decoded by
    /// serde itself (which refuses a bad escape or a lone surrogate).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"').then_some(())?;
        let start = self.at;
        let mut i = start + plain_prefix(&self.b[start..]);
        match self.b.get(i) {
            Some(b'"') => {
                self.at = i + 1;
                return Some(Cow::Borrowed(&self.line[start..i]));
            }
            Some(b'\\') => {}
            // A raw control character, or no end.
            _ => return None,
        }
        loop {
            // The escaped byte is skipped (a `\"` does not end the string); serde checks it.
            i += 2;
            let k = memchr::memchr2(b'"', b'\\', self.b.get(i..)?)?;
            i += k;
            if self.b[i] == b'"' {
                break;
            }
        }
        self.at = i + 1;
        serde_json::from_str::<String>(&self.line[start - 1..=i])
            .ok()
            .map(Cow::Owned)
    }

    fn params(&mut self) -> Option<Chunk<'a>> {
        let (mut session, mut update) = (false, None);
        self.object(|s, key| match key {
            b"sessionId" if !session => {
                session = s.string().is_some();
                session
            }
            b"update" if update.is_none() => {
                update = s.update();
                update.is_some()
            }
            _ => false,
        })?;
        session.then_some(())?;
        update
    }

    fn update(&mut self) -> Option<Chunk<'a>> {
        let (mut thinking, mut text, mut message_id) = (None, None, None);
        self.object(|s, key| match key {
            b"sessionUpdate" if thinking.is_none() => {
                thinking = match s.plain_string() {
                    Some(b"agent_message_chunk") => Some(false),
                    Some(b"agent_thought_chunk") => Some(true),
                    _ => None,
                };
                thinking.is_some()
            }
            b"content" if text.is_none() => {
                text = s.content();
                text.is_some()
            }
            b"messageId" if message_id.is_none() => {
                message_id = Some(if s.b[s.at..].starts_with(b"null") {
                    s.at += 4;
                    None
                } else {
                    match s.string() {
                        Some(m) => Some(m),
                        None => return false,
                    }
                });
                true
            }
            _ => false,
        })?;
        Some(Chunk {
            thinking: thinking?,
            text: text?,
            message_id: message_id.flatten(),
        })
    }

    fn content(&mut self) -> Option<Cow<'a, str>> {
        let (mut kind, mut text) = (false, None);
        self.object(|s, key| match key {
            b"type" if !kind => {
                kind = s.literal(b"text");
                kind
            }
            b"text" if text.is_none() => {
                text = s.string();
                text.is_some()
            }
            _ => false,
        })?;
        kind.then_some(())?;
        text
    }
}
