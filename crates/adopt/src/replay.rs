//! An adopted session's recording read back through the live mapping: its hook events and
//! transcript lines make the same rows and cards, and each recorded answer closes its card
//! with the decision the hook printed (or as handed to its own terminal).

use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_record::mapper::{Answered, ReplayMapper, decision_label};

use super::event;
use super::mapping::Mapping;
use super::recorded::{self, In};

#[derive(Clone, Debug, Default)]
pub struct Replay {
    mapping: Option<Mapping>,
}

fn problem(text: String) -> BackendEvent {
    BackendEvent::Item {
        node: None,
        op: ItemOp::Push(ItemKind::Protocol {
            level: Level::Warn,
            text,
        }),
    }
}

impl ReplayMapper for Replay {
    fn clone_box(&self) -> Box<dyn ReplayMapper> {
        Box::new(self.clone())
    }

    fn inbound(&mut self, line: &str) -> Vec<BackendEvent> {
        match recorded::parse_in(line) {
            In::Session {
                agent,
                session_id,
                cwd,
            } => {
                let m = Mapping::new(agent, &session_id, &cwd);
                let events = m.opening();
                self.mapping = Some(m);
                events
            }
            In::Transcript { key, line } => match &self.mapping {
                Some(m) => m.transcript_line(&key, &line),
                None => vec![problem("a transcript line before the session line".into())],
            },
            In::Broken(why) => vec![problem(why)],
            In::Event => {
                let Some(m) = self.mapping.as_mut() else {
                    return vec![problem("a hook event before the session line".into())];
                };
                match event::parse(line.as_bytes()) {
                    Ok(ev) if ev.session_id == m.session_id => m.on_event(&ev).events,
                    Ok(ev) => vec![problem(format!(
                        "an event of another session ({}) in this recording",
                        switchboard_core::text::sanitize(&ev.session_id)
                    ))],
                    Err(why) => vec![problem(format!("a refused hook event: {why}"))],
                }
            }
        }
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        let (Some(m), Some(a)) = (self.mapping.as_mut(), recorded::parse_out(line)) else {
            return (Vec::new(), Vec::new());
        };
        let decision = match (&a.stdout, &a.why) {
            (Some(s), _) => m.decoded(&a.gate, s),
            (None, Some(why)) => Some(Decision::OwnTerminal { why: why.clone() }),
            (None, None) => None,
        };
        // A card already released (answered in its own terminal) is closed already.
        if !m.forget(&a.gate) {
            return (Vec::new(), Vec::new());
        }
        let decision = decision.unwrap_or_else(|| Decision::Raw {
            body: serde_json::from_str(a.stdout.as_deref().unwrap_or("null"))
                .unwrap_or(serde_json::Value::Null),
        });
        let label = decision_label(&decision);
        (
            vec![BackendEvent::GateAnswered {
                id: a.gate.clone(),
                decision: decision.clone(),
            }],
            vec![Answered {
                gate_id: a.gate,
                decision: Some(decision),
                label,
            }],
        )
    }
}
