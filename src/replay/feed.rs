//! Feeding recorded frames through the live mapping and reducer: replay and export build their
//! state exactly as the session did (no second parser).

use crate::core::msg::BackendEvent;
use crate::core::{Msg, State, update};
use crate::record::Dir;

use super::load::{Frame, Loaded};
use super::mapper::{ReplayMapper, for_backend, root_name};

/// A state built frame by frame from a recording.
#[derive(Clone)]
pub struct Feeder {
    pub state: State,
    mapper: Box<dyn ReplayMapper>,
    /// Frames applied so far.
    pub pos: usize,
    start_ms: u64,
}

impl Clone for Box<dyn ReplayMapper> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

impl Feeder {
    pub fn new(loaded: &Loaded) -> Feeder {
        let start_ms = loaded.frames.iter().find_map(|f| f.ts).unwrap_or(0);
        Feeder::with(&loaded.backend, start_ms)
    }

    /// An empty state for a recording of `backend` that starts at `start_ms`.
    pub fn with(backend: &str, start_ms: u64) -> Feeder {
        let mut state = State::new(backend, root_name(backend), start_ms);
        state.reply_check = match backend {
            "acp" => crate::backend::acp::session::reply_check,
            _ => crate::backend::claude::session::reply_check,
        };
        state.settings.bell = false;
        Feeder {
            state,
            mapper: for_backend(backend),
            pos: 0,
            start_ms,
        }
    }

    /// Apply one frame (effects are dropped: a replay never talks to anyone).
    pub fn apply(&mut self, frame: &Frame) {
        let at = frame.ts.unwrap_or(self.start_ms);
        self.mapper.set_now(at);
        let events = match frame.dir {
            Dir::In => self.mapper.inbound(&frame.text),
            Dir::Out => self.mapper.outbound(&frame.text).0,
            Dir::Err => vec![BackendEvent::Stderr(frame.text.clone())],
            // Which rule answered a gate is kept as a note: show it where it happened.
            Dir::Note if frame.text.starts_with("rule: ") => vec![BackendEvent::Item {
                node: None,
                op: crate::core::transcript::ItemOp::Push(
                    crate::core::transcript::ItemKind::System {
                        label: "rule".into(),
                        text: frame.text["rule: ".len()..].to_string(),
                    },
                ),
            }],
            Dir::Note => {
                self.state.push_log(format!("note: {}", frame.text));
                Vec::new()
            }
        };
        for event in events {
            let _ = update(
                &mut self.state,
                Msg::Backend {
                    session: crate::core::state::SessionId::FIRST,
                    at_ms: at,
                    event,
                },
            );
        }
        self.pos += 1;
    }

    /// Build the state after the first `n` frames.
    pub fn until(loaded: &Loaded, n: usize) -> Feeder {
        let mut f = Feeder::new(loaded);
        for frame in loaded.frames.iter().take(n) {
            f.apply(frame);
        }
        f
    }
}
