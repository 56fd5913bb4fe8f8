//! One worker's leases: for each bucket key it used lately, the tokens it still holds (until the lease
//! expires, [`LEASE_TTL_US`] after it was asked for), or the time until which the authority said the bucket
//! is empty. Owned by one worker's middleware and touched by that worker only; pure, with the time handed
//! in. It never asks the authority itself and never waits.

use std::collections::HashMap;

use super::bucket::Grant;

/// How long leased tokens stay usable after the lease was asked for, microseconds; unused ones are
/// dropped then, never carried over.
pub const LEASE_TTL_US: u64 = 250_000;

/// Bucket keys one worker remembers at most (see [`Leases::granted`]).
pub const WORKER_KEYS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Lease {
    /// Tokens still held.
    left: u32,
    /// When they are dropped, microseconds.
    expires: u64,
    /// Until when the authority's bucket is empty (refused without asking it again), microseconds.
    empty_until: u64,
}

/// What the worker's own leases decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// A leased token was taken.
    Admit,
    /// The bucket is empty for this long yet, milliseconds (at least 1).
    Refuse(u64),
    /// Nothing held: ask the authority for a lease.
    Ask,
}

/// One worker's leases, bounded.
#[derive(Debug)]
pub struct Leases {
    held: HashMap<u64, Lease>,
    cap: usize,
    /// When expired leases were last swept out, microseconds.
    swept: u64,
}

impl Leases {
    /// At most `cap` keys.
    pub fn new(cap: usize) -> Leases {
        Leases {
            held: HashMap::new(),
            cap: cap.max(1),
            swept: 0,
        }
    }

    /// Keys remembered.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Takes a token of `key` at `now` from what this worker holds.
    pub fn take(&mut self, key: u64, now: u64) -> Local {
        let Some(lease) = self.held.get_mut(&key) else {
            return Local::Ask;
        };
        if lease.empty_until > now {
            return Local::Refuse((lease.empty_until - now).div_ceil(1000).max(1));
        }
        if lease.left > 0 && lease.expires > now {
            lease.left -= 1;
            return Local::Admit;
        }
        Local::Ask
    }

    /// The authority's answer to a lease of `key` asked for at `asked`, arriving at `now`: the request that
    /// asked takes one token of it and the rest is held until `asked` + [`LEASE_TTL_US`] (what was held
    /// before is dropped); none granted: the bucket is remembered empty for the wait it named. Past
    /// [`WORKER_KEYS`] keys, expired ones are swept out (at most once per lease time) and otherwise one is
    /// forgotten — which only costs its next request a trip to the authority, never admits more.
    pub fn granted(&mut self, key: u64, grant: Grant, asked: u64, now: u64) -> Local {
        let (lease, local) = if grant.granted == 0 {
            let wait = grant.wait_ms.max(1);
            let lease = Lease {
                left: 0,
                expires: 0,
                empty_until: now.saturating_add(wait.saturating_mul(1000)),
            };
            (lease, Local::Refuse(wait))
        } else {
            let lease = Lease {
                left: grant.granted - 1,
                expires: asked.saturating_add(LEASE_TTL_US),
                empty_until: 0,
            };
            (lease, Local::Admit)
        };
        if let Some(held) = self.held.get_mut(&key) {
            *held = lease;
            return local;
        }
        if self.held.len() >= self.cap {
            self.make_room(now);
        }
        self.held.insert(key, lease);
        local
    }

    fn make_room(&mut self, now: u64) {
        if now.saturating_sub(self.swept) >= LEASE_TTL_US {
            self.swept = now;
            self.held
                .retain(|_, l| (l.left > 0 && l.expires > now) || l.empty_until > now);
        }
        if self.held.len() >= self.cap
            && let Some(any) = self.held.keys().next().copied()
        {
            self.held.remove(&any);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(granted: u32, wait_ms: u64) -> Grant {
        Grant { granted, wait_ms }
    }

    #[test]
    fn a_lease_serves_its_tokens_locally_then_asks_again() {
        let mut leases = Leases::new(8);
        assert_eq!(leases.take(1, 0), Local::Ask);
        assert_eq!(leases.granted(1, grant(3, 0), 0, 10), Local::Admit);
        assert_eq!(leases.take(1, 20), Local::Admit);
        assert_eq!(leases.take(1, 30), Local::Admit);
        assert_eq!(
            leases.take(1, 40),
            Local::Ask,
            "three tokens, three requests"
        );
    }

    #[test]
    fn leased_tokens_expire_unused_and_are_not_carried() {
        let mut leases = Leases::new(8);
        assert_eq!(leases.granted(1, grant(5, 0), 1_000, 2_000), Local::Admit);
        assert_eq!(leases.take(1, 1_000 + LEASE_TTL_US - 1), Local::Admit);
        // Expiry counts from when the lease was asked for, not from when it arrived.
        assert_eq!(leases.take(1, 1_000 + LEASE_TTL_US), Local::Ask);
        // A new lease replaces what was left: 3 unused tokens do not come back.
        let later = 1_000 + 2 * LEASE_TTL_US;
        assert_eq!(leases.granted(1, grant(1, 0), later, later), Local::Admit);
        assert_eq!(leases.take(1, later + 1), Local::Ask);
    }

    #[test]
    fn an_empty_bucket_is_refused_locally_until_its_wait_has_passed() {
        let mut leases = Leases::new(8);
        assert_eq!(leases.granted(1, grant(0, 1500), 0, 0), Local::Refuse(1500));
        assert_eq!(leases.take(1, 500_000), Local::Refuse(1000));
        assert_eq!(leases.take(1, 1_499_001), Local::Refuse(1));
        assert_eq!(leases.take(1, 1_500_000), Local::Ask);
        // Keys are independent.
        assert_eq!(leases.take(2, 0), Local::Ask);
    }

    #[test]
    fn past_its_bound_a_worker_forgets_keys_and_never_holds_more() {
        let mut leases = Leases::new(3);
        for (i, key) in [10u64, 11, 12, 13, 14].into_iter().enumerate() {
            let at = i as u64;
            assert_eq!(leases.granted(key, grant(2, 0), at, at), Local::Admit);
            assert!(leases.len() <= 3, "{} keys held", leases.len());
        }
        assert_eq!(leases.len(), 3);
        // The newest key is kept; a forgotten key only asks the authority again.
        assert_eq!(leases.take(14, 10), Local::Admit);
        let asked = [10u64, 11, 12, 13]
            .into_iter()
            .filter(|k| leases.take(*k, 10) == Local::Ask)
            .count();
        assert!(asked >= 2, "{asked} keys forgotten");
        // Once the leases have expired a sweep makes room without forgetting anything live.
        let late = 10 * LEASE_TTL_US;
        assert_eq!(leases.granted(15, grant(2, 0), late, late), Local::Admit);
        assert_eq!(leases.len(), 1, "expired leases swept");
    }
}
