//! Seeking: copies of the state kept near the viewer and the spare made on a helper thread, so
//! stepping back replays few frames; long seeks run as work in slices between key presses.

use std::time::{Duration, Instant};

use super::{CHECKPOINT_SPACING, Job, LONG_SEEK, Player, background_spacing};
use crate::core::state::Focus;
use crate::replay::feed::Feeder;

impl Player {
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
    pub(super) fn following(&self) -> bool {
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
    pub(super) fn go(&mut self, n: usize) {
        self.go_then(n, false);
    }

    /// `go`, then show the gate frame `n` opened.
    pub(super) fn go_to_gate(&mut self, n: usize) {
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
    pub(super) fn prepare_step_back(&mut self) {
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
}
