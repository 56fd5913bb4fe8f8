//! Fault injection: latency before every `tools/call` answer (fixed, uniform or exponential), injected
//! errors (half `isError` results, half JSON-RPC -32603), and the crash-after counter. Randomness comes
//! from a small lock-free xorshift64* generator seeded from `getrandom`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::LatencyDist;

/// The longest latency ever injected, whatever the distribution draws.
pub(crate) const MAX_LATENCY: Duration = Duration::from_secs(60);

/// A xorshift64* generator shared by all tasks: one atomic word, no lock.
#[derive(Debug)]
pub(crate) struct Rng(AtomicU64);

impl Rng {
    /// Seeded from the operating system (falls back to the clock if that fails).
    pub(crate) fn from_entropy() -> Rng {
        let mut seed = [0u8; 8];
        let seed = match getrandom::fill(&mut seed) {
            Ok(()) => u64::from_le_bytes(seed),
            Err(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64),
        };
        Rng::with_seed(seed)
    }

    /// A generator with a fixed seed (xorshift cannot start from zero; zero is replaced).
    pub(crate) fn with_seed(seed: u64) -> Rng {
        Rng(AtomicU64::new(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        }))
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&self) -> u64 {
        let prev = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .unwrap_or_else(|x| x);
        step(prev).wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform draw from [0, 1).
    pub(crate) fn unit(&self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn step(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// What the error injection decided for one `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Injected {
    /// Answer normally.
    Nothing,
    /// Answer with an `isError: true` result.
    ToolError,
    /// Answer with a JSON-RPC internal error (-32603).
    RpcError,
}

/// Latency and error injection for `tools/call`.
#[derive(Debug)]
pub(crate) struct Faults {
    latency_ms: u64,
    dist: LatencyDist,
    error_rate: f64,
    rng: Rng,
}

impl Faults {
    pub(crate) fn new(latency_ms: u64, dist: LatencyDist, error_rate: f64, rng: Rng) -> Faults {
        Faults {
            latency_ms,
            dist,
            error_rate: error_rate.clamp(0.0, 1.0),
            rng,
        }
    }

    /// The delay before the next `tools/call` answer: `latency_ms` exactly (fixed), uniform in
    /// [0, 2 × latency_ms) (uniform), or exponential with mean latency_ms; never above [`MAX_LATENCY`].
    pub(crate) fn latency(&self) -> Duration {
        if self.latency_ms == 0 {
            return Duration::ZERO;
        }
        let mean = self.latency_ms as f64;
        let ms = match self.dist {
            LatencyDist::Fixed => mean,
            LatencyDist::Uniform => self.rng.unit() * 2.0 * mean,
            LatencyDist::Exponential => -mean * (1.0 - self.rng.unit()).ln(),
        };
        Duration::from_secs_f64(ms.max(0.0) / 1000.0).min(MAX_LATENCY)
    }

    /// Whether the next `tools/call` is answered as an error: with probability `error_rate`, split evenly
    /// between `isError` results and JSON-RPC errors.
    pub(crate) fn injected(&self) -> Injected {
        if self.error_rate <= 0.0 {
            return Injected::Nothing;
        }
        let u = self.rng.unit();
        if u < self.error_rate / 2.0 {
            Injected::ToolError
        } else if u < self.error_rate {
            Injected::RpcError
        } else {
            Injected::Nothing
        }
    }
}

/// What to do with one answer under `--crash-after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it.
    Answer,
    /// Send it, flush, then exit the process with status 1.
    AnswerThenCrash,
    /// The crash point has passed (concurrent answers): do not send it.
    Withhold,
}

/// Counts answered requests and says when the process must exit (`--crash-after N`; 0 behaves as 1).
#[derive(Debug)]
pub(crate) struct CrashCounter {
    limit: Option<u64>,
    answered: AtomicU64,
}

impl CrashCounter {
    pub(crate) fn new(limit: Option<u64>) -> CrashCounter {
        CrashCounter {
            limit: limit.map(|n| n.max(1)),
            answered: AtomicU64::new(0),
        }
    }

    /// Records one answer about to be sent and judges it.
    pub(crate) fn record(&self) -> Verdict {
        let Some(limit) = self.limit else {
            return Verdict::Answer;
        };
        let n = self.answered.fetch_add(1, Ordering::Relaxed) + 1;
        match n.cmp(&limit) {
            std::cmp::Ordering::Less => Verdict::Answer,
            std::cmp::Ordering::Equal => Verdict::AnswerThenCrash,
            std::cmp::Ordering::Greater => Verdict::Withhold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: usize = 20_000;

    #[test]
    fn rng_is_deterministic_per_seed_and_uniform_in_unit_interval() {
        let (a, b) = (Rng::with_seed(7), Rng::with_seed(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let r = Rng::with_seed(0);
        let mut sum = 0.0;
        for _ in 0..SAMPLES {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u), "{u}");
            sum += u;
        }
        let mean = sum / SAMPLES as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
        assert_ne!(
            Rng::from_entropy().next_u64(),
            Rng::from_entropy().next_u64()
        );
    }

    #[test]
    fn latency_distributions_have_the_documented_shape() {
        // (distribution, expected mean in ms, lowest allowed, highest allowed)
        let table = [
            (LatencyDist::Fixed, 40.0, 40.0, 40.0),
            (LatencyDist::Uniform, 40.0, 0.0, 80.0),
            (LatencyDist::Exponential, 40.0, 0.0, 60_000.0),
        ];
        for (dist, want_mean, lo, hi) in table {
            let f = Faults::new(40, dist, 0.0, Rng::with_seed(42));
            let mut sum = 0.0;
            for _ in 0..SAMPLES {
                let ms = f.latency().as_secs_f64() * 1000.0;
                assert!(ms >= lo - 1e-6 && ms <= hi + 1e-6, "{dist:?}: {ms}");
                sum += ms;
            }
            let mean = sum / SAMPLES as f64;
            assert!(
                (mean - want_mean).abs() < want_mean * 0.05,
                "{dist:?}: mean {mean}"
            );
        }
        let none = Faults::new(0, LatencyDist::Exponential, 0.0, Rng::with_seed(1));
        assert_eq!(none.latency(), Duration::ZERO);
        let capped = Faults::new(10_000_000, LatencyDist::Fixed, 0.0, Rng::with_seed(1));
        assert_eq!(capped.latency(), MAX_LATENCY);
    }

    #[test]
    fn error_rate_splits_evenly_between_the_two_kinds() {
        // (error_rate, expected tool errors, expected rpc errors) as fractions
        let table = [(0.0, 0.0, 0.0), (0.2, 0.1, 0.1), (1.0, 0.5, 0.5)];
        for (rate, tool, rpc) in table {
            let f = Faults::new(0, LatencyDist::Fixed, rate, Rng::with_seed(3));
            let (mut t, mut r) = (0usize, 0usize);
            for _ in 0..SAMPLES {
                match f.injected() {
                    Injected::ToolError => t += 1,
                    Injected::RpcError => r += 1,
                    Injected::Nothing => {}
                }
            }
            let (t, r) = (t as f64 / SAMPLES as f64, r as f64 / SAMPLES as f64);
            assert!((t - tool).abs() < 0.015, "rate {rate}: tool errors {t}");
            assert!((r - rpc).abs() < 0.015, "rate {rate}: rpc errors {r}");
        }
    }

    #[test]
    fn crash_counter_judges_each_answer() {
        // (limit, verdicts of the first four answers)
        use Verdict::*;
        let table = [
            (None, [Answer, Answer, Answer, Answer]),
            (Some(0), [AnswerThenCrash, Withhold, Withhold, Withhold]),
            (Some(1), [AnswerThenCrash, Withhold, Withhold, Withhold]),
            (Some(3), [Answer, Answer, AnswerThenCrash, Withhold]),
        ];
        for (limit, want) in table {
            let c = CrashCounter::new(limit);
            let got: Vec<Verdict> = (0..4).map(|_| c.record()).collect();
            assert_eq!(got, want, "limit {limit:?}");
        }
    }
}
