//! Reading a manifest back: recognising one, reading its text, checking it against the schema,
//! and finding the line of an element for a finding.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::{MAX_MANIFEST_BYTES, Manifest};

/// Whether `path` looks like a workspace manifest: its first key is `switchboard_workspace`
/// (the writer puts it first). Reads at most 256 bytes, and only from a regular file (opening a
/// FIFO found in the recordings directory would block `sessions`).
pub fn is_manifest(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(256);
    if f.take(256).read_to_end(&mut head).is_err() {
        return false;
    }
    is_manifest_text(&head)
}

/// [`is_manifest`] on the first bytes of a document.
pub fn is_manifest_text(head: &[u8]) -> bool {
    let rest = head.trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b"{") else {
        return false;
    };
    rest.trim_ascii_start()
        .starts_with(b"\"switchboard_workspace\"")
}

/// Read a manifest's text (at most [`MAX_MANIFEST_BYTES`]).
pub fn read_text(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read: not a regular file".into());
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut buf = Vec::new();
    f.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read: {e}"))?;
    if buf.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(format!(
            "larger than {} MiB: not a manifest switchboard wrote",
            MAX_MANIFEST_BYTES >> 20
        ));
    }
    String::from_utf8(buf).map_err(|e| format!("not UTF-8: {e}"))
}

/// Load a manifest: read, checked against the schema, then typed. The error names the line and
/// the key of the first problem.
pub fn load_manifest(path: &Path) -> Result<Manifest, String> {
    let text = read_text(path)?;
    parse(&text)
}

/// [`load_manifest`] on a document's text.
pub fn parse(text: &str) -> Result<Manifest, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if let Err(errors) = crate::schema::validate_manifest(&value) {
        let (pointer, message) = errors.into_iter().next().unwrap_or_default();
        let line = line_of_pointer(text, &pointer);
        let key = if pointer.is_empty() { "/" } else { &pointer };
        return Err(format!("line {line}: {key}: {message}"));
    }
    serde_json::from_value(value).map_err(|e| format!("does not match the manifest: {e}"))
}

/// The 1-based line of the element a JSON pointer names: `/sessions/N/...` and
/// `/decisions/N/...` point at the line their element starts on, anything else at line 1.
pub fn line_of_pointer(text: &str, pointer: &str) -> usize {
    let mut parts = pointer.trim_start_matches('/').split('/');
    let (Some(key), Some(index)) = (parts.next(), parts.next()) else {
        return 1;
    };
    let Ok(index) = index.parse::<usize>() else {
        return 1;
    };
    element_lines(text, key).get(index).copied().unwrap_or(1)
}

/// The 1-based line on which each element of the top-level array `key` starts, however the
/// document is laid out.
pub fn element_lines(text: &str, key: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    let mut last_key: &[u8] = b"";
    // Inside the wanted array, waiting for the start of the next element.
    let mut inside = false;
    let mut want = false;
    while i < b.len() {
        let c = b[i];
        if inside && depth == 2 && want && !c.is_ascii_whitespace() && c != b',' && c != b']' {
            out.push(line);
            want = false;
        }
        match c {
            b'\n' => line += 1,
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    } else if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                if depth == 1 {
                    last_key = &b[start.min(b.len())..i.min(b.len())];
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if c == b'[' && depth == 2 && last_key == key.as_bytes() {
                    inside = true;
                    want = true;
                }
            }
            b'}' | b']' => {
                if inside && depth == 2 {
                    return out;
                }
                depth = depth.saturating_sub(1);
            }
            b',' if inside && depth == 2 => want = true,
            _ => {}
        }
        i += 1;
    }
    out
}
