//! What a backend sends on its own: routing responses to their callers, relaying its requests to the
//! caller they belong to (or answering them), and passing its notifications on. Shared by every transport
//! that reads a stream of messages (stdio stdout, the HTTP+SSE event stream, SSE response streams, the
//! legacy GET stream).

use std::sync::Arc;

use protocol::message::{self, Parsed};
use protocol::method::Method;
use protocol::{Message, Request, Response};
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::callers::{self, Asker, InFlight};
use crate::events::Notifier;
use crate::listen::ListenRoute;
use crate::outbox::Outbox;
use crate::pending::Pending;
use crate::related::Related;
use crate::request::BackendRequest;
use crate::wire;

/// How many bytes of an unreadable line are shown in a log.
const SHOWN: usize = 200;

/// Where a stream's messages go.
#[derive(Clone)]
pub(crate) struct Inbound {
    notifier: Notifier,
    /// The id table responses are routed to, for multiplexed connections.
    pending: Option<Arc<Pending>>,
    /// Where answers to the backend's requests go; `None` on streams that carry no request of the backend
    /// (probes, subscriptions): one arriving there is logged and ignored.
    outbox: Option<Arc<dyn Outbox>>,
    /// On one request's own response stream: that request, to which its notifications and the backend's
    /// requests belong.
    own: Option<Asker>,
    /// Where subscriptions' notifications go, on streams that carry them.
    listen: Option<ListenRoute>,
    /// A principal's own GET stream: only URL elicitation completions pass (to the gateway, which routes
    /// each to the one session it belongs to); anything else it says could reach other principals.
    completions_only: bool,
}

impl Inbound {
    /// Dispatches into `pending` and answers through `outbox`, when given.
    pub(crate) fn new(
        notifier: Notifier,
        pending: Option<Arc<Pending>>,
        outbox: Option<Arc<dyn Outbox>>,
    ) -> Inbound {
        Inbound {
            notifier,
            pending,
            outbox,
            own: None,
            listen: None,
            completions_only: false,
        }
    }

    /// The same, answering the backend's requests through `outbox` (a principal's own backend session).
    pub(crate) fn with_outbox(&self, outbox: Arc<dyn Outbox>) -> Inbound {
        Inbound {
            outbox: Some(outbox),
            ..self.clone()
        }
    }

    /// For a principal's own GET stream: its URL elicitation completions go to the gateway; its other
    /// notifications are dropped and its requests refused (answered through `outbox`, in that session),
    /// since no request of that principal is there to take them and nobody else may.
    pub(crate) fn completions_of(&self, outbox: Arc<dyn Outbox>) -> Inbound {
        Inbound {
            notifier: self.notifier.clone(),
            pending: None,
            outbox: Some(outbox),
            own: Some(Asker::new(None, Instant::now(), None)),
            listen: None,
            completions_only: true,
        }
    }

    /// The same dispatch, with the notifications of subscriptions (`subscriptions/listen`) taken by `route`.
    pub(crate) fn with_listen(&self, route: ListenRoute) -> Inbound {
        Inbound {
            listen: Some(route),
            ..self.clone()
        }
    }

    /// The same dispatch for the response stream of `request`: its notifications and the backend's requests
    /// go to the request's sink (taken from it; progress is routed by token either way), requests waiting at
    /// most until `deadline`; without a sink, the backend's requests are refused by what its client
    /// declared.
    pub(crate) fn for_request(&self, request: &mut BackendRequest, deadline: Instant) -> Inbound {
        let asker = Asker::new(
            request.related.take(),
            deadline,
            request.client_capabilities.as_ref(),
        );
        Inbound {
            own: Some(asker),
            ..self.clone()
        }
    }

    /// The backend's answer to request `id` was larger than `limit` and skipped: the request fails now
    /// with `Failure::TooLarge` instead of waiting out its deadline. Whether one was waiting.
    pub(crate) fn too_large(&self, id: i64, limit: usize) -> bool {
        let Some(pending) = &self.pending else {
            return false;
        };
        let failure = protocol::shape::Failure::TooLarge {
            backend: self.notifier.backend().to_string(),
            limit,
            per: "message",
        };
        pending.fail(id, failure)
    }

    /// One line or event of text. Anything that is not JSON-RPC is logged and skipped, never fatal.
    pub(crate) fn text(&self, bytes: &[u8]) {
        let bytes = bytes.trim_ascii();
        if bytes.is_empty() {
            return;
        }
        match message::parse(bytes) {
            Ok(Parsed::Single(m)) => self.message(m),
            Ok(Parsed::Batch(entries)) => {
                for entry in entries {
                    match entry {
                        Ok(m) => self.message(m),
                        Err(e) => self.garbage(bytes, &e.error.to_string()),
                    }
                }
            }
            Err(e) => self.garbage(bytes, &e.error.to_string()),
        }
    }

    /// Said at warn without the text (a backend's output may hold what a client sent or was sent), the
    /// text at debug.
    fn garbage(&self, bytes: &[u8], why: &str) {
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN)]);
        let backend = self.notifier.backend();
        warn!(%backend, %why, bytes = bytes.len(), "skipping output that is not JSON-RPC");
        debug!(%backend, line = %shown, "the output that is not JSON-RPC");
    }

    /// One message.
    pub(crate) fn message(&self, message: Message) {
        match message {
            Message::Response(r) => self.response(r),
            Message::Request(r) => self.server_request(r),
            Message::Notification(n) => self.notification(n),
        }
    }

    fn notification(&self, n: protocol::Notification) {
        if self.completions_only {
            if n.method == "notifications/elicitation/complete" {
                self.notifier.notification(n);
            } else {
                debug!(backend = %self.notifier.backend(), method = %n.method,
                    "dropping a notification on a principal's own stream");
            }
            return;
        }
        let n = match &self.listen {
            Some(route) => match route.deliver(n) {
                Ok(()) => return,
                Err(n) => n,
            },
            None => n,
        };
        match self.own.as_ref().and_then(Asker::caller) {
            Some(caller) if n.method != "notifications/progress" => {
                if caller.sink.try_send(Related::Notification(n)).is_err() {
                    crate::related::note_dropped(Some(self.notifier.backend()), "a notification");
                }
            }
            // A log message on a multiplexed link says nothing of the request it is about: the one request
            // in flight, else nobody (another client must not read it), else the backend itself.
            None if self.pending.is_some() && n.method == "notifications/message" => {
                match self.notifier.callers().in_flight() {
                    InFlight::Idle => self.notifier.notification(n),
                    InFlight::One(Some(caller)) => {
                        if caller.sink.try_send(Related::Notification(n)).is_err() {
                            crate::related::note_dropped(
                                Some(self.notifier.backend()),
                                "a log message",
                            );
                        }
                    }
                    InFlight::One(None) => {
                        debug!(backend = %self.notifier.backend(), "dropping a log message: its request's client cannot receive it");
                    }
                    InFlight::Several(n) => {
                        debug!(backend = %self.notifier.backend(), in_flight = n, "dropping a log message: it cannot be told which request it is about");
                    }
                }
            }
            _ => self.notifier.notification(n),
        }
    }

    fn response(&self, response: Response) {
        let backend = self.notifier.backend();
        let Some(pending) = &self.pending else {
            debug!(%backend, "ignoring a response outside a request's stream");
            return;
        };
        let Some(id) = response.id.as_ref().and_then(protocol::RequestId::as_i64) else {
            warn!(%backend, id = ?response.id, body = ?response.body.as_ref().err(),
                "ignoring a response whose id mcpgw never sent");
            return;
        };
        if !pending.resolve(id, response.body) {
            debug!(%backend, id, "ignoring a late or unknown response");
        }
    }

    /// A request from the backend: `ping`, and `roots/list` when the backend has configured roots, are
    /// answered here; anything else goes to the caller it belongs to (the request whose stream it arrived
    /// on, or — on a multiplexed connection or a session's GET stream — the only request in flight), or is
    /// answered as [`callers::refuse`] says.
    fn server_request(&self, request: Request) {
        let backend = self.notifier.backend();
        let Some(outbox) = &self.outbox else {
            warn!(%backend, method = %request.method,
                "ignoring a backend request on a stream that carries no request of the gateway");
            return;
        };
        let own_answer = match request.known_method() {
            Some(Method::Ping) => Some(wire::pong(&request.id)),
            _ => self
                .notifier
                .callers()
                .configured_answer(&request)
                .map(|result| wire::answer(&request.id, Ok(result))),
        };
        if let Some(answer) = own_answer {
            debug!(%backend, method = %request.method, "answering the backend's request");
            if !outbox.deliver(answer) {
                warn!(%backend, method = %request.method, "could not answer a backend request: queue full");
            }
            return;
        }
        let caller = match &self.own {
            Some(asker) => asker.reach(),
            // A multiplexed connection (an id table) or a legacy session's GET stream, which every request of
            // the session shares: attributed by elimination only.
            None => self.notifier.callers().sole(),
        };
        match caller {
            Ok(caller) => {
                callers::relay_input_request(Arc::clone(outbox), backend, caller, request)
            }
            Err(why) => callers::refuse(&**outbox, backend, &request, why),
        }
    }
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbound")
            .field("backend", &self.notifier.backend())
            .finish_non_exhaustive()
    }
}
