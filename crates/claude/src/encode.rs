//! Encoding decisions and host requests as stdin lines for the Claude CLI.

use serde_json::{Map, Value, json};

use switchboard_core::gate::Decision;

/// What we keep of a pending request to answer it faithfully (inputs echoed verbatim).
#[derive(Clone, Debug)]
pub enum Pending {
    Permission {
        input: Value,
        suggestions: Vec<Value>,
        tool_name: String,
    },
    Question {
        input: Value,
    },
    Breakpoint,
    Dialog,
    Elicitation,
}

/// `{"type":"control_response","response":{"subtype":"success",...}}`
pub fn success(request_id: &str, body: Value) -> String {
    json!({"type":"control_response","response":{"subtype":"success","request_id":request_id,"response":body}})
        .to_string()
}

/// The fail-closed error envelope: the error is a string, there is no inner response.
pub fn error(request_id: &str, message: &str) -> String {
    json!({"type":"control_response","response":{"subtype":"error","request_id":request_id,"error":message}})
        .to_string()
}

pub fn request(request_id: &str, body: Value) -> String {
    json!({"type":"control_request","request_id":request_id,"request":body}).to_string()
}

/// The SDK user-turn form.
pub fn user_turn(text: &str) -> String {
    json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":text}]},"parent_tool_use_id":null,"session_id":"default"})
        .to_string()
}

/// The reply body for `decision`, or an error when the decision does not fit the request.
pub fn body(pending: &Pending, decision: &Decision) -> Result<Value, String> {
    Ok(match (pending, decision) {
        (_, Decision::Raw { body }) => body.clone(),
        (
            Pending::Permission {
                input,
                suggestions,
                tool_name,
            },
            Decision::Allow {
                updated_input,
                always,
            },
        ) => {
            let mut b = Map::new();
            b.insert("behavior".into(), json!("allow"));
            b.insert(
                "updatedInput".into(),
                updated_input.clone().unwrap_or_else(|| input.clone()),
            );
            let updates = session_permissions(suggestions, tool_name, input);
            if *always && !updates.is_empty() {
                b.insert("updatedPermissions".into(), Value::Array(updates));
            }
            Value::Object(b)
        }
        (
            Pending::Permission { .. } | Pending::Question { .. },
            Decision::Deny { message, interrupt },
        ) => {
            let mut b = json!({"behavior":"deny","message":message});
            if *interrupt {
                b["interrupt"] = json!(true);
            }
            b
        }
        (Pending::Question { input }, Decision::Answer { answers }) => {
            let answers: Map<String, Value> = answers
                .iter()
                .map(|(q, a)| (q.clone(), Value::String(a.clone())))
                .collect();
            json!({"behavior":"allow","updatedInput":{
                "questions": input.get("questions").cloned().unwrap_or(Value::Array(vec![])),
                "answers": answers}})
        }
        (Pending::Breakpoint, Decision::Continue) => json!({}),
        (Pending::Breakpoint, Decision::Block { reason }) => {
            json!({"decision":"block","reason":reason})
        }
        (Pending::Dialog, Decision::DialogComplete { result }) => {
            json!({"behavior":"completed","result":result})
        }
        (Pending::Dialog, Decision::DialogCancel) => json!({"behavior":"cancelled"}),
        (Pending::Elicitation, Decision::ElicitAccept { content }) => {
            json!({"action":"accept","content":content})
        }
        (Pending::Elicitation, Decision::ElicitDecline) => json!({"action":"decline"}),
        (Pending::Elicitation, Decision::ElicitCancel) => json!({"action":"cancel"}),
        (p, d) => {
            return Err(format!(
                "a {d:?} answer does not fit a {} request",
                p.label()
            ));
        }
    })
}

/// The safe answer when a decision cannot be encoded: deny, block, cancel, decline.
pub fn fail_closed(pending: &Pending, why: &str) -> Value {
    match pending {
        Pending::Permission { .. } | Pending::Question { .. } => {
            json!({"behavior":"deny","message":format!("switchboard could not encode the answer: {why}")})
        }
        Pending::Breakpoint => json!({"decision":"block","reason":format!("switchboard: {why}")}),
        Pending::Dialog => json!({"behavior":"cancelled"}),
        Pending::Elicitation => json!({"action":"decline"}),
    }
}

/// The body a plain "yes" sends; the raw-reply editor starts from it.
pub fn default_body(pending: &Pending) -> Value {
    match pending {
        Pending::Permission { input, .. } => json!({"behavior":"allow","updatedInput":input}),
        Pending::Question { input } => json!({"behavior":"allow","updatedInput":{
            "questions": input.get("questions").cloned().unwrap_or(Value::Array(vec![])),
            "answers": {}}}),
        Pending::Breakpoint => json!({}),
        Pending::Dialog => json!({"behavior":"completed","result":true}),
        Pending::Elicitation => json!({"action":"accept","content":{}}),
    }
}

/// Schema definitions a raw reply to this request must match (any of them).
pub fn reply_definition(pending: &Pending) -> &'static str {
    match pending {
        Pending::Permission { .. } | Pending::Question { .. } => "AllowBody|DenyBody",
        Pending::Breakpoint => "HookOutputBody",
        Pending::Dialog => "DialogResponseBody",
        Pending::Elicitation => "ElicitResponseBody",
    }
}

impl Pending {
    pub fn label(&self) -> &'static str {
        match self {
            Pending::Permission { .. } => "permission",
            Pending::Question { .. } => "question",
            Pending::Breakpoint => "hook_callback",
            Pending::Dialog => "dialog",
            Pending::Elicitation => "elicitation",
        }
    }
}

/// "Allow always" echoes the agent's suggestions scoped to this session. Without suggestions
/// it synthesizes a session rule for exactly this command or file, and none when it cannot
/// be that narrow (other tools have no argument syntax; a `*`, `?` or `[` would be a pattern
/// to the CLI): never a rule wider than the request shown. Our own exact session rule
/// answers the same request again.
pub fn session_permissions(suggestions: &[Value], tool_name: &str, input: &Value) -> Vec<Value> {
    if suggestions.is_empty() {
        let field = |k: &str| input.get(k).and_then(Value::as_str);
        let content = match tool_name {
            "Bash" => field("command"),
            "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
                field("file_path").or_else(|| field("notebook_path"))
            }
            _ => None,
        };
        return match content {
            Some(c) if !c.is_empty() && !c.contains(['*', '?', '[']) => {
                vec![json!({"type":"addRules",
                    "rules":[{"toolName": tool_name, "ruleContent": c}],
                    "behavior":"allow","destination":"session"})]
            }
            _ => Vec::new(),
        };
    }
    suggestions
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Some(o) = s.as_object_mut() {
                o.insert("destination".into(), json!("session"));
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_always_scopes_suggestions_to_session() {
        let p = Pending::Permission {
            input: json!({"command":"touch x"}),
            suggestions: vec![
                json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch x"}],"behavior":"allow","destination":"localSettings"}),
            ],
            tool_name: "Bash".into(),
        };
        let b = body(
            &p,
            &Decision::Allow {
                updated_input: None,
                always: true,
            },
        )
        .unwrap();
        assert_eq!(b["updatedPermissions"][0]["destination"], "session");
        assert_eq!(b["updatedInput"]["command"], "touch x");
    }

    #[test]
    fn allow_always_without_suggestions_is_narrow() {
        let always = Decision::Allow {
            updated_input: None,
            always: true,
        };
        let bash = Pending::Permission {
            input: json!({"command":"touch x"}),
            suggestions: vec![],
            tool_name: "Bash".into(),
        };
        let b = body(&bash, &always).unwrap();
        assert_eq!(
            b["updatedPermissions"][0]["rules"][0],
            json!({"toolName":"Bash","ruleContent":"touch x"}),
            "exactly this command, never the whole tool"
        );
        let mcp = Pending::Permission {
            input: json!({"q":1}),
            suggestions: vec![],
            tool_name: "mcp__s__t".into(),
        };
        let b = body(&mcp, &always).unwrap();
        assert_eq!(
            b.get("updatedPermissions"),
            None,
            "a whole-tool rule would be wider than this request"
        );
        let glob = Pending::Permission {
            input: json!({"command":"rm -rf *"}),
            suggestions: vec![],
            tool_name: "Bash".into(),
        };
        let b = body(&glob, &always).unwrap();
        assert_eq!(
            b.get("updatedPermissions"),
            None,
            "a `*` would be a pattern"
        );
        let no_command = Pending::Permission {
            input: json!({}),
            suggestions: vec![],
            tool_name: "Bash".into(),
        };
        let b = body(&no_command, &always).unwrap();
        assert_eq!(
            b.get("updatedPermissions"),
            None,
            "never the whole Bash tool"
        );
    }

    #[test]
    fn question_answers_echo_questions() {
        let input = json!({"questions":[{"question":"Q?","options":[{"label":"A"}],"preview":1}]});
        let p = Pending::Question {
            input: input.clone(),
        };
        let b = body(
            &p,
            &Decision::Answer {
                answers: vec![("Q?".into(), "A".into())],
            },
        )
        .unwrap();
        assert_eq!(b["updatedInput"]["questions"], input["questions"]);
        assert_eq!(b["updatedInput"]["answers"]["Q?"], "A");
    }

    #[test]
    fn mismatch_is_an_error() {
        assert!(body(&Pending::Breakpoint, &Decision::DialogCancel).is_err());
    }
}
