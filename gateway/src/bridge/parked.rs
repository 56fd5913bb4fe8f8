//! A legacy backend's request held open while a 2026-07-28 client answers the question the backend asked.
//!
//! When a legacy backend asks (sampling, elicitation, roots) during a 2026-07-28 client's request, the
//! client gets an `input_required` result and answers in a new request. Rather than abandon the backend's
//! request and replay it on the retry (which makes the backend see its first question fail), the replica
//! that asked keeps the backend's request — the call in flight, its stream of related messages and the
//! question's pending reply — under a random ticket that the sealed `requestState` carries. A retry that
//! reaches the same replica within the backend's request deadline completes the backend's pending question
//! with the client's answer and carries on with the same backend request. Any other retry (another replica,
//! a restart, too late) falls back to the replay, which needs nothing held (see `replay`).
//!
//! Bounded: at most [`MAX_PARKED`] requests are held, and [`MAX_PARKED_PER_HOLDER`] for one principal (or
//! client address), so that a client that never retries cannot take every place (none more are parked:
//! those clients get the replay path), each until its deadline, when it is dropped — which answers the
//! backend's question with an error and cancels the backend request. The map's lock is held only for an
//! insert or a remove.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use handlers::Related;

use super::sealed_state::Holder;
use protocol::shape::Failure;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The most backend requests held at once.
pub const MAX_PARKED: usize = 4096;
/// The most held for one holder (a principal, else a client address).
pub const MAX_PARKED_PER_HOLDER: usize = 64;

/// A backend call in flight, owned (it outlives the client request that started it).
pub type BackendCall = Pin<Box<dyn Future<Output = Result<Box<RawValue>, Failure>> + Send>>;

/// Where a backend's pending question is answered.
pub type QuestionReply = oneshot::Sender<Result<Box<RawValue>, protocol::Error>>;

/// One backend request waiting for a client's answer.
pub struct Parked {
    /// The backend it is in flight on.
    pub backend: String,
    /// The call itself.
    pub call: BackendCall,
    /// What the backend sends about it (notifications, further questions).
    pub related: mpsc::Receiver<Related>,
    /// The reply to the question the client is answering.
    pub question: QuestionReply,
    /// The method of that question.
    pub method: String,
    /// How many questions were answered before it (its key is `r{asked}`).
    pub asked: usize,
    /// When the backend request's deadline passes: it is dropped then.
    pub until: Instant,
    /// Whose request it is (the bound per holder).
    pub holder: Holder,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked")
            .field("backend", &self.backend)
            .field("method", &self.method)
            .field("asked", &self.asked)
            .field("until", &self.until)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

/// What a sealed `requestState` carries to find a parked request again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// The replica (process) holding it.
    pub replica: u64,
    /// Its key there.
    pub token: u64,
}

/// The backend requests this replica holds.
pub struct ParkedCalls {
    replica: u64,
    next: AtomicU64,
    held: Mutex<Held>,
}

impl Default for ParkedCalls {
    fn default() -> Self {
        let mut seed = [0u8; 16];
        // Without randomness the replica id is 0 and tokens start at 0: still unique within the process,
        // and a ticket from elsewhere fails the replica check or finds nothing.
        let _ = getrandom::fill(&mut seed);
        let (replica, start) = seed.split_at(8);
        ParkedCalls {
            replica: u64::from_le_bytes(replica.try_into().unwrap_or_default()),
            next: AtomicU64::new(u64::from_le_bytes(start.try_into().unwrap_or_default())),
            held: Mutex::new(Held::default()),
        }
    }
}

impl std::fmt::Debug for ParkedCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParkedCalls")
            .field("replica", &self.replica)
            .field("held", &self.len())
            .finish()
    }
}

impl ParkedCalls {
    /// Holds `parked` until its deadline; its ticket, or `None` when [`MAX_PARKED`] are held already (the
    /// request is then dropped, and the client's retry replays it).
    pub fn park(self: &Arc<Self>, parked: Parked) -> Option<Ticket> {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let until = parked.until;
        {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let theirs = held.per_holder.get(&parked.holder).copied().unwrap_or(0);
            if held.calls.len() >= MAX_PARKED || theirs >= MAX_PARKED_PER_HOLDER {
                return None;
            }
            *held.per_holder.entry(parked.holder.clone()).or_default() += 1;
            held.calls.insert(token, parked);
        }
        let this = Arc::clone(self);
        actix_rt::spawn(async move {
            tokio::time::sleep_until(until).await;
            let expired = this.remove(token);
            if expired.is_some() {
                tracing::debug!(
                    token,
                    "a parked backend request expired before the client's retry"
                );
            }
        });
        Some(Ticket {
            replica: self.replica,
            token,
        })
    }

    /// The request a ticket names, if this replica holds it for `backend` and its deadline has not passed.
    pub fn take(&self, ticket: &Ticket, backend: &str) -> Option<Parked> {
        if ticket.replica != self.replica {
            return None;
        }
        let parked = self.remove(ticket.token)?;
        (parked.backend == backend && parked.until > Instant::now()).then_some(parked)
    }

    /// How many requests are held now.
    pub fn len(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .len()
    }

    /// Whether none is held.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn remove(&self, token: u64) -> Option<Parked> {
        // The removed request is dropped by the caller, after the lock is released.
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let parked = held.calls.remove(&token)?;
        if let Some(n) = held.per_holder.get_mut(&parked.holder) {
            *n -= 1;
            if *n == 0 {
                held.per_holder.remove(&parked.holder);
            }
        }
        Some(parked)
    }
}

/// The requests held, and how many each holder has (the bound per holder, checked without a scan).
#[derive(Default)]
struct Held {
    calls: HashMap<u64, Parked>,
    per_holder: HashMap<Holder, usize>,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parked(
        backend: &str,
        until: Instant,
        n: usize,
    ) -> (
        Parked,
        oneshot::Receiver<Result<Box<RawValue>, protocol::Error>>,
    ) {
        let (question, answered) = oneshot::channel();
        let (_tx, related) = mpsc::channel(1);
        let call: BackendCall = Box::pin(std::future::pending());
        let p = Parked {
            backend: backend.to_owned(),
            call,
            related,
            question,
            method: "sampling/createMessage".into(),
            asked: 0,
            until,
            holder: Holder::of(
                None,
                Some(std::net::IpAddr::from([10, 0, 0, (n % 250) as u8])),
            ),
        };
        (p, answered)
    }

    #[actix_rt::test]
    async fn a_ticket_finds_its_request_once_on_its_replica_and_backend() {
        let calls = Arc::new(ParkedCalls::default());
        let later = Instant::now() + Duration::from_secs(30);
        let (p, _answered) = parked("a", later, 0);
        let ticket = calls.park(p).unwrap();
        let elsewhere = Ticket {
            replica: ticket.replica.wrapping_add(1),
            ..ticket
        };
        assert!(calls.take(&elsewhere, "a").is_none());
        assert_eq!(calls.len(), 1);
        assert!(calls.take(&ticket, "a").is_some());
        assert!(calls.take(&ticket, "a").is_none(), "single use");

        let (p, _answered) = parked("a", later, 0);
        let ticket = calls.park(p).unwrap();
        assert!(
            calls.take(&ticket, "b").is_none(),
            "another backend's ticket"
        );
        assert!(calls.is_empty());
    }

    #[actix_rt::test]
    async fn an_unclaimed_request_is_dropped_at_its_deadline_and_its_question_fails() {
        let calls = Arc::new(ParkedCalls::default());
        let (p, answered) = parked("a", Instant::now() + Duration::from_millis(50), 0);
        let ticket = calls.park(p).unwrap();
        // Dropping the held request drops the question's reply: the backend's question ends.
        assert!(answered.await.is_err());
        assert!(calls.is_empty());
        assert!(calls.take(&ticket, "a").is_none());
    }

    #[actix_rt::test]
    async fn no_more_than_the_bound_are_held() {
        let calls = Arc::new(ParkedCalls::default());
        let later = Instant::now() + Duration::from_secs(30);
        let mut kept = Vec::new();
        for n in 0..MAX_PARKED {
            let (p, answered) = parked("a", later, n);
            assert!(calls.park(p).is_some(), "{n}");
            kept.push(answered);
        }
        let (p, _answered) = parked("a", later, MAX_PARKED);
        assert!(calls.park(p).is_none());
        assert_eq!(calls.len(), MAX_PARKED);
    }

    #[actix_rt::test]
    async fn one_holder_cannot_take_every_place() {
        let calls = Arc::new(ParkedCalls::default());
        let later = Instant::now() + Duration::from_secs(30);
        let mut kept = Vec::new();
        let mut tickets = Vec::new();
        for _ in 0..MAX_PARKED_PER_HOLDER {
            let (p, answered) = parked("a", later, 7);
            tickets.push(calls.park(p).unwrap());
            kept.push(answered);
        }
        let (p, _answered) = parked("a", later, 7);
        assert!(
            calls.park(p).is_none(),
            "the holder at its bound is refused"
        );
        let (p, _answered) = parked("a", later, 8);
        assert!(calls.park(p).is_some(), "another holder is not");
        // A request taken back frees its holder's place.
        assert!(calls.take(&tickets[0], "a").is_some());
        let (p, _answered) = parked("a", later, 7);
        assert!(calls.park(p).is_some(), "a place freed is taken again");
    }
}
