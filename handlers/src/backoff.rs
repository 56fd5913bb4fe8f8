//! Reconnect delays: exponential backoff from 200 ms doubling to 30 s, reset once a connection has stayed
//! healthy for a minute.

use std::time::Duration;

/// The delay schedule of one backend's reconnects.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    healthy_after: Duration,
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new(
            Duration::from_millis(200),
            Duration::from_secs(30),
            Duration::from_secs(60),
        )
    }
}

impl Backoff {
    /// Starts at `initial`, doubles up to `max`; a connection that lived `healthy_after` resets it.
    pub(crate) fn new(initial: Duration, max: Duration, healthy_after: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            healthy_after,
            next: initial,
        }
    }

    /// The delay before the next attempt; the one after it is twice as long, up to the maximum.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        delay
    }

    /// A connection that had been up for `uptime` was lost: a healthy one starts the schedule over.
    pub(crate) fn connection_lost_after(&mut self, uptime: Duration) {
        if uptime >= self.healthy_after {
            self.next = self.initial;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn doubles_from_200_ms_up_to_30_s() {
        let mut b = Backoff::default();
        let delays: Vec<u64> = (0..12).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(
            delays,
            [
                200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 30000
            ]
        );
    }

    #[test]
    fn a_healthy_minute_resets_the_schedule() {
        let mut b = Backoff::default();
        for _ in 0..5 {
            b.next_delay();
        }
        b.connection_lost_after(Duration::from_secs(59));
        assert_eq!(b.next_delay(), ms(6400));
        b.connection_lost_after(Duration::from_secs(60));
        assert_eq!(b.next_delay(), ms(200));
        assert_eq!(b.next_delay(), ms(400));
    }

    #[test]
    fn custom_schedule() {
        let mut b = Backoff::new(ms(10), ms(25), ms(100));
        assert_eq!(
            [b.next_delay(), b.next_delay(), b.next_delay()],
            [ms(10), ms(20), ms(25)]
        );
    }
}
