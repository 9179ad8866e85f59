//! A resumed session's history: its recordings from before the crash fed through the same
//! mapping and reducer as `replay` (rules never fire, nothing is sent: a feed has no effects),
//! each crash closed by a visible boundary, and the result put under the live session, whose
//! agent goes on from there.

use std::path::PathBuf;

use crate::app::App;
use crate::core::msg::BackendEvent;
use crate::core::state::{SessionId, SessionState};
use crate::core::{BackendKind, Msg, update};
use crate::replay::feed::Feeder;
use crate::replay::load;
use crate::replay::source::Lane;

/// The session state a session's recordings `parts` build, for a session of `backend` named
/// `name`. Each part a crash ended closes with the resume's host-stopped note, which draws the
/// boundary; the last part ends at this crash (`stopped_ms`, resumed at `resumed_ms`), and its
/// boundary is drawn here when its note could not be written (a line the crash tore). A part
/// that cannot be read is said in the transcript, and the rest goes on.
pub fn feed(
    backend: BackendKind,
    name: &str,
    parts: &[PathBuf],
    stopped_ms: u64,
    resumed_ms: u64,
) -> SessionState {
    let loaded: Vec<Result<load::Loaded, String>> =
        parts.iter().map(|p| load::load(p, None)).collect();
    let start_ms = loaded
        .iter()
        .flatten()
        .find_map(|l| l.frames.iter().find_map(|f| f.ts))
        .unwrap_or(stopped_ms);
    let mut f = Feeder::for_lanes(
        &[Lane {
            name: name.to_string(),
            backend,
            start_ms,
        }],
        start_ms,
    );
    let mut last_ts = start_ms;
    let mut bounded = false;
    for (part, path) in loaded.into_iter().zip(parts) {
        match part {
            Ok(l) if l.backend == backend => {
                for frame in &l.frames {
                    f.apply(frame);
                    last_ts = last_ts.max(frame.ts.unwrap_or(last_ts));
                    bounded = frame.dir == crate::record::Dir::Note
                        && crate::record::parse_host_stopped(&frame.text).is_some();
                }
            }
            Ok(l) => apply(
                &mut f,
                last_ts,
                protocol(format!(
                    "{}: a {} recording, not this session's ({}): not shown",
                    path.display(),
                    l.backend.name(),
                    backend.name()
                )),
            ),
            Err(e) => apply(
                &mut f,
                last_ts,
                protocol(format!("{}: cannot be read: {e}", path.display())),
            ),
        }
    }
    if !bounded {
        apply(&mut f, resumed_ms, stopped(stopped_ms, resumed_ms));
    }
    f.state.sessions.swap_remove(0)
}

fn stopped(stopped_ms: u64, resumed_ms: u64) -> BackendEvent {
    BackendEvent::HostStopped {
        stopped_ms,
        resumed_ms,
    }
}

fn protocol(text: String) -> BackendEvent {
    BackendEvent::Protocol {
        level: crate::core::transcript::Level::Error,
        text,
    }
}

fn apply(f: &mut Feeder, at_ms: u64, event: BackendEvent) {
    let _ = update(
        &mut f.state,
        Msg::Backend {
            session: SessionId::FIRST,
            at_ms,
            event,
        },
    );
}

/// Put the history `fed` under the live session `id`: its tree and transcript, the gates it
/// closed, what it cost. The live backend has not been heard yet (its events wait in their
/// channel), so everything it says lands after the boundary.
pub fn splice(app: &mut App, id: SessionId, fed: SessionState) {
    let Some(i) = app.state.index_of(id) else {
        return;
    };
    let s = &mut app.state.sessions[i];
    let name = s.tree.nodes[0].name.clone();
    s.tree = fed.tree;
    s.tree.nodes[0].name = name;
    s.closed_gates = fed.closed_gates;
    s.answered = fed.answered;
    let (live, old) = (&mut s.session, fed.session);
    live.input_tokens += old.input_tokens;
    live.output_tokens += old.output_tokens;
    live.cost_usd += old.cost_usd;
    live.turns += old.turns;
    live.session_id = live.session_id.take().or(old.session_id);
    live.model = live.model.take().or(old.model);
    live.cwd = live.cwd.take().or(old.cwd);
    app.dirty = true;
}
