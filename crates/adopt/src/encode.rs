//! A decision as the hook prints it: `{"hookSpecificOutput":{"hookEventName":
//! "PermissionRequest","decision":{…}}}` on stdout, exit 0. What the CLI would refuse is
//! never printed: Codex 0.169.0 refuses `updatedInput`, `updatedPermissions` and `interrupt`
//! (and then shows its own prompt), so those decisions are not offered on its cards, and one
//! that still arrives (a raw reply) is handed to its own terminal instead, with the reason.

use serde_json::{Map, Value, json};
use switchboard_backend::hooks::HookAgent;
use switchboard_core::gate::Decision;

/// What a pending request keeps to be answered faithfully.
#[derive(Clone, Debug, PartialEq)]
pub enum Asked {
    Permission {
        tool_name: String,
        input: Value,
        suggestions: Vec<Value>,
    },
    /// AskUserQuestion: answered by allowing with the answers in `updatedInput`.
    Question { input: Value },
}

/// The message a deny sends when the person typed none: the model reads it.
pub const DENY_DEFAULT: &str = "The user denied this in switchboard.";

/// Fields of a permission decision the CLI takes.
fn allowed_fields(agent: HookAgent) -> &'static [&'static str] {
    match agent {
        HookAgent::Claude => &[
            "behavior",
            "updatedInput",
            "updatedPermissions",
            "message",
            "interrupt",
        ],
        HookAgent::Codex => &["behavior", "message"],
    }
}

/// The hook's stdout for `decision`, or why it cannot be printed (then the request goes to
/// the agent's own terminal, and the reason is shown).
pub fn stdout(agent: HookAgent, asked: &Asked, decision: &Decision) -> Result<String, String> {
    let body = decision_body(asked, decision)?;
    check(agent, &body)?;
    Ok(wrap(body))
}

/// `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":body}}`.
pub fn wrap(body: Value) -> String {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": body}})
        .to_string()
}

/// Why `agent` would refuse the decision object `body`, if it would.
pub fn check(agent: HookAgent, body: &Value) -> Result<(), String> {
    let Some(o) = body.as_object() else {
        return Err("a decision must be a JSON object".into());
    };
    match o.get("behavior").and_then(Value::as_str) {
        Some("allow" | "deny") => {}
        _ => return Err("a decision's behavior must be \"allow\" or \"deny\"".into()),
    }
    let fields = allowed_fields(agent);
    if let Some(k) = o.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(format!(
            "{} refuses a decision with {k:?} (it takes only {})",
            agent.title(),
            fields.join(", ")
        ));
    }
    if o.get("interrupt") == Some(&Value::Bool(true)) && o.get("behavior") != Some(&json!("deny")) {
        return Err("interrupt goes with a deny only".into());
    }
    Ok(())
}

/// Whether any string in `v` (keys too) holds a control, bidi or invisible character.
fn hostile(v: &Value) -> bool {
    let bad = |s: &str| s.chars().any(switchboard_core::text::is_hostile);
    match v {
        Value::String(s) => bad(s),
        Value::Array(a) => a.iter().any(hostile),
        Value::Object(o) => o.iter().any(|(k, v)| bad(k) || hostile(v)),
        _ => false,
    }
}

/// Permission modes `a` may switch a session to: never past asking (no bypass, no auto).
const SAFE_MODES: &[&str] = &["default", "acceptEdits", "plan"];

/// The CLI's `permission_suggestions` that `a` may send back as `updatedPermissions`: each a
/// well-formed update the CLI takes (a decision it refuses would fall through, and the person
/// who chose "always" would be asked again in its terminal), and none that switches the
/// session to a mode that stops asking. The rest are left out, each with why.
pub fn checked_suggestions(raw: &[Value]) -> (Vec<Value>, Vec<String>) {
    let strings = |v: Option<&Value>| {
        v.and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
    };
    let mut kept = Vec::new();
    let mut left = Vec::new();
    for s in raw.iter().take(16) {
        let kind = s.get("type").and_then(Value::as_str).unwrap_or("");
        let ok = match kind {
            "addRules" | "replaceRules" | "removeRules" => {
                s.get("rules").and_then(Value::as_array).is_some_and(|r| {
                    !r.is_empty()
                        && r.iter().all(|r| {
                            r.get("toolName").is_some_and(Value::is_string)
                                && r.get("ruleContent").is_none_or(Value::is_string)
                        })
                }) && matches!(
                    s.get("behavior").and_then(Value::as_str),
                    Some("allow" | "deny" | "ask")
                )
            }
            "setMode" => s
                .get("mode")
                .and_then(Value::as_str)
                .is_some_and(|m| SAFE_MODES.contains(&m)),
            "addDirectories" | "removeDirectories" => strings(s.get("directories")),
            _ => false,
        };
        // What the card names stays readable: no control character in any of it.
        let printable = !hostile(s);
        if ok && printable {
            kept.push(s.clone());
        } else {
            left.push(format!(
                "{} ({})",
                switchboard_core::text::visible_line(&switchboard_core::text::one_line(
                    &s.to_string(),
                    80
                )),
                if !printable {
                    "it holds control characters"
                } else if kind == "setMode"
                    && s.get("mode")
                        .is_some_and(|m| m == "bypassPermissions" || m == "auto" || m == "dontAsk")
                {
                    "a mode that stops asking"
                } else {
                    "not a shape the CLI takes"
                }
            ));
        }
    }
    if raw.len() > 16 {
        left.push(format!(
            "{} more (more than 16 suggestions)",
            raw.len() - 16
        ));
    }
    (kept, left)
}

fn decision_body(asked: &Asked, decision: &Decision) -> Result<Value, String> {
    let mut b = Map::new();
    match (asked, decision) {
        (_, Decision::Raw { body }) => return Ok(body.clone()),
        (
            Asked::Permission {
                tool_name,
                input,
                suggestions,
            },
            Decision::Allow {
                updated_input,
                always,
            },
        ) => {
            b.insert("behavior".into(), json!("allow"));
            if let Some(edit) = updated_input {
                b.insert("updatedInput".into(), edit.clone());
            }
            if *always {
                // The CLI's own suggestions, scoped to this session; without any, a rule for
                // exactly this command or file, never wider (the stream-json backend's rule),
                // or none: then switchboard's own session rule answers the same request again.
                let updates =
                    switchboard_claude::encode::session_permissions(suggestions, tool_name, input);
                if !updates.is_empty() {
                    b.insert("updatedPermissions".into(), Value::Array(updates));
                }
            }
        }
        (_, Decision::Deny { message, interrupt }) => {
            b.insert("behavior".into(), json!("deny"));
            let m = if message.trim().is_empty() {
                DENY_DEFAULT
            } else {
                message.as_str()
            };
            b.insert("message".into(), json!(m));
            if *interrupt {
                b.insert("interrupt".into(), json!(true));
            }
        }
        (Asked::Question { input }, Decision::Answer { answers }) => {
            // The questions as asked, plus `answers`: question text → chosen labels (a
            // multiSelect's joined with ", ", as the CLI's own question UI answers).
            let mut edited = input.as_object().cloned().unwrap_or_default();
            let answers: Map<String, Value> = answers
                .iter()
                .map(|(q, a)| (q.clone(), Value::String(a.clone())))
                .collect();
            edited.insert("answers".into(), Value::Object(answers));
            b.insert("behavior".into(), json!("allow"));
            b.insert("updatedInput".into(), Value::Object(edited));
        }
        (_, d) => {
            return Err(format!(
                "a {} answer does not fit this request",
                switchboard_record::mapper::decision_label(d)
            ));
        }
    }
    Ok(Value::Object(b))
}

/// The decision a recorded stdout expresses (replay), or `None` for one the UI could not
/// have made.
pub fn decode(asked: &Asked, stdout: &str) -> Option<Decision> {
    let v: Value = serde_json::from_str(stdout).ok()?;
    let d = v.get("hookSpecificOutput")?.get("decision")?;
    match d.get("behavior")?.as_str()? {
        "allow" => match (asked, d.get("updatedInput")) {
            (Asked::Question { .. }, Some(u)) => {
                let answers = u
                    .get("answers")?
                    .as_object()?
                    .iter()
                    .map(|(q, a)| Some((q.clone(), a.as_str()?.to_string())))
                    .collect::<Option<Vec<_>>>()?;
                Some(Decision::Answer { answers })
            }
            (_, updated) => Some(Decision::Allow {
                updated_input: updated.cloned(),
                always: d.get("updatedPermissions").is_some(),
            }),
        },
        "deny" => Some(Decision::Deny {
            message: d
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            interrupt: d.get("interrupt") == Some(&json!(true)),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> Asked {
        Asked::Permission {
            tool_name: "Bash".into(),
            input: json!({"command":"touch a","description":"d"}),
            suggestions: vec![
                json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch a"}],"behavior":"allow","destination":"localSettings"}),
            ],
        }
    }

    fn decision(out: &str) -> Value {
        serde_json::from_str::<Value>(out).unwrap()["hookSpecificOutput"]["decision"].clone()
    }

    #[test]
    fn claude_takes_every_answer_a_card_offers() {
        let allow = Decision::Allow {
            updated_input: None,
            always: false,
        };
        let out = stdout(HookAgent::Claude, &bash(), &allow).unwrap();
        assert_eq!(
            out,
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#
        );
        let edit = Decision::Allow {
            updated_input: Some(json!({"command":"touch b"})),
            always: false,
        };
        let d = decision(&stdout(HookAgent::Claude, &bash(), &edit).unwrap());
        assert_eq!(d["updatedInput"]["command"], "touch b");
        let always = Decision::Allow {
            updated_input: None,
            always: true,
        };
        let d = decision(&stdout(HookAgent::Claude, &bash(), &always).unwrap());
        assert_eq!(d["updatedPermissions"][0]["destination"], "session");
        let stop = Decision::Deny {
            message: String::new(),
            interrupt: true,
        };
        let d = decision(&stdout(HookAgent::Claude, &bash(), &stop).unwrap());
        assert_eq!(d["message"], DENY_DEFAULT);
        assert_eq!(d["interrupt"], true);
        for (d, out) in [allow, edit, always, stop].iter().map(|d| {
            (
                d.clone(),
                stdout(HookAgent::Claude, &bash(), d).map(|o| decode(&bash(), &o)),
            )
        }) {
            let back = out.unwrap().unwrap();
            if let Decision::Deny { interrupt, .. } = d {
                assert!(matches!(back, Decision::Deny { interrupt: i, .. } if i == interrupt));
            } else {
                assert_eq!(back, d);
            }
        }
    }

    #[test]
    fn a_multiselect_answer_is_one_joined_string_beside_the_questions() {
        let input = json!({"questions":[{"question":"Which regions?","multiSelect":true,"options":[{"label":"us-east"},{"label":"eu"}]}]});
        let asked = Asked::Question {
            input: input.clone(),
        };
        let ans = Decision::Answer {
            answers: vec![("Which regions?".into(), "us-east, eu".into())],
        };
        let out = stdout(HookAgent::Claude, &asked, &ans).unwrap();
        let d = decision(&out);
        assert_eq!(d["behavior"], "allow");
        assert_eq!(d["updatedInput"]["questions"], input["questions"]);
        assert_eq!(
            d["updatedInput"]["answers"]["Which regions?"],
            "us-east, eu"
        );
        assert_eq!(decode(&asked, &out), Some(ans));
    }

    #[test]
    fn codex_is_never_sent_what_it_refuses() {
        let ok = stdout(
            HookAgent::Codex,
            &bash(),
            &Decision::Deny {
                message: "not now".into(),
                interrupt: false,
            },
        )
        .unwrap();
        assert_eq!(
            decision(&ok),
            json!({"behavior":"deny","message":"not now"})
        );
        for refused in [
            Decision::Allow {
                updated_input: Some(json!({"command":"x"})),
                always: false,
            },
            Decision::Allow {
                updated_input: None,
                always: true,
            },
            Decision::Deny {
                message: "m".into(),
                interrupt: true,
            },
            Decision::Raw {
                body: json!({"behavior":"allow","updatedInput":{}}),
            },
        ] {
            let e = stdout(HookAgent::Codex, &bash(), &refused).unwrap_err();
            assert!(e.contains("Codex refuses"), "{e}");
        }
        assert!(
            stdout(
                HookAgent::Claude,
                &bash(),
                &Decision::Raw { body: json!("x") }
            )
            .unwrap_err()
            .contains("object")
        );
        assert!(
            stdout(HookAgent::Claude, &bash(), &Decision::Continue)
                .unwrap_err()
                .contains("does not fit")
        );
    }
}
