//! The engine's outputs as today's domain events, and the owner's decisions back.
//!
//! Live, one channel is one session source: `route` tags each event with where it belongs,
//! the channel's own session (the connection, the "accept conversation X?" cards, the
//! protocol log) or the workspace session of one conversation (its calls, on that session's
//! root); the source opens the sessions and does the IO. A replay shows one session:
//! `Nodes` puts the first conversation on the root and the later ones on child nodes. Every
//! effect is a permission card showing
//! the conversation, the pinned intention and what will happen (the diff against the file
//! on disk, the command and its cwd); `workspace_ask` is a question card with a free-text
//! answer; read-only calls and mode-approved effects are audit rows.

use std::collections::HashSet;

use serde_json::json;

use super::effect;
use super::engine::{self, Ask, Out};
use switchboard_core::diff::Diff;
use switchboard_core::gate::{Decision, Gate, GateKind, Permission, QSpec, Question};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::visible_line;
use switchboard_core::transcript::{ItemKind, ItemOp, Tone};
use switchboard_core::tree::{NodePatch, ROOT_KEY};

/// Gate ids on the card side: `gw-<engine gate>`.
pub fn gate_id(gate: u64) -> String {
    format!("gw-{gate}")
}

pub fn engine_gate(id: &str) -> Option<u64> {
    id.strip_prefix("gw-")?.parse().ok()
}

/// Where a live event belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The channel's own session.
    Channel,
    /// The workspace session of this conversation (`sessionId`).
    Conversation(String),
}

/// The events for one engine output, each with its target session (`Send` and `Close` are
/// the transport's). A conversation's rows go to the root of its own session.
pub fn route(o: &Out, now_ms: u64) -> Vec<(Target, BackendEvent)> {
    match o {
        // A conversation not yet accepted gets no session until the owner says yes.
        Out::Gate(g) if g.ask == Ask::Conversation => vec![(
            Target::Channel,
            BackendEvent::GateOpen(Box::new(card(g, ROOT_KEY.to_string(), now_ms))),
        )],
        Out::Gate(g) => vec![(
            Target::Conversation(g.session.clone()),
            BackendEvent::GateOpen(Box::new(card(g, ROOT_KEY.to_string(), now_ms))),
        )],
        Out::Ran { session, .. } | Out::Effect { session, .. } | Out::Output { session, .. } => {
            Nodes::default()
                .map(o, now_ms)
                .into_iter()
                .map(|e| (Target::Conversation(session.clone()), e))
                .collect()
        }
        _ => Nodes::default()
            .map(o, now_ms)
            .into_iter()
            .map(|e| (Target::Channel, e))
            .collect(),
    }
}

/// Which node a conversation's rows go to in a replay; the first one seen is the root.
#[derive(Debug, Default)]
pub struct Nodes {
    first: Option<String>,
    opened: HashSet<String>,
}

impl Nodes {
    /// A copy for replay checkpoints.
    pub fn clone_state(&self) -> Nodes {
        Nodes {
            first: self.first.clone(),
            opened: self.opened.clone(),
        }
    }

    fn node(&mut self, session: &str, out: &mut Vec<BackendEvent>) -> String {
        let first = self.first.get_or_insert_with(|| session.to_string());
        if first == session {
            return ROOT_KEY.to_string();
        }
        let key = format!("conv:{session}");
        if self.opened.insert(key.clone()) {
            out.push(BackendEvent::NodeOpen {
                key: key.clone(),
                parent: Some(ROOT_KEY.to_string()),
                patch: NodePatch {
                    name: Some(format!(
                        "conversation {}",
                        switchboard_core::text::sanitize(session)
                    )),
                    ..NodePatch::default()
                },
            });
        }
        key
    }

    /// The events for one engine output (`Send` and `Close` are the transport's).
    pub fn map(&mut self, o: &Out, now_ms: u64) -> Vec<BackendEvent> {
        let mut out = Vec::new();
        match o {
            Out::Gate(g) => {
                // A conversation not yet accepted gets no node until the owner says yes.
                let node = if g.ask == Ask::Conversation {
                    ROOT_KEY.to_string()
                } else {
                    self.node(&g.session, &mut out)
                };
                out.push(BackendEvent::GateOpen(Box::new(card(g, node, now_ms))));
            }
            // A poll that answered is what the command's row shows already (its output and
            // status, followed as it runs): one row per poll would bury it.
            Out::Ran { tool, outcome, .. } if tool == "workspace_poll" && outcome == "ok" => {}
            Out::Ran {
                session,
                tool,
                summary,
                outcome,
            } => {
                let node = self.node(session, &mut out);
                let tone = if outcome == "ok" || outcome.contains("pre-approved") {
                    Tone::Allowed
                } else {
                    Tone::Neutral
                };
                out.push(BackendEvent::Item {
                    node: Some(node),
                    op: ItemOp::Push(ItemKind::Audit {
                        // One row: a path's newline is `^J`, not a second audit line.
                        text: format!("{tool}: {} ({outcome})", visible_line(summary)),
                        tone,
                    }),
                });
            }
            Out::Effect {
                session,
                call_id,
                outcome,
            } => {
                let node = self.node(session, &mut out);
                out.push(BackendEvent::Item {
                    node: Some(node),
                    op: effect::row(session, call_id, outcome),
                });
            }
            Out::Output {
                session,
                command_id,
                command,
                status,
                output,
                cut,
            } => {
                let node = self.node(session, &mut out);
                out.push(BackendEvent::Item {
                    node: Some(node),
                    op: effect::command_row(command_id, command, status, output, *cut),
                });
            }
            Out::Joined { gate } => out.push(BackendEvent::Protocol {
                level: switchboard_core::transcript::Level::Info,
                text: format!(
                    "the host re-sent the call of card {}; it joins that card",
                    gate_id(*gate)
                ),
            }),
            Out::Dropped(why) => out.push(BackendEvent::Protocol {
                level: switchboard_core::transcript::Level::Warn,
                text: format!("frame dropped: {why}"),
            }),
            Out::EditRefused { gate, why } => out.push(BackendEvent::Protocol {
                level: switchboard_core::transcript::Level::Warn,
                text: format!(
                    "your edit of card {} cannot run: {why}; the call waits on its card again",
                    gate_id(*gate)
                ),
            }),
            Out::Journal(Some(why)) => {
                out.push(BackendEvent::Protocol {
                    level: switchboard_core::transcript::Level::Warn,
                    text: format!(
                        "receipts journal unavailable: {why}. Effects are refused until it can be written again"
                    ),
                });
                out.push(BackendEvent::Info {
                    key: "journal status".into(),
                    value: Some(format!("UNAVAILABLE: {why}")),
                });
            }
            Out::Journal(None) => {
                out.push(BackendEvent::Protocol {
                    level: switchboard_core::transcript::Level::Info,
                    text: "receipts journal writable again".into(),
                });
                out.push(BackendEvent::Info {
                    key: "journal status".into(),
                    value: None,
                });
            }
            Out::Send(_) | Out::Close(_) => {}
        }
        out
    }
}

fn card(g: &engine::Gate, node: String, now_ms: u64) -> Gate {
    let title = Some(format!(
        "conversation {} · intention: {}",
        g.session, g.intention
    ));
    let perm = |tool: &str,
                summary: String,
                rule_arg: String,
                input: serde_json::Value,
                diff: Option<Diff>,
                description: Option<String>| {
        GateKind::Permission(Permission {
            tool: tool.to_string(),
            summary,
            // The card shows the whole command, every line, exactly as it will run.
            command: (tool == "workspace_exec").then(|| rule_arg.clone()),
            rule_arg,
            // What `e` opens: the call's own arguments where an edit can run (every field
            // the host sent, so what is edited is what runs), else what the card shows.
            input: match &g.editable {
                Some(args) => serde_json::Value::Object((**args).clone()).to_string(),
                None => input.to_string(),
            },
            title: title.clone(),
            description,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            // A remote agent's effects are approved one at a time.
            always_allowed: false,
            default_to_no: false,
            diff,
            options: Vec::new(),
            // Remote commands and what is typed into them are shell lines: no allow rule
            // covers a chained one (the same guard as Bash and ACP terminals).
            shell: matches!(tool, "workspace_exec" | "workspace_input"),
            env: Vec::new(),
            covered_by: None,
            deny_reason: None,
            editable: g.editable.is_some(),
            environment: g.environment.clone(),
            own_terminal: None,
        })
    };
    let kind = match &g.ask {
        Ask::Edit {
            path,
            old,
            new,
            created,
        } => perm(
            &g.tool,
            format!("{} {path}", if *created { "create" } else { "edit" }),
            path.clone(),
            json!({"path": path}),
            Some(Diff::unified(path, old, new, 3)),
            None,
        ),
        Ask::Delete { path } => perm(
            &g.tool,
            format!("delete {path}"),
            path.clone(),
            json!({"path": path}),
            None,
            None,
        ),
        Ask::Exec { command, cwd } => perm(
            &g.tool,
            format!("{command}  (in {cwd})"),
            command.clone(),
            json!({"command": command, "cwd": cwd}),
            None,
            Some(format!("shell command in {}", visible_line(cwd))),
        ),
        Ask::Input { command_id, text } => perm(
            &g.tool,
            format!("send {} bytes to {command_id}", text.len()),
            text.clone(),
            json!({"commandId": command_id, "text": text}),
            None,
            Some(format!("input: {text}")),
        ),
        Ask::Stop { command_id } => perm(
            &g.tool,
            format!("stop {command_id}"),
            command_id.clone(),
            json!({"commandId": command_id}),
            None,
            None,
        ),
        Ask::Tool { name, arguments } => perm(
            &g.tool,
            format!("tool {name}"),
            name.clone(),
            json!({"name": name, "arguments": arguments}),
            None,
            None,
        ),
        Ask::Conversation => perm(
            "accept conversation",
            format!("accept conversation {}?", g.session),
            g.session.clone(),
            json!({"sessionId": g.session}),
            None,
            Some("a call from a conversation this channel has not served yet".into()),
        ),
        Ask::Question { question } => GateKind::Question(Question {
            questions: vec![QSpec {
                question: question.clone(),
                header: format!("{} asks", g.session),
                multi: false,
                options: Vec::new(),
            }],
            malformed: None,
            own_terminal: None,
        }),
    };
    Gate {
        id: gate_id(g.gate),
        node_key: node,
        asked_by: Some(format!("remote conversation {}", g.session)),
        kind,
        opened_ms: now_ms,
        default_reply: "{}".into(),
        reply_definition: "",
    }
}

/// A card for a receipt interrupted by a crash: what it was (command text, path, SHAs).
pub fn settle_card(
    id: &str,
    key: &super::journal::Key,
    e: &super::journal::Entry,
    now_ms: u64,
) -> Gate {
    let what = match (e.effect["path"].as_str(), e.effect["command"].as_str()) {
        (Some(p), _) => format!(
            "{} {} (expected sha256 {}, new sha256 {})",
            e.tool,
            visible_line(p),
            e.effect["expectedSha256"].as_str().unwrap_or("none"),
            e.effect["newSha256"].as_str().unwrap_or("none")
        ),
        (None, Some(c)) => format!(
            "{} `{c}` (command {})",
            e.tool,
            e.effect["commandId"].as_str().unwrap_or("?")
        ),
        _ => format!("{} {}", e.tool, e.effect),
    };
    Gate {
        id: id.to_string(),
        node_key: ROOT_KEY.to_string(),
        asked_by: Some(format!(
            "receipts journal (conversation {}, call {})",
            key.1, key.2
        )),
        kind: GateKind::Permission(Permission {
            tool: "settle uncertain receipt".into(),
            summary: what.clone(),
            rule_arg: key.2.clone(),
            input: json!({"call": key.2}).to_string(),
            title: Some("interrupted mid-effect: it may or may not have happened".into()),
            description: Some(format!(
                "{what}. It is never re-run. y: settle it (by the file's SHA-256 when conclusive, else on your word); n: leave it uncertain."
            )),
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: None,
            options: Vec::new(),
            shell: false,
            command: None,
            env: Vec::new(),
            covered_by: None,
            deny_reason: None,
            editable: false,
            environment: Vec::new(),
            own_terminal: None,
        }),
        opened_ms: now_ms,
        default_reply: "{}".into(),
        reply_definition: "",
    }
}

/// The owner's decision as the engine takes it. Nothing here can grant more than the card
/// asked: an answer to a question is only text.
pub fn decision(d: &Decision) -> engine::Decision {
    match d {
        // The owner's edit is what runs (the engine checks it as it checks the host's
        // arguments); anything but an object is no edit the engine could run.
        Decision::Allow {
            updated_input: Some(serde_json::Value::Object(edited)),
            ..
        } => engine::Decision::AllowEdited(edited.clone()),
        Decision::Allow {
            updated_input: Some(_),
            ..
        } => engine::Decision::Cancel,
        Decision::Allow { .. } => engine::Decision::Allow,
        Decision::Deny { message, .. } => engine::Decision::Deny(Some(message.clone())),
        Decision::Answer { answers } => {
            engine::Decision::Answer(answers.first().map(|(_, a)| a.clone()).unwrap_or_default())
        }
        _ => engine::Decision::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(ask: Ask, session: &str) -> engine::Gate {
        engine::Gate {
            gate: 7,
            session: session.into(),
            call_id: "c".into(),
            tool: "workspace_write".into(),
            intention: "i".into(),
            ask,
            editable: None,
            environment: Vec::new(),
        }
    }

    #[test]
    fn a_write_card_carries_the_diff_and_the_intention() {
        let mut n = Nodes::default();
        let ev = n.map(
            &Out::Gate(g(
                Ask::Edit {
                    path: "a.txt".into(),
                    old: "a\n".into(),
                    new: "b\n".into(),
                    created: false,
                },
                "s1",
            )),
            0,
        );
        let BackendEvent::GateOpen(gate) = &ev[0] else {
            panic!("{ev:?}")
        };
        assert_eq!(gate.id, "gw-7");
        assert_eq!(gate.node_key, ROOT_KEY);
        let GateKind::Permission(p) = &gate.kind else {
            panic!()
        };
        assert!(p.title.as_deref().unwrap().contains("intention: i"));
        let d = p.diff.as_ref().unwrap();
        assert_eq!((d.added, d.removed), (1, 1));
        assert!(!p.always_allowed);
    }

    #[test]
    fn a_second_conversation_gets_a_child_node() {
        let mut n = Nodes::default();
        n.map(
            &Out::Ran {
                session: "s1".into(),
                tool: "workspace_info".into(),
                summary: "info".into(),
                outcome: "ok".into(),
            },
            0,
        );
        let ev = n.map(
            &Out::Gate(g(
                Ask::Exec {
                    command: "ls".into(),
                    cwd: ".".into(),
                },
                "s2",
            )),
            0,
        );
        assert!(matches!(&ev[0], BackendEvent::NodeOpen { key, .. } if key == "conv:s2"));
        assert!(matches!(&ev[1], BackendEvent::GateOpen(gate) if gate.node_key == "conv:s2"));
    }

    #[test]
    fn live_events_are_routed_to_their_conversations_session() {
        let ran = |s: &str| Out::Ran {
            session: s.into(),
            tool: "workspace_info".into(),
            summary: "info".into(),
            outcome: "ok".into(),
        };
        for s in ["s1", "s2"] {
            let ev = route(&ran(s), 0);
            assert_eq!(ev.len(), 1, "{ev:?}");
            assert_eq!(ev[0].0, Target::Conversation(s.into()));
            assert!(matches!(&ev[0].1, BackendEvent::Item { node: Some(n), .. } if n == ROOT_KEY));
        }
        let ev = route(
            &Out::Gate(g(
                Ask::Exec {
                    command: "ls".into(),
                    cwd: ".".into(),
                },
                "s2",
            )),
            0,
        );
        assert_eq!(ev[0].0, Target::Conversation("s2".into()));
        assert!(matches!(&ev[0].1, BackendEvent::GateOpen(gate) if gate.node_key == ROOT_KEY));
        let ev = route(&Out::Gate(g(Ask::Conversation, "s3")), 0);
        assert_eq!(ev[0].0, Target::Channel, "the accept card is the channel's");
        let ev = route(&Out::Dropped("x".into()), 0);
        assert_eq!(ev[0].0, Target::Channel);
    }

    /// Issue 22 item 5: an effect's row and its command's output go to the conversation's
    /// session, keyed by the command so each update replaces the row; a poll that answered
    /// adds no row of its own.
    #[test]
    fn effect_rows_go_to_their_conversation_and_polls_stay_quiet() {
        use crate::tools::exec::Status;
        let poll = Out::Ran {
            session: "s1".into(),
            tool: "workspace_poll".into(),
            summary: "poll c".into(),
            outcome: "ok".into(),
        };
        assert!(route(&poll, 0).is_empty());
        let refused = Out::Ran {
            session: "s1".into(),
            tool: "workspace_poll".into(),
            summary: "poll c".into(),
            outcome: "command_not_owned".into(),
        };
        assert_eq!(route(&refused, 0).len(), 1, "a refused poll is audited");
        let out = Out::Output {
            session: "s2".into(),
            command_id: "c9".into(),
            command: "make".into(),
            status: Status::Exited(3),
            output: "boom\n".into(),
            cut: false,
        };
        let ev = route(&out, 0);
        assert_eq!(ev[0].0, Target::Conversation("s2".into()));
        let BackendEvent::Item {
            op: ItemOp::Upsert { key, kind },
            ..
        } = &ev[0].1
        else {
            panic!("{ev:?}")
        };
        assert_eq!(key, "gw-cmd:c9");
        assert_eq!(
            kind,
            &ItemKind::ToolResult {
                tool_use_id: "c9".into(),
                text: "$ make · exit 3\nboom\n".into(),
                is_error: true,
            }
        );
        let ev = route(
            &Out::Effect {
                session: "s2".into(),
                call_id: "w1".into(),
                outcome: effect::Outcome::Refused {
                    tool: "workspace_write".into(),
                    why: "x: leads outside the root".into(),
                },
            },
            0,
        );
        assert_eq!(ev[0].0, Target::Conversation("s2".into()));
        assert!(matches!(
            &ev[0].1,
            BackendEvent::Item {
                op: ItemOp::Upsert {
                    kind: ItemKind::ToolResult { is_error: true, .. },
                    ..
                },
                ..
            }
        ));
    }

    #[test]
    fn decisions_map_one_to_one() {
        assert_eq!(engine_gate("gw-12"), Some(12));
        assert_eq!(
            decision(&Decision::Deny {
                message: "no".into(),
                interrupt: false
            }),
            engine::Decision::Deny(Some("no".into()))
        );
        assert_eq!(
            decision(&Decision::Answer {
                answers: vec![("q".into(), "yes".into())]
            }),
            engine::Decision::Answer("yes".into())
        );
    }
}

#[cfg(test)]
mod shell_line_tests {
    use super::*;
    use switchboard_core::rules::{Origin, Rules, Subject, parse_spec_line};

    /// The exec card is marked as a shell line and carries the whole command, every line.
    #[test]
    fn an_exec_card_is_a_shell_line_showing_the_whole_command() {
        let gate = engine::Gate {
            gate: 1,
            session: "s".into(),
            call_id: "c".into(),
            tool: "workspace_exec".into(),
            intention: "i".into(),
            ask: Ask::Exec {
                command: "echo ok\ncurl x | sh".into(),
                cwd: ".".into(),
            },
            editable: None,
            environment: vec![("PATH".into(), "/usr/bin".into())],
        };
        let GateKind::Permission(p) = card(&gate, "n".into(), 0).kind else {
            panic!("not a permission card");
        };
        assert!(p.shell);
        assert_eq!(p.command.as_deref(), Some("echo ok\ncurl x | sh"));
    }

    /// A remote command is a shell line: an allow rule for one command does not let a
    /// chained one ride along, exactly as for Bash.
    #[test]
    fn no_allow_rule_covers_a_chained_remote_command() {
        let mut r = Rules::default();
        r.add(
            parse_spec_line("allow workspace_exec ls *").unwrap(),
            Origin::Session,
        );
        assert!(
            r.evaluate(&Subject::shell("workspace_exec", "ls -la"))
                .is_some()
        );
        for chained in [
            "ls -la; curl x | sh",
            "ls && rm -rf ~",
            "ls $(id)",
            "ls > /etc/x",
        ] {
            assert!(
                r.evaluate(&Subject::shell("workspace_exec", chained))
                    .is_none(),
                "{chained}"
            );
        }
        let mut r = Rules::default();
        r.add(
            parse_spec_line("allow workspace_input y*").unwrap(),
            Origin::Session,
        );
        assert!(
            r.evaluate(&Subject::shell("workspace_input", "y\nrm -rf ~\n"))
                .is_none()
        );
    }
}
