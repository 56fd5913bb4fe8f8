//! One token bucket, pure: its tokens and when it last filled, with the time handed in (microseconds on
//! any monotonic clock), so that its arithmetic is tested without waiting. It holds no lock and knows
//! no clock, map or network; the process-wide authority and the Redis script implement the same rule.

/// What a bucket granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Tokens granted (0 to what was asked).
    pub granted: u32,
    /// When nothing was granted: milliseconds until the next whole token (at least 1); else 0.
    pub wait_ms: u64,
}

/// A token bucket: `rate` tokens a second up to `burst`, full when new.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    tokens: f64,
    /// When `tokens` was last brought up to date, microseconds.
    at: u64,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn full(burst: u32, now: u64) -> TokenBucket {
        TokenBucket {
            tokens: f64::from(burst),
            at: now,
        }
    }

    /// The tokens it holds at `now` (a time before its last one counts as its last one).
    pub fn tokens(&self, rate: f64, burst: u32, now: u64) -> f64 {
        let elapsed = now.saturating_sub(self.at) as f64 / 1e6;
        (self.tokens + elapsed * rate).min(f64::from(burst))
    }

    /// Takes up to `want` whole tokens at `now`.
    pub fn take(&mut self, rate: f64, burst: u32, want: u32, now: u64) -> Grant {
        let tokens = self.tokens(rate, burst, now);
        let granted = (tokens.floor() as u32).min(want);
        self.tokens = tokens - f64::from(granted);
        self.at = self.at.max(now);
        let wait_ms = if granted == 0 {
            wait_ms(1.0 - self.tokens, rate)
        } else {
            0
        };
        Grant { granted, wait_ms }
    }
}

/// Milliseconds until `missing` tokens have come at `rate` a second, rounded up, at least 1.
pub fn wait_ms(missing: f64, rate: f64) -> u64 {
    let ms = (missing.max(0.0) * 1000.0 / rate).ceil();
    if ms.is_finite() {
        (ms as u64).max(1)
    } else {
        u64::MAX
    }
}

/// How many tokens a worker leases at once: a tenth of a second's worth, at least 1, at most `burst`.
pub fn lease_size(rate: f64, burst: u32) -> u32 {
    let tenth = (rate * 0.1).floor();
    let tenth = if tenth >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        tenth as u32
    };
    tenth.clamp(1, burst.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    #[test]
    fn a_bucket_grants_its_burst_then_refills_at_its_rate() {
        // (rate, burst, [(at µs, want, granted, wait_ms)]): one bucket per row, steps in order.
        type Step = (u64, u32, u32, u64);
        let table: [(f64, u32, &[Step]); 5] = [
            // Full at start: the burst at once, then nothing, then one a second.
            (
                1.0,
                3,
                &[
                    (0, 3, 3, 0),
                    (0, 1, 0, 1000),
                    (S / 2, 1, 0, 500),
                    (S, 1, 1, 0),
                    (S, 1, 0, 1000),
                ],
            ),
            // Never above the burst however long it rested.
            (
                10.0,
                2,
                &[(0, 2, 2, 0), (100 * S, 5, 2, 0), (100 * S, 1, 0, 100)],
            ),
            // A partial grant: what it holds, whole tokens only.
            (
                4.0,
                4,
                &[(0, 3, 3, 0), (S / 8, 4, 1, 0), (S / 8, 1, 0, 125)],
            ),
            // A fractional rate: one token every 4 s.
            (0.25, 1, &[(0, 1, 1, 0), (S, 1, 0, 3000), (4 * S, 1, 1, 0)]),
            // Time going backwards (another worker's clock read earlier) adds nothing and removes nothing.
            (
                1.0,
                2,
                &[(5 * S, 1, 1, 0), (4 * S, 1, 1, 0), (4 * S, 1, 0, 1000)],
            ),
        ];
        for (row, (rate, burst, steps)) in table.iter().enumerate() {
            let mut bucket = TokenBucket::full(*burst, 0);
            for (i, (at, want, granted, wait)) in steps.iter().enumerate() {
                let got = bucket.take(*rate, *burst, *want, *at);
                assert_eq!(
                    got,
                    Grant {
                        granted: *granted,
                        wait_ms: *wait
                    },
                    "row {row}, step {i}"
                );
            }
        }
    }

    #[test]
    fn over_any_window_a_bucket_grants_at_most_burst_plus_rate_times_the_window() {
        let (rate, burst) = (5.0, 7);
        let mut bucket = TokenBucket::full(burst, 0);
        let mut grants = Vec::new();
        // Asked every 10 ms for 10 s.
        for step in 0..1000u64 {
            let at = step * 10_000;
            if bucket.take(rate, burst, 1, at).granted == 1 {
                grants.push(at);
            }
        }
        for (i, start) in grants.iter().enumerate() {
            for window in [0, S / 2, S, 3 * S] {
                let within = grants[i..]
                    .iter()
                    .take_while(|g| **g <= start + window)
                    .count();
                let bound = f64::from(burst) + rate * window as f64 / 1e6;
                assert!(within as f64 <= bound, "{within} > {bound} from {start}");
            }
        }
        // And it did grant about that much: the burst and then the rate.
        assert!(grants.len() >= 55, "{}", grants.len());
    }

    #[test]
    fn lease_sizes_are_a_tenth_of_a_second_within_one_and_the_burst() {
        for (rate, burst, want) in [
            (1.0, 10, 1),
            (0.1, 1, 1),
            (100.0, 20, 10),
            (1000.0, 20, 20),
            (1e12, 5, 5),
            (35.0, 50, 3),
        ] {
            assert_eq!(lease_size(rate, burst), want, "{rate} {burst}");
        }
    }

    #[test]
    fn waits_round_up_and_are_never_zero() {
        assert_eq!(wait_ms(1.0, 3.0), 334);
        assert_eq!(wait_ms(0.0, 1.0), 1);
        assert_eq!(wait_ms(1.0, 1e-300), u64::MAX);
    }
}
