//! The background pass over the whole recording (evenly spaced copies of the state, and the
//! gate index of a long recording), its reader thread, and the separate index pass.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{GateIndex, Store, background_spacing, clock};
use crate::core::state::{Focus, GateRef, SessionId};
use crate::core::transcript::packed::{self, Deferred};
use crate::record::Dir;
use crate::replay::feed::{Feeder, Seen};
use crate::replay::load::Frame;
use crate::replay::mapper::{Parsed, Parser};
use crate::replay::source::FrameSource;

/// Replay the whole recording once in the background, keeping evenly spaced copies of the state
/// and one of the end, so `End` and far seeks start close to where they go.
pub(super) fn background_pass(
    src: &dyn FrameSource,
    store: &Mutex<Store>,
    stop: &AtomicBool,
    index: Option<&Mutex<GateIndex>>,
) {
    // The chunks this thread packs are compressed by the reader, in the time it would wait
    // for this thread (see `Handoff`). However the pass ends (a panic included), what is
    // left is compressed here, after the guard below has said the pass is over.
    let handoff = Handoff::default();
    struct Defer<'a>(&'a Handoff);
    impl Drop for Defer<'_> {
        fn drop(&mut self) {
            packed::defer_compression(false).run();
            self.0.run();
        }
    }
    let _ = packed::defer_compression(true);
    let _defer = Defer(&handoff);
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
    // The frames are read, decoded (the entry unescaped) and parsed by their backend's
    // parser on a second thread, a batch ahead: this thread only maps and reduces. At most
    // eight batches are alive (six queued, one being mapped, one being read): with two
    // queued, either thread often waited on the other (a core idle a tenth of the time)
    // when a run of long frames slowed one side; eight hold a few megabytes.
    let (tx, rx) = std::sync::mpsc::sync_channel(6);
    let (back, returned) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| read_ahead(src, total, stop, tx, returned, &handoff));
        while feeder.pos < total {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // The next frames, up to the next progress mark (a divisor of the spacing) or
            // fewer when they are long. None when the reader is gone (a panic): the pass ends
            // where it is.
            let next = match rx.try_recv() {
                Ok(b) => Ok(b),
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    handoff.waits.fetch_add(1, Ordering::Relaxed);
                    // The reader is behind: its compression is done here meanwhile.
                    handoff.run();
                    rx.recv()
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
            };
            let Ok(mut batch) = next else {
                return;
            };
            for (i, frame, parsed) in &mut batch {
                if index.is_none() {
                    feeder.apply_seeing(src.lane(*i), frame, parsed.as_mut(), None);
                    continue;
                }
                feeder.apply_seeing(src.lane(*i), frame, parsed.as_mut(), Some(&mut seen));
                note_seen(&mut seen, *i, frame.ts, &mut gates, &mut answers);
            }
            let _ = back.send(batch);
            handoff.hand_over(packed::take_deferred());
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

/// Frames in sixteen the reader leaves to the pass after a send: half as many when the queue
/// was full (the pass is the slower), one more (up to twelve) when the pass waited since the
/// last send (the reader is).
pub(super) fn next_leave(leave: usize, full: bool, pass_waited: bool) -> usize {
    let leave = if full { leave / 2 } else { leave };
    if pass_waited {
        (leave + 1).min(12)
    } else {
        leave
    }
}

/// What the pass and its reader thread tell each other besides the batches.
#[derive(Default)]
pub(super) struct Handoff {
    /// Times the pass found no batch ready: the reader then leaves more frames for the
    /// pass to parse (see `read_ahead`).
    pub(super) waits: AtomicUsize,
    /// Chunks the pass packed, for the reader to compress before it builds its next batch
    /// or waits for room in the queue (or for the pass, while it waits for a batch); the
    /// pass runs what is left when it ends.
    compress: Mutex<Vec<Deferred>>,
}

impl Handoff {
    fn hand_over(&self, d: Deferred) {
        if !d.is_empty() {
            self.compress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(d);
        }
    }

    /// Compress what was left, on this thread.
    fn run(&self) {
        let work = std::mem::take(&mut *self.compress.lock().unwrap_or_else(|e| e.into_inner()));
        for d in work {
            d.run();
        }
    }
}

/// Text a batch holds before it is sent early: batches in flight, and the parsed frames they
/// carry, stay small however long the frames. What the mapping leaves of a batch's parsed
/// frames lives until the reader takes the batch back (its next batch): about two batches
/// more than the eight in flight.
pub(super) const BATCH_BYTES: usize = 256 << 10;

/// A batch of frames with their indices and what their backend's parser made of them.
pub(super) type Batch = Vec<(usize, Frame, Option<Parsed>)>;

/// The background pass's reader: frames `0..total` in batches ending at multiples of 1024 (or
/// sooner, past `BATCH_BYTES` of text), each frame's text taken from the source in exchange
/// for a buffer of a batch the pass handed back (no allocation and no copy per frame once
/// the first batches went round; a buffer a long frame grew is not kept for the next) and
/// parsed by its backend's parser, if it has one. Ends when the pass stops listening.
///
/// The two threads share the parsing: when the pass found no batch ready since the last one
/// was sent (`waits` moved), this thread is the slower and leaves one more frame in sixteen
/// unparsed, for the pass to parse as it maps (up to twelve); when the queue was full, the
/// pass is the slower and it leaves half as many. The pass waits in short runs (where a run
/// of long frames slows this thread) and is the slower in between: taking one back per full
/// queue left it parsing a tenth of an iii replay's frames while this thread sat blocked a
/// sixth of the time.
pub(super) fn read_ahead(
    src: &dyn FrameSource,
    total: usize,
    stop: &AtomicBool,
    tx: std::sync::mpsc::SyncSender<Batch>,
    returned: std::sync::mpsc::Receiver<Batch>,
    handoff: &Handoff,
) {
    let waits = &handoff.waits;
    /// A recycled text buffer larger than this is dropped rather than kept for a short frame.
    const KEEP_BUFFER: usize = 64 << 10;
    let parsers: Vec<Option<Parser>> = src
        .lanes()
        .iter()
        .map(|l| crate::registry::parser(l.backend))
        .collect();
    // A long frame is left to the mapping, which parses it when it comes to it: parsed
    // trees in flight stay a few times the batches' text, whatever a recording holds.
    let parse = |i: usize, f: &Frame| {
        let parser = (*parsers.get(src.lane(i))?)?;
        (matches!(f.dir, Dir::In | Dir::Out) && f.text.len() <= KEEP_BUFFER)
            .then(|| parser(f.dir, &f.text))
            .flatten()
    };
    // Frames in sixteen left to the pass, and the pass's waits seen so far.
    let mut leave = 0usize;
    let mut seen_waits = 0usize;
    let send = |batch: Batch, leave: &mut usize, seen_waits: &mut usize| {
        let w = waits.load(Ordering::Relaxed);
        let mut full = false;
        let result = match tx.try_send(batch) {
            Ok(()) => Ok(()),
            Err(std::sync::mpsc::TrySendError::Full(b)) => {
                full = true;
                // The pass is behind: its compression is done here meanwhile.
                handoff.run();
                tx.send(b).map_err(|_| ())
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => Err(()),
        };
        *leave = next_leave(*leave, full, w != *seen_waits);
        *seen_waits = w;
        result
    };
    let mut pos = 0;
    let mut gone = false;
    // Batches the pass handed back. What the mapping left of their parsed frames is dropped
    // as soon as they come: here, where it was allocated, and not held until the slot is
    // used again.
    let spare = std::cell::RefCell::new(Vec::<Batch>::new());
    let next_batch = || {
        handoff.run();
        let mut spare = spare.borrow_mut();
        spare.extend(returned.try_iter().map(|mut b| {
            b.iter_mut().for_each(|(_, _, p)| *p = None);
            b
        }));
        spare.pop().unwrap_or_default()
    };
    while pos < total && !gone && !stop.load(Ordering::Relaxed) {
        let to = ((pos / 1024 + 1) * 1024).min(total);
        let mut batch: Batch = next_batch();
        let (mut n, mut bytes) = (0, 0);
        src.scan(pos, to, &mut |i, f| {
            if gone {
                return;
            }
            let parsed = if n % 16 < leave { None } else { parse(i, f) };
            // Counted before the text changes hands below.
            let len = f.text.len();
            match batch.get_mut(n) {
                Some((at, d, p)) => {
                    *at = i;
                    d.src_line = f.src_line;
                    d.ts = f.ts;
                    d.dir = f.dir;
                    // The frame's text is taken, and the source decodes the next frame into
                    // this slot's old buffer (unless a long frame grew it).
                    std::mem::swap(&mut d.text, &mut f.text);
                    if f.text.capacity() > KEEP_BUFFER {
                        f.text = String::new();
                    }
                    *p = parsed;
                }
                None => {
                    let frame = Frame {
                        src_line: f.src_line,
                        ts: f.ts,
                        dir: f.dir,
                        text: std::mem::take(&mut f.text),
                    };
                    batch.push((i, frame, parsed));
                }
            }
            n += 1;
            bytes += len;
            if bytes > BATCH_BYTES {
                batch.truncate(n);
                gone = send(
                    std::mem::replace(&mut batch, next_batch()),
                    &mut leave,
                    &mut seen_waits,
                )
                .is_err();
                (n, bytes) = (0, 0);
            }
        });
        batch.truncate(n);
        if gone || (!batch.is_empty() && send(batch, &mut leave, &mut seen_waits).is_err()) {
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

/// Index frames `from..` of `src` into `index`, publishing progress every few thousand frames.
pub(super) fn build_index(src: &dyn FrameSource, index: &Mutex<GateIndex>) {
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
