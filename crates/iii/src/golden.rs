//! The harness authors' golden request schemas (vendored unchanged from iii-hq/harness-e2e,
//! see fixtures/iii/harness-e2e/NOTICE.md), embedded so `validate` holds a recording's calls
//! to the contract the engine's own authors test against, not to our reading of the spec.
//!
//! Requests only: the golden response schemas are stricter than the authors' own valid
//! response fixtures (`harness::status` requires fields `contracts/valid-responses.json`
//! leaves out), so holding an engine's answers to them would flag engines that are fine.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// Each golden schema document: `function_id`, `request_schema`, `response_schema`.
const SOURCES: [&str; 6] = [
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.send.json"),
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.status.json"),
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.stop.json"),
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.session-tree.json"),
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.metrics.json"),
    include_str!("../../../fixtures/iii/harness-e2e/schemas/harness.teardown.json"),
];

/// Violations named in one finding at most: the first few say what is wrong; a payload that
/// breaks everything must not make a finding as long as itself.
const MAX_ERRORS: usize = 3;
/// One violation's text at most (jsonschema quotes the offending value, which may be huge).
const MAX_ERROR_CHARS: usize = 120;

/// The request validators by function id, compiled once.
fn validators() -> &'static HashMap<String, jsonschema::Validator> {
    static V: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        SOURCES
            .iter()
            .map(|src| {
                let doc: Value = serde_json::from_str(src).expect("golden schema is JSON");
                let id = doc["function_id"]
                    .as_str()
                    .expect("golden schema names its function")
                    .to_string();
                // The documents declare draft-07 (`$schema`); the validator reads it from there.
                let v = jsonschema::validator_for(&doc["request_schema"])
                    .expect("golden request schema compiles");
                (id, v)
            })
            .collect()
    })
}

/// The function ids with a golden request schema.
pub fn functions() -> Vec<&'static str> {
    let mut ids: Vec<&str> = validators().keys().map(String::as_str).collect();
    ids.sort_unstable();
    ids
}

/// `None` when `function_id` has no golden schema; `Some(Err(why))` when `data` breaks it,
/// `why` naming where (the JSON pointer into `data`) and what, bounded.
pub fn check_request(function_id: &str, data: &Value) -> Option<Result<(), String>> {
    let v = validators().get(function_id)?;
    let mut errors = v.iter_errors(data);
    let mut shown: Vec<String> = Vec::new();
    let mut more = 0usize;
    for e in errors.by_ref() {
        if shown.len() == MAX_ERRORS {
            more += 1;
            continue;
        }
        let at = e.instance_path().as_str().to_string();
        let at = if at.is_empty() { "/".to_string() } else { at };
        shown.push(format!(
            "at {at}: {}",
            switchboard_core::text::one_line(&e.to_string(), MAX_ERROR_CHARS)
        ));
    }
    if shown.is_empty() {
        return Some(Ok(()));
    }
    let mut why = shown.join("; ");
    if more > 0 {
        why.push_str(&format!(" (and {more} more)"));
    }
    Some(Err(why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_golden_schema_compiles_and_names_its_function() {
        assert_eq!(
            functions(),
            vec![
                "harness::metrics",
                "harness::send",
                "harness::session-tree",
                "harness::status",
                "harness::stop",
                "harness::teardown",
            ]
        );
    }

    #[test]
    fn a_request_is_checked_only_against_its_own_schema() {
        assert_eq!(check_request("approval::resolve", &json!({})), None);
        assert_eq!(
            check_request(
                "harness::status",
                &json!({"session_id": "s", "verbose": true})
            ),
            Some(Ok(()))
        );
        let why = check_request("harness::status", &json!({"verbose": true}))
            .unwrap()
            .unwrap_err();
        assert!(why.contains("session_id"), "{why}");
        assert!(why.starts_with("at /:"), "{why}");
        // A provider is a top-level string of the send request, not an option.
        let send = json!({"message": "hi", "model": "m", "provider": 7});
        let why = check_request("harness::send", &send).unwrap().unwrap_err();
        assert!(why.contains("/provider"), "{why}");
    }

    #[test]
    fn a_long_violation_is_cut() {
        let huge = "x".repeat(10_000);
        let why = check_request("harness::teardown", &json!({"root_session_id": [huge]}))
            .unwrap()
            .unwrap_err();
        assert!(why.chars().count() < 400, "{}", why.len());
    }
}
