//! Where a worker leases tokens when its own run out: Redis when replicas share one (`[cluster] redis`),
//! else — and while Redis cannot be reached — a token bucket per key in this process. Touched once per
//! lease, never per request. It must not wait past Redis's deadline, nor hold a map guard across `.await`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

use crate::cluster::redis::RedisLink;

use super::bucket::{Grant, TokenBucket};
use super::redis::LeaseScript;

/// Buckets the process-wide table holds at most. Past it (or past its kind's share, [`Kind`]), buckets
/// that are full again (which a new one equals) are dropped, then idle ones that still hold a token; a new
/// key that still finds no room is refused for a second rather than a depleted bucket forgotten (that would
/// hand its party a fresh burst).
pub const PROCESS_KEYS: usize = 100_000;

/// A bucket untouched this long is idle, microseconds: one that still holds a token may be dropped to make
/// room (its party gets back at most the tokens it lacked).
pub const IDLE_US: u64 = 60_000_000;

/// After Redis failed a lease, how long it is left alone (the process's buckets serve meanwhile),
/// microseconds.
const REDIS_PAUSE_US: u64 = 1_000_000;

/// Whom a bucket counts, for the table's caps: principals' buckets and addresses' buckets each hold at most
/// half the table, so clients without a principal (who can come from many addresses) cannot take the room
/// of authenticated ones, nor the other way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Kept per principal.
    Principal,
    /// Kept per client address (an IPv6 one by its /64).
    Address,
    /// Kept per backend or tool only, or the stdio client's: bounded by the config.
    Shared,
}

impl Kind {
    fn index(self) -> usize {
        match self {
            Kind::Principal => 0,
            Kind::Address => 1,
            Kind::Shared => 2,
        }
    }
}

#[derive(Debug)]
struct Held {
    bucket: TokenBucket,
    rate: Rate,
    kind: Kind,
    /// When it was last asked for tokens, microseconds.
    used: u64,
}

impl Held {
    fn full(&self, now: u64) -> bool {
        self.bucket.tokens(self.rate.rate, self.rate.burst, now) >= f64::from(self.rate.burst)
    }

    /// Idle and holding at least a token: dropping it forgives little, and nobody is using it.
    fn idle(&self, now: u64) -> bool {
        now.saturating_sub(self.used) >= IDLE_US
            && self.bucket.tokens(self.rate.rate, self.rate.burst, now) >= 1.0
    }
}

/// The authority of one gateway process.
#[derive(Debug)]
pub struct Authority {
    local: DashMap<String, Held>,
    cap: usize,
    /// Buckets of each [`Kind`] held (kept beside the map: a concurrent insert may pass a cap by the
    /// number of workers at most).
    counts: [AtomicUsize; 3],
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

    /// As [`Authority::new`], holding at most `cap` buckets in this process (half of them of one kind).
    pub fn with_cap(redis: Option<Arc<RedisLink>>, cap: usize) -> Authority {
        Authority {
            local: DashMap::new(),
            cap: cap.max(1),
            counts: Default::default(),
            swept: AtomicU64::new(0),
            redis,
            script: LeaseScript::default(),
            redis_paused_until: AtomicU64::new(0),
            redis_warned: AtomicBool::new(false),
        }
    }

    /// Up to `want` tokens of bucket `key` (of `kind`) at `now` (microseconds on the limiter's clock).
    pub async fn lease(&self, key: &str, kind: Kind, rate: Rate, want: u32, now: u64) -> Grant {
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
        self.local(key, kind, rate, want, now)
    }

    /// The process's own bucket `key`, of `kind`.
    pub fn local(&self, key: &str, kind: Kind, rate: Rate, want: u32, now: u64) -> Grant {
        if let Some(mut held) = self.local.get_mut(key) {
            held.used = held.used.max(now);
            return held.bucket.take(rate.rate, rate.burst, want, now);
        }
        if self.no_room(kind) {
            self.sweep(now);
            if self.no_room(kind) {
                return Grant {
                    granted: 0,
                    wait_ms: 1000,
                };
            }
        }
        match self.local.entry(key.to_owned()) {
            Entry::Occupied(mut held) => {
                let held = held.get_mut();
                held.used = held.used.max(now);
                held.bucket.take(rate.rate, rate.burst, want, now)
            }
            Entry::Vacant(room) => {
                self.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
                let mut held = room.insert(Held {
                    bucket: TokenBucket::full(rate.burst, now),
                    rate,
                    kind,
                    used: now,
                });
                held.bucket.take(rate.rate, rate.burst, want, now)
            }
        }
    }

    /// Whether a new bucket of `kind` finds no room: the table is full, or its kind's half is.
    fn no_room(&self, kind: Kind) -> bool {
        let share = (self.cap / 2).max(1);
        self.local.len() >= self.cap || (kind != Kind::Shared && self.held(kind) >= share)
    }

    /// Buckets of `kind` held.
    pub fn held(&self, kind: Kind) -> usize {
        self.counts[kind.index()].load(Ordering::Relaxed)
    }

    /// Makes room, at most once a second: drops the buckets that are full again (a new bucket is full:
    /// nothing is forgotten), and if that left some kind without room, its idle buckets that still hold
    /// a token. A depleted bucket that is in use is never dropped.
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
        self.drop_where(|held| held.full(now));
        let crowded: Vec<Kind> = [Kind::Principal, Kind::Address, Kind::Shared]
            .into_iter()
            .filter(|k| self.no_room(*k))
            .collect();
        if !crowded.is_empty() {
            let all = self.local.len() >= self.cap;
            self.drop_where(|held| (all || crowded.contains(&held.kind)) && held.idle(now));
        }
    }

    fn drop_where(&self, drop: impl Fn(&Held) -> bool) {
        self.local.retain(|_, held| {
            let gone = drop(held);
            if gone {
                self.counts[held.kind.index()].fetch_sub(1, Ordering::Relaxed);
            }
            !gone
        });
    }

    /// Buckets held in this process.
    #[cfg(any(test, feature = "internals"))]
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
        assert_eq!(a.local("x", Kind::Shared, RATE, 5, 0).granted, 2);
        assert_eq!(a.local("x", Kind::Shared, RATE, 5, 0).granted, 0);
        assert_eq!(a.local("y", Kind::Shared, RATE, 1, 0).granted, 1);
        assert_eq!(a.local("x", Kind::Shared, RATE, 5, 1_000_000).granted, 1);
    }

    #[test]
    fn a_full_process_table_drops_full_buckets_and_refuses_rather_than_forget_one() {
        let a = Authority::with_cap(None, 2);
        assert_eq!(a.local("x", Kind::Shared, RATE, 2, 0).granted, 2);
        assert_eq!(a.local("y", Kind::Shared, RATE, 2, 0).granted, 2);
        // Both buckets empty: a third key finds no room and is refused, the others are kept.
        assert_eq!(
            a.local("z", Kind::Shared, RATE, 1, 500_000),
            Grant {
                granted: 0,
                wait_ms: 1000
            }
        );
        assert_eq!(a.local_len(), 2);
        assert_eq!(
            a.local("x", Kind::Shared, RATE, 1, 500_000).granted,
            0,
            "x still empty"
        );
        // Once they are full again they are swept out and the new key gets its bucket.
        assert_eq!(a.local("z", Kind::Shared, RATE, 1, 3_000_000).granted, 1);
        assert_eq!(a.local_len(), 1);
    }

    /// A rate so slow that nothing refills within a test: what a bucket holds is what was left.
    const SLOW: Rate = Rate {
        rate: 0.001,
        burst: 2,
    };

    const SEC: u64 = 1_000_000;

    #[test]
    fn addresses_filling_their_half_of_the_bucket_table_leave_room_for_principals() {
        let a = Authority::with_cap(None, 6);
        // Clients without a principal, one address after another: three buckets (half of six), then no more.
        for (i, ip) in ["192.0.2.1", "192.0.2.2", "192.0.2.3"].iter().enumerate() {
            assert_eq!(a.local(ip, Kind::Address, SLOW, 2, 0).granted, 2, "{ip}");
            assert_eq!(a.held(Kind::Address), i + 1);
        }
        for ip in ["192.0.2.4", "192.0.2.5", "192.0.2.6", "192.0.2.7"] {
            assert_eq!(a.local(ip, Kind::Address, SLOW, 1, SEC).granted, 0, "{ip}");
        }
        assert_eq!(a.held(Kind::Address), 3);
        // Principals still get theirs.
        for who in ["api_key:ci", "jwt:ada", "jwt:bob"] {
            assert_eq!(
                a.local(who, Kind::Principal, SLOW, 1, SEC).granted,
                1,
                "{who}"
            );
        }
        assert_eq!((a.held(Kind::Principal), a.local_len()), (3, 6));
        // And the addresses' depleted buckets were kept, not reset.
        assert_eq!(
            a.local("192.0.2.1", Kind::Address, SLOW, 1, 2 * SEC)
                .granted,
            0
        );
    }

    #[test]
    fn a_full_table_drops_full_then_idle_buckets_and_never_an_active_depleted_one() {
        let a = Authority::with_cap(None, 4);
        // Two address buckets (the addresses' half): `busy` emptied, `quiet` holding a token.
        assert_eq!(a.local("busy", Kind::Address, SLOW, 2, 0).granted, 2);
        assert_eq!(a.local("quiet", Kind::Address, SLOW, 1, 0).granted, 1);
        // Nothing is full and nothing idle yet: a newcomer is refused, neither is dropped.
        assert_eq!(a.local("new", Kind::Address, SLOW, 1, SEC).granted, 0);
        assert_eq!(a.held(Kind::Address), 2);
        // `busy` keeps asking (and being refused); `quiet` goes idle.
        for t in [10, 30, 50, 60] {
            assert_eq!(
                a.local("busy", Kind::Address, SLOW, 1, t * SEC).granted,
                0,
                "{t}"
            );
        }
        // Past a minute: the idle bucket holding a token makes room; the busy, depleted one stays.
        assert_eq!(a.local("new", Kind::Address, SLOW, 1, 61 * SEC).granted, 1);
        assert_eq!(a.held(Kind::Address), 2);
        assert_eq!(
            a.local("busy", Kind::Address, SLOW, 1, 62 * SEC).granted,
            0,
            "busy not reset"
        );
        // Idle for long but still depleted: never dropped (it would hand its party a fresh burst).
        let later = 300 * SEC;
        assert_eq!(
            a.local("newer", Kind::Address, SLOW, 1, later).granted,
            1,
            "`new` idle, dropped"
        );
        assert_eq!(
            a.local("busy", Kind::Address, SLOW, 1, later + SEC).granted,
            0,
            "busy kept"
        );
        // A full bucket goes first, even a recently used one: nothing is forgotten by dropping it.
        let b = Authority::with_cap(None, 4);
        assert_eq!(b.local("p1", Kind::Principal, RATE, 2, 0).granted, 2);
        assert_eq!(b.local("p2", Kind::Principal, RATE, 1, 0).granted, 1);
        assert_eq!(b.local("p2", Kind::Principal, RATE, 0, 2 * SEC).granted, 0);
        assert_eq!(
            b.local("p3", Kind::Principal, RATE, 1, 2 * SEC).granted,
            1,
            "p2 was full"
        );
        assert_eq!(
            b.local("p1", Kind::Principal, RATE, 2, 2 * SEC).granted,
            2,
            "p1 was full too"
        );
    }
}
