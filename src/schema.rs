//! Validation of the workspace manifest against its bundled schema. The Claude control-protocol
//! schema is the Claude backend's (`backend::claude::schema`), re-exported here for the
//! commands that check recordings.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

pub use crate::backend::claude::schema::{
    SchemaError, claude_definitions, validate_claude, validate_claude_outbound_line,
};

/// Longest single message kept for one failure; longer ones are cut (instances can be large).
const MAX_MESSAGE_CHARS: usize = 300;

/// The workspace manifest schema (`schema/manifest.schema.json`, draft 2020-12), verbatim.
pub const MANIFEST_SCHEMA_SOURCE: &str = include_str!("../schema/manifest.schema.json");

/// Most failures listed for one manifest: a broken document can fail on every element.
const MAX_MANIFEST_ERRORS: usize = 50;

fn manifest_validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| {
        let doc: Value =
            serde_json::from_str(MANIFEST_SCHEMA_SOURCE).expect("bundled manifest schema is JSON");
        jsonschema::draft202012::new(&doc).expect("bundled manifest schema compiles")
    })
}

/// Validate a workspace manifest against its bundled schema. `Err`: one `(instance path,
/// message)` per failure (the path is a JSON pointer, empty at the root), at most 50.
pub fn validate_manifest(value: &Value) -> Result<(), Vec<(String, String)>> {
    let v = manifest_validator();
    if v.is_valid(value) {
        return Ok(());
    }
    let errors: Vec<(String, String)> = v
        .iter_errors(value)
        .take(MAX_MANIFEST_ERRORS)
        .map(|e| {
            let mut m = e.to_string();
            if m.chars().count() > MAX_MESSAGE_CHARS {
                m = m.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
            }
            (e.instance_path().as_str().to_owned(), m)
        })
        .collect();
    Err(errors)
}
