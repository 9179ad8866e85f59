//! An attached client as the host sees it: its terminal's size and what its last frame
//! measured and showed, the bytes of its screen drawn here and queued to it.
//!
//! The host renders each client's frames itself (as tmux and zellij do): a client is a
//! terminal on the end of a socket, and a new one sees the whole workspace in the time one
//! frame takes to draw, however long the history (the frame costs O(screen), never O(rows)).

use std::collections::VecDeque;
use std::io::Write;

use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate, SetTitle};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect as TermRect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::{Terminal, TerminalOptions, Viewport};
use switchboard_core::state::{ClientView, Focus, GateRef, Overlay, ViewMetrics};
use switchboard_core::{Msg, update};

use super::conn::Outbox;
use super::wire;
use crate::app::App;

/// Frames whose gates are remembered per client: a key typed against an older one (a client
/// far behind) is judged as against changed gates.
const FRAMES_KEPT: usize = 64;

/// What one frame showed of the gates.
#[derive(Clone, Debug)]
pub struct Shown {
    /// `State::gate_changes` when it was drawn.
    pub changes: u64,
    /// The gate its card showed.
    pub gate: Option<GateRef>,
    /// Its keys went to the gates (a card focused, or the inbox).
    pub on_gates: bool,
    /// Inputs other clients had made on the gates when it was drawn (`Host::card_acts`
    /// less this client's own): the card's highlight, page, editor and which gate it shows
    /// are shared, so a key typed against a card someone else moved since is refused.
    pub others: u64,
    /// The card it showed (`settle::Card`) and since when this client's terminal has shown
    /// it (`None` until the client says the frame is on its screen, `ClientMsg::Shown`):
    /// its answer keys wait for `Settings::settle_ms` from then.
    pub card: crate::settle::Card,
    pub since: Option<std::time::Instant>,
}

pub struct Client {
    pub id: u64,
    pub size: (u16, u16),
    /// Its own view (selection, focus, scroll, overlays, typed text, what its last frame
    /// measured) while another client's is in the state (`Host::make_resident`).
    pub parked: ClientView,
    term: Terminal<CrosstermBackend<Sink>>,
    /// What `term` wrote for the frame being drawn.
    sink: Sink,
    pub out: Outbox,
    /// Something on its screen is out of date.
    pub dirty: bool,
    /// The next frame repaints everything (new client, resize, back from the pager).
    repaint: bool,
    /// Frames drawn for it so far (`HostMsg::Drawn` numbers them).
    seq: u64,
    /// What its latest frames showed of the gates, newest last: a key is judged against the
    /// frame its terminal showed when it was typed.
    shown: VecDeque<(u64, Shown)>,
    /// A line for this client only, drawn over its footer until its next key.
    pub notice: Option<String>,
    /// Its inputs that acted on the gates (see `Shown::others`).
    pub own_acts: u64,
    /// It is showing the pager (`HostMsg::Page`): not drawn until it asks for a repaint, or
    /// its queue would fill while its terminal is away and it would be dropped as slow.
    pub paging: bool,
    title: String,
    /// What its frames showed of the card, and since when (issue 38).
    settle: crate::settle::Settle,
}

/// The largest terminal drawn for a client: a hostile hello cannot make the host allocate
/// screens of billions of cells (a bigger terminal shows this much, top left). A client's
/// screens (ratatui's two buffers, a cell about 48 bytes) then take at most about 10 MB, so
/// `serve::MAX_CLIENTS` of them at most about 300 MB (a 1000 × 400 hello took 30 MB); 500 ×
/// 200 is a 4K monitor in an 8-pixel font.
pub const MAX_COLS: u16 = 500;
pub const MAX_ROWS: u16 = 200;

fn clamp((cols, rows): (u16, u16)) -> (u16, u16) {
    (cols.clamp(1, MAX_COLS), rows.clamp(1, MAX_ROWS))
}

impl Client {
    pub fn new(id: u64, (cols, rows): (u16, u16), out: Outbox, parked: ClientView) -> Client {
        let size = clamp((cols, rows));
        let sink = Sink::default();
        Client {
            id,
            size,
            parked,
            term: terminal(size, &sink),
            sink,
            out,
            dirty: true,
            repaint: true,
            seq: 0,
            shown: VecDeque::new(),
            notice: None,
            own_acts: 0,
            paging: false,
            title: String::new(),
            settle: Default::default(),
        }
    }

    /// The client's terminal changed size (or was given back by its pager): repaint all.
    pub fn resized(&mut self, (cols, rows): (u16, u16)) {
        self.size = clamp((cols, rows));
        self.paging = false;
        self.term = terminal(self.size, &self.sink);
        self.repaint = true;
        self.dirty = true;
    }

    pub fn repaint(&mut self) {
        self.resized(self.size);
    }

    /// With its view in the state (the host made it resident): its terminal's size too.
    pub fn enter(&self, app: &mut App) {
        if app.state.size != self.size {
            let _ = update(&mut app.state, Msg::Resize(self.size.0, self.size.1));
        }
    }

    /// Draw this client's frame and queue it; `bells` rings its terminal first; `card_acts`
    /// is `Host::card_acts`. False: its queue is full (too slow) and it must be dropped.
    pub fn draw(&mut self, app: &mut App, bells: u32, card_acts: u64) -> bool {
        self.enter(app);
        let mut out: Vec<u8> = Vec::new();
        if bells > 0 {
            // One bell a frame, however many gates opened since the last.
            out.push(0x07);
        }
        let title = app.title();
        if title != self.title {
            let _ = crossterm::queue!(out, SetTitle(&title));
            self.title = title;
        }
        let _ = crossterm::queue!(out, BeginSynchronizedUpdate);
        if self.repaint {
            let _ = crossterm::queue!(
                out,
                crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
            );
            self.repaint = false;
        }
        if paint(
            &mut self.term,
            &mut app.state,
            &app.theme,
            self.notice.as_deref(),
        )
        .is_err()
        {
            // Writing into memory does not fail; a failure would be a bug: repaint next time.
            self.repaint = true;
        }
        self.seq += 1;
        if self.shown.len() == FRAMES_KEPT {
            self.shown.pop_front();
        }
        let others = card_acts - self.own_acts;
        let card = crate::settle::Card::of(&app.state, others);
        self.shown.push_back((
            self.seq,
            Shown {
                changes: app.state.gate_changes(),
                gate: shown_gate(app),
                on_gates: on_gates(app),
                others,
                card,
                since: None,
            },
        ));
        out.append(&mut self.sink.0.lock().expect("the sink is never poisoned"));
        let _ = crossterm::queue!(out, EndSynchronizedUpdate);
        let _ = out.flush();
        self.dirty = false;
        self.out.send(wire::output_frame(&out))
            && self
                .out
                .send(wire::json_frame(&wire::HostMsg::Drawn { seq: self.seq }))
    }

    /// The client says frame `seq` is on its terminal (at `at`, as the host reads its
    /// clock): the card it shows has been on screen since then, or since an earlier frame
    /// that showed the same card. Frames are shown in order; one it never heard of (too
    /// old, or a hostile number) changes nothing.
    pub fn showed(&mut self, seq: u64, at: std::time::Instant) {
        let Some((_, shown)) = self.shown.iter_mut().rev().find(|(s, _)| *s == seq) else {
            return;
        };
        if shown.since.is_none() {
            shown.since = Some(self.settle.drawn(shown.card.clone(), at));
        }
    }

    /// What frame `seq` showed, if it is recent enough to be remembered.
    pub fn shown_at(&self, seq: u64) -> Option<&Shown> {
        self.shown
            .iter()
            .rev()
            .find(|(s, _)| *s == seq)
            .map(|(_, shown)| shown)
    }
}

/// Whether keys go to the gates: a card has the keyboard, or the inbox is open.
pub fn on_gates(app: &App) -> bool {
    app.state.focus == Focus::Gate || matches!(app.state.overlay, Some(Overlay::Inbox))
}

/// Draw `state` on `term` with this client's `notice` over the footer, and hand the reducer
/// what the frame measured.
fn paint(
    term: &mut Terminal<CrosstermBackend<Sink>>,
    state: &mut switchboard_core::State,
    theme: &crate::ui::theme::Theme,
    notice: Option<&str>,
) -> std::io::Result<()> {
    let mut drawn = ViewMetrics::default();
    let s: &switchboard_core::State = state;
    term.draw(|f| {
        drawn = crate::ui::render(s, theme, f);
        if let Some(n) = notice {
            let a = f.area();
            if a.height > 0 {
                let row = TermRect::new(a.x, a.y + a.height - 1, a.width, 1);
                let text = format!(" {} ", switchboard_core::text::sanitize(n));
                f.render_widget(
                    Paragraph::new(Line::from(Span::styled(text, theme.warn))),
                    row,
                );
            }
        }
    })?;
    if state.view != drawn {
        let _ = update(state, Msg::Drawn(drawn));
    }
    Ok(())
}

/// The bytes of a new client's first frame at `size`: what attaching costs the host before
/// the socket (benches/perf.rs measures it on a long history).
pub fn first_frame(
    state: &mut switchboard_core::State,
    theme: &crate::ui::theme::Theme,
    size: (u16, u16),
) -> Vec<u8> {
    let size = clamp(size);
    if state.size != size {
        let _ = update(state, Msg::Resize(size.0, size.1));
    }
    let sink = Sink::default();
    let mut term = terminal(size, &sink);
    let mut out = Vec::new();
    let _ = crossterm::queue!(
        out,
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    );
    let _ = paint(&mut term, state, theme, None);
    out.append(&mut sink.0.lock().expect("the sink is never poisoned"));
    out
}

/// The gate the card shows now (the selected session's active gate).
pub fn shown_gate(app: &App) -> Option<GateRef> {
    let s = app.state.shown();
    s.active_gate.as_ref().map(|id| GateRef {
        session: s.id,
        id: id.clone(),
    })
}

/// Bytes the client's terminal backend writes, taken after each frame.
#[derive(Clone, Default)]
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("the sink is never poisoned")
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn terminal((cols, rows): (u16, u16), sink: &Sink) -> Terminal<CrosstermBackend<Sink>> {
    Terminal::with_options(
        CrosstermBackend::new(sink.clone()),
        TerminalOptions {
            viewport: Viewport::Fixed(TermRect::new(0, 0, cols, rows)),
        },
    )
    .expect("a terminal in memory")
}

impl Client {
    /// The number of the latest frame drawn for it.
    #[cfg(test)]
    pub fn last_seq(&self) -> u64 {
        self.seq
    }
}
