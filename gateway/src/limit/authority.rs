//! Where a worker leases tokens when its own run out: Redis when replicas share one (`[cluster] redis`),
//! else — and while Redis cannot be reached — a token bucket per key in this process. Touched once per
//! lease, never per request. It must not wait past Redis's deadline, nor hold a map guard across `.await`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dashmap::DashMap;

use crate::cluster::redis::RedisLink;

use super::bucket::{Grant, TokenBucket};
use super::redis::LeaseScript;

/// Buckets the process-wide table holds at most: past it, full buckets (which a new one equals) are swept
/// out, and a new key that still finds no room is refused for a second rather than an old one forgotten.
pub const PROCESS_KEYS: usize = 100_000;

/// After Redis failed a lease, how long it is left alone (the process's buckets serve meanwhile),
/// microseconds.
const REDIS_PAUSE_US: u64 = 1_000_000;

/// The authority of one gateway process.
#[derive(Debug)]
pub struct Authority {
    local: DashMap<String, (TokenBucket, Rate)>,
    cap: usize,
    /// When the table was last swept, microseconds.
    swept: AtomicU64,
    redis: Option<Arc<RedisLink>>,
    script: LeaseScript,
    /// Redis is not asked before this time, microseconds.
    redis_paused_until: AtomicU64,
    /// Whether Redis's absence has been logged (once, until it is back).
    redis_warned: AtomicBool,
}

/// A bucket's rule, as the authority needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens a second.
    pub rate: f64,
    /// The bucket's size.
    pub burst: u32,
}

impl Authority {
    /// Buckets in this process, or in Redis through `redis`.
    pub fn new(redis: Option<Arc<RedisLink>>) -> Authority {
        Authority::with_cap(redis, PROCESS_KEYS)
    }

    /// As [`Authority::new`], holding at most `cap` buckets in this process.
    pub fn with_cap(redis: Option<Arc<RedisLink>>, cap: usize) -> Authority {
        Authority {
            local: DashMap::new(),
            cap: cap.max(1),
            swept: AtomicU64::new(0),
            redis,
            script: LeaseScript::default(),
            redis_paused_until: AtomicU64::new(0),
            redis_warned: AtomicBool::new(false),
        }
    }

    /// Up to `want` tokens of bucket `key` at `now` (microseconds on the limiter's clock).
    pub async fn lease(&self, key: &str, rate: Rate, want: u32, now: u64) -> Grant {
        if let Some(link) = &self.redis
            && now >= self.redis_paused_until.load(Ordering::Relaxed)
        {
            match self
                .script
                .lease(link, key, rate.rate, rate.burst, want)
                .await
            {
                Ok(grant) => {
                    if self.redis_warned.swap(false, Ordering::Relaxed) {
                        tracing::info!("rate limits hold across replicas again (redis answers)");
                    }
                    return grant;
                }
                Err(e) => {
                    self.redis_paused_until
                        .store(now.saturating_add(REDIS_PAUSE_US), Ordering::Relaxed);
                    if !self.redis_warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!(error = %e,
                            "rate limits hold per replica while redis is unreachable (this process's buckets serve)");
                    }
                }
            }
        }
        self.local(key, rate, want, now)
    }

    /// The process's own bucket `key`.
    pub fn local(&self, key: &str, rate: Rate, want: u32, now: u64) -> Grant {
        if let Some(mut held) = self.local.get_mut(key) {
            return held.0.take(rate.rate, rate.burst, want, now);
        }
        if self.local.len() >= self.cap {
            self.sweep(now);
            if self.local.len() >= self.cap {
                return Grant {
                    granted: 0,
                    wait_ms: 1000,
                };
            }
        }
        let mut held = self
            .local
            .entry(key.to_owned())
            .or_insert_with(|| (TokenBucket::full(rate.burst, now), rate));
        held.0.take(rate.rate, rate.burst, want, now)
    }

    /// Drops the buckets that are full again (a new bucket is full: nothing is forgotten), at most once a
    /// second.
    fn sweep(&self, now: u64) {
        let last = self.swept.load(Ordering::Relaxed);
        if now.saturating_sub(last) < 1_000_000
            || self
                .swept
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        self.local
            .retain(|_, (b, r)| b.tokens(r.rate, r.burst, now) < f64::from(r.burst));
    }

    /// Buckets held in this process.
    pub fn local_len(&self) -> usize {
        self.local.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: Rate = Rate {
        rate: 1.0,
        burst: 2,
    };

    #[test]
    fn the_process_table_is_one_bucket_per_key() {
        let a = Authority::new(None);
        assert_eq!(a.local("x", RATE, 5, 0).granted, 2);
        assert_eq!(a.local("x", RATE, 5, 0).granted, 0);
        assert_eq!(a.local("y", RATE, 1, 0).granted, 1);
        assert_eq!(a.local("x", RATE, 5, 1_000_000).granted, 1);
    }

    #[test]
    fn a_full_process_table_drops_full_buckets_and_refuses_rather_than_forget_one() {
        let a = Authority::with_cap(None, 2);
        assert_eq!(a.local("x", RATE, 2, 0).granted, 2);
        assert_eq!(a.local("y", RATE, 2, 0).granted, 2);
        // Both buckets empty: a third key finds no room and is refused, the others are kept.
        assert_eq!(
            a.local("z", RATE, 1, 500_000),
            Grant {
                granted: 0,
                wait_ms: 1000
            }
        );
        assert_eq!(a.local_len(), 2);
        assert_eq!(a.local("x", RATE, 1, 500_000).granted, 0, "x still empty");
        // Once they are full again they are swept out and the new key gets its bucket.
        assert_eq!(a.local("z", RATE, 1, 3_000_000).granted, 1);
        assert_eq!(a.local_len(), 1);
    }
}
