//! `switchboard replay FILE`: the recording fed through the live mapping and reducer, one
//! frame at a time, with play/pause, stepping, gate jumps, speed and a frame inspector.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

use super::feed::Feeder;
use super::load::{Format, Frame, Loaded};
use super::mapper::for_backend;
use super::source::{FrameSource, IndexedFile};
use crate::core::state::{Focus, Overlay, ReplayView};
use crate::core::{Msg, State, update};
use crate::record::Dir;

/// Speeds: a multiple of recorded time, or as fast as possible.
pub const SPEEDS: [(&str, Option<f64>); 6] = [
    ("0.5×", Some(0.5)),
    ("1×", Some(1.0)),
    ("2×", Some(2.0)),
    ("10×", Some(10.0)),
    ("100×", Some(100.0)),
    ("max", None),
];

/// The replay's own keys, for `?`.
const REPLAY_KEYS: &str = "Space      play / pause (from the start again at the end)
.  ,       step one frame forward / back
]  [       jump to the next / previous gate
+  -       speed: 0.5x, 1x, 2x, 10x, 100x recorded time, or max
Home End   seek to the start / the end
i          frame inspector: raw JSON, direction, source line, schema verdict
q Ctrl-D   quit

Tab, arrows, Enter, PgUp/PgDn, / search, v detail and f focus work as live;
nothing is ever sent: gate cards show the recorded answer instead of keys.";

/// Gaps longer than this are shortened while playing in recorded time.
const MAX_GAP: Duration = Duration::from_secs(2);

/// How many state copies stepping back may start from; their spacing grows with the file.
const CHECKPOINTS: usize = 4;
/// Below this spacing a checkpoint costs more than replaying from the start.
const MIN_CHECKPOINT_SPACING: usize = 20_000;

/// Recordings up to this many frames are indexed before the first frame shows; longer ones
/// are indexed in the background while the first frames are already on screen.
const SYNC_INDEX: usize = 100_000;

/// Where gates open and how each was answered, filled by one pass over the recording.
#[derive(Debug, Default)]
struct GateIndex {
    /// 0-based indices of frames that open a gate.
    gate_frames: Vec<usize>,
    answers: HashMap<String, String>,
    /// Frames indexed so far; equal to the total once done.
    done: usize,
}

pub struct Player {
    source: Arc<dyn FrameSource>,
    pub feeder: Feeder,
    /// Copies of the state taken on the way forward, so stepping back replays from the
    /// nearest one instead of from frame 0. At most about `CHECKPOINTS` are kept.
    checkpoints: Vec<Feeder>,
    pub playing: bool,
    pub speed: usize,
    index: Arc<Mutex<GateIndex>>,
    pub quit: bool,
}

pub fn clock(ts: Option<u64>) -> String {
    match ts {
        Some(ms) => {
            let t = crate::record::utc_from_secs((ms / 1000) as i64);
            format!("{}.{:03}Z", t.trim_end_matches('Z'), ms % 1000)
        }
        None => "no recorded time".into(),
    }
}

/// Index frames `from..` of `src` into `index`, publishing progress every few thousand frames.
fn build_index(src: &dyn FrameSource, index: &Mutex<GateIndex>) {
    let mut mapper = for_backend(src.backend());
    let mut gates = Vec::new();
    let mut answers = Vec::new();
    let total = src.len();
    for i in 0..total {
        let f = src.frame(i);
        if let Some(ts) = f.ts {
            mapper.set_now(ts);
        }
        match f.dir {
            Dir::In => {
                let events = mapper.inbound(&f.text);
                if events
                    .iter()
                    .any(|e| matches!(e, crate::core::msg::BackendEvent::GateOpen(_)))
                {
                    gates.push(i);
                }
            }
            Dir::Out => {
                for a in mapper.outbound(&f.text).1 {
                    answers.push((a.gate_id, format!("{} at {}", a.label, clock(f.ts))));
                }
            }
            _ => {}
        }
        if (i + 1) % 4096 == 0 || i + 1 == total {
            let mut ix = index.lock().expect("index lock");
            ix.gate_frames.append(&mut gates);
            ix.answers.extend(answers.drain(..));
            ix.done = i + 1;
        }
    }
}

impl Player {
    /// A replay of frames already loaded (small recordings, cassettes, JSONL logs).
    pub fn open(loaded: Loaded) -> Player {
        Player::from_source(Arc::new(loaded))
    }

    /// Open a file: a switchboard recording is indexed by line offsets and read lazily; other
    /// formats are loaded whole.
    pub fn open_path(path: &Path, format: Option<Format>) -> Result<Player, String> {
        if matches!(format, None | Some(Format::Recording))
            && let Ok(idx) = IndexedFile::open(path)
        {
            return Ok(Player::from_source(Arc::new(idx)));
        }
        super::load::load(path, format).map(Player::open)
    }

    pub fn from_source(source: Arc<dyn FrameSource>) -> Player {
        let index = Arc::new(Mutex::new(GateIndex::default()));
        if source.len() <= SYNC_INDEX {
            build_index(source.as_ref(), &index);
        } else {
            let (src, ix) = (source.clone(), index.clone());
            std::thread::spawn(move || build_index(src.as_ref(), &ix));
        }
        let feeder = Feeder::with(source.backend(), source.start_ms());
        let mut p = Player {
            source,
            feeder,
            checkpoints: Vec::new(),
            playing: false,
            speed: 1,
            index,
            quit: false,
        };
        p.feeder.state.focus = Focus::Transcript;
        p.seek(1);
        p
    }

    /// After a gate jump: show the gate that frame opened (the newest pending one).
    fn show_newest_gate(&mut self) {
        let state = &mut self.feeder.state;
        if let Some(g) = state.gates.back() {
            let (id, key) = (g.id.clone(), g.node_key.clone());
            state.active_gate = Some(id);
            state.focus = Focus::Gate;
            state.selected_node = state.tree.resolve(Some(&key));
            state.selected_item = None;
            state.scroll_back = 0;
        }
    }

    /// Frame `i` (0-based) of the recording.
    pub fn frame(&self, i: usize) -> Frame {
        self.source.frame(i)
    }

    /// Frames whose gates and answers are known (the index may still be growing).
    pub fn indexed(&self) -> usize {
        self.index.lock().expect("index lock").done
    }

    pub fn state(&self) -> &State {
        &self.feeder.state
    }

    pub fn total(&self) -> usize {
        self.source.len()
    }

    /// Show the state after the first `n` frames.
    pub fn seek(&mut self, n: usize) {
        let n = n.min(self.total());
        if n < self.feeder.pos {
            // State is never rewound: start again from the nearest copy at or before `n`.
            let (node, focus, size) = (
                self.feeder.state.selected_node,
                self.feeder.state.focus,
                self.feeder.state.size,
            );
            // What the viewer set up stays as it is; only the replayed content goes back.
            let overlay = self.feeder.state.overlay.take();
            let search = self.feeder.state.search.take();
            let (focus_root, side_by_side) =
                (self.feeder.state.focus_root, self.feeder.state.side_by_side);
            self.feeder = match self.checkpoints.iter().rev().find(|c| c.pos <= n) {
                Some(c) => c.clone(),
                None => Feeder::with(self.source.backend(), self.source.start_ms()),
            };
            self.feeder.state.size = size;
            self.feeder.state.focus = if focus == Focus::Prompt {
                Focus::Transcript
            } else {
                focus
            };
            self.advance_to(n);
            let st = &mut self.feeder.state;
            if node < st.tree.nodes.len() {
                st.selected_node = node;
            }
            st.overlay = overlay;
            st.search = search;
            st.focus_root = focus_root.filter(|r| *r < st.tree.nodes.len());
            st.side_by_side = side_by_side;
        } else {
            self.advance_to(n);
        }
        if self.feeder.pos == self.total() {
            self.playing = false;
        }
        self.sync_view();
    }

    /// Apply frames up to `n`, keeping a copy at each checkpoint position passed.
    fn advance_to(&mut self, n: usize) {
        let spacing = (self.total() / CHECKPOINTS).max(MIN_CHECKPOINT_SPACING);
        while self.feeder.pos < n {
            let f = self.source.frame(self.feeder.pos);
            self.feeder.apply(&f);
            let pos = self.feeder.pos;
            if pos.is_multiple_of(spacing) && !self.checkpoints.iter().any(|c| c.pos == pos) {
                self.checkpoints.push(self.feeder.clone());
                self.checkpoints.sort_by_key(|c| c.pos);
            }
        }
    }

    /// Checkpoints currently kept (for tests and the bench).
    pub fn checkpoint_positions(&self) -> Vec<usize> {
        self.checkpoints.iter().map(|c| c.pos).collect()
    }

    fn sync_view(&mut self) {
        let pos = self.feeder.pos;
        let ts = pos.checked_sub(1).and_then(|i| self.source.frame(i).ts);
        // Only the pending gates' answers: the view is rebuilt on every step.
        let answers: HashMap<String, String> = {
            let ix = self.index.lock().expect("index lock");
            self.feeder
                .state
                .gates
                .iter()
                .filter_map(|g| ix.answers.get(&g.id).map(|a| (g.id.clone(), a.clone())))
                .collect()
        };
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

    /// The raw JSON of the last applied frame, pretty-printed, with its schema verdict.
    pub fn inspector(&self) -> Overlay {
        let Some(i) = self.feeder.pos.checked_sub(1) else {
            return Overlay::Text {
                title: " frame inspector ".into(),
                body: "no frame applied yet".into(),
            };
        };
        let f = self.source.frame(i);
        let dir = match f.dir {
            Dir::In => "in (agent → switchboard)",
            Dir::Out => "out (switchboard → agent)",
            Dir::Err => "stderr",
            Dir::Note => "note",
        };
        let parsed = serde_json::from_str::<Value>(&f.text).ok();
        let verdict = match (f.dir, parsed.as_ref()) {
            (Dir::In | Dir::Out, _) if self.source.backend() == "acp" => {
                super::validate_acp::verdict(f.dir, &f.text)
            }
            (Dir::Out, Some(_)) => match crate::schema::validate_claude_outbound_line(&f.text) {
                Ok(()) => "valid (schema: outbound line)".to_string(),
                Err(e) => format!("INVALID: {e}"),
            },
            (Dir::In, Some(v))
                if matches!(
                    v.get("type").and_then(Value::as_str),
                    Some("control_request" | "control_cancel_request")
                ) =>
            {
                match crate::schema::validate_claude("Message", v) {
                    Ok(()) => "valid (schema: Message)".to_string(),
                    Err(e) => format!("INVALID: {e}"),
                }
            }
            (_, Some(_)) => "not a control frame (the schema covers the control channel)".into(),
            (_, None) => "not JSON".into(),
        };
        let body = match parsed {
            Some(v) => crate::core::text::pretty_json(&v),
            None => f.text.clone(),
        };
        Overlay::Text {
            title: format!(" frame {}/{} (Esc closes) ", i + 1, self.total()),
            body: format!(
                "direction: {dir}\nsource line: {}\ntime: {}\nschema: {verdict}\n\n{}",
                f.src_line,
                clock(f.ts),
                crate::core::text::sanitize(&body)
            ),
        }
    }

    /// Time until the next frame while playing; `None` when paused or at the end.
    pub fn next_delay(&self) -> Option<Duration> {
        if !self.playing || self.feeder.pos >= self.total() {
            return None;
        }
        let factor = SPEEDS[self.speed].1?;
        let prev = self
            .feeder
            .pos
            .checked_sub(1)
            .and_then(|i| self.source.frame(i).ts);
        let next = self.source.frame(self.feeder.pos).ts;
        let gap = match (prev, next) {
            (Some(a), Some(b)) => Duration::from_millis(b.saturating_sub(a)),
            _ => Duration::from_millis(20),
        };
        Some(gap.min(MAX_GAP).div_f64(factor))
    }

    /// Advance while playing: one frame, or a batch at maximum speed.
    pub fn tick(&mut self) {
        if !self.playing {
            return;
        }
        let n = if SPEEDS[self.speed].1.is_none() {
            500
        } else {
            1
        };
        self.seek(self.feeder.pos + n);
    }

    pub fn key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let state = &mut self.feeder.state;
        // The inspector follows the frame: stepping keys work behind it.
        let stepping = matches!(key.code, KeyCode::Char('.') | KeyCode::Char(','));
        if state.overlay.is_some()
            && !(stepping && matches!(state.overlay, Some(Overlay::Text { .. })))
        {
            let _ = update(state, Msg::Key(key));
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('d') | KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Char(' ') => {
                if self.feeder.pos >= self.total() {
                    self.seek(0);
                }
                self.playing = !self.playing;
                self.sync_view();
            }
            KeyCode::Char('.') => {
                self.playing = false;
                self.seek(self.feeder.pos + 1);
            }
            KeyCode::Char(',') => {
                self.playing = false;
                self.seek(self.feeder.pos.saturating_sub(1));
            }
            KeyCode::Char(']') => {
                self.playing = false;
                // Show the next gate open: apply up to and including its frame.
                let pos = self.feeder.pos;
                let (next, done) = {
                    let ix = self.index.lock().expect("index lock");
                    (ix.gate_frames.iter().find(|&&i| i >= pos).copied(), ix.done)
                };
                match next {
                    Some(i) => {
                        self.seek(i + 1);
                        self.show_newest_gate();
                    }
                    None if done < self.total() => {
                        self.feeder.state.status_line = Some(format!(
                            "still indexing gates ({}%)",
                            done * 100 / self.total().max(1)
                        ))
                    }
                    None => self.feeder.state.status_line = Some("no later gate".into()),
                }
            }
            KeyCode::Char('[') => {
                self.playing = false;
                let pos = self.feeder.pos;
                let prev = {
                    let ix = self.index.lock().expect("index lock");
                    ix.gate_frames.iter().rev().find(|&&i| i + 1 < pos).copied()
                };
                match prev {
                    Some(i) => {
                        self.seek(i + 1);
                        self.show_newest_gate();
                    }
                    None => self.feeder.state.status_line = Some("no earlier gate".into()),
                }
            }
            KeyCode::Char('+') | KeyCode::Char('=') => {
                self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
                self.sync_view();
            }
            KeyCode::Char('-') => {
                self.speed = self.speed.saturating_sub(1);
                self.sync_view();
            }
            KeyCode::Home => {
                self.playing = false;
                self.seek(0);
            }
            KeyCode::End => self.seek(self.total()),
            KeyCode::Char('?') => {
                self.feeder.state.overlay_scroll = 0;
                self.feeder.state.overlay = Some(Overlay::Text {
                    title: " replay keys (Esc closes) ".into(),
                    body: REPLAY_KEYS.into(),
                });
            }
            KeyCode::Char('i') => {
                let o = self.inspector();
                self.feeder.state.overlay_scroll = 0;
                self.feeder.state.overlay = Some(o);
            }
            // Live, Esc on a card declines a question or cancels a dialog or elicitation: in a
            // replay it only leaves the card.
            KeyCode::Esc if state.focus == Focus::Gate => state.focus = Focus::Transcript,
            // The permission-mode picker would ask the agent for a change.
            KeyCode::Char('m') => {
                state.status_line = Some("read-only replay: no permission mode to change".into())
            }
            _ => {
                // Everything else navigates; nothing may answer a gate or send a prompt.
                let nav = matches!(
                    key.code,
                    KeyCode::Tab
                        | KeyCode::BackTab
                        | KeyCode::Up
                        | KeyCode::Down
                        | KeyCode::Left
                        | KeyCode::Right
                        | KeyCode::PageUp
                        | KeyCode::PageDown
                        | KeyCode::Esc
                );
                let read_only = matches!(state.focus, Focus::Gate | Focus::Prompt);
                if nav || !read_only {
                    let _ = update(state, Msg::Key(key));
                }
                if state.focus == Focus::Prompt {
                    state.focus = Focus::Tree;
                }
            }
        }
    }
}

/// Run the player on the real terminal.
pub async fn run(mut player: Player, theme: crate::ui::theme::Theme) -> std::io::Result<()> {
    use crossterm::event::{Event, EventStream, KeyEventKind};
    use ratatui::Terminal;
    use ratatui::backend::CrosstermBackend;
    use tokio_stream::StreamExt;

    use crate::app::frames::{FRAME_INTERVAL, FrameScheduler};
    use crate::app::term::TerminalGuard;

    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    player.feeder.state.size = (size.width, size.height);
    let mut input = EventStream::new();
    let mut frames = FrameScheduler::new(FRAME_INTERVAL);
    let mut dirty = true;
    while !player.quit {
        let delay = player.next_delay();
        let fast = player.playing && SPEEDS[player.speed].1.is_none();
        tokio::select! {
            biased;
            ev = input.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => { player.key(k); dirty = true; }
                Some(Ok(Event::Resize(w, h))) => { player.feeder.state.size = (w, h); dirty = true; }
                Some(Ok(Event::Mouse(m))) => { let _ = update(&mut player.feeder.state, Msg::Mouse(m)); dirty = true; }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => break,
            },
            () = frames.due(dirty) => {
                terminal.draw(|f| crate::ui::render(player.state(), &theme, f))?;
                frames.drawn();
                dirty = false;
            }
            () = tokio::time::sleep(delay.unwrap_or(Duration::ZERO)), if delay.is_some() || fast => {
                player.tick();
                dirty = true;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::load::Frame;

    /// A long Claude recording of plain assistant text, with a gate every 5,000 frames.
    fn long_recording(frames: usize) -> Loaded {
        let frames = (0..frames)
            .map(|i| {
                let text = if i % 5000 == 4999 {
                    format!(
                        r#"{{"type":"control_request","request_id":"g{i}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{"command":"echo {i}"}}}}}}"#
                    )
                } else {
                    format!(
                        r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"line {i}"}}]}},"parent_tool_use_id":null}}"#
                    )
                };
                Frame {
                    src_line: i + 2,
                    ts: Some(i as u64),
                    dir: Dir::In,
                    text,
                }
            })
            .collect();
        Loaded {
            format: Format::Recording,
            backend: "claude".into(),
            header: None,
            frames,
        }
    }

    fn shape(p: &Player) -> (usize, usize, usize, Vec<String>) {
        let s = p.state();
        (
            s.tree.nodes.len(),
            s.tree.nodes[0].transcript.len(),
            s.gates.len(),
            s.gates.iter().map(|g| g.id.clone()).collect(),
        )
    }

    #[test]
    fn stepping_back_from_a_checkpoint_equals_replaying_from_the_start() {
        let mut p = Player::open(long_recording(50_000));
        p.seek(50_000);
        assert_eq!(p.checkpoint_positions(), vec![20_000, 40_000]);
        for target in [45_001, 40_000, 39_999, 20_123, 3] {
            p.seek(target);
            let mut fresh = Player::open(long_recording(50_000));
            fresh.seek(target);
            assert_eq!(shape(&p), shape(&fresh), "at frame {target}");
            p.seek(50_000);
        }
    }
}
