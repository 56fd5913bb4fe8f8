//! URL elicitations relayed to 2025-11-25 clients, remembered so that a backend's later
//! `notifications/elicitation/complete {elicitationId}` reaches the one session it was relayed to, and no
//! other: the route is keyed by the backend and its id, and a completion for an id this replica did not
//! relay (or relayed to someone else's session) goes nowhere.
//!
//! Whose view is this, and who can fill it? A route is written only when the gateway relays a backend's
//! elicitation to a session (the backend picks the id, the gateway picks the session: the request's own).
//! Bounded per session ([`PER_SESSION`]), per holder ([`PER_HOLDER`]: the principal, else the client's
//! address) and in all ([`MAX_ROUTES`]); each lives [`LIFETIME`] at most. A session or holder at its cap is
//! refused (the elicitation is then not relayed, and the client is told why); a full table drops its
//! oldest route, which costs only a completion notification (the client may retry on its own).
//! The lock is held for a map operation only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::sealed_state::Holder;

/// Routes one session may hold.
pub const PER_SESSION: usize = 16;
/// Routes one principal (or client address) may hold across its sessions.
pub const PER_HOLDER: usize = 64;
/// Routes held in all.
pub const MAX_ROUTES: usize = 10_000;
/// How long a relayed elicitation waits for its completion: an OAuth consent or a payment takes minutes.
pub const LIFETIME: Duration = Duration::from_secs(15 * 60);

/// Why a route was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Full {
    /// The session holds [`PER_SESSION`] already.
    #[error("this session has {PER_SESSION} url elicitations pending already")]
    Session,
    /// The holder holds [`PER_HOLDER`] already.
    #[error("this principal has {PER_HOLDER} url elicitations pending already")]
    Holder,
}

type Key = (Arc<str>, String);

#[derive(Debug)]
struct Route {
    /// The session's id, shared with the session itself (a sealed id is some 250 bytes).
    session: Arc<str>,
    holder: Holder,
    until: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    routes: HashMap<Key, Route>,
    per_session: HashMap<Arc<str>, usize>,
    per_holder: HashMap<Holder, usize>,
    /// Keys in the order they were written (a key written again appears twice; the stale one is skipped).
    order: VecDeque<(Instant, Key)>,
}

/// The routes of relayed URL elicitations.
#[derive(Debug, Default)]
pub struct Completions {
    inner: Mutex<Inner>,
}

impl Completions {
    /// Records that `backend`'s elicitation `id` was relayed to `session` of `holder`.
    pub fn record(
        &self,
        backend: &str,
        id: &str,
        session: &Arc<str>,
        holder: &Holder,
    ) -> Result<(), Full> {
        self.record_at(backend, id, session, holder, Instant::now())
    }

    fn record_at(
        &self,
        backend: &str,
        id: &str,
        session: &Arc<str>,
        holder: &Holder,
        now: Instant,
    ) -> Result<(), Full> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.expire(now);
        let key: Key = (Arc::from(backend), id.to_owned());
        if let Some(route) = inner.routes.get(&key) {
            if route.session == *session {
                return Ok(()); // the same elicitation relayed again to the same session
            }
        }
        if inner.per_session.get(&**session).copied().unwrap_or(0) >= PER_SESSION {
            return Err(Full::Session);
        }
        if inner.per_holder.get(holder).copied().unwrap_or(0) >= PER_HOLDER {
            return Err(Full::Holder);
        }
        while inner.routes.len() >= MAX_ROUTES {
            let Some((_, oldest)) = inner.order.pop_front() else {
                break;
            };
            inner.remove(&oldest);
        }
        // A backend that gives two sessions one id: the later session's route replaces the earlier one's.
        inner.remove(&key);
        *inner.per_session.entry(Arc::clone(session)).or_default() += 1;
        *inner.per_holder.entry(holder.clone()).or_default() += 1;
        inner.order.push_back((now, key.clone()));
        inner.routes.insert(
            key,
            Route {
                session: Arc::clone(session),
                holder: holder.clone(),
                until: now + LIFETIME,
            },
        );
        Ok(())
    }

    /// The session `backend`'s completed elicitation `id` was relayed to, if it is still waiting (the
    /// route is used up).
    pub fn complete(&self, backend: &str, id: &str) -> Option<Arc<str>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.expire(Instant::now());
        let key: Key = (Arc::from(backend), id.to_owned());
        inner.remove(&key).map(|r| r.session)
    }

    /// How many routes are held.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes
            .len()
    }

    /// Whether none is held.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn remove(&mut self, key: &Key) -> Option<Route> {
        let route = self.routes.remove(key)?;
        decrement(&mut self.per_session, &route.session);
        decrement(&mut self.per_holder, &route.holder);
        Some(route)
    }

    fn expire(&mut self, now: Instant) {
        while let Some((written, _)) = self.order.front() {
            if *written + LIFETIME > now {
                break;
            }
            let Some((written, key)) = self.order.pop_front() else {
                break;
            };
            // Only the route this entry wrote: one written again later stays.
            if self
                .routes
                .get(&key)
                .is_some_and(|r| r.until <= written + LIFETIME)
            {
                self.remove(&key);
            }
        }
    }
}

fn decrement<K: std::hash::Hash + Eq + Clone>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: &str) -> Arc<str> {
        Arc::from(id)
    }

    fn holder(n: &str) -> Holder {
        Holder::of(None, Some(format!("10.0.0.{n}").parse().unwrap()))
    }

    #[test]
    fn a_completion_reaches_the_session_it_was_relayed_to_once() {
        let c = Completions::default();
        c.record("b", "e1", &s("session-a"), &holder("1")).unwrap();
        assert_eq!(c.complete("other", "e1"), None, "another backend's id");
        assert_eq!(c.complete("b", "e2"), None, "an id never relayed");
        assert_eq!(c.complete("b", "e1").as_deref(), Some("session-a"));
        assert_eq!(c.complete("b", "e1"), None, "used up");
        assert!(c.is_empty());
    }

    #[test]
    fn sessions_and_holders_are_refused_at_their_caps() {
        let c = Completions::default();
        for i in 0..PER_SESSION {
            c.record("b", &format!("e{i}"), &s("s"), &holder("1"))
                .unwrap();
        }
        assert_eq!(
            c.record("b", "one-more", &s("s"), &holder("1")),
            Err(Full::Session)
        );
        // The same holder on other sessions, up to its own cap.
        let mut n = PER_SESSION;
        while n < PER_HOLDER {
            c.record(
                "b",
                &format!("x{n}"),
                &s(&format!("s{}", n / PER_SESSION)),
                &holder("1"),
            )
            .unwrap();
            n += 1;
        }
        assert_eq!(
            c.record("b", "again", &s("fresh-session"), &holder("1")),
            Err(Full::Holder)
        );
        // Another holder is not affected, and a completion frees a place.
        c.record("b", "other", &s("t"), &holder("2")).unwrap();
        assert!(c.complete("b", "e0").is_some());
        c.record("b", "one-more", &s("s"), &holder("1")).unwrap();
    }

    #[test]
    fn routes_expire_and_the_table_is_bounded() {
        let c = Completions::default();
        let t0 = Instant::now();
        c.record_at("b", "old", &s("s"), &holder("1"), t0).unwrap();
        c.record_at(
            "b",
            "new",
            &s("s"),
            &holder("1"),
            t0 + LIFETIME - Duration::from_secs(1),
        )
        .unwrap();
        c.record_at("b", "x", &s("s2"), &holder("2"), t0 + LIFETIME)
            .unwrap();
        assert_eq!(c.len(), 2, "the oldest expired");
        let c = Completions::default();
        for i in 0..MAX_ROUTES + 5 {
            let h = Holder::of(
                None,
                Some(format!("10.1.{}.{}", i / 200, i % 200).parse().unwrap()),
            );
            c.record_at("b", &format!("e{i}"), &s(&format!("s{i}")), &h, t0)
                .unwrap();
        }
        assert_eq!(c.len(), MAX_ROUTES);
        assert_eq!(c.complete("b", "e0"), None, "the oldest was dropped");
        assert!(c.complete("b", &format!("e{}", MAX_ROUTES + 4)).is_some());
    }

    #[test]
    fn one_id_given_to_two_sessions_routes_to_the_later_one_only() {
        let c = Completions::default();
        c.record("b", "e", &s("first"), &holder("1")).unwrap();
        c.record("b", "e", &s("second"), &holder("2")).unwrap();
        assert_eq!(c.complete("b", "e").as_deref(), Some("second"));
        assert_eq!(c.len(), 0);
    }
}
