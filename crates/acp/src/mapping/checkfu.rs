//! The Checkfu extension: sub-agent updates, dispositions and turn telemetry.

use serde_json::Value;

use super::wire::s;
use super::{Mapper, Out};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::sanitize;
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_core::tree::{NodePatch, NodeStatus};

/// Normalise Checkfu `canceled` and ACP `cancelled` to one word.
pub fn normalise_disposition(d: &str) -> &str {
    match d {
        "canceled" | "cancelled" => "cancelled",
        other => other,
    }
}

impl Mapper {
    pub(super) fn subagent(&mut self, sa: &Value, update: &Value, out: &mut Out) {
        let phase = s(sa, "phase").unwrap_or_default();
        let Some(id) = s(sa, "subagent").filter(|i| !i.is_empty()) else {
            out.protocol(
                Level::Warn,
                format!("checkfu.subagent without a subagent id: {sa}"),
            );
            return;
        };
        let key = format!("sa:{id}");
        let known = self.subagents.contains_key(&id);
        let ensure =
            |this: &mut Mapper, out: &mut Out, name: Option<String>, desc: Option<String>| {
                let name = name.unwrap_or_else(|| {
                    this.subagents
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| id.clone())
                });
                this.subagents.insert(id.clone(), name.clone());
                out.ev(BackendEvent::NodeOpen {
                    key: key.clone(),
                    parent: None,
                    patch: NodePatch {
                        name: Some(sanitize(&name)),
                        description: desc.map(|d| sanitize(&d)),
                        ..NodePatch::default()
                    },
                });
            };
        match phase.as_str() {
            "started" => {
                let name = s(sa, "name");
                let desc = s(sa, "description");
                ensure(self, out, name.clone(), desc.clone());
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(NodeStatus::Running),
                        ..NodePatch::default()
                    },
                });
                let name = sanitize(&name.unwrap_or_else(|| id.clone()));
                out.system("sub-agent", format!("started {name} ({id})"));
                out.item(
                    Some(key),
                    ItemOp::Push(ItemKind::System {
                        label: "started".into(),
                        text: sanitize(&desc.unwrap_or_default()),
                    }),
                );
            }
            "activity" => {
                if !known {
                    ensure(self, out, None, None);
                }
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(NodeStatus::Running),
                        ..NodePatch::default()
                    },
                });
                let at = s(update, "updatedAt").unwrap_or_default();
                out.item(
                    Some(key),
                    ItemOp::Upsert {
                        key: "activity".into(),
                        kind: ItemKind::System {
                            label: "activity".into(),
                            text: format!("last activity {}", sanitize(&at)),
                        },
                    },
                );
            }
            "completed" => {
                if !known {
                    ensure(self, out, None, None);
                }
                let raw = s(sa, "disposition").unwrap_or_else(|| "completed".into());
                let d = normalise_disposition(&raw).to_string();
                let status = match d.as_str() {
                    "completed" => NodeStatus::Completed,
                    "failed" => NodeStatus::Failed,
                    _ => NodeStatus::Killed,
                };
                out.ev(BackendEvent::NodeUpdate {
                    key: key.clone(),
                    patch: NodePatch {
                        status: Some(status),
                        description: None,
                        ..NodePatch::default()
                    },
                });
                let name = self
                    .subagents
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| id.clone());
                out.system(
                    "sub-agent",
                    format!("{} closed: {}", sanitize(&name), sanitize(&d)),
                );
                out.item(
                    Some(key),
                    ItemOp::Push(ItemKind::System {
                        label: "closed".into(),
                        text: sanitize(&d),
                    }),
                );
            }
            other => out.push(ItemKind::Generic {
                label: format!("checkfu.subagent phase {}", sanitize(other)),
                raw: sa.to_string(),
            }),
        }
    }

    // ---- requests from the agent ---------------------------------------------------------
}

/// One line for the `checkfu.turn` telemetry of a turn.
pub fn telemetry_text(t: &Value) -> String {
    let n = |k: &str| t.get(k).and_then(Value::as_u64);
    let mut parts = vec![s(t, "execution").unwrap_or_else(|| "?".into())];
    for (k, label) in [
        ("shell_commands", "shell"),
        ("filesystem_commands", "filesystem"),
        ("mcp_calls", "mcp"),
        ("model_calls", "model calls"),
    ] {
        parts.push(format!(
            "{} {label}",
            n(k).map_or("?".into(), |v| v.to_string())
        ));
    }
    if let Some(w) = n("wall_time_ms") {
        parts.push(format!(
            "wall {}",
            switchboard_core::text::human_duration(w)
        ));
    }
    for (k, label) in [
        ("model_transient_retries", "retries"),
        ("model_overflow_recoveries", "overflow recoveries"),
    ] {
        if let Some(v) = n(k) {
            parts.push(format!("{v} {label}"));
        }
    }
    sanitize(&parts.join(" · "))
}
