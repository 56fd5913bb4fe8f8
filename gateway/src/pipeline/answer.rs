//! From a valid request to what goes back, for every transport (Streamable HTTP, 2024-11-05 HTTP+SSE, stdio):
//! `initialize` results, notifications, batches, `subscriptions/listen` and calls — every one of them through
//! the middleware chain, and every call through the one call sequence (`pipeline::call`).

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use protocol::payload::InitializeRequestParams;
use protocol::shape::{Refusal, Shaped, stream_required};
use protocol::validate::{Call, ValidKind, ValidRequest};
use protocol::{Error, Generation, Method, Notification};
use serde_json::json;

use crate::catalog::CatalogSnapshot;
use crate::metrics::{Answered, MethodLabel, Outcome as Counted};
use crate::notify::streams;
use crate::pipeline::call::{self, Via};
use crate::pipeline::context::RequestContext;
use crate::pipeline::dispatch::raw_value;
use crate::pipeline::request_stream;
use crate::pipeline::response::{Outcome, shape_outcome};
use crate::pipeline::routing::InFlight;
use crate::pipeline::{Chain, MwContext, Response};
use crate::session::{Session, ShortId, Transport};
use crate::state::Gateway;

/// The entries of one JSON-RPC batch in flight at once (`[server] max_batch` bounds how many it holds), or
/// fewer: see [`batch_concurrency`].
pub const BATCH_CONCURRENCY: usize = 8;

/// A batch's entries in flight at once: [`BATCH_CONCURRENCY`], or fewer when a backend's per-caller share
/// (`max_in_flight_per_caller`) is smaller, so that a batch alone never takes more than its caller's share.
fn batch_concurrency(config: &crate::config::Config) -> usize {
    config
        .backends
        .iter()
        .map(|b| {
            handlers::share_of(
                b.max_in_flight
                    .unwrap_or(handlers::BackendConfig::DEFAULT_MAX_IN_FLIGHT),
                b.per_caller(),
            )
        })
        .fold(BATCH_CONCURRENCY, usize::min)
}

/// What goes back to the client.
#[derive(Debug)]
pub enum Answer {
    /// 202 and no body: notifications, client responses, batches of only those.
    Accepted,
    /// One JSON-RPC response with its HTTP status and headers.
    Message(Shaped),
    /// `initialize` succeeded: the transport creates the session, then sends `shaped`.
    Initialize {
        /// The negotiated generation.
        generation: Generation,
        /// The client's params.
        params: Box<InitializeRequestParams>,
        /// The JSON-RPC response carrying the `InitializeResult`.
        shaped: Shaped,
    },
    /// A batch's responses (a JSON array body), in request order.
    Batch(Vec<Vec<u8>>),
    /// A request answered as a stream: its notifications, then its response (one JSON-RPC message each).
    Stream(tokio::sync::mpsc::Receiver<Vec<u8>>),
    /// A GET: open the session's stream.
    OpenStream,
    /// A DELETE: end the session.
    EndSession,
    /// The client cancelled the request: no response (HTTP answers 202 with no body).
    Cancelled,
}

/// What answering a request needs: the gateway, the worker's middleware chain, and the request's context.
#[derive(Debug, Clone)]
pub(crate) struct Answering<'a> {
    /// The gateway.
    pub gw: &'a Arc<Gateway>,
    /// This worker's middleware chain.
    pub chain: Chain,
    /// The request's context.
    pub request: Rc<RequestContext>,
}

impl Answering<'_> {
    /// Answers a valid request; its in-flight permit is held until the answer is ready (a streamed answer
    /// carries it to the stream's end; an open listen stream holds its own place instead).
    pub async fn answer(&self, valid: ValidRequest, permit: InFlight) -> Answer {
        let generation = self.request.generation();
        let arrived = self.request.arrived();
        match valid.into_kind() {
            ValidKind::Initialize { id, params } => {
                // Through the chain like any request (an authentication middleware may refuse it); the
                // session is created only when it ends in the result.
                let result = raw_value(&self.initialize_result(generation, self.request.view()));
                let ctx = MwContext::initialize(id.clone(), params.clone(), &self.request);
                let answered = self
                    .chain
                    .run(ctx, move |_| async move {
                        Response::dispatched(Outcome::Result(result), None)
                    })
                    .await;
                let initialized = matches!(answered.outcome, Outcome::Result(_));
                if !initialized {
                    // An accepted one is counted once its session starts (`deliver`), or fails to.
                    let counted = answered.outcome.metric(Method::Initialize);
                    self.count(
                        Method::Initialize.into(),
                        Some(generation),
                        counted,
                        arrived,
                    );
                }
                let shaped = self.shape(id, Method::Initialize, answered.outcome);
                if !initialized {
                    return Answer::Message(shaped);
                }
                Answer::Initialize {
                    generation,
                    params,
                    shaped,
                }
            }
            ValidKind::Notification(n) => {
                self.notification(&n);
                Answer::Accepted
            }
            ValidKind::ClientResponse(r) => {
                let routed = self
                    .request
                    .session()
                    .is_some_and(|s| s.input_requests().answer(r.clone()));
                if routed {
                    return Answer::Accepted;
                }
                self.answer_elsewhere(&r, generation).await
            }
            ValidKind::Call(call) if call.method() == Method::SubscriptionsListen => {
                self.listen(call).await
            }
            ValidKind::Call(call) => {
                let session = self.request.session().map(|s| s.as_ref());
                let can_stream = self.request.can_stream();
                if let Some(wants) = request_stream::wants(&call, generation, session, can_stream) {
                    return Answer::Stream(call::stream(
                        self.gw.clone(),
                        self.chain.clone(),
                        self.request.clone(),
                        call,
                        wants,
                        permit,
                    ));
                }
                match call::answer(self.gw, &self.chain, &self.request, call, Via::Response).await {
                    Some(shaped) => Answer::Message(shaped),
                    None => Answer::Cancelled,
                }
            }
            ValidKind::Batch(items) => {
                let futures = items.into_iter().map(|item| async move {
                    match item {
                        Ok(ValidKind::Call(call)) => {
                            call::answer(self.gw, &self.chain, &self.request, call, Via::Response)
                                .await
                                .map(|shaped| shaped.body)
                        }
                        Ok(ValidKind::Notification(n)) => {
                            self.notification(&n);
                            None
                        }
                        Ok(_) => None,
                        Err(rejection) => {
                            self.refused(&rejection, MethodLabel::None);
                            Some(rejection.body())
                        }
                    }
                });
                // At most `batch_concurrency` entries at once, answered in order: one client's batch cannot
                // take every permit of a backend from the others (nor from its own later entries).
                let bodies: Vec<Vec<u8>> = futures_util::stream::iter(futures)
                    .buffered(batch_concurrency(&self.gw.live().config))
                    .collect::<Vec<_>>()
                    .await
                    .into_iter()
                    .flatten()
                    .collect();
                if bodies.is_empty() {
                    Answer::Accepted
                } else {
                    Answer::Batch(bodies)
                }
            }
            ValidKind::OpenStream => Answer::OpenStream,
            ValidKind::EndSession => Answer::EndSession,
        }
    }

    /// A `subscriptions/listen`: through the middleware chain like any request (within the worker's
    /// in-flight bound while it runs); the chain's last step opens the stream, which then holds its place
    /// in the streams' own pool and its caller's bounds for its lifetime (`notify::streams`).
    async fn listen(&self, call: Call) -> Answer {
        let generation = self.request.generation();
        let arrived = self.request.arrived();
        let method = call.method();
        let listen = method.into();
        if !self.request.can_stream() {
            let refused = stream_required(&call.request().id, method, generation);
            let counted = Counted::of_refusal(refused.status, protocol::ErrorCode::InvalidRequest);
            self.count(listen, Some(generation), counted, arrived);
            return Answer::Message(refused);
        }
        let id = call.request().id.clone();
        let opened = Rc::new(std::cell::Cell::new(None));
        let stream = Rc::clone(&opened);
        let gw = self.gw.clone();
        let ctx = MwContext::new(call, &self.request);
        let answered = self
            .chain
            .run(ctx, move |ctx| async move {
                let request = Rc::clone(ctx.request());
                let Some(call) = ctx.into_call() else {
                    return call::not_a_call();
                };
                let (view, caller, reader) = (request.view(), request.caller(), request.reader());
                let principal = request.principal().is_some();
                let outcome = match streams::open(&gw, view, &call, caller, principal, reader) {
                    Ok(rx) => {
                        stream.set(Some(rx));
                        Outcome::Result(raw_value(&json!({})))
                    }
                    Err(streams::Refused::Invalid(e)) => Outcome::Error(e),
                    Err(streams::Refused::Full(why)) => Outcome::Refused(Refusal::Status {
                        status: 503,
                        error: Error::new(
                            protocol::ErrorCode::InternalError,
                            format!("internal error: {why}"),
                        ),
                        headers: vec![("retry-after", "1".to_owned())],
                    }),
                };
                Response::dispatched(outcome, None)
            })
            .await;
        let outcome = answered.outcome;
        match (opened.take(), outcome) {
            (Some(rx), Outcome::Result(_)) => {
                self.count(listen, Some(generation), Counted::Ok, arrived);
                Answer::Stream(rx)
            }
            (_, outcome) => {
                // A middleware answered (or the stream was refused): any stream opened is closed again
                // with its receiver.
                let counted = outcome.metric(method);
                self.count(listen, Some(generation), counted, arrived);
                Answer::Message(self.shape(id, method, outcome))
            }
        }
    }

    /// An outcome shaped for the request's client, stamped as its endpoint answers.
    fn shape(&self, id: protocol::RequestId, method: Method, outcome: Outcome) -> Shaped {
        let stamp = &self.request.endpoint().stamp;
        shape_outcome(stamp, &id, method, self.request.generation(), outcome)
    }

    fn initialize_result(
        &self,
        generation: Generation,
        seen: &CatalogSnapshot,
    ) -> serde_json::Value {
        let mut result = json!({
            "protocolVersion": generation.as_str(),
            "capabilities": self.gw.capabilities(),
            "serverInfo": self.request.endpoint().server_info,
        });
        if generation >= Generation::V2025_03_26 {
            let endpoint = self.request.endpoint();
            if let Some(instructions) = endpoint.instructions(self.gw.instructions(seen)) {
                result["instructions"] = instructions.into();
            }
        }
        result
    }

    fn notification(&self, n: &Notification) {
        match (n.known_method(), self.request.session()) {
            (Some(Method::NotificationsInitialized), Some(s)) => s.mark_initialized(),
            (Some(Method::NotificationsCancelled), Some(s)) => {
                #[derive(serde::Deserialize)]
                struct Cancelled {
                    #[serde(rename = "requestId")]
                    request_id: Option<Box<serde_json::value::RawValue>>,
                }
                let id = n.params_as::<Cancelled>().ok().and_then(|c| c.request_id);
                let cancelled = id.as_ref().is_some_and(|id| s.in_flight().cancel(id.get()));
                tracing::debug!(?id, cancelled, "notifications/cancelled");
            }
            _ => tracing::debug!(method = %n.method, "notification accepted"),
        }
    }

    /// Counts a request answered after validation (`mcpgw_requests_total`, its duration from `accepted`).
    pub(crate) fn count(
        &self,
        method: MethodLabel,
        generation: Option<Generation>,
        outcome: Counted,
        accepted: Instant,
    ) {
        self.gw.metrics.answered(Answered {
            method,
            generation,
            transport: self.request.transport().into(),
            outcome,
            took: Some(accepted.elapsed()),
            in_backends: Duration::ZERO,
        });
    }

    /// Counts a request refused before its handler ran, with the method read from it (if any).
    pub(crate) fn refused(&self, rejection: &protocol::Rejection, method: MethodLabel) {
        self.gw.metrics.answered(Answered {
            method,
            generation: rejection.generation,
            transport: self.request.transport().into(),
            outcome: Counted::of_refusal(rejection.status, rejection.error.code()),
            took: None,
            in_backends: Duration::ZERO,
        });
    }
}

impl Answering<'_> {
    /// A client's answer to a question another replica asked (its id names the replica): sent there through
    /// Redis. One that no replica can take (the replica is gone, Redis is down) is refused at once, 503,
    /// never dropped in silence; one that names no question of this gateway is dropped (debug).
    async fn answer_elsewhere(&self, r: &protocol::Response, generation: Generation) -> Answer {
        let asker = crate::session::asked_by(r);
        let (Some(asker), Some(session)) = (asker, self.request.session()) else {
            tracing::debug!(id = ?r.id, "client response dropped: no question with that id is open");
            return Answer::Accepted;
        };
        if asker == crate::cluster::replica() {
            tracing::debug!(id = ?r.id, "client response dropped: its question is no longer open");
            return Answer::Accepted;
        }
        let refuse = |why: String| {
            tracing::warn!(session = %ShortId(&session.id), replica = %asker, %why, "a client's answer cannot reach the replica that asked");
            Answer::Message(protocol::Rejection::overloaded(&why, Some(generation)).shaped())
        };
        let Some(link) = self.gw.redis.as_ref() else {
            return refuse(format!(
                "the question was asked by replica {asker}, and no [cluster] redis connects the replicas"
            ));
        };
        let Some(key) = session.key else {
            return refuse("the session is not sealed, so no other replica knows it".to_owned());
        };
        let response = serde_json::to_string(r).unwrap_or_default();
        let key = crate::session::key_text(key);
        match link.deliver_answer(&asker, &key, &response).await {
            Ok(true) => Answer::Accepted,
            Ok(false) => refuse(format!(
                "replica {asker}, which asked the question, is gone"
            )),
            Err(e) => refuse(e.to_string()),
        }
    }
}

/// A stdio session does not expire while the process lives.
const NO_EXPIRY: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// Starts the legacy session an accepted `initialize` asked for: the one way every transport does it (the
/// idle bound of its transport, one log line naming it); a full store is the overload answer.
pub fn start_session(
    gw: &Gateway,
    id: Option<String>,
    generation: Generation,
    params: &InitializeRequestParams,
    transport: Transport,
    bound_to: Option<[u8; 16]>,
) -> Result<Arc<Session>, protocol::Rejection> {
    let idle = match transport {
        Transport::Stdio | Transport::Admin => NO_EXPIRY,
        Transport::StreamableHttp | Transport::HttpSse => {
            std::time::Duration::from_secs(gw.config.server.session_idle_secs)
        }
    };
    match gw
        .sessions
        .create(id, generation, params, transport, idle, bound_to)
    {
        Ok(session) => {
            tracing::info!(session = %ShortId(&session.id), %generation,
                client = %params.client_info.name, transport = %transport.as_str(), "session started");
            Ok(session)
        }
        Err(crate::session::CreateError::Full(full)) => Err(protocol::Rejection::overloaded(
            &full.to_string(),
            Some(generation),
        )),
        Err(crate::session::CreateError::TooLarge(e)) => {
            Err(protocol::Rejection::unsealable_session(&e.to_string()))
        }
    }
}

/// Passes a streamed answer's messages on, in order, until it ends or `deliver` refuses one (the client
/// went away); empty messages are keep-alives, which only an HTTP response stream carries.
pub async fn pump(
    mut rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    mut deliver: impl AsyncFnMut(Vec<u8>) -> bool,
) {
    while let Some(message) = rx.recv().await {
        if message.is_empty() {
            continue;
        }
        if !deliver(message).await {
            break;
        }
    }
}
