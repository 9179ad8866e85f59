//! The ACP mapping read back from a recording: the same mapper as live (fed the agent's lines
//! as recorded), its answers told as the decisions they express.

use switchboard_core::gate::Decision;
use switchboard_core::msg::BackendEvent;
use switchboard_record::Dir;
use switchboard_record::mapper::{Answered, Parsed, ReplayMapper, decision_label, parsed_as};

use crate::codec::Frame;
use crate::mapping::{Inbound, read_inbound, read_outbound};

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

    fn inbound_parsed(&mut self, line: &str, parsed: &mut Parsed) -> Vec<BackendEvent> {
        match parsed_as::<Inbound>(parsed) {
            Some(read) => self.on_recorded_read(line, read).events,
            None => self.inbound(line),
        }
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        let frame = read_outbound(line);
        self.outbound_frame(line, frame)
    }

    fn outbound_parsed(
        &mut self,
        line: &str,
        parsed: &mut Parsed,
    ) -> (Vec<BackendEvent>, Vec<Answered>) {
        match parsed_as::<Frame>(parsed) {
            Some(frame) => self.outbound_frame(line, frame),
            None => self.outbound(line),
        }
    }
}

/// The background pass's parser for ACP recordings: each line read as `on_recorded_read`
/// and `on_outbound_frame` take it.
pub fn parse_ahead(dir: Dir, line: &str) -> Option<Parsed> {
    match dir {
        Dir::In => Some(Box::new(read_inbound(line))),
        Dir::Out => Some(Box::new(read_outbound(line))),
        _ => None,
    }
}

impl crate::mapping::Mapper {
    fn outbound_frame(&mut self, line: &str, frame: Frame) -> (Vec<BackendEvent>, Vec<Answered>) {
        let (out, answered) = self.on_outbound_frame(line, frame);
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
