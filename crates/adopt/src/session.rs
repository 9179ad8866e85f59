//! One adopted session, live: its hook events (from the source), the decisions made on its
//! cards (commands from the app), its transcript files (followers), and the hooks waiting
//! for an answer. Every event in, every answer out and every transcript line read is
//! recorded (`recorded`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use switchboard_backend::SessionLink;
use switchboard_backend::hooks::{HookCall, HookReplies, HookReply};
use switchboard_backend::link::Link;
use switchboard_backend::process::{SharedRecorder, record};
use switchboard_core::msg::{BackendEvent, Command};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_record::Dir;
use tokio::sync::mpsc;

use super::event::Event;
use super::mapping::{Mapping, TailKey};
use super::recorded;
use super::tail::{self, Roots, TailMsg};

/// Hook events queued for one session at most (a flood beyond it is refused and counted).
pub const QUEUE: usize = 256;
/// Hooks of one session waiting on a card at most: one more falls through at once (a CLI
/// asks one call at a time per agent; this bounds the descriptors a hostile session holds).
pub const MAX_WAITING: usize = 32;

/// One hook event for the session task, checked by the source.
#[derive(Debug)]
pub struct Input {
    pub event: Event,
    /// The event's bytes as the CLI wrote them (recorded exactly).
    pub text: String,
    pub call: HookCall,
}

/// What the session task needs besides its channels.
pub struct Setup {
    pub mapping: Mapping,
    pub link: SessionLink,
    pub recording: Option<PathBuf>,
    pub roots: Arc<Roots>,
}

/// Run the session until the source stops sending (shutdown) or the app closes it.
pub async fn run(setup: Setup, mut inputs: mpsc::Receiver<Input>) {
    let Setup {
        mut mapping,
        link,
        recording,
        roots,
    } = setup;
    let SessionLink {
        events,
        mut commands,
        ..
    } = link;
    let link = Link { events };
    let argv = vec![
        mapping.agent.name().to_string(),
        "(in its own terminal, adopted through its hooks)".to_string(),
    ];
    let rec: SharedRecorder = link
        .open_recording(
            recording.as_deref(),
            switchboard_core::BackendKind::Adopted,
            &argv,
            std::path::Path::new(&mapping.cwd),
        )
        .await;
    record(
        &rec,
        Dir::In,
        &recorded::session(mapping.agent, &mapping.session_id, &mapping.cwd),
    );
    for e in mapping.opening() {
        link.send(e).await;
    }
    let mut waiting: HashMap<String, HookReplies> = HashMap::new();
    let (tail_tx, mut tail_rx) = mpsc::channel::<(TailKey, TailMsg)>(256);
    let (gone_tx, mut gone_rx) = mpsc::unbounded_channel::<String>();
    let finish = |waiting: &mut HashMap<String, HookReplies>, id: &str, reply: HookReply| {
        if let Some(line) = recorded::answer(id, &reply) {
            record(&rec, Dir::Out, &line);
        }
        if let Some(mut r) = waiting.remove(id) {
            r.finish(reply);
        }
    };
    loop {
        tokio::select! {
            input = inputs.recv() => {
                let Some(Input { event, text, mut call }) = input else { break };
                if call.waits && waiting.len() >= MAX_WAITING {
                    // Not a card: its hook falls through, and the screen says why. Recorded as
                    // a note, not as the event: the mapping never saw it, so replay and
                    // validate must not open a card (and number the gates after it) for it.
                    record(&rec, Dir::Note, &format!(
                        "refused: {MAX_WAITING} requests of this session wait already; its hook fell through: {text}"
                    ));
                    call.replies.finish(HookReply::Pass("too many requests wait".into()));
                    link.protocol(
                        Level::Warn,
                        format!(
                            "{MAX_WAITING} requests of this session wait already: one more went \
                             to its own terminal"
                        ),
                    )
                    .await;
                    continue;
                }
                record(&rec, Dir::In, &text);
                let out = mapping.on_event(&event);
                for (id, why) in out.released {
                    finish(&mut waiting, &id, HookReply::Pass(why));
                }
                for (key, path) in out.tails {
                    tokio::spawn(tail::follow(roots.clone(), path, key, tail_tx.clone()));
                }
                let card = out.card;
                for e in out.events {
                    link.send(e).await;
                }
                match card {
                    Some(id) if call.waits => {
                        // The card is up: its hook keeps waiting. When the hook goes away
                        // before an answer (the CLI's timeout), the card goes too.
                        call.replies.accepted();
                        let signal = call.replies.on_gone();
                        let tx = gone_tx.clone();
                        let gid = id.clone();
                        tokio::spawn(async move {
                            signal.await;
                            let _ = tx.send(gid);
                        });
                        waiting.insert(id, call.replies);
                    }
                    // A card whose hook does not wait (a hook of an older install): it can
                    // only be answered in its own terminal.
                    Some(id) => {
                        waiting.insert(id.clone(), call.replies);
                        finish(&mut waiting, &id, HookReply::Pass("its hook does not wait".into()));
                        for e in mapping.hook_gone(&id) {
                            link.send(e).await;
                        }
                    }
                    None => {}
                }
                if mapping.ended() {
                    // SessionEnd: its terminal is done with it. The session's row stays; its
                    // place among the adopted ones is free (a later event of the same id opens
                    // it anew).
                    break;
                }
            }
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => break,
                Some(Command::Answer { gate_id, decision }) => {
                    if let Some((reply, rows)) = mapping.answer(&gate_id, &decision) {
                        finish(&mut waiting, &gate_id, reply);
                        for e in rows {
                            link.send(e).await;
                        }
                    }
                }
                Some(Command::Note(text)) => record(&rec, Dir::Note, &text),
                Some(other) => {
                    let why = other.unsupported().unwrap_or_else(|| {
                        "this session runs in its own terminal: type there".to_string()
                    });
                    link.protocol(Level::Warn, why).await;
                }
            },
            Some((key, msg)) = tail_rx.recv() => match msg {
                TailMsg::Line(line) => {
                    record(&rec, Dir::In, &recorded::transcript(&key, &line));
                    for e in mapping.transcript_line(&key, &line) {
                        link.send(e).await;
                    }
                }
                TailMsg::Note(text) | TailMsg::Refused(text) => {
                    let text = format!("transcript {}: {}", key.name(), text);
                    record(&rec, Dir::Note, &text);
                    link.send(BackendEvent::Item {
                        node: key.node(),
                        op: ItemOp::Push(ItemKind::Protocol { level: Level::Warn, text }),
                    })
                    .await;
                }
            },
            Some(id) = gone_rx.recv() => {
                if waiting.contains_key(&id) {
                    let why = "its hook stopped waiting".to_string();
                    finish(&mut waiting, &id, HookReply::Pass(why));
                    for e in mapping.hook_gone(&id) {
                        link.send(e).await;
                    }
                }
            }
        }
    }
    // Never decided by our going: every waiting hook prints nothing, and its CLI's own
    // prompt has the request.
    let ids: Vec<String> = waiting.keys().cloned().collect();
    for id in ids {
        finish(
            &mut waiting,
            &id,
            HookReply::Pass("switchboard stopped".into()),
        );
    }
    record(&rec, Dir::Note, "adopted session closed");
}
