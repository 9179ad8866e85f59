//! Coalesced redraws: at most one frame per interval, none while nothing changed.

use std::time::Duration;

use tokio::time::Instant;

pub const FRAME_INTERVAL: Duration = Duration::from_micros(16_667);

pub struct FrameScheduler {
    interval: Duration,
    last: Option<Instant>,
}

impl FrameScheduler {
    pub fn new(interval: Duration) -> Self {
        FrameScheduler {
            interval,
            last: None,
        }
    }

    /// When the next frame may be drawn.
    pub fn next_at(&self) -> Instant {
        match self.last {
            Some(t) => t + self.interval,
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
}
