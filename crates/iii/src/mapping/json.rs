//! Tolerant field access: every value comes from a peer we do not trust, so a wrong type or a
//! missing field is `None`, never a panic, and every string kept is bounded.

use serde_json::Value;

use super::MAX_ID;

/// Longest text kept from one field (a message, arguments, a result).
pub const MAX_TEXT: usize = 64 * 1024;

/// `s` cut to `max` characters, marked with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    switchboard_core::text::truncate(s, max)
}

pub fn str_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k)?.as_str()
}

/// An id field: a non-empty string no longer than `MAX_ID`.
pub fn id_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    str_field(v, k).filter(|s| !s.is_empty() && s.len() <= MAX_ID)
}

pub fn u64_field(v: &Value, k: &str) -> Option<u64> {
    let f = v.get(k)?;
    f.as_u64().or_else(|| {
        f.as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(|x| x as u64)
    })
}

pub fn i64_field(v: &Value, k: &str) -> Option<i64> {
    v.get(k)?.as_i64()
}

pub fn bool_field(v: &Value, k: &str) -> Option<bool> {
    v.get(k)?.as_bool()
}

pub fn array<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Compact JSON of `v`, bounded.
pub fn compact(v: &Value) -> String {
    clip(&v.to_string(), MAX_TEXT)
}

/// A display name from a title field, one line, bounded; `fallback` when empty.
pub fn title(v: Option<&str>, fallback: &str) -> String {
    let t =
        switchboard_core::text::sanitize(&switchboard_core::text::one_line(v.unwrap_or(""), 120));
    if t.trim().is_empty() {
        switchboard_core::text::sanitize(&clip(fallback, 120))
    } else {
        t
    }
}

/// The next page's request: `request` with `cursor` set. A request that is not an object
/// (never ours, but a recording may hold anything) becomes one, never a panic.
pub fn with_cursor(request: &Value, cursor: &str) -> Value {
    let mut next = match request {
        Value::Object(o) => o.clone(),
        _ => serde_json::Map::new(),
    };
    next.insert("cursor".into(), Value::String(cursor.to_string()));
    Value::Object(next)
}

/// Feed a value to `h` (its structure and every scalar), so two values that read the same
/// hash the same. serde_json's `Value` has no `Hash`; this walk needs no allocation.
pub fn hash_value(v: &Value, h: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.as_i64(), n.as_u64(), n.as_f64().map(f64::to_bits)).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(o) => {
            (5u8, o.len()).hash(h);
            for (k, x) in o {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}
