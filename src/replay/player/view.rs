//! What the replay shows beside the replayed state: its footer line, the recorded answers on
//! gate cards, the gate a jump lands on, and the frame inspector.

use std::collections::HashMap;

use serde_json::Value;

use super::{Player, SPEEDS, clock};
use crate::core::state::{Focus, GateRef, Overlay, ReplayView, SessionId};
use crate::core::text::neutralize;
use crate::record::Dir;

impl Player {
    /// After a gate jump: show the gate that frame opened (the newest pending one of the
    /// session the frame was fed to, which becomes the session on screen).
    pub(super) fn show_newest_gate(&mut self) {
        let lane = self
            .feeder
            .pos
            .checked_sub(1)
            .map_or(0, |i| self.source.lane(i));
        let before = self.feeder.state.shown().id;
        let state = &mut self.feeder.state;
        let Some(session) = state.sessions.get(lane) else {
            return;
        };
        if let Some(g) = session.gates.back() {
            let (id, node) = (g.id.clone(), session.tree.resolve(Some(&g.node_key)));
            if lane != state.selected {
                state.select_session(lane, node);
            }
            state.active_gate = Some(id);
            state.focus = Focus::Gate;
            state.selected_node = node;
            state.selected_item = None;
            state.scroll_back = 0;
        }
        // A long gate jump lands here from `work`, not from a key: the answers follow now.
        self.follow_selection(before);
    }

    pub(super) fn sync_view(&mut self) {
        let pos = self.feeder.pos;
        let ts = pos.checked_sub(1).and_then(|i| self.source.frame(i).ts);
        let answers = self.answers_shown();
        let inspector = matches!(self.feeder.state.overlay, Some(Overlay::Text { .. }))
            .then(|| self.inspector());
        let state = &mut self.feeder.state;
        state.replay = Some(ReplayView {
            frame: pos,
            total: self.source.len(),
            time: clock(ts),
            playing: self.playing,
            speed: SPEEDS[self.speed].0.to_string(),
            answers,
        });
        if inspector.is_some() {
            state.overlay = inspector;
        }
    }

    /// The recorded answers of the pending gates of the session on screen, by gate id: a card
    /// is only ever drawn for that session, and one session's gate ids are unique while pending
    /// (ids repeat across sessions: `acp:0`). Rebuilt on every step and whenever the viewer
    /// shows another session.
    fn answers_shown(&self) -> HashMap<String, String> {
        let ix = self.index.lock().expect("index lock");
        let shown = self.feeder.state.shown();
        shown
            .gates
            .iter()
            .filter_map(|g| {
                let key = GateRef {
                    session: shown.id,
                    id: g.id.clone(),
                };
                ix.answers.get(&key).map(|a| (g.id.clone(), a.clone()))
            })
            .collect()
    }

    /// After a key or a click: when the viewer now shows another session, its recorded answers
    /// replace the other's.
    pub(super) fn follow_selection(&mut self, before: SessionId) {
        if self.feeder.state.shown().id == before {
            return;
        }
        let answers = self.answers_shown();
        if let Some(r) = self.feeder.state.replay.as_mut() {
            r.answers = answers;
        }
    }

    /// The raw JSON of the last applied frame, pretty-printed, with its schema verdict.
    pub fn inspector(&self) -> Overlay {
        let Some(i) = self.feeder.pos.checked_sub(1) else {
            return Overlay::Text {
                title: " frame inspector ".into(),
                body: "no frame applied yet".into(),
            };
        };
        let f = self.source.frame(i);
        let lanes = self.source.lanes();
        let lane = lanes.get(self.source.lane(i));
        let backend = lane.map_or(self.source.backend(), |l| l.backend);
        // Which session it went to, in a workspace replay.
        let session = match lane {
            Some(l) if lanes.len() > 1 => {
                format!("session: {} ({})\n", neutralize(&l.name), l.backend)
            }
            _ => String::new(),
        };
        let dir = match f.dir {
            Dir::In => "in (agent → switchboard)",
            Dir::Out => "out (switchboard → agent)",
            Dir::Err => "stderr",
            Dir::Note => "note",
        };
        let parsed = serde_json::from_str::<Value>(&f.text).ok();
        let verdict = crate::registry::frame_verdict(backend, f.dir, &f.text, parsed.as_ref());
        let body = match parsed {
            Some(v) => crate::core::text::pretty_json(&v),
            None => f.text.clone(),
        };
        Overlay::Text {
            title: format!(" frame {}/{} (Esc closes) ", i + 1, self.total()),
            body: format!(
                "{session}direction: {dir}\nsource line: {}\ntime: {}\nschema: {verdict}\n\n{}",
                f.src_line,
                clock(f.ts),
                crate::core::text::sanitize(&body)
            ),
        }
    }
}
