//! An attached client as the host sees it: its terminal's size and what its last frame
//! measured and showed, the bytes of its screen drawn here and queued to it.
//!
//! The host renders each client's frames itself (as tmux and zellij do): a client is a
//! terminal on the end of a socket, and a new one sees the whole workspace in the time one
//! frame takes to draw, however long the history (the frame costs O(screen), never O(rows)).

use std::io::Write;

use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate, SetTitle};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect as TermRect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::{Terminal, TerminalOptions, Viewport};
use switchboard_core::state::{Focus, GateRef, Overlay, ViewMetrics};
use switchboard_core::{Msg, update};

use super::conn::Outbox;
use super::wire;
use crate::app::App;

pub struct Client {
    pub id: u64,
    pub size: (u16, u16),
    /// What this client's last frame measured (mouse hits, page moves are its own).
    pub view: ViewMetrics,
    term: Terminal<CrosstermBackend<Sink>>,
    /// What `term` wrote for the frame being drawn.
    sink: Sink,
    pub out: Outbox,
    /// Something on its screen is out of date.
    pub dirty: bool,
    /// The next frame repaints everything (new client, resize, back from the pager).
    repaint: bool,
    /// `State::gate_changes` when its last frame was drawn: a card key pressed against
    /// older gates than the state's is refused, never applied to another gate.
    pub seen_changes: u64,
    /// The gate its card showed in that frame.
    pub seen_gate: Option<GateRef>,
    /// Its keys went to the gates in that frame (a card focused, or the inbox).
    pub seen_on_gates: bool,
    /// A line for this client only, drawn over its footer until its next key.
    pub notice: Option<String>,
    title: String,
}

impl Client {
    pub fn new(id: u64, (cols, rows): (u16, u16), out: Outbox) -> Client {
        let size = (cols.max(1), rows.max(1));
        let sink = Sink::default();
        Client {
            id,
            size,
            view: ViewMetrics::default(),
            term: terminal(size, &sink),
            sink,
            out,
            dirty: true,
            repaint: true,
            seen_changes: 0,
            seen_gate: None,
            seen_on_gates: false,
            notice: None,
            title: String::new(),
        }
    }

    /// The client's terminal changed size (or was given back by its pager): repaint all.
    pub fn resized(&mut self, (cols, rows): (u16, u16)) {
        self.size = (cols.max(1), rows.max(1));
        self.term = terminal(self.size, &self.sink);
        self.repaint = true;
        self.dirty = true;
    }

    pub fn repaint(&mut self) {
        self.resized(self.size);
    }

    /// Put this client's size and measurements in the shared state, for a key of its own or
    /// its frame: what a page move or a click means depends on its screen.
    pub fn enter(&self, app: &mut App) {
        if app.state.size != self.size {
            let _ = update(&mut app.state, Msg::Resize(self.size.0, self.size.1));
        }
        if app.state.view != self.view {
            app.state.view = self.view.clone();
        }
    }

    /// Draw this client's frame and queue it; `bells` rings its terminal first. False: its
    /// queue is full (too slow) and it must be dropped.
    pub fn draw(&mut self, app: &mut App, bells: u32) -> bool {
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
        let mut drawn = ViewMetrics::default();
        let (state, theme) = (&app.state, &app.theme);
        let notice = self.notice.as_deref();
        let r = self.term.draw(|f| {
            drawn = crate::ui::render(state, theme, f);
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
        });
        if r.is_err() {
            // Writing into memory does not fail; a failure would be a bug: repaint next time.
            self.repaint = true;
        }
        if app.state.view != drawn {
            let _ = update(&mut app.state, Msg::Drawn(drawn));
        }
        self.view = app.state.view.clone();
        self.seen_changes = app.state.gate_changes();
        self.seen_gate = shown_gate(app);
        self.seen_on_gates = on_gates(app);
        out.append(&mut self.sink.0.lock().expect("the sink is never poisoned"));
        let _ = crossterm::queue!(out, EndSynchronizedUpdate);
        let _ = out.flush();
        self.dirty = false;
        self.out.send(wire::output_frame(&out))
    }
}

/// Whether keys go to the gates: a card has the keyboard, or the inbox is open.
pub fn on_gates(app: &App) -> bool {
    app.state.focus == Focus::Gate || matches!(app.state.overlay, Some(Overlay::Inbox))
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
