//! The host loop: the workspace's one `select!` loop (backend events, the frame clock, the
//! tick) with clients in place of the terminal. Keys come from clients, each frame is drawn
//! for each client at its own size, and the host goes on when the last client goes.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::time::{Duration, Instant};

use tokio::net::UnixListener;
use tokio::sync::mpsc;

use super::client::{Client, on_gates};
use super::conn::{self, ConnEvent, Outbox};
use super::place::Relisten;
use super::wire::{self, ClientMsg, HostMsg, Status, Want};
use crate::app::App;
use crate::app::frames::{FRAME_INTERVAL, FrameScheduler};
use switchboard_core::Msg;
use switchboard_core::input::MouseEventKind;
use switchboard_core::state::{ClientView, GateRef};
use switchboard_record::now_ms;

/// Decisions remembered with the client that made them, for the "answered from another
/// terminal" notice (only the latest matter).
const ANSWERS_KEPT: usize = 1024;

/// The longest text sent to a client's pager (a frame from the host is at most 16 MiB).
const PAGE_MAX: usize = 8 << 20;

/// Gates one look at the unattended inbox notifies one by one.
const NOTIFY_BURST: usize = 10;

/// Clients attached at once. Each costs its screens (two buffers of its size, `client.rs`)
/// and a frame per change: a bound keeps a flood of hellos from taking the host's memory;
/// the next one is told why it is refused.
pub(super) const MAX_CLIENTS: usize = 32;

pub(super) struct Host {
    name: String,
    clients: Vec<Client>,
    next_id: u64,
    /// Connections that asked the host to stop: told when it has.
    stoppers: Vec<Outbox>,
    /// Pending gates the notification command ran for (nobody was attached).
    notified: HashSet<GateRef>,
    /// (gate, client) of the latest decisions made from a client's keys.
    answered_by: VecDeque<(GateRef, u64)>,
    bells: u32,
    frames: FrameScheduler,
    /// The client whose view is in the state now.
    resident: Option<u64>,
    /// Where the state's view is parked when it belongs to no attached client.
    spare_view: ClientView,
    /// `State::gate_changes` when the unattended gates were last looked at: nothing to do
    /// until a gate opens or closes.
    notify_checked: Option<u64>,
    /// Client inputs that acted on the gates (keys on a card or in the inbox, or that put a
    /// card up): the card is shared, so each one may change what another client's next key
    /// would do (`Shown::others`).
    card_acts: u64,
    /// The client that sent the latest input: its view is the one in the state between
    /// frames, so backend events (a new gate taking the keyboard) land in it.
    last_active: Option<u64>,
}

impl Host {
    pub(super) fn new(name: &str, state: &switchboard_core::State) -> Host {
        Host {
            resident: None,
            spare_view: ClientView::starting_from(state),
            name: name.to_string(),
            clients: Vec::new(),
            next_id: 1,
            stoppers: Vec::new(),
            notified: HashSet::new(),
            answered_by: VecDeque::new(),
            bells: 0,
            frames: FrameScheduler::new(FRAME_INTERVAL),
            notify_checked: None,
            card_acts: 0,
            last_active: None,
        }
    }

    fn status(&self, app: &App) -> Status {
        Status {
            name: self.name.clone(),
            pid: std::process::id(),
            sessions: app.state.sessions.len(),
            waiting: app.state.pending_total(),
            notified: app
                .state
                .inbox_refs()
                .filter(|g| self.notified.contains(g))
                .count(),
            clients: self.clients.len(),
        }
    }

    fn on_conn(&mut self, app: &mut App, ev: ConnEvent) {
        match ev {
            ConnEvent::Hello { id, hello, mut out } => {
                // (conn refused any other version.)
                match hello.want {
                    Want::Status => {
                        out.close_with(wire::json_frame(&HostMsg::Status(self.status(app))))
                    }
                    Want::Stop => {
                        tracing::info!("host {}: stop asked", self.name);
                        self.stoppers.push(out);
                        crate::app::term::quit_now(app);
                    }
                    // (conn serves hooks itself.)
                    Want::Hook { .. } => {}
                    Want::Attach { .. } if self.clients.len() >= MAX_CLIENTS => {
                        tracing::warn!(
                            "host {}: an attach refused ({MAX_CLIENTS} clients attached)",
                            self.name
                        );
                        out.close_with(wire::json_frame(&HostMsg::Refused {
                            reason: format!(
                                "{MAX_CLIENTS} clients are attached, the most a host serves: \
                                 detach one (Ctrl-\\) first"
                            ),
                        }));
                    }
                    Want::Attach { cols, rows } => {
                        let welcome = wire::json_frame(&HostMsg::Welcome {
                            version: wire::VERSION,
                            name: self.name.clone(),
                        });
                        if out.send(welcome) {
                            tracing::info!("host {}: client {id} attached", self.name);
                            let view = ClientView::starting_from(&app.state);
                            self.clients.push(Client::new(id, (cols, rows), out, view));
                        }
                    }
                }
            }
            ConnEvent::Msg(id, m) => self.on_client(app, id, m),
            ConnEvent::Hook(call) => app.hook_call(call),
            ConnEvent::Gone(id, why) => {
                if let Some(k) = self.clients.iter().position(|c| c.id == id) {
                    let mut c = self.clients.remove(k);
                    c.out.abort();
                    match why {
                        Some(e) => tracing::warn!("host {}: client {id} dropped: {e}", self.name),
                        None => tracing::info!("host {}: client {id} left", self.name),
                    }
                }
            }
        }
    }

    fn on_client(&mut self, app: &mut App, id: u64, m: ClientMsg) {
        let Some(k) = self.clients.iter().position(|c| c.id == id) else {
            return;
        };
        let (msg, seen, cut) = match m {
            ClientMsg::Resize { cols, rows } => {
                self.clients[k].resized((cols, rows));
                self.frames.input();
                return;
            }
            ClientMsg::Repaint => {
                // (Back from the pager, too.)
                self.clients[k].repaint();
                self.frames.input();
                return;
            }
            ClientMsg::Shown { seq } => {
                self.clients[k].showed(seq, Instant::now());
                return;
            }
            ClientMsg::Key { key, seen } => (Msg::Key(key), seen, false),
            ClientMsg::Mouse { mouse, seen } => (Msg::Mouse(mouse), seen, false),
            ClientMsg::Paste { text, seen, cut } => (Msg::Paste(text), seen, cut),
        };
        self.make_resident(app, k);
        self.last_active = Some(id);
        let card_acts = self.card_acts;
        let c = &mut self.clients[k];
        c.notice = None;
        c.dirty = true;
        self.frames.input();
        c.enter(app);
        // A key on a card (or in the inbox) acts on the gates the client's terminal showed
        // when it was typed. If gates opened or closed since that frame, the key could land
        // on another gate than the one it was meant for: nothing is applied, and the client
        // is told why. (Answering moves the focus, so whether the keys went to the gates is
        // asked of that frame too.)
        let shown = c.shown_at(seen).cloned();
        let gate_keys = on_gates(app) || shown.as_ref().is_some_and(|s| s.on_gates);
        let changed = shown
            .as_ref()
            .is_none_or(|s| s.changes != app.state.gate_changes());
        // Another client acted on the (shared) card since that frame: moved its highlight,
        // opened its editor, put up another gate.
        let moved = shown
            .as_ref()
            .is_none_or(|s| s.others != card_acts - c.own_acts);
        // Keys that would go to no gate even on a card (quit, detach, help, Tab, the quit
        // question's `y`) pass whatever changed. A click may pick a choice, a paste fills the
        // card's editor; scrolling acts on no gate.
        let acts = match &msg {
            Msg::Key(key) => !switchboard_core::update::leaves_gates_alone(&app.state, *key),
            Msg::Mouse(m) => matches!(m.kind, MouseEventKind::Down(_)),
            _ => true,
        };
        if acts && gate_keys && (changed || moved) {
            let by_other = shown.and_then(|s| s.gate).and_then(|g| {
                self.answered_by
                    .iter()
                    .rev()
                    .find(|(a, _)| *a == g)
                    .map(|(_, who)| *who)
            });
            c.notice = Some(match by_other {
                Some(who) if who != id => {
                    "answered from another terminal: your key was not sent".to_string()
                }
                _ if !changed => "another terminal acted on the gates before your key arrived: \
                                  nothing was sent; look again"
                    .to_string(),
                _ => "the gates changed before your key arrived: nothing was sent; look again"
                    .to_string(),
            });
            return;
        }
        // Settle time (issue 38): an answer key acts only on a card this client's terminal
        // has shown, as it is now, for `settle_ms` (measured from when the client said the
        // frame was on its screen).
        if let Msg::Key(key) = &msg
            && app.state.settings.settle_ms > 0
            && switchboard_core::update::answers_gate(&app.state, *key)
        {
            let now = crate::settle::Card::of(&app.state, card_acts - c.own_acts);
            let since = shown
                .as_ref()
                .filter(|s| s.card == now)
                .and_then(|s| s.since);
            if crate::settle::holds_since(since, app.state.settings.settle_ms, Instant::now()) {
                c.notice = Some(switchboard_core::update::HELD.to_string());
                return;
            }
        }
        let was_on_gates = on_gates(app);
        let cards_before = cards(app);
        let refused_before = refused(app);
        app.answered.clear();
        app.apply(msg);
        // What acted on the shared cards: a key a card (or the inbox) took, one that put a
        // card up (`g`, `]`, Tab and a click end with the card focused), one that changed
        // the gate a session's card shows. (Selecting a session changes only this view.)
        let c = &mut self.clients[k];
        if (acts && was_on_gates) || (!was_on_gates && on_gates(app)) || cards(app) != cards_before
        {
            self.card_acts += 1;
            c.own_acts += 1;
        }
        if cut {
            c.notice = Some(format!(
                "your paste was longer than {} KiB: only its first {0} KiB went in",
                super::attach::PASTE_MAX >> 10
            ));
        }
        if refused(app) != refused_before {
            c.notice = Some(format!(
                "this text field holds at most {} KiB: what went past that was not taken",
                switchboard_core::text_field::MAX_BYTES >> 10
            ));
        }
        for g in std::mem::take(&mut app.answered) {
            if self.answered_by.len() == ANSWERS_KEPT {
                self.answered_by.pop_front();
            }
            self.answered_by.push_back((g, id));
        }
        for text in std::mem::take(&mut app.copies) {
            if !c
                .out
                .send(wire::output_frame(&crate::app::term::osc52(&text)))
            {
                c.out.abort();
            }
        }
        for mut text in std::mem::take(&mut app.pages) {
            if switchboard_core::text::cut_bytes(&mut text, PAGE_MAX) {
                text.push_str("\n[switchboard: cut here, the page is longer than 8 MiB]\n");
            }
            c.paging = true;
            c.out.send(wire::json_frame(&HostMsg::Page { text }));
        }
        if std::mem::take(&mut app.detach) {
            let mut c = self.clients.remove(k);
            tracing::info!("host {}: client {id} detached", self.name);
            c.out.close_with(wire::json_frame(&HostMsg::Bye {
                reason: "detached".into(),
                lines: vec![format!(
                    "detached from host {0}: its agents and gates go on (`switchboard attach {0}` \
                     returns, `switchboard stop {0}` stops it)",
                    self.name
                )],
            }));
        }
    }

    /// Put client `k`'s view in the state (parking the one there): its keys and its frame
    /// see its own selection, scroll and overlays. Backend events apply to the view in the
    /// state, the last active client's: a new gate takes that client's keyboard; the others
    /// see it in the strip and the inbox.
    fn make_resident(&mut self, app: &mut App, k: usize) {
        let id = self.clients[k].id;
        if self.resident == Some(id) {
            return;
        }
        match self
            .resident
            .and_then(|r| self.clients.iter().position(|c| c.id == r))
        {
            Some(j) => app.state.swap_view(&mut self.clients[j].parked),
            // The state's view belongs to nobody attached (a client gone, or none yet).
            None => app.state.swap_view(&mut self.spare_view),
        }
        app.state.swap_view(&mut self.clients[k].parked);
        self.resident = Some(id);
    }

    /// Draw every client that needs it (all of them when the shared state changed). A
    /// client whose queue is full is dropped: it can attach again; the host never waits.
    fn draw(&mut self, app: &mut App) {
        let all = std::mem::take(&mut app.dirty);
        let bells = std::mem::take(&mut app.bells) + std::mem::take(&mut self.bells);
        let mut slow = Vec::new();
        for k in 0..self.clients.len() {
            if !(all || self.clients[k].dirty) || self.clients[k].paging {
                continue;
            }
            self.make_resident(app, k);
            let c = &mut self.clients[k];
            if !c.draw(app, bells, self.card_acts) {
                slow.push(c.id);
            }
        }
        if let Some(k) = self
            .last_active
            .and_then(|id| self.clients.iter().position(|c| c.id == id))
        {
            self.make_resident(app, k);
        }
        for id in slow {
            if let Some(k) = self.clients.iter().position(|c| c.id == id) {
                let mut c = self.clients.remove(k);
                tracing::warn!(
                    "host {}: client {id} dropped: it did not keep up with its screen",
                    self.name
                );
                c.out.abort();
            }
        }
        self.frames.drawn();
    }

    fn dirty(&self, app: &App) -> bool {
        (app.dirty && self.clients.iter().any(|c| !c.paging))
            || self.clients.iter().any(|c| c.dirty && !c.paging)
    }

    /// Nobody attached: run the notification command once for each gate that waits.
    fn notify_unseen(&mut self, app: &App) {
        if !self.clients.is_empty() || app.notify_command.is_none() {
            self.notify_checked = None;
            return;
        }
        // O(waiting gates) only when a gate opened or closed, never per backend message.
        let changes = app.state.gate_changes();
        if self.notify_checked == Some(changes) {
            return;
        }
        self.notify_checked = Some(changes);
        let fresh: Vec<GateRef> = app
            .state
            .inbox_refs()
            .filter(|g| !self.notified.contains(g))
            .collect();
        if fresh.is_empty() {
            return;
        }
        // Forget gates no longer pending, so the set stays as large as the inbox.
        let pending: HashSet<GateRef> = app.state.inbox_refs().collect();
        self.notified.retain(|g| pending.contains(g));
        // A burst of gates runs the command a bounded number of times, then once for the rest.
        let rest = fresh.len().saturating_sub(NOTIFY_BURST);
        for g in fresh.iter().skip(NOTIFY_BURST) {
            self.notified.insert(g.clone());
        }
        if rest > 0 {
            app.notify(&format!(
                "{rest} more gates wait (host {}, nobody attached)",
                self.name
            ));
        }
        for g in fresh.into_iter().take(NOTIFY_BURST) {
            let subject = app
                .state
                .session_by_id(g.session)
                .and_then(|s| s.gate(&g.id).map(|gate| (s.name().to_string(), gate)))
                .map(|(name, gate)| {
                    format!("{name}: {}", switchboard_core::update::gate_subject(gate))
                })
                .unwrap_or_default();
            app.notify(&format!(
                "{} (host {}, nobody attached)",
                switchboard_core::text::neutralize(&subject),
                self.name
            ));
            self.notified.insert(g);
        }
    }
}

/// Inputs the text fields a client types into refused as full (the prompt in the state, the
/// open card's editor): O(1).
fn refused(app: &App) -> u64 {
    app.state.prompt.refused()
        + app
            .state
            .active_ui()
            .and_then(|ui| ui.editor.as_ref())
            .map_or(0, |ed| ed.area.refused())
}

/// The gate each session's card shows (shared by every client): O(sessions), per client
/// input only.
fn cards(app: &App) -> Vec<Option<String>> {
    app.state
        .sessions
        .iter()
        .map(|s| s.active_gate.clone())
        .collect()
}

/// Run `app` as the host `placed` says, on `listener`, until it is stopped (`stop`, a
/// client's quit, SIGTERM or SIGINT). Returns the app after its backends stopped, and what to tell.
pub(super) async fn run(
    mut app: App,
    mut placed: super::place::Placed,
    mut listener: UnixListener,
    farewell: impl Fn(&App) -> Vec<String>,
) -> io::Result<App> {
    let name = &placed.name.clone();
    // The last failure to listen again, said once.
    let mut replace_failed: Option<String> = None;
    // Why this host stopped when another of its name took its place.
    let mut lost: Option<String> = None;
    app.state.hosted = Some(name.to_string());
    app.notify_on_bell = false;
    let mut host = Host::new(name, &app.state);
    let (ev_tx, mut ev_rx) = mpsc::channel::<ConnEvent>(256);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut backend_open = true;
    let ours = super::place::uid();
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    // No terminal to hang up: a hangup is not a reason to stop.
    let mut sighup = signal(SignalKind::hangup())?;
    loop {
        // Not biased: a client that never stops sending, or an accept that keeps failing,
        // must not starve the backends, the frame clock or a signal.
        tokio::select! {
            Some(ev) = ev_rx.recv() => host.on_conn(&mut app, ev),
            acc = listener.accept() => match acc {
                Ok((stream, _)) => match super::place::check_peer(&stream, ours) {
                    Ok(()) => {
                        let id = host.next_id;
                        host.next_id += 1;
                        conn::spawn(id, stream, ev_tx.clone());
                    }
                    Err(e) => tracing::warn!("host {name}: {e}"),
                },
                Err(e) => {
                    // (Out of descriptors, say: it would fail again at once.)
                    tracing::warn!("host {name}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = sigterm.recv() => crate::app::term::quit_on_signal(&mut app),
            _ = sigint.recv() => crate::app::term::quit_on_signal(&mut app),
            _ = sighup.recv() => {}
            () = host.frames.due(host.dirty(&app)) => host.draw(&mut app),
            m = app.next_backend(), if backend_open || app.has_sources() => match m {
                Some(m) => {
                    app.apply(m);
                    app.drain_backend_for(crate::app::DRAIN_MAX, crate::app::DRAIN_TIME);
                    // (Rules answer too; only answers from a client's keys are kept.)
                    app.answered.clear();
                }
                None => backend_open = false,
            },
            _ = tick.tick() => {
                if app.busy() {
                    app.apply(Msg::Tick(now_ms()));
                }
                match placed.replace_if_gone() {
                    Some(Relisten::Again(l)) => {
                        tracing::warn!(
                            "host {name}: its socket was gone (the runtime directory removed?); \
                             listening again in {}",
                            placed.dir.display()
                        );
                        listener = l;
                    }
                    Some(Relisten::Later(e)) => {
                        if replace_failed.as_ref() != Some(&e) {
                            tracing::warn!("host {name}: cannot listen again: {e}");
                            replace_failed = Some(e);
                        }
                    }
                    // One reachable host per name: the other one is it. This one stops its
                    // workspace as a quit does (gates fail-closed, agents ended, recordings
                    // completed) rather than run agents nobody can reach.
                    Some(Relisten::Lost(why)) => {
                        let why = format!("host {name} stopped: {why}");
                        tracing::error!("{why}");
                        eprintln!("switchboard: {why}");
                        lost = Some(why);
                        // As `stop` (docs/host.md): the manifest is completed too, so no
                        // `resume` brings back a workspace of a name another host now holds.
                        crate::app::term::quit_now(&mut app);
                    }
                    None => replace_failed = None,
                }
            }
        }
        if host.clients.is_empty() {
            // Nothing to draw for: the state is what a client sees when it comes.
            app.dirty = false;
            host.bells += std::mem::take(&mut app.bells).min(1);
            host.bells = host.bells.min(1);
        }
        host.notify_unseen(&app);
        if app.quit {
            break;
        }
    }
    placed.remove_socket();
    app.finish().await;
    let mut lines = farewell(&app);
    if let Some(why) = &lost {
        lines.insert(0, why.clone());
    }
    // The manifest's last state is on disk before anyone is told the host stopped.
    app.observer = None;
    let bye = |reason: &str| {
        wire::json_frame(&HostMsg::Bye {
            reason: reason.to_string(),
            lines: lines.clone(),
        })
    };
    let mut outs: Vec<Outbox> = Vec::new();
    for mut c in host.clients.drain(..) {
        c.out.close_with(bye(&format!("host {name} stopped")));
        outs.push(c.out);
    }
    for mut s in host.stoppers.drain(..) {
        s.close_with(bye(&format!("host {name} stopped")));
        outs.push(s);
    }
    // One deadline for all: stuck clients do not add up.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    for o in outs {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        o.flushed(left).await;
    }
    Ok(app)
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
