//! Backend sessions per principal: a request carrying its own credential (a token exchanged for its
//! principal) must not travel in the backend session the gateway shares, which would then carry several
//! principals' identities. Each credential gets its own session, initialized with it on first use and
//! renewed on a 404; at most [`MAX`] are kept per backend, the least recently used one DELETEd to make room.
//! They have no GET stream: a principal's session hears from the backend only in its requests' responses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use protocol::shape::Failure;
use reqwest::header::HeaderValue;
use serde_json::value::RawValue;
use tokio::time::Instant;
use tracing::debug;

use super::{Attempt, DELETE_TIMEOUT, Inner, LegacyLink, Refused, Session, initialize};
use crate::inbound::Inbound;
use crate::outbox::Outbox;

/// Sessions kept per backend, at most.
pub(super) const MAX: usize = 256;

/// The sessions, by credential, each with the tick of its last use (a counter: uses are ordered exactly).
#[derive(Debug, Default)]
pub(super) struct Principals(Mutex<Uses>);

#[derive(Debug, Default)]
struct Uses {
    map: HashMap<HeaderValue, (Session, u64)>,
    tick: u64,
}

impl Principals {
    fn get(&self, credential: &HeaderValue) -> Option<Session> {
        let mut uses = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        uses.tick += 1;
        let tick = uses.tick;
        let (session, used) = uses.map.get_mut(credential)?;
        *used = tick;
        Some(session.clone())
    }

    /// Keeps `session`; the one it pushed out (the map was full), or the one it replaced (two requests of
    /// one principal initialized at once).
    fn put(&self, credential: HeaderValue, session: Session) -> Option<Session> {
        let mut uses = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        uses.tick += 1;
        let tick = uses.tick;
        let mut evicted = None;
        if uses.map.len() >= MAX && !uses.map.contains_key(&credential) {
            let oldest = uses
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                evicted = uses.map.remove(&k).map(|(s, _)| s);
            }
        }
        let replaced = uses.map.insert(credential, (session, tick)).map(|(s, _)| s);
        evicted.or(replaced)
    }

    fn forget(&self, credential: &HeaderValue) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .remove(credential);
    }

    /// Takes every session out (the link closes).
    pub(super) fn drain(&self) -> Vec<Session> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .drain()
            .map(|(_, (s, _))| s)
            .collect()
    }

    /// Sessions held.
    pub(super) fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .len()
    }
}

/// What goes to a backend in a principal's own session: the answers to its requests and cancellations,
/// posted with that session's id and the principal's credential (never in the shared session, whose
/// backend would not know the request, nor with the gateway's own credential).
#[derive(Debug)]
struct PrincipalOutbox {
    inner: Weak<Inner>,
    session: Session,
}

impl Outbox for PrincipalOutbox {
    fn deliver(&self, message: Vec<u8>) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        inner
            .poster
            .post(inner.url.clone(), self.session.headers(), message)
    }
}

impl LegacyLink {
    /// One request in the session of the principal whose credential is `credential`, answered by
    /// `deadline`; a 404 renews that session once.
    pub(super) async fn call_as(
        &self,
        credential: HeaderValue,
        method: protocol::Method,
        params: Option<&RawValue>,
        trace: Option<&crate::TraceContext>,
        deadline: Instant,
        inbound: &Inbound,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &*self.0.ctx;
        for renewed in [false, true] {
            let session = match self.0.principals.get(&credential) {
                Some(s) if !renewed => s,
                _ => {
                    let made =
                        tokio::time::timeout_at(deadline, self.principal_session(&credential));
                    match made.await {
                        Ok(made) => made?,
                        Err(_) => return Err(ctx.timeout()),
                    }
                }
            };
            let outbox: Arc<dyn Outbox> = Arc::new(PrincipalOutbox {
                inner: Arc::downgrade(&self.0),
                session: session.clone(),
            });
            let inbound = inbound.with_outbox(Arc::clone(&outbox));
            match self
                .attempt_in(session, &outbox, method, params, trace, deadline, &inbound)
                .await
            {
                Attempt::Done(outcome) => return outcome,
                Attempt::Expired(_) => {
                    debug!(backend = %ctx.name(), "a principal's backend session expired: renewing it");
                    self.0.principals.forget(&credential);
                }
            }
        }
        Err(ctx.unavailable("the principal's backend session expired again"))
    }

    /// A new session initialized with `credential`, kept for it.
    async fn principal_session(&self, credential: &HeaderValue) -> Result<Session, Failure> {
        let inner = &*self.0;
        let ctx = &*inner.ctx;
        let own =
            crate::Credential::of_value(ctx.config.credential.header_name(), credential.clone());
        let (session, _) = initialize(ctx, &inner.client, &inner.url, &inner.last_id, own)
            .await
            .map_err(|r| match r {
                Refused::NotStreamable(why) | Refused::Outage(why) | Refused::Failed(why) => {
                    ctx.unavailable(format!("initializing a principal's backend session: {why}"))
                }
            })?;
        debug!(backend = %ctx.name(), sessions = inner.principals.len() + 1, "a principal's backend session initialized");
        if let Some(old) = inner.principals.put(credential.clone(), session.clone()) {
            self.delete(old);
        }
        Ok(session)
    }

    /// DELETEs a session (best effort, in the background).
    pub(super) fn delete(&self, session: Session) {
        let inner = &*self.0;
        if session.id.is_none() {
            return;
        }
        let request = inner
            .client
            .delete(inner.url.clone())
            .headers(session.headers())
            .timeout(DELETE_TIMEOUT);
        let backend = inner.ctx.name().to_owned();
        actix_rt::spawn(async move {
            match request.send().await {
                Ok(r) => debug!(%backend, status = %r.status(), "backend session deleted"),
                Err(e) => debug!(%backend, error = %e, "deleting the backend session failed"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use protocol::Generation;

    use super::*;

    fn session(n: usize) -> Session {
        Session {
            id: Some(format!("s{n}")),
            generation: Generation::V2025_06_18,
            credential: crate::Credential::default(),
        }
    }

    #[test]
    fn principal_sessions_are_bounded_and_the_least_recently_used_leaves() {
        let p = Principals::default();
        let key = |n: usize| HeaderValue::from_str(&format!("Bearer t{n}")).unwrap();
        for n in 0..MAX {
            assert!(p.put(key(n), session(n)).is_none());
        }
        assert!(
            p.get(&key(0)).is_some(),
            "t0 used again: t1 is now the oldest"
        );
        let out = p.put(key(MAX), session(MAX)).expect("full: one leaves");
        assert_eq!(out.id.as_deref(), Some("s1"));
        assert_eq!(p.len(), MAX);
        assert!(p.get(&key(1)).is_none() && p.get(&key(0)).is_some());
        let replaced = p
            .put(key(0), session(1000))
            .expect("two sessions of one principal: one leaves");
        assert_eq!(replaced.id.as_deref(), Some("s0"));
        assert_eq!(p.len(), MAX);
        p.forget(&key(0));
        assert_eq!(p.len(), MAX - 1);
    }
}
