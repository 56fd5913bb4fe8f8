//! From a valid request to what goes back, for every transport (Streamable HTTP, 2024-11-05 HTTP+SSE, stdio):
//! `initialize` results, notifications, batches and calls — each call dispatched in its own tracing span
//! (session, request id, method, backend, generation) and shaped by the response actor.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use opentelemetry::context::FutureExt as _;
use protocol::payload::InitializeRequestParams;
use protocol::shape::{Shaped, request_error, stream_required};
use protocol::validate::{Call, ValidKind};
use protocol::{Generation, Method, Notification};
use serde_json::json;
use tracing::Instrument;

use crate::auth_context::AuthContext;
use crate::catalog::CatalogSnapshot;
use crate::metrics::{Answered, MethodLabel, Outcome as Counted};
use crate::notify::streams;
use crate::pipeline::dispatch::{Dispatch, raw_value};
use crate::pipeline::request_stream::{self, Streamed};
use crate::pipeline::response::{Outcome, ResponseHandle};
use crate::pipeline::routing::Routed;
use crate::pipeline::{Chain, MwContext, Response, Transport};
use crate::session::{Session, ShortId};
use crate::state::Gateway;
use crate::telemetry::spans::{self, Arrival, RequestFacts, RequestSpan};

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

/// What answering needs: the gateway, this worker's response actor, and the request's context.
#[derive(Debug, Clone)]
pub struct Answering<'a> {
    /// The gateway.
    pub gw: &'a Arc<Gateway>,
    /// This worker's response actor.
    pub response: &'a ResponseHandle,
    /// This worker's middleware chain.
    pub chain: Chain,
    /// The legacy session, if any.
    pub session: Option<&'a Arc<Session>>,
    /// Whether the transport can carry a request's notifications before its response (an SSE response,
    /// the HTTP+SSE stream, stdio).
    pub can_stream: bool,
    /// Who is asking (sealed states are bound to it, private cache entries keyed by it).
    pub auth: AuthContext,
    /// The principal authentication established (`None`: authentication off, or stdio).
    pub principal: Option<Arc<crate::auth::Principal>>,
    /// The client's IP address (HTTP, behind trusted proxies the client they name; `None` on stdio, where
    /// the host is the only client): a request without a session counts against it for a backend's
    /// per-caller share, and the rate limits' per-address buckets are kept by it, on every replica alike.
    pub client: Option<std::net::IpAddr>,
    /// How the request arrived.
    pub transport: Transport,
    /// The endpoint it arrived at (`/mcp`, or an `[[endpoint]]`).
    pub endpoint: Arc<crate::endpoint::Endpoint>,
}

impl Answering<'_> {
    /// What a session this request starts is bound to, and what a session it names must be bound to: its
    /// principal, with `[auth]` on.
    pub fn binding(&self) -> Option<[u8; 16]> {
        self.endpoint
            .bind(self.gw.binding(self.principal.as_deref(), self.auth))
    }

    /// Answers a valid request; its in-flight permit is held until the answer is ready (a streamed answer
    /// carries it to the stream's end).
    pub async fn answer(&self, routed: Routed) -> Answer {
        let Routed {
            valid,
            snapshot,
            permit,
            trace,
            accepted,
        } = routed;
        let snapshot = &snapshot;
        let trace = trace.as_ref();
        let generation = valid.generation();
        match valid.into_kind() {
            ValidKind::Initialize { id, params } => {
                // Through the chain like any request (an authentication middleware may refuse it); the
                // session is created only when it ends in the result.
                let result = raw_value(&self.initialize_result(generation, snapshot));
                let ctx =
                    MwContext::initialize(id.clone(), params.clone(), generation, self.transport)
                        .with_principal(self.principal.clone())
                        .with_route(snapshot, self.client);
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
                        accepted,
                    );
                }
                let shaped = self
                    .response
                    .shape(
                        id,
                        Method::Initialize,
                        generation,
                        answered.outcome,
                        &self.endpoint,
                    )
                    .await;
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
                    .session
                    .is_some_and(|s| s.input_requests().answer(r.clone()));
                if routed {
                    return Answer::Accepted;
                }
                self.answer_elsewhere(&r, generation).await
            }

            ValidKind::Call(call) if call.method() == Method::SubscriptionsListen => {
                let listen = Method::SubscriptionsListen.into();
                if !self.can_stream {
                    let refused = stream_required(&call.request().id, call.method(), generation);
                    let counted = crate::metrics::Outcome::of_refusal(
                        refused.status,
                        protocol::ErrorCode::InvalidRequest,
                    );
                    self.count(listen, Some(generation), counted, accepted);
                    return Answer::Message(refused);
                }
                match streams::open(self.gw, snapshot, &call) {
                    Ok(rx) => {
                        self.count(listen, Some(generation), Counted::Ok, accepted);
                        Answer::Stream(rx)
                    }
                    Err(e) => {
                        let counted = Counted::JsonRpcError(crate::metrics::Code::of(e.code()));
                        self.count(listen, Some(generation), counted, accepted);
                        Answer::Message(request_error(&call.request().id, e, generation))
                    }
                }
            }
            ValidKind::Call(call) => {
                let session = self.session.map(|s| s.as_ref());
                if let Some(wants) =
                    request_stream::wants(&call, generation, session, self.can_stream)
                {
                    let span = self.span(&call, generation);
                    let otel = trace.and_then(|t| self.request_span(t, &call, generation));
                    return Answer::Stream(request_stream::start(Streamed {
                        gw: self.gw.clone(),
                        response: self.response.clone(),
                        snapshot: snapshot.clone(),
                        session: self.session.cloned(),
                        auth: self.auth,
                        principal: self.principal.clone(),
                        client: self.client,
                        call,
                        generation,
                        wants,
                        transport: self.transport,
                        endpoint: self.endpoint.clone(),
                        chain: self.chain.clone(),
                        permit,
                        span,
                        otel,
                        accepted,
                    }));
                }
                let Some(shaped) = self.call(call, generation, snapshot, trace, accepted).await
                else {
                    return Answer::Cancelled;
                };
                Answer::Message(shaped)
            }
            ValidKind::Batch(items) => {
                let futures = items.into_iter().map(|item| async move {
                    match item {
                        Ok(ValidKind::Call(call)) => self
                            .call(call, generation, snapshot, trace, accepted)
                            .await
                            .map(|shaped| shaped.body),
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

    fn initialize_result(
        &self,
        generation: Generation,
        seen: &CatalogSnapshot,
    ) -> serde_json::Value {
        let mut result = json!({
            "protocolVersion": generation.as_str(),
            "capabilities": self.gw.capabilities(),
            "serverInfo": self.endpoint.server_info,
        });
        if generation >= Generation::V2025_03_26 {
            if let Some(instructions) = self.endpoint.instructions(self.gw.instructions(seen)) {
                result["instructions"] = instructions.into();
            }
        }
        result
    }

    fn notification(&self, n: &Notification) {
        match (n.known_method(), self.session) {
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

    /// The request's span: session, request id, method, backend (recorded at dispatch), generation.
    fn span(&self, call: &Call, generation: Generation) -> tracing::Span {
        tracing::info_span!(
            "request",
            session = self.session.map(|s| tracing::field::display(ShortId(&s.id))),
            id = %call.request().id,
            method = %call.method(),
            backend = tracing::field::Empty,
            generation = %generation,
            principal = self.principal.as_ref().map(|p| tracing::field::display(&p.name)),
        )
    }

    /// The request's OpenTelemetry span, with `[traces]` (see `telemetry::spans`).
    fn request_span(
        &self,
        arrival: &Arrival,
        call: &Call,
        generation: Generation,
    ) -> Option<RequestSpan> {
        let session = self.session.map(|s| ShortId(&s.id).to_string());
        let target = call.target().and_then(|t| match t {
            protocol::validate::Target::Tool { name, .. } => Some((name.as_str(), false)),
            protocol::validate::Target::Prompt { name, .. } => Some((name.as_str(), true)),
            protocol::validate::Target::Resource { .. } => None,
        });
        let id = call.request().id.to_string();
        RequestSpan::start(
            arrival,
            &RequestFacts {
                method: call.method().as_str(),
                target: target.map(|(name, _)| name),
                prompt: target.is_some_and(|(_, prompt)| prompt),
                id: &id,
                session: session.as_deref(),
                generation: generation.as_str(),
                http: !matches!(self.transport, Transport::Stdio),
                params: call.request().params.as_deref(),
            },
        )
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
            transport: self.transport.into(),
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
            transport: self.transport.into(),
            outcome: Counted::of_refusal(rejection.status, rejection.error.code()),
            took: None,
            in_backends: Duration::ZERO,
        });
    }

    /// One call through the middleware chain to its dispatch, shaped; `None` when the client cancelled it.
    async fn call(
        &self,
        call: Call,
        generation: Generation,
        snapshot: &Arc<CatalogSnapshot>,
        trace: Option<&Arrival>,
        accepted: Instant,
    ) -> Option<Shaped> {
        let span = self.span(&call, generation);
        let otel = trace.and_then(|t| self.request_span(t, &call, generation));
        // A legacy client may cancel it (notifications/cancelled): its work is then dropped, which abandons
        // the backend call, and no response is sent (the spec's SHOULD NOT respond).
        let registered = self
            .session
            .and_then(|s| s.in_flight().register(&call.request().id));
        let (id, method) = (call.request().id.clone(), call.method());
        let ctx = MwContext::new(call, generation, self.transport)
            .with_principal(self.principal.clone())
            .with_route(snapshot, self.client);
        let (gw, snapshot, session, auth, client, endpoint) = (
            self.gw.clone(),
            snapshot.clone(),
            self.session.cloned(),
            self.auth,
            self.client,
            self.endpoint.clone(),
        );
        // The time the dispatch waited on backends (the rest of the request's is the gateway's own).
        let in_backends = Rc::new(Cell::new(Duration::ZERO));
        let waited = Rc::clone(&in_backends);
        let work = async {
            let dispatched = self.chain.run(ctx, move |ctx| async move {
                let dispatch =
                    Dispatch::new(&gw, &snapshot, generation, session.as_deref(), auth, client)
                        .with_subject(ctx.principal())
                        .at(endpoint);
                let Some(call) = ctx.into_call() else {
                    return not_a_call();
                };
                let outcome = dispatch.run(&call).await;
                waited.set(dispatch.backend_time.get());
                if let Outcome::Failed(f) = &outcome {
                    tracing::warn!(failure = %f, "request failed at its backend");
                }
                Response::dispatched(outcome, dispatch.backend.into_inner())
            });
            let outcome = unless_cut_off(self.gw, dispatched).await;
            record_outcome(&outcome);
            let counted = outcome.metric(method);
            let shaping = spans::child("mcpgw.shape");
            let shaped = self
                .response
                .shape(id, method, generation, outcome, &self.endpoint)
                .await;
            drop(shaping);
            self.gw.metrics.answered(Answered {
                method: method.into(),
                generation: Some(generation),
                transport: self.transport.into(),
                outcome: counted,
                took: Some(accepted.elapsed()),
                in_backends: in_backends.get(),
            });
            shaped
        };
        let cancellable = async {
            match &registered {
                Some(r) => tokio::select! {
                    answer = work => Some(answer),
                    () = r.cancelled() => {
                        tracing::info!("cancelled by the client");
                        None
                    }
                },
                None => Some(work.await),
            }
        };
        match otel {
            None => cancellable.instrument(span).await,
            Some(otel) => {
                let answered = cancellable
                    .instrument(span)
                    .with_context(otel.context())
                    .await;
                otel.end();
                answered
            }
        }
    }
}

/// Records a failed outcome on the request's span (with `[traces]`): `error.type` and the JSON-RPC code.
pub(crate) fn record_outcome(outcome: &Outcome) {
    if !crate::telemetry::traces::on() {
        return;
    }
    match outcome {
        Outcome::Result(_) => {}
        Outcome::Failed(f) => spans::record_failure(f.kind(), None),
        Outcome::Error(e) => spans::record_failure("jsonrpc_error", Some(e.code().code())),
        Outcome::Refused(_) => spans::record_failure("refused", None),
    }
}

/// The outcome of a request's chain and dispatch — or, when the gateway's drain timeout passes first,
/// "gateway shutting down" (a tool error for `tools/call`), so that a request still running then is answered,
/// not dropped with its connection; the dispatch is dropped, which abandons the backend request.
pub(crate) async fn unless_cut_off(
    gw: &Gateway,
    dispatched: impl std::future::Future<Output = Response>,
) -> Outcome {
    tokio::select! {
        answered = dispatched => answered.outcome,
        () = gw.drain.reached(crate::drain::Phase::CutOff) => {
            tracing::warn!("answered \"gateway shutting down\": still running at the drain timeout");
            Outcome::Failed(protocol::shape::Failure::ShuttingDown)
        }
    }
}

/// What the dispatch answers if a context it is handed holds no call (it cannot: contexts are made from
/// calls, and a middleware cannot swap what a context holds).
pub(crate) fn not_a_call() -> Response {
    Response::dispatched(
        Outcome::Failed(protocol::shape::Failure::Internal {
            reason: "the request reached the dispatch without a call".into(),
        }),
        None,
    )
}

impl Answering<'_> {
    /// A client's answer to a question another replica asked (its id names the replica): sent there through
    /// Redis. One that no replica can take (the replica is gone, Redis is down) is refused at once, 503,
    /// never dropped in silence; one that names no question of this gateway is dropped (debug).
    async fn answer_elsewhere(&self, r: &protocol::Response, generation: Generation) -> Answer {
        let asker = crate::session::asked_by(r);
        let (Some(asker), Some(session)) = (asker, self.session) else {
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
        let response = serde_json::to_string(r).unwrap_or_default();
        match link.deliver_answer(&asker, &session.id, &response).await {
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
        Transport::Stdio => NO_EXPIRY,
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
                client = %params.client_info.name, transport = transport.as_str(), "session started");
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
