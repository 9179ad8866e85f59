//! The card of a PermissionRequest: Claude's tools on the cards the stream-json backend draws
//! (the same permission and question cards, diffs, "allow always" and rule argument), Codex's
//! commands and patches on a card that offers only what Codex takes.

use serde_json::{Value, json};
use switchboard_backend::hooks::HookAgent;
use switchboard_core::gate::{Gate, GateKind, OwnTerminal, Permission};
use switchboard_core::text::{pretty_json, tool_input_summary};

use super::encode::Asked;
use super::event::Event;

/// What Claude's terminal does while its card waits here.
pub const CLAUDE_SHOWS: &str =
    "Claude shows its own dialog there too: whichever answer comes first is the one";
/// What a background sub-agent's terminal does (the hook runs before any dialog).
pub const CLAUDE_SUBAGENT_SHOWS: &str =
    "a background sub-agent: Claude shows its dialog only once this card is handed back";
/// What Codex's terminal does while its card waits here.
pub const CODEX_SHOWS: &str = "Codex shows only \"Running hook\" there, no prompt of its own, until this is answered here or handed back (Esc there stops the turn)";

/// The gate for a PermissionRequest of `agent`, and what answering it needs.
pub fn gate(agent: HookAgent, id: &str, node_key: &str, ev: &Event) -> (Gate, Asked) {
    let tool = ev.tool_name.clone().unwrap_or_else(|| "?".into());
    let input = ev
        .tool_input
        .clone()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let own = |interrupt: bool| {
        let shows = match agent {
            HookAgent::Codex => CODEX_SHOWS,
            HookAgent::Claude if ev.agent_id.is_some() => CLAUDE_SUBAGENT_SHOWS,
            HookAgent::Claude => CLAUDE_SHOWS,
        };
        Some(OwnTerminal {
            shows: shows.into(),
            interrupt,
        })
    };
    let (kind, asked, default) = match agent {
        HookAgent::Claude if tool == "AskUserQuestion" => {
            let req = json!({"tool_name": tool, "input": input});
            let mut kind = switchboard_claude::gates::question(&req);
            if let GateKind::Question(q) = &mut kind {
                q.own_terminal = own(true);
            }
            let default = json!({"behavior": "allow", "updatedInput": input});
            (kind, Asked::Question { input }, default)
        }
        HookAgent::Claude => {
            // Only suggestions of a shape the CLI takes, never wider than its own settings:
            // the card shows exactly what `a` sends.
            let (suggestions, left_out) =
                super::encode::checked_suggestions(&ev.permission_suggestions);
            let req = json!({
                "tool_name": tool,
                "input": input,
                "permission_suggestions": suggestions,
            });
            let mut kind = switchboard_claude::gates::permission(&req);
            if let GateKind::Permission(p) = &mut kind {
                p.own_terminal = own(true);
                if !left_out.is_empty() {
                    p.decision_reason = Some(format!(
                        "\"always\" leaves out {} suggestion(s) of the CLI: {}",
                        left_out.len(),
                        left_out.join("; ")
                    ));
                }
                // What the model says the call is for (Bash's `description`).
                p.description = input
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or(p.description.take());
            }
            let asked = Asked::Permission {
                tool_name: tool,
                input,
                suggestions,
            };
            (kind, asked, json!({"behavior": "allow"}))
        }
        HookAgent::Codex => {
            let kind = GateKind::Permission(codex_permission(&tool, &input, ev, own(false)));
            let asked = Asked::Permission {
                tool_name: tool,
                input,
                suggestions: Vec::new(),
            };
            (kind, asked, json!({"behavior": "allow"}))
        }
    };
    let gate = Gate {
        id: id.to_string(),
        node_key: node_key.to_string(),
        asked_by: ev.agent_type.clone().or_else(|| ev.agent_id.clone()),
        kind,
        opened_ms: 0,
        default_reply: pretty_json(&default),
        reply_definition: "AllowBody|DenyBody",
    };
    (gate, asked)
}

/// A Codex request: a command (`Bash`, its whole `command` exactly as it runs) or a patch
/// (`apply_patch`, its whole text). Codex takes allow and deny with a message, nothing else:
/// no edit, no "always", no interrupt.
fn codex_permission(
    tool: &str,
    input: &Value,
    ev: &Event,
    own_terminal: Option<OwnTerminal>,
) -> Permission {
    let command = input.get("command").and_then(|c| match c {
        Value::String(s) => Some(s.clone()),
        // An argv: shell-quoted, so the card shows exactly what runs.
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(quote))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(" ")),
        _ => None,
    });
    let summary = match &command {
        Some(c) => switchboard_core::gate::command_summary(c),
        None => tool_input_summary(tool, input),
    };
    Permission {
        tool: tool.to_string(),
        summary,
        rule_arg: command.clone().unwrap_or_else(|| input.to_string()),
        input: input.to_string(),
        title: None,
        // The model's justification for asking (inside the input, as 0.169.0 sends it).
        description: input
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| ev.str("description"))
            .map(str::to_string),
        decision_reason: None,
        blocked_path: None,
        suggestions: Vec::new(),
        always_allowed: false,
        default_to_no: false,
        diff: None,
        options: Vec::new(),
        shell: command.is_some(),
        command,
        env: Vec::new(),
        covered_by: None,
        deny_reason: None,
        editable: false,
        environment: Vec::new(),
        own_terminal,
    }
}

/// One argv word as a POSIX shell reads it back.
fn quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_core::gate::PermChoice;

    fn ev(s: &str) -> Event {
        super::super::event::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn a_claude_card_offers_every_answer_and_the_hand_back() {
        let e = ev(
            r#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"touch a.txt","description":"make a"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch a.txt"}],"behavior":"allow","destination":"localSettings"}]}"#,
        );
        let (g, _) = gate(HookAgent::Claude, "h-1", "root", &e);
        let GateKind::Permission(p) = &g.kind else {
            panic!()
        };
        assert_eq!(p.command.as_deref(), Some("touch a.txt"));
        assert_eq!(
            p.choices(),
            vec![
                PermChoice::AllowOnce,
                PermChoice::AllowAlways,
                PermChoice::Deny,
                PermChoice::DenyInterrupt,
                PermChoice::EditInput,
                PermChoice::HandBack
            ]
        );
        assert!(p.suggestions[0].contains("the CLI's suggestion"));
    }

    #[test]
    fn a_codex_card_offers_only_what_codex_takes() {
        let e = ev(
            r#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","turn_id":"t","tool_name":"Bash","tool_input":{"command":["bash","-lc","rm -rf 'x y'"],"description":"clean up"}}"#,
        );
        let (g, asked) = gate(HookAgent::Codex, "h-1", "root", &e);
        let GateKind::Permission(p) = &g.kind else {
            panic!()
        };
        assert_eq!(
            p.choices(),
            vec![
                PermChoice::AllowOnce,
                PermChoice::Deny,
                PermChoice::HandBack
            ]
        );
        assert_eq!(p.command.as_deref(), Some(r"bash -lc 'rm -rf '\''x y'\'''"));
        assert_eq!(p.description.as_deref(), Some("clean up"));
        assert!(
            p.own_terminal
                .as_ref()
                .unwrap()
                .shows
                .contains("Running hook")
        );
        assert!(matches!(asked, Asked::Permission { .. }));
    }

    #[test]
    fn always_sends_only_suggestions_the_cli_takes_and_never_a_mode_that_stops_asking() {
        let (kept, left) = super::super::encode::checked_suggestions(&[
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch a"}],"behavior":"allow","destination":"localSettings"}),
            json!({"type":"addRules","rules":"notarray","behavior":"allow"}),
            json!({"type":"setMode","mode":"acceptEdits","destination":"session"}),
            json!({"type":"setMode","mode":"bypassPermissions","destination":"session"}),
            json!({"type":"setMode","mode":"\u{1b}]0;x\u{7}nomode"}),
            json!({"type":"addDirectories","directories":["/w"]}),
            json!({"type":"wipeDisk"}),
        ]);
        assert_eq!(kept.len(), 3, "{kept:?}");
        assert_eq!(left.len(), 4, "{left:?}");
        assert!(left.iter().any(|l| l.contains("stops asking")));
        assert!(left.iter().all(|l| !l.contains('\u{1b}')), "{left:?}");
        let e = ev(
            r#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"},"permission_suggestions":[{"type":"setMode","mode":"bypassPermissions","destination":"session"}]}"#,
        );
        let (g, asked) = gate(HookAgent::Claude, "h-1", "root", &e);
        let GateKind::Permission(p) = &g.kind else {
            panic!()
        };
        assert!(
            p.decision_reason
                .as_deref()
                .unwrap()
                .contains("leaves out 1")
        );
        assert!(
            !p.suggestions.iter().any(|s| s.contains("bypass")),
            "{:?}",
            p.suggestions
        );
        let Asked::Permission { suggestions, .. } = asked else {
            panic!()
        };
        assert!(suggestions.is_empty());
    }

    #[test]
    fn ask_user_question_is_a_question_card() {
        let e = ev(
            r#"{"hook_event_name":"PermissionRequest","session_id":"s","cwd":"/w","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which?","header":"H","multiSelect":true,"options":[{"label":"a","description":""},{"label":"b","description":""}]}]}}"#,
        );
        let (g, asked) = gate(HookAgent::Claude, "h-2", "agent:x", &e);
        let GateKind::Question(q) = &g.kind else {
            panic!()
        };
        assert!(q.questions[0].multi);
        assert!(q.own_terminal.is_some());
        assert_eq!(g.node_key, "agent:x");
        assert!(matches!(asked, Asked::Question { .. }));
    }
}
