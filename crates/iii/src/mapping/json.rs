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

/// `v.get(k)` without hashing `k` for a small object. serde_json's ordered map hashes every
/// key looked up with SipHash, a twentieth of an iii replay's work; the engine's objects have
/// a handful of keys, compared in place here (a key is in a map once, so the first match is
/// the only one).
pub fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    let o = v.as_object()?;
    if o.len() <= 16 {
        o.iter().find_map(|(key, x)| (key == k).then_some(x))
    } else {
        o.get(k)
    }
}

/// `get` as a method, where a `Value`'s own `get` was called.
pub trait Field {
    fn field(&self, k: &str) -> Option<&Value>;
}

impl Field for Value {
    fn field(&self, k: &str) -> Option<&Value> {
        get(self, k)
    }
}

pub fn str_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    get(v, k)?.as_str()
}

/// An id field: a non-empty string no longer than `MAX_ID`.
pub fn id_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    str_field(v, k).filter(|s| !s.is_empty() && s.len() <= MAX_ID)
}

pub fn u64_field(v: &Value, k: &str) -> Option<u64> {
    let f = get(v, k)?;
    f.as_u64().or_else(|| {
        f.as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(|x| x as u64)
    })
}

pub fn i64_field(v: &Value, k: &str) -> Option<i64> {
    get(v, k)?.as_i64()
}

pub fn bool_field(v: &Value, k: &str) -> Option<bool> {
    get(v, k)?.as_bool()
}

pub fn array<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    get(v, k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Compact JSON of `v`, bounded.
pub fn compact(v: &Value) -> String {
    clip(&serde_json::to_string(v).unwrap_or_default(), MAX_TEXT)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `get` finds what `Value::get` finds: small objects (compared in place) and large ones
    /// (looked up), duplicate keys (the last wins, as the parse left it), anything that is
    /// not an object.
    #[test]
    fn get_finds_what_value_get_finds() {
        let mut big = serde_json::Map::new();
        for i in 0..40 {
            big.insert(format!("k{i}"), Value::from(i));
        }
        let values = [
            serde_json::json!({"type": "a", "id": "x", "": 1, "typ": 2}),
            serde_json::from_str(r#"{"type": "first", "id": 1, "type": "last"}"#).unwrap(),
            Value::Object(big),
            serde_json::json!(["type", "id"]),
            serde_json::json!("type"),
            Value::Null,
        ];
        for v in &values {
            for k in ["type", "id", "", "typ", "k0", "k39", "k40", "types"] {
                assert_eq!(get(v, k), v.get(k), "{v} {k}");
                assert_eq!(v.field(k), v.get(k), "{v} {k}");
            }
        }
        assert_eq!(str_field(&values[1], "type"), Some("last"));
    }
}
