//! The single-use ids of the sealed states opened so far, each remembered until its state expires (after
//! that the state itself is refused as expired, so the id may go). Bounded: never more than the cap. Expired
//! ids leave oldest first from a min-heap by expiry kept beside the set, at most [`DRAIN_PER_USE`] per use,
//! so a use costs O(log n) (each id is pushed once and popped once) and nothing scans the whole set, not
//! even after a burst of ids expired at once: they drain over the next uses (an expired id still held is
//! refused as expired, and a use adds one id while it removes up to 16, so expired ids always make room). When the set is full
//! of ids whose states have not expired, a new id is refused (`TooManyInUse`) rather than any id forgotten:
//! a forgotten id would let its state be replayed. The refused state is not used up; it opens once an id
//! expires and makes room.
//!
//! Each id is held by whoever used it (a [`super::Holder`]: the principal, else the client's address), and
//! one holder may hold at most `per_holder` ids: past that its next state is refused (`TooManyHeld`) while
//! everyone else's still open, so one party cannot fill the set for all. Nothing is evicted to make room for
//! anyone.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use super::StateError;

/// Expired ids removed at most per use: more than the one a use adds, so a backlog drains.
const DRAIN_PER_USE: usize = 16;

/// Single-use ids remembered until their expiry, at most `cap` of them, at most `per_holder` per holder.
#[derive(Debug)]
pub(super) struct UsedIds {
    cap: usize,
    per_holder: usize,
    inner: Mutex<Inner>,
}

/// One id used: its expiry, the id, its holder.
type Used = (u64, Arc<str>, Arc<str>);

#[derive(Debug, Default)]
struct Inner {
    /// The ids remembered; always the same ids as `by_expiry`.
    ids: HashSet<Arc<str>>,
    /// The same ids by expiry, soonest on top, each with its holder.
    by_expiry: BinaryHeap<Reverse<Used>>,
    /// How many ids each holder holds (holders with none are not kept).
    held: HashMap<Arc<str>, usize>,
    /// The latest `now` seen: ids expired by it are gone, so a state expired by it stays expired even if
    /// the wall clock steps back.
    horizon: u64,
}

impl UsedIds {
    /// Remembers at most `cap` ids, at most `per_holder` of one holder.
    pub(super) fn new(cap: usize, per_holder: usize) -> UsedIds {
        UsedIds {
            cap,
            per_holder: per_holder.clamp(1, cap.max(1)),
            inner: Mutex::default(),
        }
    }

    /// Uses `id` (whose state expires at `expiry`, milliseconds since the epoch) once at `now` for `holder`:
    /// refused when its state has expired, when it was used already, when `holder` holds its maximum of
    /// unexpired ids, or when the set is full of unexpired ids.
    pub(super) fn use_once(
        &self,
        id: &str,
        expiry: u64,
        now: u64,
        holder: &str,
    ) -> Result<(), StateError> {
        // Only map operations under the lock; never held across an await (there is none).
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &mut *guard;
        inner.horizon = inner.horizon.max(now);
        let horizon = inner.horizon;
        for _ in 0..DRAIN_PER_USE {
            match inner.by_expiry.peek() {
                Some(Reverse((e, _, _))) if *e < horizon => {}
                _ => break,
            }
            if let Some(Reverse((_, gone, by))) = inner.by_expiry.pop() {
                inner.ids.remove(&gone);
                if let Some(n) = inner.held.get_mut(&by) {
                    *n -= 1;
                    if *n == 0 {
                        inner.held.remove(&by);
                    }
                }
            }
        }
        if expiry < horizon {
            return Err(StateError::Expired);
        }
        if inner.ids.contains(id) {
            return Err(StateError::Replayed);
        }
        if inner.ids.len() >= self.cap {
            return Err(StateError::TooManyInUse);
        }
        let (by, held) = match inner.held.get_key_value(holder) {
            Some((by, n)) => (by.clone(), *n),
            None => (Arc::from(holder), 0),
        };
        if held >= self.per_holder {
            return Err(StateError::TooManyHeld);
        }
        let id: Arc<str> = Arc::from(id);
        inner.ids.insert(id.clone());
        inner.held.insert(by.clone(), held + 1);
        inner.by_expiry.push(Reverse((expiry, id, by)));
        Ok(())
    }

    /// Ids remembered (the set's and the heap's sizes, which are always equal).
    #[cfg(test)]
    fn len(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        (inner.ids.len(), inner.by_expiry.len())
    }

    /// Ids `holder` holds.
    #[cfg(test)]
    fn held_by(&self, holder: &str) -> usize {
        let inner = self.inner.lock().unwrap();
        inner.held.get(holder).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StateError::{Expired, Replayed, TooManyHeld, TooManyInUse};

    #[test]
    fn one_holder_at_its_cap_is_refused_while_others_still_use_states_and_nothing_unexpired_is_forgotten()
     {
        // 10 ids in all, 4 per holder.
        let used = UsedIds::new(10, 4);
        for i in 0..4 {
            assert_eq!(
                used.use_once(&format!("a{i}"), 100, 0, "alice"),
                Ok(()),
                "a{i}"
            );
        }
        // Alice fills her share and is refused, however often she tries...
        for i in 4..50 {
            assert_eq!(
                used.use_once(&format!("a{i}"), 100, 1, "alice"),
                Err(TooManyHeld),
                "a{i}"
            );
        }
        // ...while Bob and Carol still use theirs.
        for i in 0..4 {
            assert_eq!(
                used.use_once(&format!("b{i}"), 100, 2, "bob"),
                Ok(()),
                "b{i}"
            );
        }
        assert_eq!(used.use_once("c0", 100, 2, "carol"), Ok(()));
        // Nothing unexpired was forgotten to make room: every id used is still a replay.
        for id in ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "c0"] {
            assert_eq!(used.use_once(id, 100, 3, "mallory"), Err(Replayed), "{id}");
        }
        assert_eq!(used.len(), (9, 9));
        assert_eq!(
            (
                used.held_by("alice"),
                used.held_by("bob"),
                used.held_by("carol")
            ),
            (4, 4, 1)
        );
        // The whole set full: a holder under its share is refused too, still without forgetting anything.
        assert_eq!(used.use_once("c1", 100, 3, "carol"), Ok(()));
        assert_eq!(used.use_once("d0", 100, 3, "dave"), Err(TooManyInUse));
        // Once Alice's ids expire, her share is hers again (the refused state was not used up).
        assert_eq!(used.use_once("a4", 200, 101, "alice"), Ok(()));
        assert_eq!(used.held_by("alice"), 1);
        assert_eq!(used.held_by("bob"), 0, "bob's expired with alice's");
    }

    #[test]
    fn ids_are_used_once_expire_in_order_and_a_full_set_refuses() {
        // (what it shows, cap, steps of (id, expiry, now, outcome), ids remembered at the end)
        type Step = (&'static str, u64, u64, Result<(), StateError>);
        let table: [(&str, usize, &[Step], usize); 6] = [
            (
                "a replay inside the window is refused, up to the expiry itself",
                4,
                &[
                    ("a", 100, 10, Ok(())),
                    ("a", 100, 50, Err(Replayed)),
                    ("a", 100, 100, Err(Replayed)),
                    ("a", 100, 101, Err(Expired)),
                ],
                0,
            ),
            (
                "expired ids leave and make room",
                2,
                &[
                    ("a", 20, 10, Ok(())),
                    ("b", 30, 10, Ok(())),
                    ("c", 40, 25, Ok(())),
                    ("a", 20, 25, Err(Expired)),
                    ("b", 30, 25, Err(Replayed)),
                ],
                2,
            ),
            (
                "a set full of unexpired ids refuses a new one and forgets none",
                2,
                &[
                    ("a", 100, 10, Ok(())),
                    ("b", 100, 10, Ok(())),
                    ("c", 100, 10, Err(TooManyInUse)),
                    ("a", 100, 11, Err(Replayed)),
                    ("b", 100, 11, Err(Replayed)),
                    ("c", 100, 12, Err(TooManyInUse)),
                    // the refused state was not used up: it opens once the others expire
                    ("c", 200, 101, Ok(())),
                    ("c", 200, 102, Err(Replayed)),
                ],
                1,
            ),
            (
                "ids expire by their own expiry, not by the order they were used",
                3,
                &[
                    ("a", 300, 10, Ok(())),
                    ("b", 100, 10, Ok(())),
                    ("c", 200, 10, Ok(())),
                    ("d", 400, 150, Ok(())),
                    ("a", 300, 150, Err(Replayed)),
                    ("e", 500, 250, Ok(())),
                    ("d", 400, 250, Err(Replayed)),
                    ("f", 500, 250, Err(TooManyInUse)),
                ],
                3,
            ),
            (
                "the wall clock stepping back does not bring a forgotten id back",
                4,
                &[
                    ("a", 50, 10, Ok(())),
                    ("b", 200, 60, Ok(())),
                    ("a", 50, 40, Err(Expired)),
                    ("c", 55, 40, Err(Expired)),
                ],
                1,
            ),
            (
                "a cap of one holds one",
                1,
                &[
                    ("a", 10, 0, Ok(())),
                    ("b", 10, 0, Err(TooManyInUse)),
                    ("b", 20, 11, Ok(())),
                    ("a", 10, 11, Err(Expired)),
                ],
                1,
            ),
        ];
        for (what, cap, steps, left) in table {
            let used = UsedIds::new(cap, cap);
            for (i, (id, expiry, now, want)) in steps.iter().enumerate() {
                assert_eq!(
                    used.use_once(id, *expiry, *now, "h"),
                    *want,
                    "{what}: step {i}"
                );
                let (ids, heap) = used.len();
                assert!(ids <= cap, "{what}: step {i}: {ids} ids, cap {cap}");
                assert_eq!(ids, heap, "{what}: step {i}");
            }
            assert_eq!(used.len().0, left, "{what}");
        }
    }

    #[test]
    fn a_burst_of_expired_ids_drains_a_few_per_use_and_still_makes_room() {
        let used = UsedIds::new(40, 40);
        for i in 0..40 {
            used.use_once(&format!("old{i}"), 10, 0, "h").unwrap();
        }
        // (id, expiry, now, outcome, ids held after): the 40 expire at once and leave 16 per use
        let table = [
            ("new0", 100, 5, Err(TooManyInUse), 40),
            ("new0", 100, 11, Ok(()), 40 - 16 + 1),
            ("old0", 10, 11, Err(Expired), 40 - 32 + 1),
            ("new1", 100, 11, Ok(()), 2),
            ("old39", 10, 11, Err(Expired), 2),
            ("new1", 100, 11, Err(Replayed), 2),
        ];
        for (i, (id, expiry, now, want, held)) in table.into_iter().enumerate() {
            assert_eq!(used.use_once(id, expiry, now, "h"), want, "step {i}");
            assert_eq!(used.len(), (held, held), "step {i}");
        }
    }

    #[test]
    fn the_replay_set_never_grows_past_its_bound() {
        // Far more states than the cap, opened over time with lifetimes that vary: the set stays within
        // its cap at every step, every state opens at most once, and a full set refuses rather than forgets.
        const CAP: usize = 64;
        let used = UsedIds::new(CAP, CAP);
        let (mut opened, mut full) = (0, 0);
        let mut open_ids = Vec::new();
        for i in 0..20_000u64 {
            let now = i / 4;
            let expiry = now + 1 + (i * 7919) % 97;
            let id = format!("id{i}");
            match used.use_once(&id, expiry, now, "h") {
                Ok(()) => {
                    opened += 1;
                    open_ids.push((id, expiry));
                }
                Err(TooManyInUse) => full += 1,
                Err(other) => panic!("state {i}: {other}"),
            }
            let (ids, heap) = used.len();
            assert!(ids <= CAP, "state {i}: {ids} ids");
            assert_eq!(ids, heap);
            // the latest ids opened and not expired are refused as replays
            for (id, expiry) in open_ids.iter().rev().take(3) {
                if *expiry >= now {
                    assert_eq!(used.use_once(id, *expiry, now, "h"), Err(Replayed), "{id}");
                }
            }
        }
        assert!(opened > CAP && full > 0, "opened {opened}, refused {full}");
    }
}
