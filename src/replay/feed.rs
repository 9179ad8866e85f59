//! Feeding recorded frames through the live mapping and reducer: replay and export build their
//! state exactly as the session did (no second parser). A workspace replay feeds several
//! recordings into one workspace state, each through its own session's mapping.

use crate::core::msg::BackendEvent;
use crate::core::state::SessionId;
use crate::core::{Msg, State, update};
use crate::record::Dir;

use super::load::{Frame, Loaded};
use super::mapper::{Parsed, ReplayMapper};
use super::source::{FrameSource, Lane};
use crate::core::BackendKind;
use crate::registry;

/// A state built frame by frame from one recording, or from a workspace's recordings merged.
#[derive(Clone)]
pub struct Feeder {
    pub state: State,
    /// One per session, in the order of `state.sessions`.
    lanes: Vec<LaneFeed>,
    /// Frames applied so far.
    pub pos: usize,
}

/// What applying one frame did that the gate index records.
#[derive(Default)]
pub struct Seen {
    pub session: SessionId,
    pub opened_gate: bool,
    pub answered: Vec<super::mapper::Answered>,
}

/// The mapping state of one session's recording.
#[derive(Clone)]
struct LaneFeed {
    session: SessionId,
    mapper: Box<dyn ReplayMapper>,
    start_ms: u64,
    /// Prefix of its notes in the log (empty for a single recording, whose log is as live).
    note_prefix: String,
}

impl Feeder {
    pub fn new(loaded: &Loaded) -> Feeder {
        let start_ms = loaded.frames.iter().find_map(|f| f.ts).unwrap_or(0);
        Feeder::with(loaded.backend, start_ms)
    }

    /// An empty state for a recording of `backend` that starts at `start_ms`.
    pub fn with(backend: BackendKind, start_ms: u64) -> Feeder {
        Feeder::for_lanes(
            &[Lane {
                name: backend.root_name().to_string(),
                backend,
                start_ms,
            }],
            start_ms,
        )
    }

    /// An empty state for the frames of `src` (one session per lane).
    pub fn for_source(src: &dyn FrameSource) -> Feeder {
        Feeder::for_lanes(&src.lanes(), src.start_ms())
    }

    /// An empty workspace with one session per lane (named as the lane), its clock at
    /// `start_ms`. Lane `i` is `state.sessions[i]`.
    pub fn for_lanes(lanes: &[Lane], start_ms: u64) -> Feeder {
        let first = lanes.first().cloned().unwrap_or(Lane {
            name: BackendKind::Claude.root_name().to_string(),
            backend: BackendKind::Claude,
            start_ms,
        });
        // Each session opens when its recording starts (its root's start time), as it did live.
        let mut state = State::new(first.backend, &first.name, first.start_ms);
        let mut feeds = Vec::with_capacity(lanes.len().max(1));
        for (i, lane) in lanes.iter().enumerate() {
            let session = if i == 0 {
                SessionId::FIRST
            } else {
                state.now_ms = lane.start_ms;
                state.add_session(lane.backend, &lane.name)
            };
            // The gate index keys recorded answers by `SessionId(lane)`.
            debug_assert_eq!(session, SessionId(i as u32));
            if let Some(s) = state.sessions.last_mut() {
                s.reply_check = registry::reply_check(lane.backend);
            }
            feeds.push(LaneFeed {
                session,
                mapper: registry::replay_mapper(lane.backend),
                start_ms: lane.start_ms,
                note_prefix: if lanes.len() > 1 {
                    format!("{}: ", lane.name)
                } else {
                    String::new()
                },
            });
        }
        if feeds.is_empty() {
            state.sessions[0].reply_check = registry::reply_check(first.backend);
            feeds.push(LaneFeed {
                session: SessionId::FIRST,
                mapper: registry::replay_mapper(first.backend),
                start_ms,
                note_prefix: String::new(),
            });
        }
        state.now_ms = start_ms;
        state.settings.bell = false;
        Feeder {
            state,
            lanes: feeds,
            pos: 0,
        }
    }

    /// Apply one frame of a single recording (effects are dropped: a replay never talks to
    /// anyone).
    pub fn apply(&mut self, frame: &Frame) {
        self.apply_to(0, frame);
    }

    /// Apply frame `i` of `src` to its session.
    pub fn apply_from(&mut self, src: &dyn FrameSource, i: usize) {
        self.apply_to(src.lane(i), &src.frame(i));
    }

    /// Apply one frame to the session of `lane`.
    pub fn apply_to(&mut self, lane: usize, frame: &Frame) {
        self.apply_seeing(lane, frame, None, None);
    }

    /// `apply_to`, telling `seen` (when given) whether the frame opened a gate and which
    /// gates it answered: the background pass builds the gate index from what it applies
    /// instead of a second mapping of every frame. `parsed` is what the backend's parser
    /// (`registry::parser`) made of the frame ahead of time, if it did.
    pub fn apply_seeing(
        &mut self,
        lane: usize,
        frame: &Frame,
        parsed: Option<&mut Parsed>,
        mut seen: Option<&mut Seen>,
    ) {
        if let Some(s) = seen.as_deref_mut() {
            s.opened_gate = false;
            s.answered.clear();
        }
        let Some(l) = self.lanes.get_mut(lane) else {
            // A lane no session was opened for cannot happen by construction: skip the frame
            // rather than feed it to another session.
            self.pos += 1;
            return;
        };
        let at = frame.ts.unwrap_or(l.start_ms);
        l.mapper.set_now(at);
        let events = match frame.dir {
            Dir::In => match parsed {
                Some(p) => l.mapper.inbound_parsed(&frame.text, p),
                None => l.mapper.inbound(&frame.text),
            },
            Dir::Out => {
                let (events, answered) = match parsed {
                    Some(p) => l.mapper.outbound_parsed(&frame.text, p),
                    None => l.mapper.outbound(&frame.text),
                };
                if let Some(seen) = seen.as_deref_mut() {
                    seen.answered = answered;
                }
                events
            }
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
            // A resume's note where the host stopped: the boundary, as it was drawn live.
            Dir::Note if crate::record::parse_host_stopped(&frame.text).is_some() => {
                let (stopped_ms, resumed_ms) =
                    crate::record::parse_host_stopped(&frame.text).unwrap_or_default();
                vec![BackendEvent::HostStopped {
                    stopped_ms,
                    resumed_ms,
                }]
            }
            Dir::Note => {
                l.mapper.note(&frame.text);
                let line = format!("note: {}{}", l.note_prefix, frame.text);
                self.state.push_log(line);
                Vec::new()
            }
        };
        let session = l.session;
        if let Some(seen) = seen {
            seen.session = session;
            // Gates open on the agent's lines only (as the index pass counts them).
            seen.opened_gate = frame.dir == Dir::In
                && events
                    .iter()
                    .any(|e| matches!(e, BackendEvent::GateOpen(_)));
        }
        for event in events {
            let _ = update(
                &mut self.state,
                Msg::Backend {
                    session,
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
