//! A backend's data-path permits (`max_in_flight`) and each caller's share of them
//! (`max_in_flight_per_caller`, by default a quarter). A caller is a principal when `[auth]` is on, else a
//! legacy session, else the client's address (the gateway decides: [`Caller`] is only a digest).
//!
//! The rule, work-conserving and fair:
//! - a caller holding fewer requests than its share takes any free permit;
//! - a caller holding its share or more takes a free permit only if at least a share's worth of permits
//!   (`share`) is still free once it has taken it; otherwise it is answered [`Failure::OverShare`] at once;
//! - with no permit free every request is refused: `OverShare` for a caller at or over its share,
//!   [`Failure::Overloaded`] for anyone else.
//!
//! Work-conserving: while more than `share` permits are free no request is refused, so a lone caller may
//! hold up to `max_in_flight - share` (48 of 64 by default): one client's 40 concurrent calls to a backend
//! with 64 permits and no other client all go through. Only when permits are scarce (`share` or fewer free)
//! is a caller over its share refused, and it is refused first: the last `share` free permits go only to
//! callers under their share.
//!
//! Fair: the permits held beyond shares (the sum over callers of what each holds above its share) never
//! exceed `max_in_flight - share`. Proof: a permit taken over a share is taken only when, with it and every
//! permit taken before the check, at most `max_in_flight - share` are held; so at any time the over-share
//! permits still held (all taken before the latest such check) are at most that many, and what callers hold
//! beyond their shares is at most the over-share permits they still hold (a count rises only after its
//! permit is taken and falls before it is returned). Hence when every permit is taken, at least `share` of
//! them are held within callers' shares (or by the gateway's own requests, which count against no one):
//! a greedy caller can delay a newcomer only as much as the callers within their shares do.
//!
//! The free-permit count is a semaphore's atomic ([`Shares::free`]), read without an await; a caller's
//! count lives in a [`DashMap`] keyed by [`Caller`] with an entry only while that caller has requests in
//! flight (so it is bounded by the requests in flight, never by the callers ever seen), and is changed only
//! in synchronous code: no shard guard is held across an `.await`.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use dashmap::DashMap;
use protocol::shape::Failure;
use tokio::sync::Semaphore;

/// Who a request counts against: a digest of the principal's name, the session id, or the client's
/// address. A 64-bit keyed hash (the key random per process), so a caller's identity is never kept in the
/// map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Caller(u64);

impl Caller {
    /// The caller named by `identity` (a principal's name, a session id, an address's bytes) in `space`
    /// (what kind of name it is: a principal, a session and an address never share a count).
    pub fn new(space: &str, identity: &[u8]) -> Caller {
        static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
        let mut h = KEY.get_or_init(Default::default).build_hasher();
        space.hash(&mut h);
        identity.hash(&mut h);
        Caller(h.finish())
    }
}

/// The share one caller may hold of `max_in_flight` permits: `per_caller` when set, else a quarter (at least
/// one), never more than `max_in_flight`.
pub fn share_of(max_in_flight: usize, per_caller: Option<usize>) -> usize {
    let max = max_in_flight.max(1);
    per_caller.unwrap_or(max / 4).clamp(1, max)
}

/// One backend's data-path permits and the requests each caller holds of them.
#[derive(Debug)]
pub(crate) struct Shares {
    permits: Semaphore,
    max: usize,
    share: usize,
    held: DashMap<Caller, usize>,
}

impl Shares {
    /// `max_in_flight` permits (at least one), of which a caller's share is `share` (1 to `max_in_flight`).
    pub(crate) fn new(max_in_flight: usize, share: usize) -> Shares {
        let max = max_in_flight.max(1);
        Shares {
            permits: Semaphore::new(max),
            max,
            share: share.clamp(1, max),
            held: DashMap::new(),
        }
    }

    /// The permits free now (an atomic read).
    pub(crate) fn free(&self) -> usize {
        self.permits.available_permits()
    }

    /// The permits taken now.
    pub(crate) fn in_flight(&self) -> usize {
        self.max.saturating_sub(self.free())
    }

    /// A permit for one request of `caller` (`None`: the gateway's own, counted against no one) until the
    /// returned guard drops, by the rule of the module's text.
    pub(crate) fn take(
        self: &Arc<Self>,
        caller: Option<Caller>,
        backend: &str,
    ) -> Result<Held, Failure> {
        let over_share = || Failure::OverShare {
            backend: backend.to_owned(),
            share: self.share,
        };
        let Ok(permit) = self.permits.try_acquire() else {
            let at_share =
                caller.is_some_and(|c| self.held.get(&c).is_some_and(|n| *n >= self.share));
            return Err(if at_share {
                over_share()
            } else {
                Failure::Overloaded {
                    backend: backend.to_owned(),
                }
            });
        };
        if let Some(caller) = caller {
            let mut n = self.held.entry(caller).or_insert(0);
            // The permit is already taken: `free` is what stays free with it.
            if *n >= self.share && self.free() < self.share {
                // `n >= share >= 1`: the entry existed, nothing is left behind. The permit goes back as it
                // drops, after the shard guard.
                drop(n);
                return Err(over_share());
            }
            *n += 1;
        }
        // Returned by `Held`'s drop, after the caller's count falls.
        permit.forget();
        Ok(Held {
            shares: Arc::clone(self),
            caller,
        })
    }

    /// Callers with a request in flight now.
    #[cfg(test)]
    fn callers(&self) -> usize {
        self.held.len()
    }
}

/// One permit, counted against its caller's share (see [`Shares::take`]).
#[derive(Debug)]
pub(crate) struct Held {
    shares: Arc<Shares>,
    caller: Option<Caller>,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The count falls before the permit is returned (the module's proof needs it), and the last
        // request of a caller removes its entry: the map holds only callers with requests in flight.
        if let Some(caller) = self.caller {
            self.shares.held.remove_if_mut(&caller, |_, n| {
                *n -= 1;
                *n == 0
            });
        }
        self.shares.permits.add_permits(1);
    }
}

#[cfg(test)]
mod tests;
