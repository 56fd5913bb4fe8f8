//! A latency histogram kept in atomics: one count per bucket and the sum in nanoseconds, each added to with
//! one relaxed `fetch_add`. Recording takes no lock (prometheus-client's own `Histogram::observe` takes a
//! write lock); the scrape reads the buckets and hands them to prometheus-client's encoder.
//!
//! It must not allocate or lock when a value is recorded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The buckets' upper bounds, in seconds: 100 µs to 60 s (an in-process call takes tens of µs, a tool
/// calling a model tens of seconds).
pub const BOUNDS_SECONDS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

const BOUNDS_NANOS: [u64; 18] = {
    let mut out = [0u64; 18];
    let mut i = 0;
    while i < 18 {
        out[i] = (BOUNDS_SECONDS[i] * 1e9) as u64;
        i += 1;
    }
    out
};

/// One histogram: a count per bucket (not cumulative; the last one past every bound) and the sum.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS_SECONDS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// Records one value.
    pub fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let at = BOUNDS_NANOS.partition_point(|b| *b < nanos);
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What it holds now: the sum in seconds, the count (the buckets' total, so that the `+Inf` bucket and
    /// `_count` always agree), and each bucket's own count with its upper bound (the last `+Inf`).
    pub fn read(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut count = 0;
        let buckets: Vec<(f64, u64)> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let n = b.load(Ordering::Relaxed);
                count += n;
                (BOUNDS_SECONDS.get(i).copied().unwrap_or(f64::INFINITY), n)
            })
            .collect();
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        (sum, count, buckets)
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(|b| b.load(Ordering::Relaxed) == 0)
    }
}
