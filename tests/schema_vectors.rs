//! Golden vectors for the bundled Claude control-protocol schema (`fixtures/protocol/v1/`).
//!
//! Vector file format: `fixtures/protocol/v1/<kebab-case definition>.json` holding
//! `{"definition": "<Name>", "notes"?: "...", "valid": [case…], "invalid": [case…]}`, where a case
//! is `{"name": "...", "source"?: "...", "instance": <JSON>}` or `{"name", "source"?, "line": "<raw
//! line>"}`. A `line` is parsed before validation; for `Message` and `UserTurn` it goes through
//! `validate_claude_outbound_line` instead, so line-level rules (no CR, one value) apply too.

#[path = "support/common.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::schema::{claude_definitions, validate_claude, validate_claude_outbound_line};

const LINE_DEFINITIONS: [&str; 2] = ["Message", "UserTurn"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn kebab(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('-');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// All vector files, keyed by file stem.
fn vector_files() -> BTreeMap<String, Value> {
    let dir = root().join("fixtures/protocol/v1");
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            files.insert(stem, read_json(&path));
        }
    }
    files
}

fn bundled_schema() -> Value {
    read_json(&root().join("schema/claude-control-protocol.v1.json"))
}

/// Outcome of one case: `Ok` if it validates, `Err(reason)` otherwise.
fn check_case(definition: &str, case: &Value) -> Result<(), String> {
    if let Some(line) = case.get("line") {
        let line = line.as_str().expect("`line` is a string");
        if LINE_DEFINITIONS.contains(&definition) {
            let outbound = validate_claude_outbound_line(line).map_err(|e| e.to_string());
            if outbound.is_ok() {
                let value: Value = serde_json::from_str(line).expect("valid line parses");
                validate_claude(definition, &value)
                    .expect("outbound line validated, so its definition must accept it");
            }
            return outbound;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
        return validate_claude(definition, &value).map_err(|e| e.to_string());
    }
    let instance = case.get("instance").expect("case has `instance` or `line`");
    validate_claude(definition, instance).map_err(|e| e.to_string())
}

#[test]
fn every_vector_validates_as_declared() {
    let files = vector_files();
    assert!(!files.is_empty(), "no vector files");
    let mut failures = Vec::new();
    for (stem, file) in &files {
        let definition = file["definition"]
            .as_str()
            .unwrap_or_else(|| panic!("{stem}: no definition"));
        assert_eq!(
            stem,
            &kebab(definition),
            "file name must be the kebab-case definition name"
        );
        let valid = file["valid"]
            .as_array()
            .unwrap_or_else(|| panic!("{stem}: no valid[]"));
        let invalid = file["invalid"]
            .as_array()
            .unwrap_or_else(|| panic!("{stem}: no invalid[]"));
        assert!(
            !valid.is_empty(),
            "{stem}: needs at least one valid instance"
        );
        let mut names = BTreeSet::new();
        for (expect_valid, case) in valid
            .iter()
            .map(|c| (true, c))
            .chain(invalid.iter().map(|c| (false, c)))
        {
            let name = case["name"]
                .as_str()
                .unwrap_or_else(|| panic!("{stem}: case without name"));
            assert!(names.insert(name), "{stem}: duplicate case name {name:?}");
            match (expect_valid, check_case(definition, case)) {
                (true, Err(e)) => {
                    failures.push(format!("{stem} / {name}: expected valid, got: {e}"))
                }
                (false, Ok(())) => failures.push(format!(
                    "{stem} / {name}: expected invalid, but it validated"
                )),
                _ => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "vector failures:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_definition_has_a_vector_file() {
    let files = vector_files();
    let schema = bundled_schema();
    let in_schema: BTreeSet<&str> = schema["definitions"]
        .as_object()
        .expect("definitions")
        .keys()
        .map(String::as_str)
        .collect();
    let api: BTreeSet<&str> = claude_definitions().into_iter().collect();
    assert_eq!(
        in_schema, api,
        "claude_definitions() must list the schema's definitions"
    );
    let covered: BTreeSet<&str> = files
        .values()
        .filter_map(|f| f["definition"].as_str())
        .collect();
    let missing: Vec<_> = in_schema.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "definitions without a vector file: {missing:?}"
    );
    let unknown: Vec<_> = covered.difference(&in_schema).collect();
    assert!(
        unknown.is_empty(),
        "vector files for unknown definitions: {unknown:?}"
    );
}

#[test]
fn error_envelope_is_not_a_success_envelope() {
    let error = serde_json::json!({"type":"control_response","response":{"subtype":"error","request_id":"x-1","error":"unsupported control_request subtype \"bogus\""}});
    validate_claude("ControlResponseError", &error).unwrap();
    validate_claude("Message", &error).unwrap();
    let err = validate_claude("ControlResponse", &error).unwrap_err();
    assert_eq!(err.definition, "ControlResponse");
    // And every error-envelope vector is rejected as a success envelope.
    let file = &vector_files()["control-response-error"];
    for case in file["valid"].as_array().unwrap() {
        assert!(
            check_case("ControlResponse", case).is_err(),
            "{}",
            case["name"]
        );
    }
}

/// Every original constraint of the upstream schema is still present, unchanged or widened.
#[test]
fn bundled_schema_is_an_additive_extension_of_the_shared_copy() {
    let shared = root().join("../shared/spec/claude-control-protocol.v1.schema.json");
    let found = [
        shared,
        PathBuf::from("/work/shared/spec/claude-control-protocol.v1.schema.json"),
    ]
    .into_iter()
    .find(|p| p.exists());
    let Some(shared) = common::require_or_skip(
        "the schema additivity check",
        "../shared/spec/claude-control-protocol.v1.schema.json",
        found,
    ) else {
        return;
    };
    let original = read_json(&shared);
    let ours = bundled_schema();
    for key in ["$schema", "$id", "title", "$ref"] {
        assert_eq!(original[key], ours[key], "top-level {key} changed");
    }
    let original_defs = original["definitions"].as_object().unwrap();
    let our_defs = ours["definitions"].as_object().unwrap();
    let mut problems = Vec::new();
    for (name, def) in original_defs {
        let Some(ours) = our_defs.get(name) else {
            problems.push(format!("definition {name} removed"));
            continue;
        };
        assert_eq!(
            def.get("required"),
            ours.get("required"),
            "{name}: `required` changed"
        );
        compare_additive(&format!("#/definitions/{name}"), def, ours, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "non-additive changes:\n{}",
        problems.join("\n")
    );
}

/// Recursively checks that `ours` keeps every constraint of `orig`: identical `required`, `type`,
/// `const`, `minLength`, boolean `additionalProperties` and `$ref`; `enum` only widened;
/// `properties` only added; `oneOf`/`anyOf` only appended to.
fn compare_additive(path: &str, orig: &Value, ours: &Value, problems: &mut Vec<String>) {
    let (Some(orig), Some(ours)) = (orig.as_object(), ours.as_object()) else {
        if orig != ours {
            problems.push(format!("{path}: changed"));
        }
        return;
    };
    for (key, o) in orig {
        let here = format!("{path}/{key}");
        let Some(n) = ours.get(key) else {
            if key != "description" {
                problems.push(format!("{here}: removed"));
            }
            continue;
        };
        match key.as_str() {
            "description" => {}
            "enum" => {
                let ours: Vec<&Value> =
                    n.as_array().map(|a| a.iter().collect()).unwrap_or_default();
                for v in o.as_array().unwrap() {
                    if !ours.contains(&v) {
                        problems.push(format!("{here}: value {v} removed"));
                    }
                }
            }
            "oneOf" | "anyOf" => {
                let (o, n) = (o.as_array().unwrap(), n.as_array().unwrap());
                if n.len() < o.len() {
                    problems.push(format!("{here}: branches removed"));
                }
                for (i, (ob, nb)) in o.iter().zip(n).enumerate() {
                    compare_additive(&format!("{here}/{i}"), ob, nb, problems);
                }
            }
            "properties" | "definitions" => {
                for (prop, os) in o.as_object().unwrap() {
                    match n.get(prop) {
                        Some(ns) => compare_additive(&format!("{here}/{prop}"), os, ns, problems),
                        None => problems.push(format!("{here}/{prop}: removed")),
                    }
                }
            }
            "items" | "additionalProperties" if o.is_object() => {
                compare_additive(&here, o, n, problems)
            }
            _ => {
                if o != n {
                    problems.push(format!("{here}: {o} became {n}"));
                }
            }
        }
    }
}
