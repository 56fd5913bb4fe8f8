//! Requests a backend asks while serving a client's request (`sampling/createMessage`, `elicitation/create`,
//! `roots/list`): which caller they belong to, and how the caller's answer goes back.
//!
//! Attribution: a request that arrives on one request's own response stream (legacy Streamable HTTP)
//! belongs to that request. On a multiplexed connection (stdio, HTTP+SSE) or a legacy session's GET stream
//! (where SDK servers send requests made without a related request id) nothing in the message says which
//! request it belongs to, so it is attributed by elimination only: when exactly one request of the backend
//! is in flight and that request has a sink ([`Callers`]). Otherwise the backend gets -32601, as a client
//! without the capability would answer, with a message saying why.
//!
//! The wait for the answer never blocks the reader: it runs in its own task, bounded by the request's
//! remaining deadline and at most [`MAX_WAIT`], and ends early when the caller goes away. The answer (or
//! the error) goes to the backend through the link's outbox with the backend's own id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use protocol::{Error, ErrorCode, Request};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::outbox::Outbox;
use crate::related::{Related, RelatedSink};
use crate::wire;

/// The longest a backend's request waits for the client's answer.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(120);

/// The code the MCP SDKs use for a request that timed out.
const REQUEST_TIMEOUT: i64 = -32001;

/// One request in flight that may be asked things: its sink, its deadline, and how many of the backend's
/// questions it is answering now (shared by its clones).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) sink: RelatedSink,
    pub(crate) deadline: Instant,
    asking: Arc<AtomicUsize>,
}

impl Caller {
    pub(crate) fn new(sink: RelatedSink, deadline: Instant) -> Caller {
        Caller {
            sink,
            deadline,
            asking: Arc::default(),
        }
    }

    fn is_asking(&self) -> bool {
        self.asking.load(Ordering::Relaxed) > 0
    }
}

/// Counts a question a caller is answering, for as long as it lives.
struct Asking(Arc<AtomicUsize>);

impl Asking {
    fn start(caller: &Caller) -> Asking {
        caller.asking.fetch_add(1, Ordering::Relaxed);
        Asking(Arc::clone(&caller.asking))
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a backend's request cannot be attributed to a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unattributed {
    /// No request of the backend is in flight.
    Idle,
    /// This many requests are in flight: nothing says which one it belongs to.
    Several(usize),
    /// The one request in flight cannot be asked anything (its client cannot receive requests).
    Deaf,
}

impl Unattributed {
    fn describe(self, method: &str) -> String {
        let why = match self {
            Unattributed::Idle => "no client request is in flight on this backend".to_owned(),
            Unattributed::Several(n) => format!(
                "{n} client requests are in flight on this backend and nothing says which one it belongs to"
            ),
            Unattributed::Deaf => {
                "the client request in flight cannot receive server requests".to_owned()
            }
        };
        format!("mcpgw cannot relay {method}: {why}")
    }
}

/// The requests of one backend in flight, each with its caller when it has a sink. Its lock is held only
/// for map operations.
#[derive(Debug, Default)]
pub(crate) struct Callers {
    next: AtomicU64,
    in_flight: Mutex<HashMap<u64, Option<Caller>>>,
}

/// Which requests of a backend are in flight.
#[derive(Debug)]
pub(crate) enum InFlight {
    /// None.
    Idle,
    /// Exactly one, with its caller when it has a sink.
    One(Option<Caller>),
    /// This many.
    Several(usize),
}

/// Removes a request from [`Callers`] when it ends.
#[derive(Debug)]
pub(crate) struct CallerGuard {
    callers: Arc<Callers>,
    key: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        self.callers
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl Callers {
    /// Records a request in flight (with its caller, if it has a sink) for as long as the guard lives.
    pub(crate) fn register(self: &Arc<Self>, caller: Option<Caller>) -> CallerGuard {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, caller);
        CallerGuard {
            callers: Arc::clone(self),
            key,
        }
    }

    /// The requests in flight, whatever they are doing.
    pub(crate) fn in_flight(&self) -> InFlight {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match in_flight.len() {
            0 => InFlight::Idle,
            1 => InFlight::One(in_flight.values().next().cloned().flatten()),
            n => InFlight::Several(n),
        }
    }

    /// The caller of the only request in flight that is not answering a question of the backend already
    /// (a request waiting for the answer to its question is not asking another one), if there is exactly
    /// one and it has a sink.
    pub(crate) fn sole(&self) -> Result<Caller, Unattributed> {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut candidates = in_flight
            .values()
            .filter(|c| !c.as_ref().is_some_and(Caller::is_asking));
        match (candidates.next(), candidates.next(), in_flight.len()) {
            (_, _, 0) => Err(Unattributed::Idle),
            (Some(only), None, _) => only.clone().ok_or(Unattributed::Deaf),
            (_, _, n) => Err(Unattributed::Several(n)),
        }
    }
}

/// Answers a backend's request with -32601 because it cannot be attributed.
pub(crate) fn refuse(outbox: &dyn Outbox, backend: &str, request: &Request, why: Unattributed) {
    let message = why.describe(&request.method);
    debug!(%backend, method = %request.method, %message, "refusing a backend request");
    let error = Error::new(ErrorCode::MethodNotFound, message);
    answer(
        outbox,
        backend,
        &request.method,
        wire::answer(&request.id, Err(error)),
    );
}

/// Hands a backend's request to its caller and answers the backend, in a task of its own, with what the
/// caller replies, or an error when it does not reply in time or goes away.
pub(crate) fn relay(outbox: Arc<dyn Outbox>, backend: &str, caller: Caller, request: Request) {
    let id = request.id.clone();
    let method = request.method.clone();
    let (reply, replied) = oneshot::channel();
    if let Err(e) = caller.sink.try_send(Related::Request { request, reply }) {
        let why = match e {
            tokio::sync::mpsc::error::TrySendError::Full(_) => "the client's stream is full",
            tokio::sync::mpsc::error::TrySendError::Closed(_) => "the client request ended",
        };
        let error = Error::new(
            ErrorCode::InternalError,
            format!("mcpgw cannot relay {method}: {why}"),
        );
        answer(&*outbox, backend, &method, wire::answer(&id, Err(error)));
        return;
    }
    debug!(%backend, %method, "relaying a backend request to its caller");
    let asking = Asking::start(&caller);
    let limit = caller.deadline.min(Instant::now() + MAX_WAIT);
    let waited = limit.saturating_duration_since(Instant::now());
    let backend = backend.to_owned();
    actix_rt::spawn(async move {
        let reply = match tokio::time::timeout_at(limit, replied).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(Error::new(
                ErrorCode::InternalError,
                format!("the client request ended before the client answered {method}"),
            )),
            Err(_) => Err(Error::new(
                ErrorCode::from_code(REQUEST_TIMEOUT),
                format!(
                    "the client did not answer {method} within {} ms",
                    waited.as_millis()
                ),
            )),
        };
        answer(&*outbox, &backend, &method, wire::answer(&id, reply));
        drop(asking);
    });
}

fn answer(outbox: &dyn Outbox, backend: &str, method: &str, bytes: Vec<u8>) {
    if !outbox.deliver(bytes) {
        warn!(%backend, %method, "could not answer a backend request: queue full");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    fn caller() -> (Caller, mpsc::Receiver<Related>) {
        let (sink, rx) = mpsc::channel(4);
        let caller = Caller::new(sink, Instant::now() + Duration::from_secs(5));
        (caller, rx)
    }

    #[test]
    fn only_a_sole_request_with_a_sink_is_attributed() {
        let callers = Arc::new(Callers::default());
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Idle);
        let (c, _rx) = caller();
        let first = callers.register(Some(c));
        assert!(callers.sole().is_ok());
        let deaf = callers.register(None);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        drop(first);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Deaf);
        drop(deaf);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Idle);
    }

    #[test]
    fn a_request_answering_a_question_leaves_the_next_one_to_the_other() {
        let callers = Arc::new(Callers::default());
        let (waiting, _rx) = caller();
        let _first = callers.register(Some(waiting.clone()));
        let (other, _rx2) = caller();
        let _second = callers.register(Some(other.clone()));
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        let asking = Asking::start(&waiting);
        let sole = callers.sole().unwrap();
        assert!(sole.sink.same_channel(&other.sink));
        let also = Asking::start(&other);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        drop((asking, also));
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
    }

    #[test]
    fn reasons_name_the_method() {
        assert_eq!(
            Unattributed::Several(2).describe("roots/list"),
            "mcpgw cannot relay roots/list: 2 client requests are in flight on this backend and \
             nothing says which one it belongs to"
        );
    }
}
