//! The id table of a multiplexed connection (a stdio child, an HTTP+SSE event stream): every request the
//! gateway sends gets a backend-unique integer id, and the response with that id is routed back to the one
//! waiting caller. Ids are minted here, never taken from clients, and never reused while the connection
//! lives, so a late answer to an abandoned request cannot reach a newer one.
//!
//! When the connection dies the table is closed: every waiting caller is answered at once with why, and
//! nothing can register any more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

/// What a backend answered: its `result`, or its JSON-RPC error.
pub(crate) type Reply = Result<Box<RawValue>, protocol::Error>;

/// Why a request got no reply from the backend.
#[derive(Debug)]
pub(crate) enum NoReply {
    /// The connection died or was closed.
    Lost(Lost),
    /// The backend's reply was refused by the gateway as it arrived (larger than `max_message_bytes`):
    /// the request fails with this, at once.
    Refused(Failure),
}

/// Why a connection can no longer answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lost {
    /// It died (the process exited, the event stream ended).
    Crashed(String),
    /// It was closed on purpose (shutdown).
    Closed(String),
}

impl Lost {
    /// For people.
    pub(crate) fn reason(&self) -> &str {
        match self {
            Lost::Crashed(r) | Lost::Closed(r) => r,
        }
    }

    /// The failure a caller whose request was in flight gets.
    pub(crate) fn into_failure(self, backend: &str) -> Failure {
        match self {
            Lost::Crashed(reason) => Failure::Crashed {
                backend: backend.to_owned(),
                reason,
            },
            Lost::Closed(reason) => Failure::Unavailable {
                backend: backend.to_owned(),
                reason,
            },
        }
    }
}

/// The table. Its lock is held only for map operations, never across an `.await`.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    last_id: i64,
    waiting: HashMap<i64, oneshot::Sender<Result<Reply, Failure>>>,
    closed: Option<Lost>,
}

impl Pending {
    /// An empty, open table.
    pub(crate) fn new() -> Arc<Pending> {
        Arc::new(Pending::default())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Mints a new id and waits for its answer; refused once the table is closed.
    pub(crate) fn register(self: &Arc<Self>) -> Result<Waiter, Lost> {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.lock();
        if let Some(lost) = &inner.closed {
            return Err(lost.clone());
        }
        inner.last_id += 1;
        let id = inner.last_id;
        inner.waiting.insert(id, tx);
        drop(inner);
        Ok(Waiter {
            id,
            rx,
            pending: Arc::clone(self),
        })
    }

    /// Routes an answer to its caller; false when nobody waits for `id` (answered, abandoned or unknown).
    pub(crate) fn resolve(&self, id: i64, reply: Reply) -> bool {
        self.send(id, Ok(reply))
    }

    /// Fails the request `id` with `failure` instead of a reply (its reply was refused as it arrived);
    /// false when nobody waits for `id`.
    pub(crate) fn fail(&self, id: i64, failure: Failure) -> bool {
        self.send(id, Err(failure))
    }

    fn send(&self, id: i64, outcome: Result<Reply, Failure>) -> bool {
        let sender = self.lock().waiting.remove(&id);
        // A caller that gave up between the removal and the send simply never reads the reply.
        sender.is_some_and(|tx| tx.send(outcome).is_ok())
    }

    /// Closes the table: every waiting caller is answered with `lost` now. Only the first close counts.
    pub(crate) fn close(&self, lost: Lost) {
        let waiting = {
            let mut inner = self.lock();
            if inner.closed.is_some() {
                return;
            }
            inner.closed = Some(lost);
            std::mem::take(&mut inner.waiting)
        };
        // Dropping the senders wakes every waiter, which then reads why from the table.
        drop(waiting);
    }

    /// How many requests wait for an answer.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Why the table was closed (a closed channel without a recorded reason reads as a crash).
    fn lost(&self) -> Lost {
        self.lock()
            .closed
            .clone()
            .unwrap_or_else(|| Lost::Crashed("the connection was lost".to_owned()))
    }

    /// Forgets `id`; true when it was still waiting.
    fn forget(&self, id: i64) -> bool {
        self.lock().waiting.remove(&id).is_some()
    }
}

/// One registered request. Dropping it (answered, timed out, or abandoned by its caller) removes its entry.
#[derive(Debug)]
pub(crate) struct Waiter {
    id: i64,
    rx: oneshot::Receiver<Result<Reply, Failure>>,
    pending: Arc<Pending>,
}

impl Waiter {
    /// The backend-unique id to send the request with.
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    /// The backend's answer, or why it will never come.
    pub(crate) async fn answer(&mut self) -> Result<Reply, NoReply> {
        match (&mut self.rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(failure)) => Err(NoReply::Refused(failure)),
            Err(_) => Err(NoReply::Lost(self.pending.lost())),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.pending.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Reply {
        Ok(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[tokio::test]
    async fn ids_are_unique_and_answers_reach_their_caller() {
        let table = Pending::new();
        let mut a = table.register().unwrap();
        let mut b = table.register().unwrap();
        assert_ne!(a.id(), b.id());
        assert!(table.resolve(b.id(), ok("2")));
        assert!(table.resolve(a.id(), ok("1")));
        assert!(!table.resolve(a.id(), ok("3")));
        assert_eq!(a.answer().await.unwrap().unwrap().get(), "1");
        assert_eq!(b.answer().await.unwrap().unwrap().get(), "2");
    }

    #[tokio::test]
    async fn dropping_a_waiter_forgets_it_and_ids_are_never_reused() {
        let table = Pending::new();
        let first = table.register().unwrap();
        let id = first.id();
        drop(first);
        assert_eq!(table.in_flight(), 0);
        assert!(!table.resolve(id, ok("4")));
        assert!(table.register().unwrap().id() > id);
    }

    #[tokio::test]
    async fn closing_answers_everyone_and_refuses_newcomers() {
        let table = Pending::new();
        let mut a = table.register().unwrap();
        table.close(Lost::Crashed("exit status: 3".into()));
        table.close(Lost::Closed("ignored".into()));
        assert!(matches!(
            a.answer().await.unwrap_err(),
            NoReply::Lost(lost) if lost == Lost::Crashed("exit status: 3".into())
        ));
        assert!(table.register().is_err());
        assert!(matches!(
            Lost::Crashed("x".into()).into_failure("b"),
            Failure::Crashed { .. }
        ));
    }

    #[tokio::test]
    async fn a_refused_reply_fails_its_request_with_the_failure_and_once() {
        let table = Pending::new();
        let mut a = table.register().unwrap();
        let too_large = Failure::TooLarge {
            backend: "b".into(),
            limit: 1024,
            per: "message",
        };
        assert!(table.fail(a.id(), too_large.clone()));
        assert!(!table.fail(a.id(), too_large.clone()));
        assert!(!table.resolve(a.id(), ok("1")));
        assert!(matches!(a.answer().await.unwrap_err(), NoReply::Refused(f) if f == too_large));
        assert_eq!(table.in_flight(), 0);
    }
}
