//! Think time between a scenario's steps, drawn from a distribution: `fixed`, `uniform` between two
//! durations, or `exponential` with a mean (capped at [`EXPONENTIAL_CAP`] times the mean, so one draw
//! cannot stall a session for the run), and the small random generator each session draws from.
//!
//! It must not sleep nor read the clock: the runner sleeps what it draws, cut short at the run's end.

use std::time::Duration;

/// The longest exponential draw, in means.
pub(crate) const EXPONENTIAL_CAP: f64 = 20.0;

/// A think-time distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Think {
    Fixed(Duration),
    Uniform(Duration, Duration),
    Exponential(Duration),
}

impl Think {
    /// One draw.
    pub(crate) fn draw(&self, rng: &mut Rng) -> Duration {
        match *self {
            Think::Fixed(d) => d,
            Think::Uniform(lo, hi) => lo + (hi - lo).mul_f64(rng.unit()),
            Think::Exponential(mean) => {
                // Inverse transform; 1 - u is in (0, 1], so the logarithm is finite.
                let x = -(1.0 - rng.unit()).ln();
                mean.mul_f64(x.min(EXPONENTIAL_CAP))
            }
        }
    }

    /// Its mean.
    #[cfg(test)]
    pub(crate) fn mean(&self) -> Duration {
        match *self {
            Think::Fixed(d) | Think::Exponential(d) => d,
            Think::Uniform(lo, hi) => (lo + hi) / 2,
        }
    }
}

/// xorshift64*: fast, small, good enough for think times and template choices (not for secrets).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator with this seed (zero, which xorshift cannot leave, is replaced).
    pub(crate) fn with_seed(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// A generator seeded from the operating system, mixed with `salt` (falls back to the clock).
    pub(crate) fn from_entropy(salt: u64) -> Rng {
        let mut seed = [0u8; 8];
        let seed = match getrandom::fill(&mut seed) {
            Ok(()) => u64::from_le_bytes(seed),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64),
        };
        Rng::with_seed(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n ≥ 1).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn draws_stay_in_bounds_and_average_near_the_mean() {
        let cases = [
            (Think::Fixed(MS * 50), MS * 50, MS * 50),
            (Think::Uniform(MS * 10, MS * 30), MS * 10, MS * 30),
            (Think::Exponential(MS * 20), Duration::ZERO, MS * 400),
        ];
        for (think, lo, hi) in cases {
            let mut rng = Rng::with_seed(42);
            let n = 20_000u32;
            let mut sum = Duration::ZERO;
            for _ in 0..n {
                let d = think.draw(&mut rng);
                assert!(d >= lo && d <= hi, "{think:?}: {d:?}");
                sum += d;
            }
            let mean = (sum / n).as_secs_f64();
            let want = think.mean().as_secs_f64();
            assert!(
                (mean - want).abs() <= want * 0.05,
                "{think:?}: mean {mean} want {want}"
            );
        }
    }

    #[test]
    fn the_generator_is_deterministic_per_seed_and_covers_its_range() {
        let (mut a, mut b) = (Rng::with_seed(9), Rng::with_seed(9));
        assert_eq!(a.next_u64(), b.next_u64());
        let mut zero = Rng::with_seed(0);
        assert_ne!(zero.next_u64(), 0);
        let mut hits = [0u32; 4];
        for _ in 0..4000 {
            hits[a.below(4) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| h > 800), "{hits:?}");
        assert!((0..1000).all(|_| (0.0..1.0).contains(&a.unit())));
    }
}
