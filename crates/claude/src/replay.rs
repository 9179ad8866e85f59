//! The Claude mapping read back from a recording: the same mapper as live, its answers told as
//! the decisions they express.

use switchboard_core::msg::BackendEvent;
use switchboard_record::mapper::{Answered, ReplayMapper, decision_label};

impl ReplayMapper for crate::mapping::Mapper {
    fn clone_box(&self) -> Box<dyn ReplayMapper> {
        Box::new(self.clone())
    }

    fn inbound(&mut self, line: &str) -> Vec<BackendEvent> {
        self.on_line(line).events
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        let (out, answered) = self.on_outbound(line);
        let answered = answered
            .into_iter()
            .map(|(id, pending, body)| {
                let decision = crate::decode::decision(&pending, &body);
                let label = decision
                    .as_ref()
                    .map(decision_label)
                    .unwrap_or_else(|| format!("raw reply {body}"));
                Answered {
                    gate_id: id,
                    decision,
                    label,
                }
            })
            .collect();
        (out.events, answered)
    }
}
