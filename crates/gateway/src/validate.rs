//! The checks of reference §4 that need no state beyond the pinned channel: the tool name,
//! the arguments against the spec's own input schemas, the policy class of each tool, the
//! arguments' hash, and the lexical shape of a path (§7). The engine runs them in §4's order.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::codec::{Code, Refusal};

/// The spec, bundled: its tool input schemas are what arguments are validated against.
pub const SPEC_SOURCE: &str = include_str!("../../../schema/ai-gateway-channel.v1.json");

/// The fifteen tool names, in the spec's order.
pub const TOOLS: [&str; 15] = [
    "workspace_info",
    "workspace_tools",
    "workspace_tool",
    "workspace_list",
    "workspace_read",
    "workspace_image",
    "workspace_document",
    "workspace_write",
    "workspace_patch",
    "workspace_delete",
    "workspace_exec",
    "workspace_poll",
    "workspace_input",
    "workspace_stop",
    "workspace_ask",
];

/// What a tool does, by switchboard's own table (the spec's annotations are B's hints and
/// are not trusted: `workspace_stop` is marked read-only there, it is an effect here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// No effect: run at once, audited, not journaled as an effect.
    Read,
    /// A file change: write, patch, delete. Pre-approved by mode `edits` and `full`.
    Edit,
    /// A command: exec, input, stop. Pre-approved only by mode `full`.
    Command,
    /// `workspace_ask`: a question to the owner, never a permission.
    Ask,
}

pub fn class_of(tool: &str) -> Class {
    match tool {
        "workspace_write" | "workspace_patch" | "workspace_delete" => Class::Edit,
        "workspace_exec" | "workspace_input" | "workspace_stop" => Class::Command,
        "workspace_ask" => Class::Ask,
        // workspace_tool inherits its target's class; the engine resolves it.
        "workspace_tool" => Class::Command,
        _ => Class::Read,
    }
}

/// The owner's permission mode (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Every effect is a gate.
    #[default]
    Ask,
    /// Write, patch and delete pre-approved; commands still asked.
    Edits,
    /// Every effect pre-approved (still journaled and audited).
    Full,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "ask" => Some(Mode::Ask),
            "edits" => Some(Mode::Edits),
            "full" => Some(Mode::Full),
            _ => None,
        }
    }

    /// Whether a call of this class needs the owner's decision under this mode.
    pub fn needs_gate(self, class: Class) -> bool {
        !matches!(
            (self, class),
            (_, Class::Read | Class::Ask) | (Mode::Full, _) | (Mode::Edits, Class::Edit)
        )
    }
}

pub fn spec() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(SPEC_SOURCE).expect("bundled gateway spec is JSON"))
}

fn validators() -> &'static HashMap<String, jsonschema::Validator> {
    static V: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        let mut m = HashMap::new();
        for t in spec()["tools"].as_array().into_iter().flatten() {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            let v = jsonschema::draft202012::new(&t["inputSchema"])
                .expect("bundled gateway input schema compiles");
            m.insert(name, v);
        }
        m
    })
}

/// Step 6 (the name only; `workspace_tool`'s target is the engine's).
pub fn check_tool(tool: Option<&str>) -> Result<&'static str, Refusal> {
    let Some(t) = tool else {
        return Err(Refusal::new(Code::UnknownTool, "the call names no tool"));
    };
    TOOLS.iter().copied().find(|n| *n == t).ok_or_else(|| {
        Refusal::new(
            Code::UnknownTool,
            format!("unknown tool {:?}", super::codec::clip(t)),
        )
    })
}

/// `args` as an object: sent as one, or as a string that decodes to one (decoded once).
/// A missing `args` is the empty object.
pub fn decode_args(args: Option<&Value>) -> Result<Map<String, Value>, Refusal> {
    match args {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(o)) => Ok(o.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err(Refusal::new(
                Code::SchemaViolation,
                "args is a string that does not encode a JSON object",
            )),
            Err(e) => Err(Refusal::new(
                Code::SchemaViolation,
                format!("args is a string that is not JSON: {e}"),
            )),
        },
        Some(_) => Err(Refusal::new(
            Code::SchemaViolation,
            "args must be an object or a JSON-encoded object",
        )),
    }
}

/// Step 7: the decoded arguments against the tool's input schema from the spec.
pub fn check_args(tool: &str, args: &Map<String, Value>) -> Result<(), Refusal> {
    let Some(v) = validators().get(tool) else {
        return Err(Refusal::new(
            Code::UnknownTool,
            format!("no schema for {tool}"),
        ));
    };
    let value = Value::Object(args.clone());
    let errors: Vec<String> = v
        .iter_errors(&value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                "args".to_string()
            } else {
                format!("args{at}")
            };
            format!("{at}: {}", super::codec::clip(&e.to_string()))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Refusal::new(Code::SchemaViolation, errors.join("; ")))
    }
}

/// `workspace_tool` arguments may not pick another conversation or project (§6.4).
pub fn check_no_selector(arguments: &Value) -> Result<(), Refusal> {
    const WORDS: [&str; 4] = ["session", "conversation", "workspace", "project"];
    if let Value::Object(o) = arguments {
        for k in o.keys() {
            let lower = k.to_ascii_lowercase();
            if WORDS.iter().any(|w| lower.contains(w)) {
                return Err(Refusal::new(
                    Code::PermissionDenied,
                    format!(
                        "argument {k:?} would select a session, conversation, workspace or project"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Keys sorted at every level, no whitespace: the same arguments hash the same however B
/// ordered them or whether it sent them as a string.
pub fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                let mut m = Map::new();
                for k in keys {
                    m.insert(k.clone(), sorted(&o[k]));
                }
                Value::Object(m)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The receipts key's companion: SHA-256 of the canonical (workspace, session, intention,
/// tool, args). Args that could not be decoded hash in their raw form.
pub fn args_hash(
    workspace: &str,
    session: &str,
    intention: Option<&str>,
    tool: Option<&str>,
    args: &Value,
) -> String {
    let v = serde_json::json!({
        "workspaceId": workspace,
        "sessionId": session,
        "intention": intention,
        "tool": tool,
        "args": args,
    });
    sha256_hex(canonical(&v).as_bytes())
}

/// §7, lexically: relative only; no absolute, drive or UNC prefix, no backslash, no NUL, no
/// empty and no `..` component. (The kernel then refuses any escape through links.)
pub fn rel_path(p: &str) -> Result<PathBuf, Refusal> {
    let out = |why: &str| {
        Err(Refusal::new(
            Code::PathOutsideRoot,
            format!("{why}: {:?}", super::codec::clip(p)),
        ))
    };
    if p.is_empty() {
        return out("empty path");
    }
    if p.contains('\0') {
        return out("path contains NUL");
    }
    if p.contains('\\') {
        return out("path contains a backslash (Windows and UNC paths are refused)");
    }
    if p.starts_with('/') {
        return out("absolute path");
    }
    let b = p.as_bytes();
    if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        return out("drive-letter path");
    }
    if p == "." {
        return Ok(PathBuf::new());
    }
    let mut buf = PathBuf::new();
    for c in p.split('/') {
        match c {
            "" => return out("empty path component"),
            ".." => return out("path climbs with .."),
            "." => {}
            c => buf.push(c),
        }
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_spec_tool_has_a_schema_and_a_name() {
        for t in TOOLS {
            assert!(validators().contains_key(t), "{t}");
        }
        assert_eq!(validators().len(), 15);
    }

    #[test]
    fn schema_violations_from_the_spec_schemas() {
        let bad = [
            ("workspace_read", json!({"path": "a", "extra": 1})),
            ("workspace_read", json!({})),
            ("workspace_read", json!({"path": "a", "limit": 0})),
            ("workspace_read", json!({"path": ""})),
            (
                "workspace_poll",
                json!({"commandId": "ABCDEF12-0000-0000-0000-000000000000"}),
            ),
            (
                "workspace_write",
                json!({"path": "a", "content": "x", "expectedSha256": "abc"}),
            ),
            ("workspace_exec", json!({"command": "ls", "timeoutMs": 999})),
            ("workspace_list", json!({"offset": 100001})),
            ("workspace_ask", json!({"question": ""})),
        ];
        for (t, a) in bad {
            let e = check_args(t, &obj(a.clone())).unwrap_err();
            assert_eq!(e.code, Code::SchemaViolation, "{t} {a}");
        }
        let good = [
            (
                "workspace_read",
                json!({"path": "a", "offset": 3, "limit": 10}),
            ),
            (
                "workspace_write",
                json!({"path": "a", "content": "x", "expectedSha256": null}),
            ),
            (
                "workspace_poll",
                json!({"commandId": "abcdef12-0000-4000-8000-000000000000"}),
            ),
            ("workspace_info", json!({})),
        ];
        for (t, a) in good {
            check_args(t, &obj(a)).unwrap();
        }
    }

    #[test]
    fn args_as_string_decode_once_and_hash_the_same() {
        let o = decode_args(Some(&json!({"b": 1, "a": "x"}))).unwrap();
        let s = decode_args(Some(&json!("{\"a\":\"x\",\"b\":1}"))).unwrap();
        let h = |m: &Map<String, Value>| {
            args_hash("w", "s", Some("i"), Some("t"), &Value::Object(m.clone()))
        };
        assert_eq!(h(&o), h(&s));
        // A string holding a string of JSON is not decoded twice.
        let twice = json!("\"{\\\"a\\\":1}\"");
        assert_eq!(
            decode_args(Some(&twice)).unwrap_err().code,
            Code::SchemaViolation
        );
        assert_eq!(
            decode_args(Some(&json!(3))).unwrap_err().code,
            Code::SchemaViolation
        );
    }

    #[test]
    fn path_escapes_are_refused_lexically() {
        for p in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "C:\\x",
            "C:/x",
            "\\\\server\\share",
            "a\0b",
            "a//b",
            "",
            "a/..",
        ] {
            assert_eq!(
                rel_path(p).unwrap_err().code,
                Code::PathOutsideRoot,
                "{p:?}"
            );
        }
        assert_eq!(
            rel_path("src/./main.rs").unwrap(),
            PathBuf::from("src/main.rs")
        );
        assert_eq!(rel_path(".").unwrap(), PathBuf::new());
    }

    #[test]
    fn modes_pre_approve_by_class() {
        assert!(Mode::Ask.needs_gate(Class::Edit));
        assert!(!Mode::Edits.needs_gate(Class::Edit));
        assert!(Mode::Edits.needs_gate(Class::Command));
        assert!(!Mode::Full.needs_gate(Class::Command));
        assert!(!Mode::Ask.needs_gate(Class::Read));
        assert_eq!(class_of("workspace_stop"), Class::Command);
    }

    #[test]
    fn tool_arguments_cannot_select_a_conversation() {
        assert!(check_no_selector(&json!({"q": 1})).is_ok());
        for k in ["sessionId", "conversation", "workspace_id", "Project"] {
            assert!(check_no_selector(&json!({k: 1})).is_err(), "{k}");
        }
    }
}
