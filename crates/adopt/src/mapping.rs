//! One adopted session, sans IO: its hook events and transcript lines → domain events, and
//! decisions → what its waiting hook prints. The live session task, replay and tests share
//! it, so a recording reads back through exactly what ran.
//!
//! Gates are numbered `h-1`, `h-2`, … in the order their PermissionRequests arrived: the
//! hook protocol gives a request no id of its own.
//!
//! Claude draws its own dialog while its hook waits, and a person may answer there first.
//! Nothing says so directly; what the CLI does next does: the call's PostToolUse or
//! PostToolUseFailure (allowed there), PermissionDenied (denied), the next PreToolUse or
//! PermissionRequest of the same agent (it moved on: a CLI asks one call at a time), a
//! UserPromptSubmit or Stop (the turn ended), SessionEnd. Each of these releases the agent's
//! waiting card: it leaves the inbox as "answered in its own terminal" and its hook is told to
//! print nothing.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use switchboard_backend::hooks::{HookAgent, HookReply};
use switchboard_core::gate::Decision;
use switchboard_core::msg::{Abilities, BackendEvent, SessionPatch, TurnState};
use switchboard_core::text::{one_line, sanitize, truncate, visible_line};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_core::tree::{NodePatch, NodeStatus, ROOT_KEY};

use super::encode::{self, Asked};
use super::event::{Event, Name};

/// Sub-agents one session may open (each a node and a followed file).
pub const MAX_AGENTS: usize = 256;

/// A transcript file of the session: its main one, or a sub-agent's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TailKey {
    Main,
    Agent(String),
}

impl TailKey {
    /// As recordings name it (`main`, `agent:<id>`).
    pub fn name(&self) -> String {
        match self {
            TailKey::Main => "main".into(),
            TailKey::Agent(a) => format!("agent:{a}"),
        }
    }

    pub fn parse(s: &str) -> Option<TailKey> {
        match s {
            "main" => Some(TailKey::Main),
            _ => s
                .strip_prefix("agent:")
                .and_then(|a| super::event::check_session_id(a).ok())
                .map(TailKey::Agent),
        }
    }

    /// The tree node its rows go to.
    pub fn node(&self) -> Option<String> {
        match self {
            TailKey::Main => None,
            TailKey::Agent(a) => Some(agent_node(a)),
        }
    }
}

/// The tree node of sub-agent `id`.
pub fn agent_node(id: &str) -> String {
    format!("agent:{id}")
}

#[derive(Clone, Debug)]
struct Pending {
    id: String,
    /// The sub-agent that asked (`None`: the main agent).
    agent: Option<String>,
    tool: String,
    input: Option<Value>,
    asked: Asked,
}

/// What one input produced.
#[derive(Debug, Default)]
pub struct Out {
    pub events: Vec<BackendEvent>,
    /// The card this event's hook waits on (a PermissionRequest that opened one).
    pub card: Option<String>,
    /// Waiting hooks to release with no decision: (gate id, why).
    pub released: Vec<(String, String)>,
    /// Transcript files to follow from now on.
    pub tails: Vec<(TailKey, String)>,
}

impl Out {
    fn ev(&mut self, e: BackendEvent) {
        self.events.push(e);
    }
    fn row(&mut self, node: Option<String>, kind: ItemKind) {
        self.events.push(BackendEvent::Item {
            node,
            op: ItemOp::Push(kind),
        });
    }
}

/// One adopted session's mapping state.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub agent: HookAgent,
    pub session_id: String,
    pub cwd: String,
    next_gate: u64,
    pending: Vec<Pending>,
    agents: HashSet<String>,
    tool_uses: HashMap<Option<String>, u64>,
    tails: HashSet<TailKey>,
    ended: bool,
    /// The permission mode last told.
    mode: Option<String>,
}

/// Why a released card left: the words of its audit row.
pub const ANSWERED_THERE: &str = "answered in its own terminal";

impl Mapping {
    pub fn new(agent: HookAgent, session_id: &str, cwd: &str) -> Mapping {
        Mapping {
            agent,
            session_id: session_id.to_string(),
            cwd: cwd.to_string(),
            next_gate: 0,
            pending: Vec::new(),
            agents: HashSet::new(),
            tool_uses: HashMap::new(),
            tails: HashSet::new(),
            ended: false,
            mode: None,
        }
    }

    /// The session ended in its terminal (SessionEnd).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Gates waiting for an answer, oldest first.
    pub fn pending_ids(&self) -> Vec<String> {
        self.pending.iter().map(|p| p.id.clone()).collect()
    }

    /// What the session is, said once as it opens.
    pub fn opening(&self) -> Vec<BackendEvent> {
        let title = self.agent.title();
        vec![
            BackendEvent::Started {
                program: format!("{} (its own terminal)", self.agent.name()),
                pid: None,
            },
            BackendEvent::Abilities(Abilities {
                prompt: false,
                interrupt: false,
                usage: false,
                turns: true,
                about: Some(format!(
                    "{title} runs in its own terminal: type prompts there. Its permission \
                     requests wait here too; T hands one back to its own prompt."
                )),
            }),
            BackendEvent::Session(SessionPatch {
                session_id: Some(self.session_id.clone()),
                cwd: Some(visible_line(&self.cwd).into_owned()),
                ..SessionPatch::default()
            }),
            BackendEvent::Info {
                key: "runs in".into(),
                value: Some(format!("its own terminal ({title}, hooks)")),
            },
            BackendEvent::NodeUpdate {
                key: ROOT_KEY.into(),
                patch: NodePatch {
                    description: Some(format!("{title}, runs in its own terminal")),
                    ..NodePatch::default()
                },
            },
        ]
    }

    /// One hook event of this session.
    pub fn on_event(&mut self, ev: &Event) -> Out {
        let mut out = Out::default();
        self.release_stale(ev, &mut out);
        // A sub-agent's events name its own transcript (Codex) or the parent's (Claude): the
        // main one only from the main agent's.
        if ev.agent_id.is_none()
            && let Some(path) = &ev.transcript_path
            && self.tails.insert(TailKey::Main)
        {
            out.tails.push((TailKey::Main, path.clone()));
        }
        let node = self.node_of(ev, &mut out);
        match &ev.name {
            Name::SessionStart => {
                out.ev(BackendEvent::Session(SessionPatch {
                    model: ev
                        .str("model")
                        .map(|m| visible_line(&one_line(m, 80)).into_owned()),
                    ..SessionPatch::default()
                }));
                self.mode(ev, &mut out);
                out.row(
                    None,
                    ItemKind::System {
                        label: "session".into(),
                        text: format!(
                            "started in its own terminal ({})",
                            sanitize(ev.str("source").unwrap_or("startup"))
                        ),
                    },
                );
                out.ev(BackendEvent::Turn(TurnState::Idle));
            }
            Name::UserPromptSubmit => {
                self.mode(ev, &mut out);
                out.ev(BackendEvent::Turn(TurnState::Running));
            }
            Name::PreToolUse => {
                self.mode(ev, &mut out);
                self.running(&node, &mut out);
                let tool = ev.tool_name.clone().unwrap_or_else(|| "?".into());
                let n = self.tool_uses.entry(ev.agent_id.clone()).or_default();
                *n += 1;
                out.ev(BackendEvent::NodeUpdate {
                    key: node.clone(),
                    patch: NodePatch {
                        tool_uses: Some(*n),
                        last_tool: Some(sanitize(&one_line(&tool, 60))),
                        ..NodePatch::default()
                    },
                });
            }
            Name::PermissionRequest => {
                self.mode(ev, &mut out);
                self.running(&node, &mut out);
                self.permission_request(ev, &node, &mut out)
            }
            Name::PostToolUse | Name::PostToolUseFailure | Name::PostToolBatch => {
                self.running(&node, &mut out)
            }
            Name::PermissionDenied => {}
            Name::Notification => match ev.str("notification_type") {
                Some("idle_prompt") => out.ev(BackendEvent::Turn(TurnState::AwaitingInput)),
                kind => out.row(
                    None,
                    ItemKind::System {
                        label: match kind {
                            Some("permission_prompt") => "its own dialog".into(),
                            Some(k) => format!("notification {}", sanitize(&one_line(k, 40))),
                            None => "notification".into(),
                        },
                        text: sanitize(&truncate(ev.str("message").unwrap_or(""), 2000)),
                    },
                ),
            },
            Name::Stop => {
                if ev.agent_id.is_none() {
                    out.ev(BackendEvent::Turn(TurnState::Idle));
                }
            }
            Name::StopFailure => {
                out.row(
                    node_opt(&node),
                    ItemKind::Protocol {
                        level: Level::Error,
                        text: format!(
                            "the turn failed: {}",
                            sanitize(&truncate(
                                &ev.raw
                                    .get("error")
                                    .map(|e| e.as_str().map_or(e.to_string(), str::to_string))
                                    .unwrap_or_default(),
                                2000
                            ))
                        ),
                    },
                );
                if ev.agent_id.is_none() {
                    out.ev(BackendEvent::Turn(TurnState::Idle));
                }
            }
            Name::SubagentStart => {}
            Name::SubagentStop => {
                if ev.agent_id.is_some() {
                    out.ev(BackendEvent::NodeUpdate {
                        key: node.clone(),
                        patch: NodePatch {
                            status: Some(NodeStatus::Completed),
                            ..NodePatch::default()
                        },
                    });
                }
            }
            Name::PreCompact | Name::PostCompact => out.row(
                None,
                ItemKind::System {
                    label: "compaction".into(),
                    text: format!(
                        "{} ({})",
                        if ev.name == Name::PreCompact {
                            "compacting the conversation"
                        } else {
                            "the conversation was compacted"
                        },
                        sanitize(ev.str("trigger").unwrap_or("auto"))
                    ),
                },
            ),
            Name::SessionEnd => {
                self.ended = true;
                out.ev(BackendEvent::Exited {
                    code: Some(0),
                    detail: format!(
                        "the session ended in its own terminal ({})",
                        sanitize(&one_line(ev.str("reason").unwrap_or("?"), 60))
                    ),
                    stderr_tail: Vec::new(),
                });
            }
            Name::Other(name) => out.row(
                node_opt(&node),
                ItemKind::Generic {
                    label: format!("hook event {}", sanitize(&one_line(name, 60))),
                    raw: sanitize(&truncate(&Value::Object(ev.raw.clone()).to_string(), 8000)),
                },
            ),
        }
        out
    }

    /// The permission mode the event names, when it says one. In Claude's auto mode its
    /// classifier decides, and a prompt it still shows runs no hook: switchboard cannot see
    /// what waits there, and says so until the mode changes.
    fn mode(&mut self, ev: &Event, out: &mut Out) {
        let Some(m) = ev.str("permission_mode") else {
            return;
        };
        if self.mode.as_deref() == Some(m) {
            return;
        }
        self.mode = Some(m.to_string());
        out.ev(BackendEvent::Session(SessionPatch {
            permission_mode: Some(m.to_string()),
            ..SessionPatch::default()
        }));
        let blind = (self.agent == HookAgent::Claude && m == "auto").then(|| {
            "Claude is in auto mode: its classifier decides, and a prompt it still shows there \
             reaches no hook (switch to manual with Shift-Tab in Claude)"
                .to_string()
        });
        out.ev(BackendEvent::Blind(blind));
    }

    fn running(&self, node: &str, out: &mut Out) {
        if node == ROOT_KEY {
            out.ev(BackendEvent::Turn(TurnState::Running));
        } else {
            out.ev(BackendEvent::NodeUpdate {
                key: node.to_string(),
                patch: NodePatch {
                    status: Some(NodeStatus::Running),
                    ..NodePatch::default()
                },
            });
        }
    }

    /// The node of the event's agent, opened (and its transcript followed) the first time.
    fn node_of(&mut self, ev: &Event, out: &mut Out) -> String {
        let Some(id) = &ev.agent_id else {
            return ROOT_KEY.to_string();
        };
        if !self.agents.contains(id) {
            if self.agents.len() >= MAX_AGENTS {
                out.row(
                    None,
                    ItemKind::Protocol {
                        level: Level::Warn,
                        text: format!(
                            "more than {MAX_AGENTS} sub-agents: the events of {} show on the root",
                            sanitize(id)
                        ),
                    },
                );
                return ROOT_KEY.to_string();
            }
            self.agents.insert(id.clone());
            let name = ev
                .agent_type
                .as_deref()
                .map(|t| sanitize(&one_line(t, 40)))
                .unwrap_or_else(|| "agent".into());
            out.ev(BackendEvent::NodeOpen {
                key: agent_node(id),
                parent: None,
                patch: NodePatch {
                    name: Some(name),
                    description: Some(format!("sub-agent {}", sanitize(id))),
                    status: Some(NodeStatus::Running),
                    ..NodePatch::default()
                },
            });
        }
        let key = TailKey::Agent(id.clone());
        let path = ev
            .agent_transcript_path
            .clone()
            .or_else(|| self.subagent_transcript(ev, id));
        if let Some(path) = path
            && self.tails.insert(key.clone())
        {
            out.tails.push((key, path));
        }
        agent_node(id)
    }

    /// Where sub-agent `id` writes its transcript: Claude's beside the session's, in
    /// `<session>/subagents/agent-<id>.jsonl` (its events name the parent's); Codex's events
    /// of a sub-agent name its own rollout.
    fn subagent_transcript(&self, ev: &Event, id: &str) -> Option<String> {
        let path = ev.transcript_path.as_deref()?;
        match self.agent {
            HookAgent::Codex => Some(path.to_string()),
            HookAgent::Claude => {
                let dir = path.rsplit_once('/')?.0;
                Some(format!(
                    "{dir}/{}/subagents/agent-{id}.jsonl",
                    self.session_id
                ))
            }
        }
    }

    fn permission_request(&mut self, ev: &Event, node: &str, out: &mut Out) {
        self.next_gate += 1;
        let id = format!("h-{}", self.next_gate);
        let (gate, asked) = super::gates::gate(self.agent, &id, node, ev);
        self.pending.push(Pending {
            id: id.clone(),
            agent: ev.agent_id.clone(),
            tool: ev.tool_name.clone().unwrap_or_default(),
            input: ev.tool_input.clone(),
            asked,
        });
        out.ev(BackendEvent::GateOpen(Box::new(gate)));
        out.card = Some(id);
    }

    /// Release the cards that what `ev`'s agent does now shows were answered in its own
    /// terminal. A wrong guess costs nothing: the hook prints nothing and the CLI's own
    /// prompt, which was up all along, still has the request.
    fn release_stale(&mut self, ev: &Event, out: &mut Out) {
        if self.pending.is_empty() {
            return;
        }
        // The call itself went on: only its own card (a concurrent read-only call of the same
        // message may finish while another waits).
        let this_call = matches!(
            ev.name,
            Name::PostToolUse | Name::PostToolUseFailure | Name::PermissionDenied
        );
        // The agent moved on: a CLI asks about one call at a time. (A background sub-agent's
        // end is told to the main agent as a prompt of its own: that is no move.)
        let notice = ev
            .str("prompt")
            .is_some_and(|p| p.trim_start().starts_with("<task-notification>"));
        let moved_on = matches!(
            ev.name,
            Name::PreToolUse
                | Name::PermissionRequest
                | Name::Stop
                | Name::StopFailure
                | Name::SubagentStop
        ) || (ev.name == Name::UserPromptSubmit && !notice);
        let all = ev.name == Name::SessionEnd;
        // Codex draws no prompt while its hook waits: nothing can be answered there first.
        if !all && (self.agent == HookAgent::Codex || !(this_call || moved_on)) {
            return;
        }
        let why = match ev.name {
            Name::PostToolUse | Name::PostToolUseFailure => {
                format!("{ANSWERED_THERE} (allowed there: it ran)")
            }
            Name::PermissionDenied => format!("{ANSWERED_THERE} (denied there)"),
            Name::SessionEnd => format!("{ANSWERED_THERE} (the session ended)"),
            _ => ANSWERED_THERE.to_string(),
        };
        let same_call = |p: &Pending| {
            ev.tool_name.as_deref() == Some(p.tool.as_str()) && ev.tool_input == p.input
        };
        let (gone, kept): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| {
                all || (ev.from_agent(p.agent.as_deref()) && (!this_call || same_call(p)))
            });
        self.pending = kept;
        for p in gone {
            out.ev(BackendEvent::GateClosed {
                id: p.id.clone(),
                decision: Decision::OwnTerminal { why: why.clone() },
            });
            out.released.push((p.id, why.clone()));
        }
    }

    /// The person's (or a rule's) decision on gate `id`: what its hook prints, and rows to
    /// show when it could not be sent as decided. `None`: no such gate is waiting.
    pub fn answer(
        &mut self,
        id: &str,
        decision: &Decision,
    ) -> Option<(HookReply, Vec<BackendEvent>)> {
        let pos = self.pending.iter().position(|p| p.id == id)?;
        let p = self.pending.remove(pos);
        if let Decision::OwnTerminal { why } = decision {
            return Some((HookReply::Pass(why.clone()), Vec::new()));
        }
        Some(match encode::stdout(self.agent, &p.asked, decision) {
            Ok(s) => (HookReply::Decision(s), Vec::new()),
            Err(why) => {
                let text = format!(
                    "{}: not sent ({why}); the request went to its own terminal instead",
                    one_line(&p.tool, 40)
                );
                (
                    HookReply::Pass(text.clone()),
                    vec![BackendEvent::Item {
                        node: p.agent.as_deref().map(agent_node),
                        op: ItemOp::Push(ItemKind::Protocol {
                            level: Level::Error,
                            text,
                        }),
                    }],
                )
            }
        })
    }

    /// Gate `id`'s hook went away before an answer (the CLI's timeout killed it, or it
    /// stopped waiting): the card goes, the agent's own prompt has the request.
    pub fn hook_gone(&mut self, id: &str) -> Vec<BackendEvent> {
        let Some(pos) = self.pending.iter().position(|p| p.id == id) else {
            return Vec::new();
        };
        self.pending.remove(pos);
        vec![BackendEvent::GateClosed {
            id: id.to_string(),
            decision: Decision::OwnTerminal {
                why: format!("{ANSWERED_THERE} (its hook stopped waiting)"),
            },
        }]
    }

    /// What a recorded stdout decided for gate `id` (replay).
    pub fn decoded(&self, id: &str, stdout: &str) -> Option<Decision> {
        let p = self.pending.iter().find(|p| p.id == id)?;
        encode::decode(&p.asked, stdout)
    }

    /// Forget gate `id` (replay: its recorded answer closed it).
    pub fn forget(&mut self, id: &str) -> bool {
        let before = self.pending.len();
        self.pending.retain(|p| p.id != id);
        before != self.pending.len()
    }

    /// The rows of one line of transcript `key`.
    pub fn transcript_line(&self, key: &TailKey, line: &str) -> Vec<BackendEvent> {
        let node = key.node();
        match self.agent {
            HookAgent::Claude => super::claude_lines::rows(&node, line),
            HookAgent::Codex => super::codex_lines::rows(&node, line),
        }
    }
}

fn node_opt(node: &str) -> Option<String> {
    (node != ROOT_KEY).then(|| node.to_string())
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
