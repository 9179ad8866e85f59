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
mod tests {
    use super::*;
    use crate::core::input::{KeyCode, KeyEvent, KeyModifiers};
    use crate::record::Dir;
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
        claude_recording(frames)
    }

    /// `frames` as a Claude recording already loaded.
    pub(super) fn claude_recording(frames: Vec<Frame>) -> Loaded {
        Loaded {
            format: Format::Recording,
            backend: crate::core::BackendKind::Claude,
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

    fn fresh(frames: usize, n: usize) -> Player {
        let mut p = Player::with_background_pass(Arc::new(long_recording(frames)), false);
        p.seek(n);
        p
    }

    /// A seek that lands while the spare for the previous position is still being made: once
    /// the work is done, the spare serves the new position (it used to stay at the old one, so
    /// every step back after a jump copied the state in the key handler).
    #[test]
    fn the_spare_follows_the_viewer_after_a_jump() {
        let mut p = Player::open(long_recording(50_000));
        p.wait_prepared();
        p.seek(50_000);
        // Past a copy the seek itself keeps (and one the background pass has), so no other
        // work is left to make the spare as a side effect.
        let target = 5 * CHECKPOINT_SPACING + 100;
        p.seek(target);
        p.finish_work();
        // The race, made certain: the copy for the old position arrives only now (a long
        // session's copy takes longer than the seek).
        let (tx, rx) = std::sync::mpsc::channel();
        let old = p.feeder.clone();
        p.spare = None;
        p.spare_making = Some((49_152, rx));
        tx.send((None, old)).unwrap();
        p.finish_work();
        let behind = (target - 1) / CHECKPOINT_SPACING * CHECKPOINT_SPACING;
        assert_eq!(p.spare.as_ref().map(|s| s.0), Some(behind));
        p.seek(target - 1);
        assert_eq!(p.state().replay.as_ref().unwrap().frame, target - 1);
        assert_eq!(shape(&p), shape(&fresh(50_000, target - 1)));
    }

    #[test]
    fn stepping_back_from_a_checkpoint_equals_replaying_from_the_start() {
        let mut p = Player::open(long_recording(50_000));
        p.wait_prepared();
        p.seek(50_000);
        let kept = p.checkpoint_positions();
        // The background pass: every multiple of its spacing, and the end.
        for c in (1..=6)
            .map(|k| k * background_spacing(50_000))
            .chain([50_000])
        {
            assert!(kept.contains(&c), "{c} not in {kept:?}");
        }
        for target in [45_001, 40_960, 40_959, 20_123, 3] {
            p.seek(target);
            assert_eq!(
                shape(&p),
                shape(&fresh(50_000, target)),
                "at frame {target}"
            );
            p.seek(50_000);
        }
    }

    /// Wherever the viewer lands, a copy at most `CHECKPOINT_SPACING` frames behind is kept or
    /// prepared, so each step back replays at most that many frames; and stepping back gives the
    /// state replaying from the start gives.
    #[test]
    fn every_step_back_starts_from_a_copy_close_behind() {
        let k = CHECKPOINT_SPACING;
        let total = 5 * k;
        let mut p = Player::with_background_pass(Arc::new(long_recording(total)), false);
        let step_back = |p: &mut Player, pos: &mut usize| {
            let behind = p
                .checkpoint_positions()
                .into_iter()
                .filter(|&c| c < *pos)
                .max()
                .unwrap_or(0);
            assert!(
                *pos - 1 - behind <= k,
                "at {pos}: nearest copy {behind} of {:?}",
                p.checkpoint_positions()
            );
            // A spare of that copy is ready, so the step back moves it in instead of copying.
            let spare = p.spare.as_ref().map(|(at, f)| (*at, f.pos));
            assert_eq!(spare, Some((behind, behind)), "at {pos}");
            p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
            assert!(!p.seeking(), "a step back at {pos} became a long seek");
            assert!(
                p.spare.is_none(),
                "the step back at {pos} did not take the spare"
            );
            p.finish_work();
            *pos -= 1;
            assert_eq!(p.state().replay.as_ref().unwrap().frame, *pos);
        };
        // Land just past a boundary, then step back across it and across the next one down
        // (landing there by a short seek, as a user holding `,` would after many presses).
        let mut pos = 4 * k + 2;
        p.seek(pos);
        p.finish_work();
        for _ in 0..3 {
            step_back(&mut p, &mut pos);
        }
        assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
        pos = 3 * k + 1;
        p.seek(pos);
        p.finish_work();
        for _ in 0..2 {
            step_back(&mut p, &mut pos);
        }
        assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
        // Presses in a row while the spare is still being made: each lands where it should.
        pos = 2 * k + 3;
        p.seek(pos);
        p.finish_work();
        for _ in 0..3 {
            p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
            assert!(!p.seeking());
            pos -= 1;
            assert_eq!(p.state().replay.as_ref().unwrap().frame, pos);
        }
        p.finish_work();
        assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
        // Only copies near the viewer are kept (no background pass here).
        assert!(
            p.checkpoint_positions().len() <= 4,
            "{:?}",
            p.checkpoint_positions()
        );
    }

    /// Two long sessions merged: (sessions' node counts, transcript lengths, pending gates).
    fn workspace_shape(p: &Player) -> Vec<(usize, usize, Vec<String>)> {
        p.state()
            .sessions
            .iter()
            .map(|s| {
                (
                    s.tree.nodes.len(),
                    s.tree.nodes[0].transcript.len(),
                    s.gates.iter().map(|g| g.id.clone()).collect(),
                )
            })
            .collect()
    }

    /// Two recordings with the same gate ids, the second's times offset by half a frame's
    /// worth so the frames alternate.
    fn long_workspace(frames: usize) -> Arc<dyn FrameSource> {
        let mut b = long_recording(frames);
        for (i, f) in b.frames.iter_mut().enumerate() {
            f.ts = f.ts.map(|t| t * 2 + 1);
            // b answers each of its gates on the next frame (a never does).
            if i > 0 && i % 5000 == 0 {
                let id = format!("g{}", i - 1);
                f.dir = Dir::Out;
                f.text = format!(
                    r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{id}","response":{{"behavior":"allow","updatedInput":{{"command":"echo {}"}}}}}}}}"#,
                    i - 1
                );
            }
        }
        let mut a = long_recording(frames);
        for f in &mut a.frames {
            f.ts = f.ts.map(|t| t * 2);
        }
        let ws = crate::replay::workspace::WorkspaceSource::merge(vec![
            ("a".into(), Arc::new(a) as Arc<dyn FrameSource>),
            ("b".into(), Arc::new(b)),
        ])
        .unwrap();
        Arc::new(ws)
    }

    /// The checkpoints of the background pass and of stepping back hold whole workspaces: seeks
    /// and steps back over a merged timeline land where replaying from the start lands, and the
    /// gate jump shows the session of the gate's frame.
    #[test]
    fn a_workspace_timeline_seeks_through_checkpoints_like_replaying_from_the_start() {
        let total = 2 * 25_000;
        let src = long_workspace(25_000);
        assert_eq!(src.len(), total);
        assert_eq!((src.lane(0), src.lane(1), src.lane(2)), (0, 1, 0));
        let fresh_ws = |n: usize| {
            let mut p = Player::with_background_pass(src.clone(), false);
            p.seek(n);
            workspace_shape(&p)
        };
        let mut p = Player::from_source(src.clone());
        p.wait_prepared();
        p.seek(total);
        let kept = p.checkpoint_positions();
        for c in (1..=6)
            .map(|k| k * background_spacing(total))
            .chain([total])
        {
            assert!(kept.contains(&c), "{c} not in {kept:?}");
        }
        for target in [45_001, 40_960, 40_959, 20_123, 3] {
            p.seek(target);
            assert_eq!(workspace_shape(&p), fresh_ws(target), "at frame {target}");
            p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
            p.finish_work();
            assert_eq!(
                workspace_shape(&p),
                fresh_ws(target - 1),
                "at {}",
                target - 1
            );
            p.seek(total);
        }
        // Each session has its own `g4999`: the second gate jump shows session b's.
        p.seek(0);
        p.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
        p.finish_work();
        assert_eq!(p.state().selected, 0);
        p.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
        p.finish_work();
        assert_eq!(p.state().selected, 1);
        assert_eq!(p.state().active().map(|g| g.id.as_str()), Some("g4999"));
        assert_eq!(p.state().replay.as_ref().unwrap().frame, 2 * 4999 + 2);
        let answers = &p.state().replay.as_ref().unwrap().answers;
        assert!(answers["g4999"].starts_with("allowed once"), "{answers:?}");
        // A gate jump long enough to run between keys lands on b's gate and shows b's answer,
        // though a has a gate of the same id pending (with no answer).
        let mut p = Player::with_background_pass(src.clone(), false);
        p.seek(0);
        let target = 2 * 19_999 + 2;
        p.go_to_gate(target);
        assert!(p.seeking());
        p.finish_work();
        let s = p.state();
        assert_eq!((s.replay.as_ref().unwrap().frame, s.selected), (target, 1));
        assert_eq!(s.active().map(|g| g.id.as_str()), Some("g19999"));
        assert!(s.sessions[0].gate("g19999").is_some());
        let answers = &s.replay.as_ref().unwrap().answers;
        assert!(answers["g19999"].starts_with("allowed once"), "{answers:?}");
    }

    /// `End` far from any copy runs between key presses with its progress shown; Esc cancels it
    /// and leaves the view where it was; run to its end it lands where a direct seek lands.
    #[test]
    fn a_long_seek_runs_off_the_key_handler_and_esc_cancels_it() {
        let total = 3 * LONG_SEEK;
        let mut p = Player::with_background_pass(Arc::new(long_recording(total)), false);
        let before = shape(&p);
        p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        assert!(p.seeking());
        assert_eq!(p.state().replay.as_ref().unwrap().frame, 1);
        p.work(Duration::from_millis(30));
        let status = p.state().status_line.clone().unwrap_or_default();
        assert!(
            status.starts_with(&format!("seeking from frame 1 to {total}: "))
                && status.ends_with("Esc cancels"),
            "{status}"
        );
        // Navigation keeps working on the frame shown while the seek runs.
        p.key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        assert!(p.seeking());
        p.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(!p.seeking());
        assert_eq!(p.state().replay.as_ref().unwrap().frame, 1);
        assert_eq!(shape(&p), before);
        assert_eq!(p.state().status_line.as_deref(), Some("seek cancelled"));
        p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        assert!(p.seeking());
        p.finish_work();
        assert_eq!(p.state().replay.as_ref().unwrap().frame, total);
        assert_eq!(shape(&p), shape(&fresh(total, total)));
        assert_eq!(p.state().status_line, None);
        // A gate jump far back is a long seek too, and shows its gate when it lands.
        p.key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
        p.finish_work();
        p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        p.finish_work();
        p.key(KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE));
        p.finish_work();
        let last_gate = (0..total).rev().find(|i| i % 5000 == 4999).unwrap();
        assert_eq!(p.state().replay.as_ref().unwrap().frame, last_gate + 1);
        assert_eq!(p.state().focus, Focus::Gate);
    }

    /// `End` pressed while the background pass is on its way there: the seek waits for the
    /// pass's copy of the end (no frame applied twice), says how far the pass got, and lands on
    /// the same state as replaying from the start.
    #[test]
    fn end_pressed_early_follows_the_background_pass() {
        let total = 6 * LONG_SEEK;
        let mut p = Player::with_background_pass(Arc::new(long_recording(total)), true);
        p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        assert!(p.seeking());
        assert!(p.following(), "waits for the background pass");
        assert!(p.only_waiting(), "the run loop polls instead of spinning");
        p.work(Duration::from_millis(30));
        assert!(
            p.job.as_ref().is_some_and(|j| j.feeder.is_none()),
            "no frame applied by the seek itself while it follows"
        );
        let status = p.state().status_line.clone().unwrap_or_default();
        assert!(
            status.starts_with(&format!("seeking from frame 1 to {total}: ")),
            "{status}"
        );
        // The replay's footer shows it (in place of the keys).
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 20)).unwrap();
        p.draw(&mut term, &crate::ui::theme::Theme::dark()).unwrap();
        let screen = format!("{:?}", term.backend().buffer());
        assert!(screen.contains("seeking from frame 1 to"), "{screen}");
        while p.state().replay.as_ref().unwrap().frame < total {
            std::thread::sleep(Duration::from_millis(1));
            p.work(SLICE);
        }
        assert_eq!(shape(&p), shape(&fresh(total, total)));
        assert_eq!(p.state().status_line, None);
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;
    use crate::record::Dir;

    /// The background pass indexes gates and answers exactly as the separate index pass does
    /// (it builds the index of long recordings from what it applies).
    #[test]
    fn the_pass_indexes_what_the_index_pass_does() {
        let mut frames = Vec::new();
        for i in 0..12_000usize {
            let (dir, text) = if i % 1500 == 700 {
                (
                    Dir::In,
                    format!(
                        r#"{{"type":"control_request","request_id":"g{i}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{"command":"echo {i}"}}}}}}"#
                    ),
                )
            } else if i % 1500 == 701 && i % 3000 != 701 {
                (
                    Dir::Out,
                    format!(
                        r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"g{}","response":{{"behavior":"deny","message":"no"}}}}}}"#,
                        i - 1
                    ),
                )
            } else {
                (
                    Dir::In,
                    format!(
                        r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"line {i}"}}]}},"parent_tool_use_id":null}}"#
                    ),
                )
            };
            frames.push(Frame {
                src_line: i + 2,
                ts: Some(i as u64 * 1000),
                dir,
                text,
            });
        }
        let src = super::tests::claude_recording(frames);
        let by_index = Mutex::new(GateIndex::default());
        build_index(&src, &by_index);
        let by_pass = Mutex::new(GateIndex::default());
        let store = Mutex::new(Store::default());
        background_pass(&src, &store, &AtomicBool::new(false), Some(&by_pass));
        let (a, b) = (
            by_index.into_inner().unwrap(),
            by_pass.into_inner().unwrap(),
        );
        assert_eq!(a.gate_frames.len(), 8);
        assert_eq!(a.answers.len(), 4, "{:?}", a.answers);
        assert_eq!(a.gate_frames, b.gate_frames);
        assert_eq!(a.answers, b.answers);
        assert_eq!((a.done, b.done), (12_000, 12_000));
    }
}

#[cfg(test)]
mod read_ahead_tests {
    use super::*;
    use crate::record::Dir;

    /// Frames long enough that the reader sends batches before each 1024 mark: the pass
    /// applies every frame once, in order, and its copy of the end is the state a plain
    /// replay reaches.
    #[test]
    fn batches_sent_early_apply_every_frame_once_in_order() {
        let pad = "x".repeat(1500);
        let frames = (0..5000usize)
            .map(|i| Frame {
                src_line: i + 2,
                ts: Some(i as u64),
                dir: Dir::In,
                text: format!(
                    r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"{i} {pad}"}}]}},"parent_tool_use_id":null}}"#
                ),
            })
            .collect();
        let src = super::tests::claude_recording(frames);
        let store = Mutex::new(Store::default());
        background_pass(&src, &store, &AtomicBool::new(false), None);
        let st = store.into_inner().unwrap();
        assert!(st.finished);
        assert_eq!(st.done, 5000);
        let end = &st.checkpoints[&5000];
        let mut plain = Feeder::for_source(&src);
        for i in 0..5000 {
            plain.apply_from(&src, i);
        }
        let rows = |f: &Feeder| -> Vec<String> {
            f.state.tree.nodes[0]
                .transcript
                .items
                .iter()
                .map(|r| r.kind.text().chars().take(6).collect())
                .collect()
        };
        assert_eq!(end.pos, 5000);
        assert_eq!(rows(end), rows(&plain));
        assert_eq!(rows(end).len(), 5000);
    }

    /// Each batch the reader sends holds at most `BATCH_BYTES` of text and one frame more,
    /// also once batches come back to be filled again (their slots hold the texts of the
    /// frames they carried before), and every frame comes once, in order, with its own text.
    #[test]
    fn batches_stay_within_their_bytes_when_they_go_round() {
        let pad = "y".repeat(40_000);
        let frames: Vec<Frame> = (0..3000usize)
            .map(|i| Frame {
                src_line: i + 2,
                ts: Some(i as u64),
                dir: Dir::In,
                // Long and short frames in runs, so recycled slots held other lengths.
                text: if (i / 300) % 2 == 0 {
                    format!(r#"{{"type":"x","n":{i},"pad":"{pad}"}}"#)
                } else {
                    format!(r#"{{"type":"x","n":{i}}}"#)
                },
            })
            .collect();
        let longest = frames.iter().map(|f| f.text.len()).max().unwrap_or(0);
        let src = super::tests::claude_recording(frames.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let (back, returned) = std::sync::mpsc::channel();
        let stop = AtomicBool::new(false);
        let waits = std::sync::atomic::AtomicUsize::new(0);
        let mut next = 0;
        std::thread::scope(|scope| {
            scope.spawn(|| pass::read_ahead(&src, 3000, &stop, tx, returned, &waits));
            for batch in rx.iter() {
                let bytes: usize = batch.iter().map(|(_, f, _)| f.text.len()).sum();
                assert!(
                    bytes <= pass::BATCH_BYTES + longest,
                    "a batch of {bytes} bytes in {} frames",
                    batch.len()
                );
                for (i, f, _) in &batch {
                    assert_eq!(*i, next);
                    assert_eq!(f.text, frames[next].text, "frame {next}");
                    next += 1;
                }
                let _ = back.send(batch);
            }
        });
        assert_eq!(next, 3000);
    }

    /// The reader leaves frames for the pass to parse while the pass waits on it, at most
    /// twelve in sixteen, parses them all again once the pass keeps the queue full, and never
    /// leaves any to a pass that does not wait.
    #[test]
    fn the_reader_leaves_parsing_to_a_waiting_pass_and_takes_it_back() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let frames: Vec<Frame> = (0..60_000usize)
            .map(|i| Frame {
                src_line: i + 2,
                ts: Some(i as u64),
                dir: Dir::In,
                text: format!(r#"{{"type":"pong","n":{i},"pad":"{}"}}"#, "z".repeat(300)),
            })
            .collect();
        let src = Loaded {
            format: Format::Recording,
            backend: crate::core::BackendKind::Iii,
            header: None,
            frames,
        };
        let left = |batch: &pass::Batch| batch.iter().filter(|(_, _, p)| p.is_none()).count();
        // Shares of each batch left unparsed, for a pass that waits before its first
        // `waiting` batches (the reader is the slower) and is slow after them (the queue of
        // `queue` fills).
        let run = |queue: usize, waiting: usize| {
            let (tx, rx) = std::sync::mpsc::sync_channel(queue);
            let (_back, returned) = std::sync::mpsc::channel();
            let (stop, waits) = (AtomicBool::new(false), AtomicUsize::new(0));
            let mut shares = Vec::new();
            std::thread::scope(|scope| {
                scope.spawn(|| pass::read_ahead(&src, 60_000, &stop, tx, returned, &waits));
                loop {
                    if shares.len() < waiting {
                        waits.fetch_add(1, Ordering::Relaxed);
                    } else {
                        std::thread::sleep(std::time::Duration::from_millis(3));
                    }
                    let Ok(batch) = rx.recv() else { break };
                    shares.push(left(&batch) as f64 / batch.len() as f64);
                }
            });
            shares
        };
        // Waiting throughout, the queue never full: up to twelve in sixteen (a short batch
        // rounds up a little).
        let shares = run(10_000, usize::MAX);
        assert_eq!(shares[0], 0.0, "nothing is left before the pass has waited");
        let most = shares.iter().copied().fold(0.0, f64::max);
        assert!((0.7..=0.77).contains(&most), "{shares:?}");
        // Waiting, then slow: the reader takes the parsing back.
        let shares = run(6, 30);
        assert_eq!(*shares.last().unwrap(), 0.0, "taken back: {shares:?}");
        // A pass that never waits: every frame is parsed ahead.
        let (tx, rx) = std::sync::mpsc::sync_channel(6);
        let (_back, returned) = std::sync::mpsc::channel();
        let (stop, waits) = (AtomicBool::new(false), AtomicUsize::new(0));
        let mut unparsed = 0;
        std::thread::scope(|scope| {
            scope.spawn(|| pass::read_ahead(&src, 20_000, &stop, tx, returned, &waits));
            for batch in rx.iter() {
                unparsed += left(&batch);
            }
        });
        assert_eq!(unparsed, 0);
    }
}
