//! Validation against the bundled Checkfu ACP v1 extension schema.
//!
//! `schema/checkfu-acp-v1-extension.schema.json` is a closed draft 2020-12 schema of a
//! golden-vectors file (`{schema_id, revision, protocol, wire_protocol_version, driver_version,
//! vectors: [{name, direction, wire}]}`). One frame is checked by wrapping it as the only vector of
//! such a file under a given name, so each named vector kind is its own contract.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::{Value, json};

/// The bundled schema document, verbatim.
pub const SCHEMA_SOURCE: &str =
    include_str!("../../../schema/checkfu-acp-v1-extension.schema.json");

/// The 13 vector names the contract defines, in schema order.
pub const VECTOR_NAMES: [&str; 13] = [
    "initialize.full-declaration",
    "initialize.subagents-declaration",
    "initialize.controls-declaration",
    "session.new.builtin-tools",
    "session.new.output-schema",
    "session.update.subagent-started",
    "session.update.subagent-activity",
    "session.update.subagent-completed",
    "session.prompt.turn-telemetry",
    "extension.steer.request",
    "extension.steer.response",
    "extension.interrupt.request",
    "extension.interrupt.response",
];

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(SCHEMA_SOURCE).expect("bundled Checkfu schema is JSON"))
}

fn validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| {
        jsonschema::draft202012::new(document()).expect("bundled Checkfu schema compiles")
    })
}

/// The direction a named vector travels: `runner_to_agent` for what switchboard sends.
pub fn direction_of(name: &str) -> Option<&'static str> {
    if !VECTOR_NAMES.contains(&name) {
        return None;
    }
    Some(match name {
        "session.new.builtin-tools"
        | "session.new.output-schema"
        | "extension.steer.request"
        | "extension.interrupt.request" => "runner_to_agent",
        _ => "agent_to_runner",
    })
}

fn errors(instance: &Value) -> Result<(), String> {
    let v = validator();
    if v.is_valid(instance) {
        return Ok(());
    }
    let msgs: Vec<String> = v
        .iter_errors(instance)
        .take(8)
        .map(|e| {
            let path = e.instance_path().to_string();
            let mut m = e.to_string();
            if m.chars().count() > 300 {
                m = m.chars().take(300).collect::<String>() + "…";
            }
            if path.is_empty() {
                m
            } else {
                format!("{path}: {m}")
            }
        })
        .collect();
    Err(msgs.join("; "))
}

/// Validate a whole vectors file against the bundled schema.
pub fn validate_vector_file(file: &Value) -> Result<(), String> {
    errors(file)
}

/// Validate one wire frame (a raw JSON value, never a re-serialised typed struct) as the
/// named vector kind.
pub fn validate_frame(name: &str, wire: &Value) -> Result<(), String> {
    let Some(direction) = direction_of(name) else {
        return Err(format!("unknown Checkfu vector name {name:?}"));
    };
    let doc = document();
    let file = json!({
        "schema_id": doc["$id"],
        "revision": "checkfu:acp-v1-extension-vectors@3",
        "protocol": "acp-v1",
        "wire_protocol_version": 1,
        "driver_version": "checkfu:acp-v1@1",
        "vectors": [{"name": name, "direction": direction, "wire": wire}],
    });
    errors(&file).map_err(|e| format!("does not match {name}: {e}"))
}

/// The vector kind an outbound line of ours should match, if it is a Checkfu frame.
pub fn outbound_kind(frame: &Value) -> Option<&'static str> {
    match frame.get("method").and_then(Value::as_str)? {
        "_checkfu/session/steer" => Some("extension.steer.request"),
        "_checkfu/session/interrupt" => Some("extension.interrupt.request"),
        "session/new" => {
            let meta = frame.get("params")?.get("_meta")?;
            if meta.get("checkfu.builtin_tools").is_some() {
                Some("session.new.builtin-tools")
            } else if meta.get("checkfu.output_schema").is_some() {
                Some("session.new.output-schema")
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steer_frame_validates_and_a_bad_one_does_not() {
        let ok = json!({"jsonrpc":"2.0","id":3,"method":"_checkfu/session/steer",
            "params":{"sessionId":"s","id":"steer-1","content":"x"}});
        validate_frame("extension.steer.request", &ok).unwrap();
        let bad = json!({"jsonrpc":"2.0","id":3,"method":"_checkfu/session/steer",
            "params":{"sessionId":"","id":"steer-1","content":"x"}});
        assert!(validate_frame("extension.steer.request", &bad).is_err());
        assert!(validate_frame("extension.interrupt.request", &ok).is_err());
    }
}
