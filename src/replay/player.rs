//! `switchboard replay FILE`: the recording fed through the live mapping and reducer, one
//! frame at a time, with play/pause, stepping, gate jumps, speed and a frame inspector.
//! `switchboard replay MANIFEST` plays a whole workspace the same way: its recordings merged
//! into one timeline (`workspace::WorkspaceSource`), each frame fed to its own session.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::feed::Feeder;
use super::load::{Format, Frame, Loaded};
use super::source::{FrameSource, IndexedFile};
use crate::core::state::{Focus, GateRef};
use crate::core::{Msg, State};

mod keys;
mod pass;
mod seek;
mod view;

use pass::{background_pass, build_index};

/// Speeds: a multiple of recorded time, or as fast as possible.
pub const SPEEDS: [(&str, Option<f64>); 6] = [
    ("0.5×", Some(0.5)),
    ("1×", Some(1.0)),
    ("2×", Some(2.0)),
    ("10×", Some(10.0)),
    ("100×", Some(100.0)),
    ("max", None),
];

/// Gaps longer than this are shortened while playing in recorded time.
const MAX_GAP: Duration = Duration::from_secs(2);

/// Checkpoints are taken at multiples of this many frames: stepping back replays at most this
/// many frames from a copy of the state.
pub const CHECKPOINT_SPACING: usize = 4_096;
/// How many evenly spaced state copies the background pass keeps over the whole recording (plus
/// one of the end). Full copies, so few: the dense ones are kept only near the viewer.
const BACKGROUND_CHECKPOINTS: usize = 8;
/// A seek that has to apply more frames than this runs in slices between key presses, with its
/// progress shown, instead of inside the key handler.
const LONG_SEEK: usize = 2 * CHECKPOINT_SPACING;
/// The longest slice of replay work done between two looks at the keyboard.
const SLICE: Duration = Duration::from_millis(8);

/// Recordings up to this many frames are indexed before the first frame shows; longer ones
/// are indexed in the background while the first frames are already on screen.
const SYNC_INDEX: usize = 100_000;

/// Where gates open and how each was answered, filled by one pass over the recording.
#[derive(Debug, Default)]
struct GateIndex {
    /// 0-based indices of frames that open a gate.
    gate_frames: Vec<usize>,
    /// Keyed by session and gate id: gate ids repeat across sessions (`acp:0`).
    answers: HashMap<GateRef, String>,
    /// Frames indexed so far; equal to the total once done.
    done: usize,
}

pub struct Player {
    source: Arc<dyn FrameSource>,
    pub feeder: Feeder,
    /// State copies made by the background pass: evenly spaced, and the end.
    store: Arc<Mutex<Store>>,
    /// State copies made on the way to where the viewer is, at multiples of
    /// `CHECKPOINT_SPACING` just behind it, so each step back replays few frames.
    local: BTreeMap<usize, Feeder>,
    /// A second copy of the local checkpoint just behind the viewer: a step back takes it
    /// instead of copying the state in the key handler (in a long session a copy takes longer
    /// than a step back may).
    spare: Option<(usize, Feeder)>,
    /// That copy being made on a helper thread: its position and where the thread hands back
    /// (the original, the copy).
    spare_making: Option<(usize, std::sync::mpsc::Receiver<SpareMade>)>,
    /// Replay work that does not fit in a key press: a long seek, or a copy prepared ahead of
    /// stepping back.
    job: Option<Job>,
    /// Tells the background pass to stop (set when the player goes away).
    stop: Arc<AtomicBool>,
    pub playing: bool,
    pub speed: usize,
    index: Arc<Mutex<GateIndex>>,
    pub quit: bool,
}

/// What the helper thread hands back: the local copy it was lent (`None` when it copied one of
/// the background pass's), and its copy.
type SpareMade = (Option<Feeder>, Feeder);

/// What the background pass has made so far.
#[derive(Default)]
struct Store {
    checkpoints: BTreeMap<usize, Feeder>,
    /// Frames the pass has applied; the total once it is done.
    done: usize,
    finished: bool,
}

/// A state being advanced toward `target` a slice at a time.
struct Job {
    /// `None` until the first slice copies the state to start from (a copy can take a while:
    /// never inside the key handler).
    feeder: Option<Feeder>,
    target: usize,
    /// A seek the viewer asked for (shown, cancelled by Esc), or a copy prepared ahead of need
    /// (kept as a local checkpoint when done).
    seek: bool,
    /// A gate jump: show the gate the target frame opened once there.
    gate: bool,
}

impl Drop for Player {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The background pass's spacing: a multiple of `CHECKPOINT_SPACING`, so its copies serve
/// stepping back too.
fn background_spacing(total: usize) -> usize {
    let per = total.div_ceil(BACKGROUND_CHECKPOINTS).max(1);
    per.div_ceil(CHECKPOINT_SPACING).max(1) * CHECKPOINT_SPACING
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

impl Player {
    /// A replay of frames already loaded (small recordings, cassettes, JSONL logs).
    pub fn open(loaded: Loaded) -> Player {
        Player::from_source(Arc::new(loaded))
    }

    /// Open a file: a workspace manifest replays every recording it lists, merged by time; a
    /// switchboard recording is indexed by line offsets and read lazily; other formats are
    /// loaded whole.
    pub fn open_path(path: &Path, format: Option<Format>) -> Result<Player, String> {
        if format.is_none() && crate::workspace::manifest::is_manifest(path) {
            let ws = super::workspace::WorkspaceSource::open(path)?;
            return Ok(Player::from_source(Arc::new(ws)));
        }
        if matches!(format, None | Some(Format::Recording))
            && let Ok(idx) = IndexedFile::open(path)
        {
            return Ok(Player::from_source(Arc::new(idx)));
        }
        super::load::load(path, format).map(Player::open)
    }

    pub fn from_source(source: Arc<dyn FrameSource>) -> Player {
        Player::with_background_pass(source, true)
    }

    /// `from_source`, optionally without the background pass (tests of seeking without it).
    pub fn with_background_pass(source: Arc<dyn FrameSource>, background: bool) -> Player {
        let index = Arc::new(Mutex::new(GateIndex::default()));
        let background = background && source.len() > CHECKPOINT_SPACING;
        // A long recording's index is built by the background pass as it goes; a short one
        // before the first frame shows.
        let pass_indexes = background && source.len() > SYNC_INDEX;
        if source.len() <= SYNC_INDEX {
            build_index(source.as_ref(), &index);
        } else if !pass_indexes {
            let (src, ix) = (source.clone(), index.clone());
            std::thread::spawn(move || build_index(src.as_ref(), &ix));
        }
        let store = Arc::new(Mutex::new(Store::default()));
        let stop = Arc::new(AtomicBool::new(false));
        if background {
            let (src, st, stop) = (source.clone(), store.clone(), stop.clone());
            let ix = pass_indexes.then(|| index.clone());
            std::thread::spawn(move || background_pass(src.as_ref(), &st, &stop, ix.as_deref()));
        } else {
            let mut st = store.lock().expect("checkpoint store");
            st.finished = true;
        }
        let feeder = Feeder::for_source(source.as_ref());
        let mut p = Player {
            source,
            feeder,
            store,
            local: BTreeMap::new(),
            spare: None,
            spare_making: None,
            job: None,
            stop,
            playing: false,
            speed: 1,
            index,
            quit: false,
        };
        p.feeder.state.focus = Focus::Transcript;
        p.seek(1);
        p
    }

    /// Wait until the background pass has gone through the whole recording (tests, bench).
    pub fn wait_prepared(&self) {
        while !self.store.lock().expect("checkpoint store").finished {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The session (index in `state().sessions`) frame `i` is fed to.
    pub fn lane(&self, i: usize) -> usize {
        self.source.lane(i)
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

    /// Draw the replay's frame, and give its reducer what the frame measured (mouse hits,
    /// page moves), as the live app does.
    pub fn draw<B: ratatui::backend::Backend>(
        &mut self,
        term: &mut ratatui::Terminal<B>,
        theme: &crate::ui::theme::Theme,
    ) -> Result<(), B::Error> {
        crate::ui::draw(term, &mut self.feeder.state, theme)
    }

    pub fn total(&self) -> usize {
        self.source.len()
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
}

/// Run the player on the real terminal.
pub async fn run(mut player: Player, theme: crate::ui::theme::Theme) -> std::io::Result<()> {
    use crossterm::event::EventStream;
    use ratatui::Terminal;
    use ratatui::backend::CrosstermBackend;
    use tokio_stream::StreamExt;

    use crate::app::frames::{FRAME_INTERVAL, FrameScheduler};
    use crate::app::term::TerminalGuard;

    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    // Not `terminal.clear()`: ratatui asks the terminal for the cursor position there and
    // fails after 2 s on a terminal that never answers (as `app::term` does, clear directly).
    crossterm::execute!(
        terminal.backend_mut(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
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
                Some(Ok(e)) => match crate::app::input::msg(e) {
                    Some(Msg::Key(k)) => { player.key(k); dirty = true; }
                    Some(Msg::Resize(w, h)) => { player.feeder.state.size = (w, h); dirty = true; }
                    Some(Msg::Mouse(m)) => { player.mouse(m); dirty = true; }
                    _ => {}
                },
                Some(Err(e)) => return Err(e),
                None => break,
            },
            () = frames.due(dirty) => {
                player.draw(&mut terminal, &theme)?;
                frames.drawn();
                dirty = false;
            }
            () = tokio::time::sleep(delay.unwrap_or(Duration::ZERO)), if delay.is_some() || fast => {
                player.tick();
                dirty = true;
            }
            // Long seeks and copies prepared for stepping back run here, a slice at a time,
            // only when no key, frame or playback tick is due.
            () = tokio::task::yield_now(), if player.has_work() && !player.only_waiting() => {
                dirty |= player.work(SLICE);
            }
            // A spare copy being made on a helper thread, or a seek following the background
            // pass: look now and then (the seek's progress is drawn when it moves).
            () = tokio::time::sleep(Duration::from_millis(5)), if player.only_waiting() => {
                dirty |= player.work(SLICE);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod index_tests;
#[cfg(test)]
mod read_ahead_tests;
#[cfg(test)]
mod tests;
