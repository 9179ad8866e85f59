//! Reconnect delays shared by the network backends: exponential, capped, with up to +25 %
//! jitter so many clients of one host do not reconnect in step.

use std::time::Duration;

/// Exponential backoff with up to +25 % jitter.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    first: Duration,
    cap: Duration,
    attempt: u32,
}

impl Backoff {
    pub fn new(first: Duration, cap: Duration) -> Backoff {
        Backoff {
            next: first,
            first,
            cap,
            attempt: 0,
        }
    }

    /// The attempt number (1-based) and the wait before it.
    pub fn next_wait(&mut self) -> (u32, Duration) {
        let base = self.next;
        self.next = (self.next * 2).min(self.cap);
        self.attempt += 1;
        let quarter = (base.as_millis() as u64 / 4).max(1);
        let jitter = Duration::from_millis(random_u64() % (quarter + 1));
        (self.attempt, base + jitter)
    }

    pub fn reset(&mut self) {
        self.next = self.first;
        self.attempt = 0;
    }

    /// A connection ended after `up_for`: the delays start over only if it stayed up
    /// `healthy` long. A host that accepts the upgrade and closes at once is retried at the
    /// growing delay, not every `first` (issue 21: 35 connections in 20 s).
    pub fn ended_after(&mut self, up_for: Duration, healthy: Duration) {
        if up_for >= healthy {
            self.reset();
        }
    }
}

fn random_u64() -> u64 {
    let b = uuid::Uuid::new_v4();
    let bytes = b.as_bytes();
    u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_that_closes_at_once_does_not_reset_the_delay() {
        let first = Duration::from_millis(512);
        let mut b = Backoff::new(first, Duration::from_secs(60));
        let healthy = Duration::from_secs(30);
        let mut waits = Vec::new();
        for _ in 0..5 {
            let (_, w) = b.next_wait();
            waits.push(w);
            // Upgraded, then closed straight away.
            b.ended_after(Duration::from_millis(10), healthy);
        }
        for (i, w) in waits.iter().enumerate() {
            let floor = first * 2u32.pow(i as u32);
            assert!(*w >= floor && *w <= floor + floor / 4, "{i}: {w:?}");
        }
        b.ended_after(Duration::from_secs(31), healthy);
        let (attempt, w) = b.next_wait();
        assert_eq!(attempt, 1);
        assert!(w >= first && w <= first + first / 4, "{w:?}");
    }
}
