//! Building domain gates from `control_request` bodies.

use serde_json::Value;

use switchboard_core::diff::Diff;
use switchboard_core::gate::{
    Breakpoint, Dialog, Elicitation, Field, FieldKind, GateKind, Permission, QOption, QSpec,
    Question,
};
use switchboard_core::text::{pretty_json, tool_input_summary};

/// A string field exactly as sent: whatever draws it shows hostile characters visibly
/// (`^[]0;…^G`); stripping here would hide part of what a person approves.
fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn b(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// A unified diff for file-editing tools, from their input alone.
pub fn edit_diff(tool: &str, input: &Value) -> Option<Diff> {
    let path = input
        .get("file_path")
        .or_else(|| input.get("notebook_path"))
        .and_then(Value::as_str)
        .unwrap_or("file");
    match tool {
        "Edit" => Some(Diff::from_edits(
            path,
            &[(
                input.get("old_string")?.as_str()?.to_string(),
                input.get("new_string")?.as_str()?.to_string(),
            )],
        )),
        "Write" => Some(Diff::unified(path, "", input.get("content")?.as_str()?, 3)),
        "MultiEdit" => {
            let edits: Vec<(String, String)> = input
                .get("edits")?
                .as_array()?
                .iter()
                .filter_map(|e| {
                    Some((
                        e.get("old_string")?.as_str()?.to_string(),
                        e.get("new_string")?.as_str()?.to_string(),
                    ))
                })
                .collect();
            Some(Diff::from_edits(path, &edits))
        }
        _ => None,
    }
}

/// Label a `PermissionUpdate` suggestion for the card: "addRules allow Bash(touch x) → localSettings".
pub fn suggestion_label(v: &Value) -> String {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("update");
    let dest = v.get("destination").and_then(Value::as_str).unwrap_or("");
    let what = match kind {
        "addRules" | "replaceRules" | "removeRules" => {
            let rules: Vec<String> = v
                .get("rules")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .map(|r| {
                            let tool = r.get("toolName").and_then(Value::as_str).unwrap_or("?");
                            match r.get("ruleContent").and_then(Value::as_str) {
                                Some(c) => format!("{tool}({c})"),
                                None => tool.to_string(),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let behavior = v.get("behavior").and_then(Value::as_str).unwrap_or("");
            format!("{behavior} {}", rules.join(", "))
        }
        "setMode" => format!(
            "mode {}",
            v.get("mode").and_then(Value::as_str).unwrap_or("?")
        ),
        "addDirectories" | "removeDirectories" => v
            .get("directories")
            .and_then(Value::as_array)
            .map(|d| {
                d.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    if dest.is_empty() || dest == "session" {
        format!("{kind} {what}")
    } else {
        format!("{kind} {what} (was {dest})")
    }
}

/// The full argument approval rules are matched against (see `Permission::rule_arg`).
pub fn rule_argument(tool: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    match tool {
        "Bash" => field("command").unwrap_or("").to_string(),
        _ => match field("file_path")
            .or_else(|| field("notebook_path"))
            .or_else(|| field("path"))
        {
            Some(p) => switchboard_core::rules::normalise_path(p),
            None => input.to_string(),
        },
    }
}

/// Why a `can_use_tool` request is not what it claims (`None`: it is well-formed). Such a
/// request gets a fail-closed error reply, never a gate: a card could not show what would
/// run, and an "always allow" built from it could cover every use of the tool.
pub fn invalid_can_use_tool(req: &Value) -> Option<String> {
    let tool = match req.get("tool_name") {
        Some(Value::String(t)) if !t.is_empty() => t.as_str(),
        Some(Value::String(_)) => return Some("tool_name is empty".into()),
        Some(_) => return Some("tool_name is not a string".into()),
        None => return Some("tool_name is missing".into()),
    };
    let Some(input) = req.get("input") else {
        return Some("input is missing".into());
    };
    if !input.is_object() {
        return Some(format!("input is not an object but {}", json_kind(input)));
    }
    if tool == "Bash" && !input.get("command").is_some_and(Value::is_string) {
        return Some("a Bash input without a string command".into());
    }
    if req
        .get("permission_suggestions")
        .is_some_and(|v| !v.is_array() && !v.is_null())
    {
        return Some("permission_suggestions is not an array".into());
    }
    None
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn permission(req: &Value) -> GateKind {
    let tool = s(req, "tool_name").unwrap_or_else(|| "?".into());
    let input = req
        .get("input")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    // The card shows what `a` will send: the CLI's suggestions (labelled as the CLI's), or
    // the rule we synthesize, which is never wider than this very command or file.
    let raw: Vec<Value> = req
        .get("permission_suggestions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let suggestions = if raw.is_empty() {
        let ours = super::encode::session_permissions(&[], &tool, &input);
        if ours.is_empty() {
            vec!["exactly this input, by a switchboard session rule".to_string()]
        } else if tool == "Bash" {
            // Not the command again: a long one would fill the card twice.
            vec![format!("{tool} exactly as shown (switchboard's rule)")]
        } else {
            ours.iter()
                .map(|v| format!("{} (exactly this file)", suggestion_label(v)))
                .collect()
        }
    } else {
        raw.iter()
            .map(|v| format!("{} (the CLI's suggestion)", suggestion_label(v)))
            .collect()
    };
    // Bash, and any tool whose input carries a command line (an MCP exec tool): allow rules
    // must not cover a chained line whatever the tool is called. The card shows Bash's
    // command whole; other tools show their whole input.
    let shell = tool == "Bash" || input.get("command").is_some_and(Value::is_string);
    let command = (tool == "Bash")
        .then(|| {
            input
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .flatten();
    GateKind::Permission(Permission {
        summary: match &command {
            Some(c) => switchboard_core::gate::command_summary(c),
            None => tool_input_summary(&tool, &input),
        },
        rule_arg: rule_argument(&tool, &input),
        diff: edit_diff(&tool, &input),
        input: input.to_string(),
        title: s(req, "title"),
        description: s(req, "description"),
        decision_reason: s(req, "decision_reason"),
        blocked_path: s(req, "blocked_path"),
        suggestions,
        always_allowed: !b(req, "suppress_always_allow_rule"),
        default_to_no: b(req, "default_to_no"),
        options: Vec::new(),
        shell,
        command,
        env: Vec::new(),
        covered_by: None,
        deny_reason: None,
        editable: true,
        environment: Vec::new(),
        own_terminal: None,
        tool,
    })
}

pub fn question(req: &Value) -> GateKind {
    let list = req
        .get("input")
        .and_then(|i| i.get("questions"))
        .and_then(Value::as_array);
    let mut malformed = None;
    let questions: Vec<QSpec> = list
        .map(|qs| {
            qs.iter()
                .map(|q| QSpec {
                    question: q
                        .get("question")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    header: s(q, "header").unwrap_or_default(),
                    multi: b(q, "multiSelect"),
                    options: q
                        .get("options")
                        .and_then(Value::as_array)
                        .map(|o| {
                            o.iter()
                                .map(|o| QOption {
                                    label: o
                                        .get("label")
                                        .and_then(Value::as_str)
                                        .unwrap_or("")
                                        .to_string(),
                                    description: s(o, "description").unwrap_or_default(),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    if questions.is_empty() {
        malformed = Some("the request holds no questions".to_string());
    } else if questions.iter().any(|q| q.question.is_empty()) {
        malformed = Some("a question has no text, so its answer cannot be keyed".to_string());
    }
    GateKind::Question(Question {
        questions,
        malformed,
        own_terminal: None,
    })
}

pub fn breakpoint(req: &Value) -> GateKind {
    let input = req.get("input").cloned().unwrap_or(Value::Null);
    let tool = s(&input, "tool_name").unwrap_or_else(|| "?".into());
    let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
    GateKind::Breakpoint(Breakpoint {
        summary: tool_input_summary(&tool, &tool_input),
        input: pretty_json(&tool_input),
        hook_event: s(&input, "hook_event_name").unwrap_or_else(|| "PreToolUse".into()),
        tool,
    })
}

pub fn dialog(req: &Value, kind: &str) -> GateKind {
    let payload = req.get("payload").cloned().unwrap_or(Value::Null);
    let options = payload
        .get("options")
        .and_then(Value::as_array)
        .map(|o| {
            o.iter()
                .filter_map(|o| {
                    o.as_str()
                        .map(str::to_string)
                        .or_else(|| o.get("label").and_then(Value::as_str).map(str::to_string))
                        .or_else(|| o.get("value").and_then(Value::as_str).map(str::to_string))
                })
                .collect()
        })
        .unwrap_or_default();
    GateKind::Dialog(Dialog {
        dialog_kind: kind.to_string(),
        title: s(&payload, "title"),
        message: s(&payload, "message").or_else(|| s(&payload, "body")),
        options,
        payload: pretty_json(&payload),
    })
}

pub fn elicitation(req: &Value) -> GateKind {
    let schema = req
        .get("requested_schema")
        .or_else(|| req.get("requestedSchema"))
        .cloned()
        .unwrap_or(Value::Null);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        // `property_order` gives the intended order when present.
        let order: Vec<String> = schema
            .get("property_order")
            .and_then(Value::as_array)
            .map(|o| {
                o.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_else(|| props.keys().cloned().collect());
        for name in order {
            let Some(p) = props.get(&name) else { continue };
            let kind = match (
                p.get("enum").and_then(Value::as_array),
                p.get("type").and_then(Value::as_str),
            ) {
                (Some(e), _) => FieldKind::Enum(
                    e.iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect(),
                ),
                (None, Some("number")) => FieldKind::Number,
                (None, Some("integer")) => FieldKind::Integer,
                (None, Some("boolean")) => FieldKind::Boolean,
                _ => FieldKind::String,
            };
            let default = p.get("default").map(|d| match d {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            let default = default.or_else(|| (kind == FieldKind::Boolean).then(|| "false".into()));
            fields.push(Field {
                title: s(p, "title").unwrap_or_else(|| name.clone()),
                description: s(p, "description"),
                required: required.contains(&name.as_str()),
                kind,
                default,
                name,
            });
        }
    }
    GateKind::Elicitation(Elicitation {
        server: s(req, "mcp_server_name")
            .or_else(|| s(req, "server"))
            .unwrap_or_else(|| "?".into()),
        message: s(req, "message")
            .or_else(|| s(req, "prompt"))
            .or_else(|| s(req, "question"))
            .unwrap_or_default(),
        url: s(req, "url"),
        fields,
    })
}
