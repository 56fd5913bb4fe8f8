//! Each caller's share of a backend's data-path permits (`max_in_flight_per_session`): no one caller — a
//! legacy session, or for requests without one the client's address — may hold more than its share of a
//! backend's `max_in_flight` at once, so that one client's burst (a batch, a runaway agent) cannot take
//! every permit while other clients are refused. Over its share, a caller's next request is answered
//! [`Failure::OverShare`] at once; other callers' requests go on as before.
//!
//! The count lives in a [`DashMap`] keyed by [`Caller`] with an entry only while that caller has
//! requests in flight (so it is bounded by the requests in flight, never by the callers ever seen), and
//! is changed only in synchronous code: no shard guard is held across an `.await`.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use dashmap::DashMap;
use protocol::shape::Failure;

/// Who a request counts against: a digest of the session id, or of the client's address. A 64-bit keyed
/// hash (the key random per process), so a caller's identity is never kept in the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Caller(u64);

impl Caller {
    /// The caller named by `identity` (a session id, an address's bytes) in `space` (what kind of name it
    /// is: a session and an address never share a count).
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

/// The requests each caller has in flight at one backend, and the share it may hold.
#[derive(Debug)]
pub(crate) struct Shares {
    limit: usize,
    held: DashMap<Caller, usize>,
}

impl Shares {
    /// A share of `limit` requests per caller (at least one).
    pub(crate) fn new(limit: usize) -> Shares {
        Shares {
            limit: limit.max(1),
            held: DashMap::new(),
        }
    }

    /// One more request of `caller` in flight until the returned guard drops; `OverShare` when it
    /// already holds its share.
    pub(crate) fn take(self: &Arc<Self>, caller: Caller, backend: &str) -> Result<Held, Failure> {
        let mut entry = self.held.entry(caller).or_insert(0);
        if *entry >= self.limit {
            return Err(Failure::OverShare {
                backend: backend.to_owned(),
                share: self.limit,
            });
        }
        *entry += 1;
        drop(entry);
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

/// One request counted against its caller's share (see [`Shares::take`]).
#[derive(Debug)]
pub(crate) struct Held {
    shares: Arc<Shares>,
    caller: Caller,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The last request of a caller removes its entry: the map holds only callers with requests in flight.
        self.shares.held.remove_if_mut(&self.caller, |_, n| {
            *n -= 1;
            *n == 0
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_over_its_share_is_refused_while_another_goes_through() {
        let shares = Arc::new(Shares::new(2));
        let (a, b) = (Caller::new("session", b"a"), Caller::new("session", b"b"));
        let held: Vec<Held> = (0..2).map(|_| shares.take(a, "m").unwrap()).collect();
        assert_eq!(
            shares.take(a, "m").unwrap_err(),
            Failure::OverShare {
                backend: "m".into(),
                share: 2
            }
        );
        let other = shares.take(b, "m").expect("another caller is not refused");
        drop(held);
        assert!(shares.take(a, "m").is_ok(), "its share is free again");
        drop(other);
        assert_eq!(shares.callers(), 0, "no entry is left behind");
    }

    #[test]
    fn sessions_and_addresses_are_different_callers() {
        assert_ne!(
            Caller::new("session", b"127.0.0.1"),
            Caller::new("address", b"127.0.0.1")
        );
        assert_eq!(
            Caller::new("address", b"127.0.0.1"),
            Caller::new("address", b"127.0.0.1")
        );
    }

    #[test]
    fn the_count_is_exact_under_concurrency() {
        let shares = Arc::new(Shares::new(5));
        let caller = Caller::new("session", b"busy");
        let taken: usize = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..10)
                            .filter_map(|_| shares.take(caller, "m").ok())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let held: Vec<Vec<Held>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            held.iter().map(Vec::len).sum()
        });
        assert_eq!(taken, 5, "never more than the share at once");
        assert_eq!(shares.callers(), 0);
    }
}
