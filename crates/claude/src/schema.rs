//! Validation against the bundled Claude Code control-protocol schema.
//!
//! `schema/claude-control-protocol.v1.json` is cowork-harness's `protocol.v1.json` (MIT, see
//! `schema/README.md`) extended additively for what Claude Code CLI 2.1.332 accepts
//! (`schema/CHANGELOG.md`). It is embedded in the binary; every definition is compiled once, on
//! first use, into a draft-07 validator.
//!
//! Use [`validate_claude_outbound_line`] on every line switchboard writes to the child's stdin
//! (a `control_request`, a `control_response`, a `control_cancel_request` or a user turn), and
//! [`validate_claude`] for a single named definition (e.g. `"AllowBody"`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::{Value, json};

/// The bundled schema document, verbatim.
const SCHEMA_SOURCE: &str = include_str!("../../../schema/claude-control-protocol.v1.json");

/// Longest single message kept in a [`SchemaError`]; longer ones are cut (instances can be large).
const MAX_MESSAGE_CHARS: usize = 300;

/// Why a value does not match a definition of the bundled schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The definition validated against (e.g. `"Message"`, `"UserTurn"`, `"AllowBody"`).
    pub definition: String,
    /// One entry per failure, `"<instance path>: <reason>"` (the path is omitted at the root).
    pub messages: Vec<String>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "does not match {}: {}",
            self.definition,
            self.messages.join("; ")
        )
    }
}

impl std::error::Error for SchemaError {}

impl SchemaError {
    fn new(definition: &str, message: impl Into<String>) -> Self {
        SchemaError {
            definition: definition.to_owned(),
            messages: vec![message.into()],
        }
    }
}

fn schema_document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        serde_json::from_str(SCHEMA_SOURCE).expect("bundled Claude control-protocol schema is JSON")
    })
}

fn definitions() -> &'static serde_json::Map<String, Value> {
    schema_document()
        .get("definitions")
        .and_then(Value::as_object)
        .expect("bundled Claude control-protocol schema has `definitions`")
}

fn validators() -> &'static BTreeMap<&'static str, Validator> {
    static VALIDATORS: OnceLock<BTreeMap<&'static str, Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let defs = definitions();
        defs.keys()
            .map(|name| {
                let doc = json!({
                    "$schema": "http://json-schema.org/draft-07/schema#",
                    "$ref": format!("#/definitions/{name}"),
                    "definitions": defs,
                });
                let validator = jsonschema::draft7::new(&doc).unwrap_or_else(|e| {
                    panic!("bundled schema definition {name} does not compile: {e}")
                });
                (name.as_str(), validator)
            })
            .collect()
    })
}

/// Every definition name of the bundled schema, sorted.
pub fn claude_definitions() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = definitions().keys().map(String::as_str).collect();
    names.sort_unstable();
    names
}

/// Validate `value` against the named definition of the bundled Claude control-protocol schema.
///
/// An unknown definition name is reported as an error, never as a match.
pub fn validate_claude(definition: &str, value: &Value) -> Result<(), SchemaError> {
    let Some(validator) = validators().get(definition) else {
        return Err(SchemaError::new(definition, "unknown schema definition"));
    };
    if validator.is_valid(value) {
        return Ok(());
    }
    let errors: Vec<ValidationError<'_>> = validator.iter_errors(value).collect();
    let mut messages = Vec::new();
    describe(&errors, &mut messages);
    if messages.is_empty() {
        messages.push("invalid".to_owned());
    }
    Err(SchemaError {
        definition: definition.to_owned(),
        messages,
    })
}

/// Validate one outbound stdin line (a control_request/control_response we write, or a user turn).
///
/// The line must be a single JSON object on one line: at most one trailing `\n`, no other line
/// break and no `\r` (the CLI's stdin contract). `"type":"user"` lines are checked against
/// `UserTurn`, everything else against `Message`.
pub fn validate_claude_outbound_line(line: &str) -> Result<(), SchemaError> {
    let body = line.strip_suffix('\n').unwrap_or(line);
    let value: Option<Value> = serde_json::from_str(body).ok();
    let definition = match value.as_ref().and_then(|v| v.get("type")) {
        Some(Value::String(t)) if t == "user" => "UserTurn",
        _ => "Message",
    };
    if body.contains(['\n', '\r']) {
        return Err(SchemaError::new(
            definition,
            "a stdin line must not contain line breaks or carriage returns",
        ));
    }
    match value {
        Some(value) => validate_claude(definition, &value),
        None => Err(SchemaError::new(definition, "not a single JSON value")),
    }
}

/// Turn validation errors into messages. A failed `oneOf`/`anyOf` is explained by its closest
/// branch instead of the bare "not valid under any of the schemas": a branch whose discriminator
/// (`type`, `subtype`, `behavior`, `action`, `hookEventName`) matched, with the deepest failure and
/// the fewest errors; when every branch rejects a discriminator, the branch that got furthest, or
/// "unexpected value" when several tie (e.g. an unknown `request.subtype`).
fn describe(errors: &[ValidationError<'_>], out: &mut Vec<String>) {
    for error in errors {
        let Some(context) = branches(error) else {
            out.push(message(error));
            continue;
        };
        let matched = context
            .iter()
            .filter(|branch| branch_mismatch(branch).is_none())
            .min_by_key(|branch| {
                let deepest = branch.iter().map(depth).max().unwrap_or(0);
                (std::cmp::Reverse(deepest), branch.len())
            });
        if let Some(branch) = matched {
            describe(branch, out);
            continue;
        }
        let furthest = context.iter().filter_map(|b| branch_mismatch(b)).max();
        let winners: Vec<_> = context
            .iter()
            .filter(|b| branch_mismatch(b) == furthest)
            .collect();
        match (winners.as_slice(), furthest) {
            ([only], _) => describe(only, out),
            ([first, ..], Some(level)) => match first.iter().find_map(|e| mismatch_at(e, level)) {
                Some(e) => out.push(format!(
                    "{}: unexpected value {}",
                    e.instance_path().as_str(),
                    e.instance()
                )),
                None => out.push(message(error)),
            },
            _ => out.push(message(error)),
        }
    }
}

fn branches<'e>(error: &'e ValidationError<'_>) -> Option<&'e [Vec<ValidationError<'static>>]> {
    match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            Some(context)
        }
        _ => None,
    }
}

fn message(error: &ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let text = if path.is_empty() {
        error.to_string()
    } else {
        format!("{path}: {error}")
    };
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    cut.push('…');
    cut
}

/// Depth of the shallowest discriminator rejected by this branch, `None` if it rejects none.
fn branch_mismatch(branch: &[ValidationError<'_>]) -> Option<usize> {
    branch.iter().filter_map(mismatch).min()
}

/// Depth at which `error` rejects a discriminator value. A failed `oneOf`/`anyOf` rejects one
/// only if all its branches do, at the depth of the branch that got furthest.
fn mismatch(error: &ValidationError<'_>) -> Option<usize> {
    const KEYS: [&str; 5] = ["type", "subtype", "behavior", "action", "hookEventName"];
    if let Some(context) = branches(error) {
        let depths: Vec<Option<usize>> = context.iter().map(|b| branch_mismatch(b)).collect();
        return if depths.iter().all(Option::is_some) {
            depths.into_iter().flatten().max()
        } else {
            None
        };
    }
    let path = error.instance_path();
    let at_key = path
        .as_str()
        .rsplit('/')
        .next()
        .is_some_and(|last| KEYS.contains(&last));
    match error.kind() {
        ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. } if at_key => {
            Some(path.segments().count())
        }
        _ => None,
    }
}

/// The leaf discriminator error at `level` inside `error`.
fn mismatch_at<'e>(
    error: &'e ValidationError<'_>,
    level: usize,
) -> Option<&'e ValidationError<'e>> {
    match branches(error) {
        Some(context) => context.iter().flatten().find_map(|e| mismatch_at(e, level)),
        None => (mismatch(error) == Some(level)).then_some(error),
    }
}

fn depth(error: &ValidationError<'_>) -> usize {
    let own = error.instance_path().segments().count();
    match branches(error) {
        Some(context) => context
            .iter()
            .flatten()
            .map(depth)
            .max()
            .unwrap_or(0)
            .max(own),
        None => own,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_compiles_and_lists_definitions() {
        let names = claude_definitions();
        for expected in ["Message", "ControlResponse", "AllowBody", "UserTurn"] {
            assert!(names.contains(&expected), "{expected} missing");
        }
        assert_eq!(validators().len(), names.len());
    }

    #[test]
    fn allow_with_updated_permissions_is_a_control_response() {
        let line = r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"command":"ls"},"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"session"}]}}}"#;
        validate_claude_outbound_line(line).unwrap();
        let value: Value = serde_json::from_str(line).unwrap();
        validate_claude("ControlResponse", &value).unwrap();
    }

    #[test]
    fn error_envelope_is_not_a_control_response() {
        let value = json!({"type":"control_response","response":{"subtype":"error","request_id":"r1","error":"nope"}});
        validate_claude("ControlResponseError", &value).unwrap();
        let err = validate_claude("ControlResponse", &value).unwrap_err();
        assert_eq!(err.definition, "ControlResponse");
        assert!(
            err.to_string()
                .starts_with("does not match ControlResponse: ")
        );
    }

    #[test]
    fn errors_point_at_the_offending_field() {
        let line = r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"no","interrupt":"yes"}}}"#;
        let err = validate_claude_outbound_line(line).unwrap_err();
        assert_eq!(err.definition, "Message");
        assert!(
            err.messages
                .iter()
                .any(|m| m.starts_with("/response/response/interrupt")),
            "{err}"
        );
    }

    #[test]
    fn user_turns_and_line_rules() {
        let turn = r#"{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"default"}"#;
        validate_claude_outbound_line(turn).unwrap();
        validate_claude_outbound_line(&format!("{turn}\n")).unwrap();
        let err = validate_claude_outbound_line(&format!("{turn}\r\n")).unwrap_err();
        assert_eq!(err.definition, "UserTurn");
        assert!(validate_claude_outbound_line("not json").is_err());
        let err = validate_claude("NoSuchDefinition", &json!({})).unwrap_err();
        assert_eq!(err.messages, ["unknown schema definition"]);
    }
}
