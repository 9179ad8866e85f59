//! A JSON document read with the byte range of every value, so a settings file can be edited
//! in place: what `hooks install` adds is inserted as text, and everything else (other keys,
//! their order, the file's indentation and spacing) stays byte for byte. Strict JSON (RFC
//! 8259), as the CLIs read their settings; nesting is bounded.

/// Deeper than this is refused (a settings file is a few levels deep).
const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Object {
        span: (usize, usize),
        members: Vec<Member>,
    },
    Array {
        span: (usize, usize),
        items: Vec<Node>,
    },
    String {
        span: (usize, usize),
        value: String,
    },
    Other {
        span: (usize, usize),
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub key_start: usize,
    pub value: Node,
}

impl Node {
    /// `[start, end)` of the value's text.
    pub fn span(&self) -> (usize, usize) {
        match self {
            Node::Object { span, .. }
            | Node::Array { span, .. }
            | Node::String { span, .. }
            | Node::Other { span } => *span,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Member> {
        match self {
            Node::Object { members, .. } => members.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String { value, .. } => Some(value),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Node] {
        match self {
            Node::Array { items, .. } => items,
            _ => &[],
        }
    }
}

/// Parse `text`: one JSON value, with whitespace around it only.
pub fn parse(text: &str) -> Result<Node, String> {
    let mut p = Parser {
        b: text.as_bytes(),
        text,
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("text after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        let line = self.text[..self.i.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        format!("{what} (line {line})")
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Node::Object {
                        span: (start, self.i),
                        members,
                    });
                }
                loop {
                    self.ws();
                    let key_start = self.i;
                    let key = self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    let value = self.value(depth + 1)?;
                    if members.iter().any(|m: &Member| m.key == key) {
                        return Err(self.err(&format!("the key {key:?} appears twice")));
                    }
                    members.push(Member {
                        key,
                        key_start,
                        value,
                    });
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Node::Object {
                                span: (start, self.i),
                                members,
                            });
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Node::Array {
                        span: (start, self.i),
                        items,
                    });
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Node::Array {
                                span: (start, self.i),
                                items,
                            });
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => {
                let value = self.string()?;
                Ok(Node::String {
                    span: (start, self.i),
                    value,
                })
            }
            Some(_) => {
                // A number, true, false or null: checked by serde_json on its own text.
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                let word = &self.text[start..self.i];
                match serde_json::from_str::<serde_json::Value>(word) {
                    Ok(v) if !v.is_object() && !v.is_array() && !v.is_string() => Ok(Node::Other {
                        span: (start, self.i),
                    }),
                    _ => Err(self.err(&format!("{word:?} is not a JSON value"))),
                }
            }
            None => Err(self.err("the text ends where a value belongs")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return serde_json::from_str::<String>(&self.text[start..self.i])
                        .map_err(|e| self.err(&format!("a bad string: {e}")));
                }
                Some(b'\\') => self.i += 2,
                Some(_) => self.i += 1,
                None => return Err(self.err("a string that does not end")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_the_text() {
        let t = "{\n  \"a\": [1, \"x\\\"y\"],\n  \"b\": {}\n}\n";
        let n = parse(t).unwrap();
        let a = n.get("a").unwrap();
        let (s, e) = a.value.span();
        assert_eq!(&t[s..e], "[1, \"x\\\"y\"]");
        assert_eq!(a.value.items()[1].as_str(), Some("x\"y"));
        assert_eq!(&t[n.get("b").unwrap().key_start..][..3], "\"b\"");
        assert_eq!(n.span(), (0, t.trim_end().len()));
    }

    #[test]
    fn broken_json_is_refused_with_its_line() {
        for (bad, why) in [
            ("{\"a\":1,}", "expected"),
            ("{\"a\":1}x", "after"),
            ("{\"a\" 1}", "':'"),
            ("[tru]", "not a JSON value"),
            ("{\"a\":1,\"a\":2}", "twice"),
            ("\"abc", "does not end"),
            ("", "ends"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("deeply"));
        assert!(parse("{\n\n  x}").unwrap_err().contains("line 3"));
    }
}
