//! Coalesced redraws: at most one frame per interval, none while nothing changed. A frame
//! that answers the human's input may come sooner: backend churn is capped at 60 frames a
//! second, but a key must not wait up to a whole interval behind it (tui-craft P2: key to
//! frame p95 at most 16 ms under load).

use std::time::Duration;

use tokio::time::Instant;

pub const FRAME_INTERVAL: Duration = Duration::from_micros(16_667);
/// The least time between frames when input is waiting to be shown: still a cap (250 frames
/// a second) so that key repeat or a key-spamming script cannot turn into a frame per key.
pub const INPUT_INTERVAL: Duration = Duration::from_millis(4);

pub struct FrameScheduler {
    interval: Duration,
    last: Option<Instant>,
    /// Input arrived since the last frame: the next one is due after `INPUT_INTERVAL`.
    input: bool,
}

impl FrameScheduler {
    pub fn new(interval: Duration) -> Self {
        FrameScheduler {
            interval,
            last: None,
            input: false,
        }
    }

    /// The human pressed a key (or pasted, clicked, resized): show it soon.
    pub fn input(&mut self) {
        self.input = true;
    }

    /// When the next frame may be drawn.
    pub fn next_at(&self) -> Instant {
        let gap = if self.input {
            INPUT_INTERVAL.min(self.interval)
        } else {
            self.interval
        };
        match self.last {
            Some(t) => t + gap,
            None => Instant::now(),
        }
    }

    /// Resolves when a frame is due; pending forever when `dirty` is false.
    pub async fn due(&self, dirty: bool) {
        if dirty {
            tokio::time::sleep_until(self.next_at()).await
        } else {
            std::future::pending().await
        }
    }

    pub fn drawn(&mut self) {
        self.last = Some(Instant::now());
        self.input = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn caps_the_rate() {
        let mut f = FrameScheduler::new(FRAME_INTERVAL);
        let t0 = Instant::now();
        f.due(true).await;
        f.drawn();
        f.due(true).await;
        assert!(Instant::now() - t0 >= FRAME_INTERVAL);
        let idle = tokio::time::timeout(Duration::from_secs(5), f.due(false)).await;
        assert!(idle.is_err(), "an idle scheduler must not fire");
    }

    #[tokio::test(start_paused = true)]
    async fn input_is_shown_sooner_but_still_capped() {
        let mut f = FrameScheduler::new(FRAME_INTERVAL);
        f.due(true).await;
        f.drawn();
        let t0 = Instant::now();
        f.input();
        f.due(true).await;
        let waited = Instant::now() - t0;
        assert!(
            waited >= INPUT_INTERVAL && waited < FRAME_INTERVAL,
            "{waited:?}"
        );
        // Drawing clears it: backend churn alone waits the whole interval again.
        f.drawn();
        let t1 = Instant::now();
        f.due(true).await;
        assert!(Instant::now() - t1 >= FRAME_INTERVAL);
    }
}
