//! `switchboard replay FILE`: the recording fed through the live mapping and reducer, one
//! frame at a time, with play/pause, stepping, gate jumps, speed and a frame inspector.
//! `switchboard replay MANIFEST` plays a whole workspace the same way: its recordings merged
//! into one timeline (`workspace::WorkspaceSource`), each frame fed to its own session.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::core::input::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

use super::feed::{Feeder, Seen};
use super::load::{Format, Frame, Loaded};
use super::source::{FrameSource, IndexedFile};
use crate::core::state::{Focus, GateRef, Overlay, ReplayView, SessionId};
use crate::core::text::neutralize;
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

/// The replay's own keys, for `?`: its binding table, then what the live keys do here.
fn replay_keys() -> String {
    let none = std::collections::HashMap::new();
    let mut out = String::new();
    for (keys, desc) in crate::core::bindings::help_rows(&none, &crate::core::bindings::REPLAY) {
        out.push_str(&format!("{keys:<10} {desc}\n"));
    }
    out.push_str(
        "\nTab, arrows, Enter, PgUp/PgDn, / search, v detail and f focus work as live;
nothing is ever sent: gate cards show the recorded answer instead of keys.
A workspace manifest plays every session's recording merged by time: ] [ and g
cross sessions, and the inspector names the session of each frame.",
    );
    out
}

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

/// Replay the whole recording once in the background, keeping evenly spaced copies of the state
/// and one of the end, so `End` and far seeks start close to where they go.
fn background_pass(
    src: &dyn FrameSource,
    store: &Mutex<Store>,
    stop: &AtomicBool,
    index: Option<&Mutex<GateIndex>>,
) {
    // However the pass ends (a panic included), a seek waiting for it is told to stop waiting.
    struct Done<'a>(&'a Mutex<Store>);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
            st.finished = true;
        }
    }
    let _done = Done(store);
    let total = src.len();
    let spacing = background_spacing(total);
    let mut feeder = Feeder::for_source(src);
    feeder.state.focus = Focus::Transcript;
    // The gate index, when this pass builds it: from what it applies, published with its
    // progress (a second mapping of every frame on another thread cost a core).
    let mut seen = Seen::default();
    let (mut gates, mut answers) = (Vec::new(), Vec::new());
    // The frames are read and decoded (the entry unescaped) on a second thread, a batch
    // ahead: this thread only maps and reduces.
    let (tx, rx) = std::sync::mpsc::sync_channel(4);
    let (back, returned) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| read_ahead(src, total, stop, tx, returned));
        while feeder.pos < total {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // The next frames, up to the next progress mark (a divisor of the spacing) or
            // fewer when they are long. None when the reader is gone (a panic): the pass ends
            // where it is.
            let Ok(batch) = rx.recv() else {
                return;
            };
            for (i, frame) in &batch {
                if index.is_none() {
                    feeder.apply_to(src.lane(*i), frame);
                    continue;
                }
                feeder.apply_seeing(src.lane(*i), frame, Some(&mut seen));
                note_seen(&mut seen, *i, frame.ts, &mut gates, &mut answers);
            }
            let _ = back.send(batch);
            let pos = feeder.pos;
            if let Some(ix) = index {
                let mut ix = ix.lock().expect("index lock");
                ix.gate_frames.append(&mut gates);
                ix.answers.extend(answers.drain(..));
                ix.done = pos;
            }
            let keep = pos.is_multiple_of(spacing) || pos == total;
            if keep || pos.is_multiple_of(1024) {
                let copy = keep.then(|| feeder.clone());
                let mut st = store.lock().expect("checkpoint store");
                if let Some(c) = copy {
                    st.checkpoints.insert(pos, c);
                }
                st.done = pos;
            }
        }
        // Dropping the receiver ends the reader if it is still at work.
        drop(rx);
        let mut st = store.lock().expect("checkpoint store");
        st.done = total;
        st.finished = true;
    });
}

/// A batch of frames with their indices.
type Batch = Vec<(usize, Frame)>;

/// The background pass's reader: frames `0..total` in batches ending at multiples of 1024 (or
/// sooner, past `BATCH_BYTES` of text), each frame's text copied into a buffer of a batch the
/// pass handed back (no allocation per frame once the first batches went round; a buffer a
/// long frame grew is not kept for the next). Ends when the pass stops listening.
fn read_ahead(
    src: &dyn FrameSource,
    total: usize,
    stop: &AtomicBool,
    tx: std::sync::mpsc::SyncSender<Batch>,
    returned: std::sync::mpsc::Receiver<Batch>,
) {
    /// Text a batch holds before it is sent early: batches in flight stay a few MiB however
    /// long the frames.
    const BATCH_BYTES: usize = 1 << 20;
    /// A recycled text buffer larger than this is dropped rather than kept for a short frame.
    const KEEP_BUFFER: usize = 64 << 10;
    let mut pos = 0;
    let mut gone = false;
    let next_batch = || returned.try_recv().unwrap_or_default();
    while pos < total && !gone && !stop.load(Ordering::Relaxed) {
        let to = ((pos / 1024 + 1) * 1024).min(total);
        let mut batch: Batch = next_batch();
        let (mut n, mut bytes) = (0, 0);
        src.scan(pos, to, &mut |i, f| {
            if gone {
                return;
            }
            match batch.get_mut(n) {
                Some((at, d)) => {
                    *at = i;
                    d.src_line = f.src_line;
                    d.ts = f.ts;
                    d.dir = f.dir;
                    if d.text.capacity() > KEEP_BUFFER.max(f.text.len()) {
                        d.text = f.text.clone();
                    } else {
                        d.text.clone_from(&f.text);
                    }
                }
                None => batch.push((i, f.clone())),
            }
            n += 1;
            bytes += f.text.len();
            if bytes > BATCH_BYTES {
                batch.truncate(n);
                gone = tx
                    .send(std::mem::replace(&mut batch, next_batch()))
                    .is_err();
                (n, bytes) = (0, 0);
            }
        });
        batch.truncate(n);
        if gone || (!batch.is_empty() && tx.send(batch).is_err()) {
            return;
        }
        pos = to;
    }
}

/// Record in the index what applying frame `i` did: a gate it opened, the answers it gave.
fn note_seen(
    seen: &mut Seen,
    i: usize,
    ts: Option<u64>,
    gates: &mut Vec<usize>,
    answers: &mut Vec<(GateRef, String)>,
) {
    if seen.opened_gate {
        gates.push(i);
    }
    for a in seen.answered.drain(..) {
        let key = GateRef {
            session: seen.session,
            id: a.gate_id,
        };
        answers.push((key, format!("{} at {}", a.label, clock(ts))));
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

/// Index frames `from..` of `src` into `index`, publishing progress every few thousand frames.
fn build_index(src: &dyn FrameSource, index: &Mutex<GateIndex>) {
    // One mapping per session, as the feeder has: lane `l` is session `SessionId(l)`.
    let mut mappers: Vec<_> = src
        .lanes()
        .iter()
        .map(|l| crate::registry::replay_mapper(l.backend))
        .collect();
    let mut gates = Vec::new();
    let mut answers = Vec::new();
    let total = src.len();
    let mut from = 0;
    while from < total {
        let to = (from + 4096).min(total);
        src.scan(from, to, &mut |i, f| {
            let lane = src.lane(i);
            let Some(mapper) = mappers.get_mut(lane) else {
                return;
            };
            let session = SessionId(lane as u32);
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
                        let key = GateRef {
                            session,
                            id: a.gate_id,
                        };
                        answers.push((key, format!("{} at {}", a.label, clock(f.ts))));
                    }
                }
                _ => {}
            }
        });
        let mut ix = index.lock().expect("index lock");
        ix.gate_frames.append(&mut gates);
        ix.answers.extend(answers.drain(..));
        ix.done = to;
        from = to;
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

    /// Whether replay work is pending (a long seek, or a copy being prepared).
    pub fn has_work(&self) -> bool {
        self.job.is_some() || self.spare_making.is_some()
    }

    /// Whether the only pending work is a copy being made on a helper thread (the run loop then
    /// polls it now and then instead of spinning).
    pub fn only_waiting(&self) -> bool {
        self.following() || (self.job.is_none() && self.spare_making.is_some())
    }

    /// A long seek that the background pass reaches first (`End` pressed early, say): it waits
    /// for the pass's copy instead of applying the same frames a second time, on a core a
    /// small machine does not have to spare.
    fn following(&self) -> bool {
        let Some(job) = self.job.as_ref().filter(|j| j.seek) else {
            return false;
        };
        let total = self.total();
        let store = self.store.lock().expect("checkpoint store");
        if store.finished {
            return false;
        }
        let at = job.feeder.as_ref().map_or(self.feeder.pos, |f| f.pos);
        let spacing = background_spacing(total);
        // The pass keeps a copy at every multiple of its spacing and at the end.
        let copy = if job.target == total {
            total
        } else {
            job.target / spacing * spacing
        };
        // Wait while the pass has not made that copy yet and is no further behind than a
        // step: racing it only halves both. A copy already made, or a pass far behind, is not
        // waited for.
        let pass = store.done;
        copy > at + CHECKPOINT_SPACING && pass < copy && pass + CHECKPOINT_SPACING >= at
    }

    /// Take back the spare copy when the helper thread is done (`wait`: block until it is).
    fn poll_spare(&mut self, wait: bool) {
        let Some((pos, rx)) = &self.spare_making else {
            return;
        };
        let got = if wait {
            rx.recv()
                .map_err(|_| std::sync::mpsc::TryRecvError::Disconnected)
        } else {
            rx.try_recv()
        };
        match got {
            Ok((original, copy)) => {
                let pos = *pos;
                if let Some(original) = original {
                    self.local.insert(pos, original);
                }
                self.spare = Some((pos, copy));
                self.spare_making = None;
                // The viewer may have moved on while this copy was made (a seek lands while
                // the previous position's spare is still in the making): make the one that
                // serves where it stands now, or the next step back has none.
                self.prepare_spare();
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
            // The helper died with the copy: it is prepared again like any missing copy.
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.spare_making = None;
                self.prepare_step_back();
            }
        }
    }

    /// Have a spare of the copy just behind the viewer made off this thread.
    fn prepare_spare(&mut self) {
        let behind = self.feeder.pos.saturating_sub(1) / CHECKPOINT_SPACING * CHECKPOINT_SPACING;
        if self.spare_making.is_some() || self.spare.as_ref().is_some_and(|(p, _)| *p == behind) {
            return;
        }
        self.spare = None;
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(original) = self.local.remove(&behind) {
            std::thread::spawn(move || {
                let copy = original.clone();
                let _ = tx.send((Some(original), copy));
            });
        } else if behind > 0 && self.stored(behind) {
            let store = self.store.clone();
            std::thread::spawn(move || {
                let copy = store.lock().expect("checkpoint store").checkpoints[&behind].clone();
                let _ = tx.send((None, copy));
            });
        } else {
            return;
        }
        self.spare_making = Some((behind, rx));
    }

    /// When the copy a seek to `n` should start from is on the helper thread (being copied for
    /// a spare), wait for it: that takes less than replaying from an older one.
    fn await_copy_for(&mut self, n: usize) {
        let away = self.spare_making.as_ref().map(|(p, _)| *p);
        let wait = away.is_some_and(|p| p <= n && p > self.start_pos(n));
        self.poll_spare(wait);
    }

    /// The spare, when it is where a seek to `n` would start anyway.
    fn take_spare_for(&mut self, n: usize) -> Option<Feeder> {
        let p = self.spare.as_ref()?.0;
        let here_better = self.feeder.pos <= n && self.feeder.pos >= p;
        if p <= n && !here_better && self.start_pos(n) == p {
            self.spare.take().map(|(_, f)| f)
        } else {
            None
        }
    }

    /// Whether a seek the viewer asked for is still running.
    pub fn seeking(&self) -> bool {
        self.job.as_ref().is_some_and(|j| j.seek)
    }

    /// Run all pending replay work to its end (tests, bench).
    pub fn finish_work(&mut self) {
        while self.has_work() {
            if self.following() {
                std::thread::sleep(Duration::from_millis(1));
                self.work(Duration::ZERO);
            } else if self.only_waiting() {
                self.poll_spare(true);
            } else {
                self.work(Duration::from_secs(3600));
            }
        }
    }

    /// After a gate jump: show the gate that frame opened (the newest pending one of the
    /// session the frame was fed to, which becomes the session on screen).
    fn show_newest_gate(&mut self) {
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

    pub fn total(&self) -> usize {
        self.source.len()
    }

    /// Show the state after the first `n` frames, now (inside the caller: keys use `go`).
    pub fn seek(&mut self, n: usize) {
        let n = n.min(self.total());
        if self.seeking() {
            self.job = None;
            self.feeder.state.status_line = None;
        }
        self.await_copy_for(n);
        if let Some(start) = self.take_spare_for(n).or_else(|| self.start_for(n)) {
            self.show(start);
        }
        let mut feeder = std::mem::replace(
            &mut self.feeder,
            Feeder::with(crate::core::BackendKind::Claude, 0),
        );
        self.advance(&mut feeder, n, usize::MAX);
        self.feeder = feeder;
        self.landed();
    }

    /// Seek for a key press: short seeks at once, long ones as work in slices between keys,
    /// with progress in the footer; the view stays where it is until the seek lands.
    fn go(&mut self, n: usize) {
        self.go_then(n, false);
    }

    /// `go`, then show the gate frame `n` opened.
    fn go_to_gate(&mut self, n: usize) {
        self.go_then(n, true);
        if !self.seeking() {
            self.show_newest_gate();
        }
    }

    fn go_then(&mut self, n: usize, gate: bool) {
        let n = n.min(self.total());
        self.await_copy_for(n);
        if n - self.start_pos(n) <= LONG_SEEK {
            return self.seek(n);
        }
        self.job = Some(Job {
            feeder: None,
            target: n,
            seek: true,
            gate,
        });
        self.progress();
    }

    /// Where a seek to `n` would start: the state on screen or the closest copy before `n`.
    fn start_pos(&self, n: usize) -> usize {
        let here = (self.feeder.pos <= n).then_some(self.feeder.pos);
        let local = self.local.range(..=n).next_back().map(|(p, _)| *p);
        let store = self.store.lock().expect("checkpoint store");
        let stored = store.checkpoints.range(..=n).next_back().map(|(p, _)| *p);
        [here, local, stored]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(0)
    }

    /// A copy of the state to start from for frame `n`, when that is closer than the state on
    /// screen (`None`: go on from the state on screen).
    fn start_for(&self, n: usize) -> Option<Feeder> {
        let here = (self.feeder.pos <= n).then_some(self.feeder.pos);
        let local = self.local.range(..=n).next_back().map(|(p, _)| *p);
        let store = self.store.lock().expect("checkpoint store");
        let stored = store.checkpoints.range(..=n).next_back().map(|(p, _)| *p);
        let best = [local, stored].into_iter().flatten().max();
        match (here, best) {
            (Some(h), Some(b)) if h >= b => None,
            (Some(_), None) => None,
            (_, Some(b)) if local == Some(b) => Some(self.local[&b].clone()),
            (_, Some(b)) => Some(store.checkpoints[&b].clone()),
            (None, None) => Some(Feeder::for_source(self.source.as_ref())),
        }
    }

    /// Put `f` on screen in place of the current state, keeping what the viewer set up (the
    /// session and node shown, collapsed sessions, overlay, search, focus).
    fn show(&mut self, mut f: Feeder) {
        let st = &mut self.feeder.state;
        let (node, focus, size) = (st.selected_node, st.focus, st.size);
        let (selected, collapsed): (usize, Vec<bool>) = (
            st.selected,
            st.sessions.iter().map(|s| s.collapsed).collect(),
        );
        if selected != f.state.selected && selected < f.state.sessions.len() {
            f.state.select_session(selected, 0);
        }
        for (s, c) in f.state.sessions.iter_mut().zip(collapsed) {
            s.collapsed = c;
        }
        let overlay = st.overlay.take();
        let search = st.search.take();
        let (focus_root, side_by_side, status) =
            (st.focus_root, st.side_by_side, st.status_line.take());
        f.state.size = size;
        f.state.focus = if focus == Focus::Prompt {
            Focus::Transcript
        } else {
            focus
        };
        let st = &mut f.state;
        if node < st.tree.nodes.len() {
            st.selected_node = node;
        }
        st.overlay = overlay;
        st.search = search;
        st.focus_root = focus_root.filter(|r| *r < st.tree.nodes.len());
        st.side_by_side = side_by_side;
        st.status_line = status;
        self.feeder = f;
    }

    /// Apply frames to `feeder` up to `n` (at most `budget` of them), copying the state at each
    /// multiple of `CHECKPOINT_SPACING` passed close before `n`.
    fn advance(&mut self, feeder: &mut Feeder, n: usize, budget: usize) {
        let stop = n.min(feeder.pos.saturating_add(budget));
        while feeder.pos < stop {
            feeder.apply_from(self.source.as_ref(), feeder.pos);
            let pos = feeder.pos;
            if pos.is_multiple_of(CHECKPOINT_SPACING)
                && n - pos < 2 * CHECKPOINT_SPACING
                && !self.local.contains_key(&pos)
                && !self.stored(pos)
            {
                self.local.insert(pos, feeder.clone());
            }
        }
    }

    fn stored(&self, pos: usize) -> bool {
        let store = self.store.lock().expect("checkpoint store");
        store.checkpoints.contains_key(&pos)
    }

    /// After a seek landed: drop copies far from here, plan the next one needed to step back,
    /// show the view.
    fn landed(&mut self) {
        let pos = self.feeder.pos;
        let keep = pos.saturating_sub(3 * CHECKPOINT_SPACING)..=pos + CHECKPOINT_SPACING;
        self.local.retain(|p, _| keep.contains(p));
        if self.feeder.pos == self.total() {
            self.playing = false;
        }
        self.prepare_step_back();
        self.prepare_spare();
        self.sync_view();
    }

    /// Stepping back from here must find a copy at most `CHECKPOINT_SPACING` frames behind:
    /// keep one at the multiple just behind and the one before it, preparing a missing one
    /// between key presses.
    fn prepare_step_back(&mut self) {
        if self.job.is_some() {
            return;
        }
        let behind = self.feeder.pos.saturating_sub(1) / CHECKPOINT_SPACING * CHECKPOINT_SPACING;
        for want in [behind, behind.saturating_sub(CHECKPOINT_SPACING)] {
            let making = self.spare_making.as_ref().is_some_and(|(p, _)| *p == want);
            if want == 0 || making || self.local.contains_key(&want) || self.stored(want) {
                continue;
            }
            self.job = Some(Job {
                feeder: None,
                target: want,
                seek: false,
                gate: false,
            });
            return;
        }
    }

    /// Do up to `budget` of pending replay work. Returns whether the view changed.
    pub fn work(&mut self, budget: Duration) -> bool {
        self.poll_spare(false);
        if self.following() {
            return self.progress();
        }
        let Some(mut job) = self.job.take() else {
            return false;
        };
        let deadline = Instant::now() + budget;
        let mut feeder = match job.feeder.take() {
            // The background pass may have got closer meanwhile.
            Some(f) if self.start_pos(job.target) > f.pos + CHECKPOINT_SPACING => self
                .start_for(job.target)
                .unwrap_or_else(|| self.feeder.clone()),
            Some(f) => f,
            None => self
                .start_for(job.target)
                .unwrap_or_else(|| self.feeder.clone()),
        };
        while feeder.pos < job.target && Instant::now() < deadline {
            self.advance(&mut feeder, job.target, 256);
        }
        let done = feeder.pos >= job.target;
        job.feeder = Some(feeder);
        if !done {
            self.job = Some(job);
            if self.seeking() {
                self.progress();
                return true;
            }
            return false;
        }
        let feeder = job.feeder.take().expect("set above");
        if job.seek {
            self.feeder.state.status_line = None;
            self.show(feeder);
            self.landed();
            if job.gate {
                self.show_newest_gate();
            }
            true
        } else {
            // `advance` kept a copy at the target already unless one was there.
            self.local.entry(feeder.pos).or_insert(feeder);
            self.prepare_step_back();
            self.prepare_spare();
            false
        }
    }

    /// The footer's note while a seek runs (how far it, or the background pass it waits for,
    /// got). Whether the note changed.
    fn progress(&mut self) -> bool {
        let Some(job) = &self.job else { return false };
        let (from, to) = (self.feeder.pos, job.target);
        let mut at = job.feeder.as_ref().map_or(from, |f| f.pos);
        if self.following() {
            let store = self.store.lock().expect("checkpoint store");
            at = at.max(store.done.min(to));
        }
        let pct = at * 100 / to.max(1);
        let note = Some(format!(
            "seeking from frame {from} to {to}: {pct}% · Esc cancels"
        ));
        let changed = self.feeder.state.status_line != note;
        self.feeder.state.status_line = note;
        changed
    }

    /// Copies currently kept for stepping back, local and background (for tests and the bench).
    pub fn checkpoint_positions(&self) -> Vec<usize> {
        let store = self.store.lock().expect("checkpoint store");
        let mut v: Vec<usize> = self
            .local
            .keys()
            .chain(store.checkpoints.keys())
            .copied()
            .collect();
        v.sort();
        v.dedup();
        v
    }

    fn sync_view(&mut self) {
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
    fn follow_selection(&mut self, before: SessionId) {
        if self.feeder.state.shown().id == before {
            return;
        }
        let answers = self.answers_shown();
        if let Some(r) = self.feeder.state.replay.as_mut() {
            r.answers = answers;
        }
    }

    /// A mouse event: navigation as live (nothing answers in a replay).
    pub fn mouse(&mut self, m: crate::core::input::MouseEvent) {
        let before = self.feeder.state.shown().id;
        let _ = update(&mut self.feeder.state, Msg::Mouse(m));
        self.follow_selection(before);
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
        let before = self.feeder.state.shown().id;
        self.on_key(key);
        self.follow_selection(before);
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.code == KeyCode::Esc && self.seeking() {
            // The view never left the frame it showed: cancelling just stops the work.
            self.job = None;
            self.feeder.state.status_line = Some("seek cancelled".into());
            self.prepare_step_back();
            return;
        }
        let state = &mut self.feeder.state;
        // The inspector follows the frame: stepping keys work behind it.
        let stepping = matches!(key.code, KeyCode::Char('.') | KeyCode::Char(','));
        if state.overlay.is_some()
            && !(stepping && matches!(state.overlay, Some(Overlay::Text { .. })))
        {
            // The inbox lists and opens the recorded gates; its marks and batch answers would
            // answer them in the replayed state.
            let inbox_nav = matches!(
                key.code,
                KeyCode::Esc
                    | KeyCode::Char('q' | 'I' | 'j' | 'k')
                    | KeyCode::Up
                    | KeyCode::Down
                    | KeyCode::Home
                    | KeyCode::End
                    | KeyCode::Enter
            );
            if matches!(state.overlay, Some(Overlay::Inbox)) && !inbox_nav {
                state.status_line = Some("read-only replay: the inbox only shows gates".into());
                return;
            }
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
                self.go(self.feeder.pos + 1);
            }
            KeyCode::Char(',') => {
                self.playing = false;
                self.go(self.feeder.pos.saturating_sub(1));
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
                    Some(i) => self.go_to_gate(i + 1),
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
                    Some(i) => self.go_to_gate(i + 1),
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
            KeyCode::End => {
                self.playing = false;
                self.go(self.total());
            }
            KeyCode::Char('?') => {
                self.feeder.state.overlay_scroll = 0;
                self.feeder.state.overlay = Some(Overlay::Text {
                    title: " replay keys (Esc closes) ".into(),
                    body: replay_keys(),
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
            // Closing, restarting or starting a session would change the recorded workspace.
            KeyCode::Char('x' | 'X') if state.focus != Focus::Gate => {
                state.status_line = Some("read-only replay: sessions stay as recorded".into())
            }
            KeyCode::Char('n') if ctrl => {
                state.status_line = Some("read-only replay: no session to start".into())
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
    use crossterm::event::EventStream;
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
                terminal.draw(|f| crate::ui::render(player.state(), &theme, f))?;
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
        term.draw(|f| crate::ui::render(p.state(), &crate::ui::theme::Theme::dark(), f))
            .unwrap();
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
}
