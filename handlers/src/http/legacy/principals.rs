//! Backend sessions per principal: a request carrying its own credential (a token exchanged for its
//! principal) must not travel in the backend session the gateway shares, which would then carry several
//! principals' identities. Each credential gets its own session, initialized with it on first use and
//! renewed on a 404; at most [`MAX`] are kept per backend, the least recently used one DELETEd to make room.
//! A principal's session hears from the backend in its requests' responses, and it opens no GET stream but
//! for one reason: after its backend answered -32042 (a URL the user must open), it listens for up to
//! [`LISTEN_FOR`] so that the backend's `notifications/elicitation/complete` can reach that user (the
//! gateway routes it to the one session it relayed the elicitation to); nothing else said on that stream
//! passes (`Inbound::completions_of`). One such stream per session at most, ended with its session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use std::time::Duration;

use protocol::ErrorCode;
use protocol::shape::Failure;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::value::RawValue;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::streams::{open_stream, read_stream};
use super::{Attempt, DELETE_TIMEOUT, Inner, LegacyLink, Refused, Session, initialize};
use crate::inbound::Inbound;
use crate::outbox::Outbox;

/// Sessions kept per backend, at most.
pub(super) const MAX: usize = 256;
/// How long a principal's session listens for a URL elicitation's completion: as long as the gateway keeps
/// the completion's route (`bridge::url::LIFETIME` in the gateway).
const LISTEN_FOR: Duration = Duration::from_secs(15 * 60);
/// The wait before a completion stream the backend closed is opened again.
const RECONNECT: Duration = Duration::from_secs(1);
/// How long the answer that asked for a URL waits for its session's completion stream to open.
const OPEN_WITHIN: Duration = Duration::from_secs(2);

/// The GET of `session`'s own stream.
fn get(inner: &Inner, session: &Session) -> reqwest::RequestBuilder {
    let mut headers = session.headers();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.remove(CONTENT_TYPE);
    inner.client.get(inner.url.clone()).headers(headers)
}

/// The sessions, by credential, each with the tick of its last use (a counter: uses are ordered exactly).
#[derive(Debug, Default)]
pub(super) struct Principals(Mutex<Uses>);

#[derive(Debug, Default)]
struct Uses {
    map: HashMap<HeaderValue, (Session, u64)>,
    tick: u64,
    /// The sessions listening for completions, by session id: the stop of each stream.
    listening: HashMap<String, CancellationToken>,
}

impl Uses {
    /// Ends `session`'s completion stream, if it has one.
    fn stop_listening(&mut self, session: &Session) {
        if let Some(stop) = session.id.as_ref().and_then(|id| self.listening.remove(id)) {
            stop.cancel();
        }
    }
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
        let out = evicted.or(replaced);
        if let Some(old) = &out {
            uses.stop_listening(old);
        }
        out
    }

    fn forget(&self, credential: &HeaderValue) {
        let mut uses = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((session, _)) = uses.map.remove(credential) {
            uses.stop_listening(&session);
        }
    }

    /// Takes every session out (the link closes), their completion streams ended.
    pub(super) fn drain(&self) -> Vec<Session> {
        let mut uses = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, stop) in uses.listening.drain() {
            stop.cancel();
        }
        uses.map.drain().map(|(_, (s, _))| s).collect()
    }

    /// The stop of a new completion stream for `session`; `None` when it has no id or listens already.
    fn start_listening(&self, session: &Session) -> Option<CancellationToken> {
        let id = session.id.clone()?;
        let mut uses = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if uses.listening.contains_key(&id) {
            return None;
        }
        let stop = CancellationToken::new();
        uses.listening.insert(id, stop.clone());
        Some(stop)
    }

    /// A completion stream ended by itself (its time was up, or the backend closed it).
    fn stopped_listening(&self, id: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .listening
            .remove(id);
    }

    /// How many sessions listen for completions now.
    #[cfg(test)]
    fn listening(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .listening
            .len()
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
            let kept = session.clone();
            match self
                .attempt_in(
                    session,
                    &outbox,
                    (method, method.as_str()),
                    params,
                    trace,
                    deadline,
                    &inbound,
                )
                .await
            {
                Attempt::Done(outcome) => {
                    let url_required = matches!(&outcome, Err(Failure::Backend { error, .. })
                        if error.code() == ErrorCode::UrlElicitationRequiredError);
                    if url_required {
                        self.listen_for_completions(kept, deadline).await;
                    }
                    return outcome;
                }
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
                Refused::Credential {
                    status, challenge, ..
                } => Failure::Unauthorized {
                    backend: ctx.name().to_owned(),
                    status,
                    challenge,
                },
                Refused::NotStreamable(why) | Refused::Outage(why) | Refused::Failed(why) => {
                    ctx.unavailable(format!("initializing a principal's backend session: {why}"))
                }
            })?;
        let session = Session {
            own: true,
            ..session
        };
        debug!(backend = %ctx.name(), sessions = inner.principals.len() + 1, "a principal's backend session initialized");
        if let Some(old) = inner.principals.put(credential.clone(), session.clone()) {
            self.delete(old);
        }
        Ok(session)
    }

    /// Listens on `session`'s GET stream for its URL elicitations' completions, for [`LISTEN_FOR`] at most
    /// (opened again a second after the backend closes it), unless it listens already; ended early when the
    /// session is dropped, replaced or forgotten, or the link closes. Returns once the stream is open (or
    /// refused, or [`OPEN_WITHIN`] or the request's deadline passed: then it does not listen), so that a
    /// completion the backend sends as soon as the user is done finds it open.
    async fn listen_for_completions(&self, session: Session, deadline: Instant) {
        let Some(stop) = self.0.principals.start_listening(&session) else {
            return;
        };
        let link = Arc::downgrade(&self.0);
        let max = self.0.ctx.config.max_message_bytes;
        let until = Instant::now() + LISTEN_FOR;
        let open_by = deadline.min(Instant::now() + OPEN_WITHIN);
        let first = tokio::time::timeout_at(open_by, open_stream(get(&self.0, &session))).await;
        let mut next = first.ok().and_then(Result::ok);
        debug!(backend = %self.0.ctx.name(), open = next.is_some(),
            "a principal's session listens for url elicitation completions");
        let inbound = self.0.inbound.completions_of(Arc::new(PrincipalOutbox {
            inner: link.clone(),
            session: session.clone(),
        }));
        actix_rt::spawn(async move {
            while let Some(response) = next.take() {
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep_until(until) => break,
                    () = read_stream(response, &inbound, max) => {}
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep_until(until) => break,
                    () = tokio::time::sleep(RECONNECT) => {}
                }
                let Some(inner) = link.upgrade() else { return };
                let request = get(&inner, &session);
                // Hold no strong reference while streaming: dropping the link must end this task.
                drop(inner);
                next = open_stream(request).await.ok();
            }
            if let (Some(inner), Some(id)) = (link.upgrade(), &session.id) {
                inner.principals.stopped_listening(id);
            }
        });
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
            own: true,
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

    #[test]
    fn a_session_has_one_completion_stream_at_most_ended_with_the_session() {
        let p = Principals::default();
        let key = |n: usize| HeaderValue::from_str(&format!("Bearer t{n}")).unwrap();
        // (how the session leaves, by its number)
        for n in 0..3 {
            assert!(p.put(key(n), session(n)).is_none());
        }
        let stops: Vec<CancellationToken> = (0..3)
            .map(|n| p.start_listening(&session(n)).expect("a first stream"))
            .collect();
        assert!(p.start_listening(&session(0)).is_none(), "one per session");
        assert_eq!(p.listening(), 3);
        // Replaced (a second session of one principal), forgotten (expired), the link closed.
        let _ = p.put(key(0), session(100));
        assert!(stops[0].is_cancelled());
        p.forget(&key(1));
        assert!(stops[1].is_cancelled());
        assert!(!stops[2].is_cancelled());
        let _ = p.drain();
        assert!(stops[2].is_cancelled());
        assert_eq!(p.listening(), 0);
        // One that ended by itself makes room for another.
        let again = p.start_listening(&session(7)).unwrap();
        p.stopped_listening("s7");
        assert!(p.start_listening(&session(7)).is_some() && !again.is_cancelled());
        let no_id = Session {
            id: None,
            ..session(8)
        };
        assert!(p.start_listening(&no_id).is_none(), "nothing to listen to");
    }
}
