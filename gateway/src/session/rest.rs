//! Making room in a full store: the idlest session actors with nothing open are dropped and their sessions
//! kept as records (`dormant`), the request that made room keeping one of the slots it freed; and an actor
//! idle on this replica, which ends its session alone but only drops its actor when replicas share Redis.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::dormant::{Record, secs};
use super::sealed::unix_now;
use super::slots::Slot;
use super::store::{Ending, Sessions, StoreFull};
use super::{Session, ShortId};

/// Rests a request needing a slot may try before it is refused (each rests a 64th of the maximum).
const SLOT_TRIES: usize = 4;

impl Sessions {
    /// Whether the session's actor may be dropped and rebuilt later: a sealed session that nothing uses now
    /// (no request holds it, no stream, no subscription).
    fn can_rest(&self, id: &str, session: &Arc<Session>) -> bool {
        self.may_rest(id, session, true)
    }

    /// [`Sessions::can_rest`], the subscriptions asked only when `any_subscribed` (some session holds one).
    fn may_rest(&self, id: &str, session: &Arc<Session>, any_subscribed: bool) -> bool {
        session.key.is_some()
            && Arc::strong_count(session) == 1
            && !session.handle.has_open_stream()
            && !(any_subscribed && self.subscriptions.has_session(id))
    }

    /// Drops the actors of the idlest sessions that can rest (a 64th of the maximum at a time, at least
    /// one), keeping each as a record. The scan copies no id (each is shared, counted) and asks the
    /// subscriptions' lock about each session only while some session has a subscription.
    pub(super) fn rest_idlest(&self) -> Rest<'_> {
        let any_subscribed = self.subscriptions.has_sessions();
        let mut idle: Vec<(Duration, Arc<str>)> = self
            .map
            .iter()
            .filter(|r| self.may_rest(r.key(), r.value(), any_subscribed))
            .map(|r| (r.value().idle_for(), Arc::clone(r.key())))
            .collect();
        let mut rest = Rest {
            candidates: idle.len(),
            count: 0,
            slot: None,
        };
        if idle.is_empty() {
            return rest;
        }
        let n = (self.slots.max / 64).clamp(1, idle.len());
        let idlest_first = |a: &(Duration, Arc<str>), b: &(Duration, Arc<str>)| b.0.cmp(&a.0);
        let now = unix_now();
        // The n idlest; those another request rested first (or that are in use again) are made up for by
        // the next idlest, so that a request racing another for room still rests n.
        let mut left = &mut idle[..];
        while rest.count < n && !left.is_empty() {
            let k = (n - rest.count).min(left.len());
            if k < left.len() {
                left.select_nth_unstable_by(k - 1, idlest_first);
            }
            let (batch, tail) = std::mem::take(&mut left).split_at_mut(k);
            left = tail;
            for (_, id) in batch.iter() {
                if self.rest_one(id, now) {
                    if rest.slot.is_none() {
                        // The first slot freed stays taken, now the caller's.
                        rest.slot = Some(Slot(Some(&self.slots)));
                    } else {
                        self.slots.give_back();
                    }
                    rest.count += 1;
                }
            }
        }
        self.rested.fetch_add(rest.count as u64, Ordering::Relaxed);
        rest
    }

    /// Drops the actor of a session that can rest, keeping it as a record (its slot is the caller's to give
    /// back); whether it did.
    fn rest_one(&self, id: &str, now: u64) -> bool {
        let Some((_, session)) = self.map.remove_if(id, |id, s| self.can_rest(id, s)) else {
            return false;
        };
        self.keep_record(&session, now);
        true
    }

    /// A session taken out of the map: its actor stopped, what it knows kept as a record.
    fn keep_record(&self, session: &Session, now: u64) {
        self.unindex(session);
        session.handle.end();
        if let Some(key) = session.key {
            let record = Record {
                last_use: secs(now.saturating_sub(session.idle_for().as_secs())),
                expires: secs(session.expires_at),
                level: session.log_level.load(Ordering::Relaxed),
                ended: false,
            };
            self.dormant.put(key, record, now);
        }
    }

    /// A session's actor saw no request here for `session_idle_secs`. On its own, or with a key ring but no
    /// Redis, that ends the session (here). With Redis, other replicas may have served it meanwhile: the
    /// actor is dropped and the session kept as a record, and its next request here asks Redis for its
    /// last use on any replica (a session idle everywhere is 404 then).
    pub(super) fn idle_out(&self, id: &str) {
        if !self.shared_idle {
            self.end(id, Ending::Idle);
            return;
        }
        let Some((_, session)) = self.map.remove(id) else {
            return;
        };
        self.slots.give_back();
        self.subscriptions.end_session(id);
        self.keep_record(&session, unix_now());
        tracing::debug!(session = %ShortId(id), "session idle here: its actor is dropped");
    }

    /// A free slot, making room by resting idle actors when there is none: the request that rests keeps one
    /// of the slots it freed (no other request can take it first). A rest finds none to drop only when every
    /// one it could have rested was taken or rested by other requests meanwhile: a few tries, refused at once
    /// when nothing can rest.
    pub(super) fn slot(&self) -> Result<Slot<'_>, StoreFull> {
        for _ in 0..SLOT_TRIES {
            if let Some(slot) = self.slots.take() {
                return Ok(slot);
            }
            let rest = self.rest_idlest();
            if let Some(slot) = rest.slot {
                return Ok(slot);
            }
            if rest.candidates == 0 {
                break;
            }
        }
        self.slots.take().ok_or(StoreFull(self.slots.max))
    }
}

/// What one rest did: the actors it could have rested, those it rested, and the slot of the first of them,
/// still taken (for the request that needed room: no other can take it first).
pub(super) struct Rest<'a> {
    pub(super) candidates: usize,
    pub(super) count: usize,
    pub(super) slot: Option<Slot<'a>>,
}
