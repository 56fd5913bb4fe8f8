//! Requests a backend asks while serving a client's request (`sampling/createMessage`, `elicitation/create`,
//! `roots/list`): which caller they belong to, and how the caller's answer goes back.
//!
//! Attribution: a request that arrives on one request's own response stream (Streamable HTTP, either era)
//! belongs to that request. On a multiplexed connection (stdio, HTTP+SSE) or a legacy session's GET stream
//! (where SDK servers send requests made without a related request id) nothing in the message says which
//! request it belongs to, so it is attributed by elimination only: when exactly one request of the backend
//! is in flight and that request has a sink ([`Callers`]).
//!
//! What cannot be relayed is answered here, never left waiting: `roots/list` with the roots configured for
//! the backend (always, when there are some: they are the operator's word on what the backend may use) or,
//! when no client request can be told, with no roots; a question the asking client did not declare the
//! capability for with -32021 naming it; anything else with -32601 (what a client without the capability
//! answers), with a message saying why.
//!
//! The wait for the answer never blocks the reader: it runs in its own task, bounded by the request's
//! remaining deadline and at most [`MAX_WAIT`], and ends early when the caller goes away. The answer (or
//! the error) goes to the backend through the link's outbox with the backend's own id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use protocol::{Error, ErrorCode, Method, Request};
use serde_json::json;
use serde_json::value::RawValue;
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

/// Which of the capabilities a backend's questions need the client of a request declared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    sampling: bool,
    elicitation: bool,
    roots: bool,
}

impl Declared {
    /// From the client capabilities of a request (`None`: nothing declared).
    pub(crate) fn of(capabilities: Option<&serde_json::Value>) -> Declared {
        let has = |name: &str| {
            capabilities
                .and_then(|c| c.get(name))
                .is_some_and(|c| !c.is_null())
        };
        Declared {
            sampling: has("sampling"),
            elicitation: has("elicitation"),
            roots: has("roots"),
        }
    }

    /// Whether the capability named `capability` (a `ClientCapabilities` field) was declared.
    fn has(self, capability: &str) -> bool {
        match capability {
            "sampling" => self.sampling,
            "elicitation" => self.elicitation,
            "roots" => self.roots,
            _ => false,
        }
    }
}

/// A request in flight as the backend's questions see it: the caller that can be asked, or, when its client
/// cannot receive requests, what that client declared (which says how to refuse).
#[derive(Debug, Clone)]
pub(crate) enum Asker {
    /// The request has a sink: questions go to it.
    Caller(Caller),
    /// The request has none.
    Deaf(Declared),
}

impl Asker {
    /// The asker of a request with `sink` (if any), `deadline` and the client's `capabilities`.
    pub(crate) fn new(
        sink: Option<RelatedSink>,
        deadline: Instant,
        capabilities: Option<&serde_json::Value>,
    ) -> Asker {
        match sink {
            Some(sink) => Asker::Caller(Caller::new(sink, deadline)),
            None => Asker::Deaf(Declared::of(capabilities)),
        }
    }

    pub(crate) fn caller(&self) -> Option<&Caller> {
        match self {
            Asker::Caller(c) => Some(c),
            Asker::Deaf(_) => None,
        }
    }

    /// The caller, or why it cannot be asked.
    pub(crate) fn reach(&self) -> Result<Caller, Unattributed> {
        match self {
            Asker::Caller(c) => Ok(c.clone()),
            Asker::Deaf(declared) => Err(Unattributed::Deaf(*declared)),
        }
    }
}

/// Why a backend's request cannot be attributed to a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unattributed {
    /// No request of the backend is in flight.
    Idle,
    /// This many requests are in flight: nothing says which one it belongs to.
    Several(usize),
    /// The request it belongs to cannot be asked anything (its client cannot receive requests); what that
    /// client declared.
    Deaf(Declared),
}

impl Unattributed {
    fn describe(self, method: &str) -> String {
        let why = match self {
            Unattributed::Idle => "no client request is in flight on this backend".to_owned(),
            Unattributed::Several(n) => format!(
                "{n} client requests are in flight on this backend and nothing says which one it belongs to"
            ),
            Unattributed::Deaf(_) => {
                "the client request it belongs to cannot receive server requests".to_owned()
            }
        };
        format!("mcpgw cannot relay {method}: {why}")
    }
}

/// The requests of one backend in flight, each with its caller when it has a sink, and the roots configured
/// for the backend. Its lock is held only for map operations.
#[derive(Debug, Default)]
pub(crate) struct Callers {
    next: AtomicU64,
    in_flight: Mutex<HashMap<u64, Asker>>,
    /// The `roots/list` result made of the configured roots; `None` when none are configured.
    roots: Option<Box<RawValue>>,
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
    /// No request in flight yet; `roots` (URIs) answer every `roots/list` of the backend when not empty.
    pub(crate) fn new(roots: &[String]) -> Callers {
        Callers {
            roots: (!roots.is_empty()).then(|| roots_result(roots)),
            ..Callers::default()
        }
    }

    /// The answer to `request` when the configuration gives it: the configured roots for `roots/list`.
    pub(crate) fn configured_answer(&self, request: &Request) -> Option<Box<RawValue>> {
        match request.known_method() {
            Some(Method::RootsList) => self.roots.clone(),
            _ => None,
        }
    }

    /// Records a request in flight (with its caller, if it has a sink) for as long as the guard lives.
    pub(crate) fn register(self: &Arc<Self>, caller: Asker) -> CallerGuard {
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
            1 => InFlight::One(in_flight.values().next().and_then(Asker::caller).cloned()),
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
            .filter(|c| !c.caller().is_some_and(Caller::is_asking));
        match (candidates.next(), candidates.next(), in_flight.len()) {
            (_, _, 0) => Err(Unattributed::Idle),
            (Some(only), None, _) => only.reach(),
            (_, _, n) => Err(Unattributed::Several(n)),
        }
    }
}

/// A `roots/list` result naming `uris`, each named after its last path segment.
fn roots_result(uris: &[String]) -> Box<RawValue> {
    let roots: Vec<serde_json::Value> = uris
        .iter()
        .map(|uri| {
            let name = uri
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .unwrap_or(uri);
            json!({ "uri": uri, "name": name })
        })
        .collect();
    serde_json::value::to_raw_value(&json!({ "roots": roots }))
        .unwrap_or_else(|_| unreachable!("a json value serializes"))
}

/// Answers a backend's request that cannot be relayed (see the module's text for the rules).
pub(crate) fn refuse(outbox: &dyn Outbox, backend: &str, request: &Request, why: Unattributed) {
    let reply = unrelayed(request, why);
    match &reply {
        Ok(_) => {
            debug!(%backend, method = %request.method, reason = %why.describe(&request.method),
            "answering the backend's roots/list with no roots")
        }
        Err(e) => {
            debug!(%backend, method = %request.method, code = e.code().code(), message = %e.message(),
            "refusing a backend request")
        }
    }
    answer(
        outbox,
        backend,
        &request.method,
        wire::answer(&request.id, reply),
    );
}

/// The answer to a backend's request that no client is asked.
fn unrelayed(request: &Request, why: Unattributed) -> Result<Box<RawValue>, Error> {
    let method = request.known_method();
    if method == Some(Method::RootsList)
        && matches!(why, Unattributed::Idle | Unattributed::Several(_))
    {
        // Nobody to ask: as the backend's client, the gateway has no roots to offer it.
        return Ok(roots_result(&[]));
    }
    if let (Unattributed::Deaf(declared), Some(capability)) =
        (why, method.and_then(Method::client_capability))
    {
        if !declared.has(capability) {
            return Err(Error::missing_client_capability(
                capability,
                format!(
                    "mcpgw cannot relay {}: the client did not declare the {capability} capability",
                    request.method
                ),
            ));
        }
    }
    Err(Error::new(
        ErrorCode::MethodNotFound,
        why.describe(&request.method),
    ))
}

/// Hands a backend's request to its caller and answers the backend, in a task of its own, with what the
/// caller replies, or an error when it does not reply in time or goes away.
pub(crate) fn relay_input_request(
    outbox: Arc<dyn Outbox>,
    backend: &str,
    caller: Caller,
    request: Request,
) {
    let id = request.id.clone();
    let method = request.method.clone();
    let (reply, replied) = oneshot::channel();
    if let Err(e) = caller
        .sink
        .try_send(Related::InputRequest { request, reply })
    {
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
        let first = callers.register(Asker::Caller(c));
        assert!(callers.sole().is_ok());
        let deaf = callers.register(Asker::Deaf(Declared::default()));
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        drop(first);
        assert_eq!(
            callers.sole().unwrap_err(),
            Unattributed::Deaf(Declared::default())
        );
        drop(deaf);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Idle);
    }

    #[test]
    fn a_request_answering_a_question_leaves_the_next_one_to_the_other() {
        let callers = Arc::new(Callers::default());
        let (waiting, _rx) = caller();
        let _first = callers.register(Asker::Caller(waiting.clone()));
        let (other, _rx2) = caller();
        let _second = callers.register(Asker::Caller(other.clone()));
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        let asking = Asking::start(&waiting);
        let sole = callers.sole().unwrap();
        assert!(sole.sink.same_channel(&other.sink));
        let also = Asking::start(&other);
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
        drop((asking, also));
        assert_eq!(callers.sole().unwrap_err(), Unattributed::Several(2));
    }

    fn backend_request(method: &str) -> Request {
        Request {
            id: protocol::RequestId::number(7),
            method: method.to_owned(),
            params: None,
        }
    }

    #[test]
    fn what_cannot_be_relayed_is_answered_by_rule() {
        let nothing = Declared::default();
        let sampling = Declared::of(Some(&json!({"sampling": {}})));
        // (method, why, Ok(result) | Err(code))
        let table: [(&str, Unattributed, Result<&str, i64>); 8] = [
            ("roots/list", Unattributed::Idle, Ok(r#"{"roots":[]}"#)),
            (
                "roots/list",
                Unattributed::Several(3),
                Ok(r#"{"roots":[]}"#),
            ),
            ("roots/list", Unattributed::Deaf(nothing), Err(-32021)),
            (
                "sampling/createMessage",
                Unattributed::Deaf(nothing),
                Err(-32021),
            ),
            (
                "sampling/createMessage",
                Unattributed::Deaf(sampling),
                Err(-32601),
            ),
            (
                "elicitation/create",
                Unattributed::Deaf(sampling),
                Err(-32021),
            ),
            ("sampling/createMessage", Unattributed::Idle, Err(-32601)),
            ("x/unknown", Unattributed::Deaf(nothing), Err(-32601)),
        ];
        for (method, why, expected) in table {
            let got = unrelayed(&backend_request(method), why);
            match (got, expected) {
                (Ok(raw), Ok(text)) => assert_eq!(raw.get(), text, "{method} {why:?}"),
                (Err(e), Err(code)) => assert_eq!(e.code().code(), code, "{method} {why:?}"),
                (got, expected) => panic!("{method} {why:?}: {got:?}, expected {expected:?}"),
            }
        }
        let e = unrelayed(
            &backend_request("elicitation/create"),
            Unattributed::Deaf(sampling),
        )
        .unwrap_err();
        assert!(e.message().contains("elicitation capability"), "{e}");
        assert_eq!(
            e.data(),
            Some(&json!({"requiredCapabilities": {"elicitation": {}}}))
        );
    }

    #[test]
    fn configured_roots_answer_roots_list_only() {
        let callers = Callers::new(&["file:///srv/data".into(), "file:///srv/logs/".into()]);
        let answer = callers
            .configured_answer(&backend_request("roots/list"))
            .unwrap();
        assert_eq!(
            answer.get(),
            r#"{"roots":[{"name":"data","uri":"file:///srv/data"},{"name":"logs","uri":"file:///srv/logs/"}]}"#
        );
        assert!(
            callers
                .configured_answer(&backend_request("sampling/createMessage"))
                .is_none()
        );
        assert!(
            Callers::new(&[])
                .configured_answer(&backend_request("roots/list"))
                .is_none()
        );
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
