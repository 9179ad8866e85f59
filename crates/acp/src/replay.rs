//! The ACP mapping read back from a recording: the same mapper as live (fed the agent's lines
//! as recorded), its answers told as the decisions they express.

use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;
use switchboard_record::mapper::{Answered, ReplayMapper, decision_label};

impl ReplayMapper for crate::mapping::Mapper {
    fn clone_box(&self) -> Box<dyn ReplayMapper> {
        Box::new(self.clone())
    }

    fn set_now(&mut self, ms: u64) {
        self.now = ms;
    }

    fn inbound(&mut self, line: &str) -> Vec<BackendEvent> {
        self.on_recorded_inbound(line).events
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        let (out, answered) = self.on_outbound(line);
        let answered = answered
            .into_iter()
            .map(|a| {
                let label = decision_label(&a.decision);
                let decision = (!matches!(a.decision, Decision::Raw { .. })).then_some(a.decision);
                Answered {
                    gate_id: a.gate_id,
                    decision,
                    label,
                }
            })
            .collect();
        (out.events, answered)
    }
}
