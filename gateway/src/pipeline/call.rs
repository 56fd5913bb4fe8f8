//! The one call sequence, for an answer sent whole and for one streamed: a call of the request's context
//! goes through the middleware chain (in its tracing span, and its OpenTelemetry span with `[traces]`) to its
//! dispatch, is cut off by the drain's timeout, shaped (`pipeline::response`) and counted — cancelled instead
//! when a legacy client says so. A streamed answer differs only in its dispatch (`request_stream::rounds`:
//! the request's own messages go on its stream first) and in where its response goes.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::context::FutureExt as _;
use protocol::Generation;
use protocol::shape::Shaped;
use protocol::validate::Call;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::metrics::Answered;
use crate::pipeline::context::RequestContext;
use crate::pipeline::dispatch::Dispatch;
use crate::pipeline::request_stream::{self, Wants};
use crate::pipeline::response::{Outcome, shape_outcome};
use crate::pipeline::routing::InFlight;
use crate::pipeline::{Chain, MwContext, Response, Transport};
use crate::session::ShortId;
use crate::state::Gateway;
use crate::telemetry::spans::{self, RequestFacts, RequestSpan};

/// Where a call's own messages (progress, log messages, the backend's questions) go.
pub(crate) enum Via {
    /// Nowhere: the answer is its response alone.
    Response,
    /// On the request's stream, before its response.
    Stream {
        /// The stream.
        tx: mpsc::Sender<Vec<u8>>,
        /// What the client wants to hear.
        wants: Wants,
    },
}

/// One call through the middleware chain to its dispatch, shaped and counted; `None` when the client
/// cancelled it (its work is then dropped, which abandons the backend call, and no response is sent: the
/// spec's SHOULD NOT respond).
pub(crate) async fn answer(
    gw: &Arc<Gateway>,
    chain: &Chain,
    request: &Rc<RequestContext>,
    call: Call,
    via: Via,
) -> Option<Shaped> {
    let generation = request.generation();
    let span = span(request, &call, generation);
    let otel = request
        .trace()
        .and_then(|t| RequestSpan::start(t, &facts(request, &call, generation).as_facts()));
    let registered = request
        .session()
        .and_then(|s| s.in_flight().register(&call.request().id));
    let (id, method) = (call.request().id.clone(), call.method());
    let ctx = MwContext::new(call, request);
    // The time the dispatch waited on backends (the rest of the request's is the gateway's own).
    let in_backends = Rc::new(Cell::new(Duration::ZERO));
    let waited = Rc::clone(&in_backends);
    let dispatch_gw = gw.clone();
    // Boxed (here and the dispatch below): the futures above are moved several times on their way to the
    // runtime (instrumented, selected, boxed by actix-web), and a large one is copied whole each time.
    let work = Box::pin(async {
        let dispatched = chain.run(ctx, move |ctx| async move {
            let request = Rc::clone(ctx.request());
            let dispatch = Dispatch::new(&dispatch_gw, &request, ctx.principal());
            let Some(call) = ctx.into_call() else {
                return not_a_call();
            };
            let outcome = match via {
                Via::Response => dispatch.run(&call).await,
                Via::Stream { tx, wants } => {
                    request_stream::rounds(&dispatch, call, &tx, wants).await
                }
            };
            waited.set(dispatch.backend_time.get());
            if let Outcome::Failed(f) = &outcome {
                tracing::warn!(failure = %f, "request failed at its backend");
            }
            Response::dispatched(outcome, dispatch.backend.into_inner())
        });
        let outcome = unless_cut_off(gw, Box::pin(dispatched)).await;
        record_outcome(&outcome);
        let counted = outcome.metric(method);
        let shaping = spans::child("mcpgw.shape");
        let shaped = shape_outcome(&request.endpoint().stamp, &id, method, generation, outcome);
        drop(shaping);
        gw.metrics.answered(Answered {
            method: method.into(),
            generation: Some(generation),
            transport: request.transport().into(),
            outcome: counted,
            took: Some(request.arrived().elapsed()),
            in_backends: in_backends.get(),
        });
        shaped
    });
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

/// Answers a call as a stream, on the current arbiter: its own messages, then its response, arrive on the
/// returned channel, which closes after the response (or without one, when the client cancelled it). The
/// request's in-flight permit is held until then; closing the channel cancels the call.
pub(crate) fn stream(
    gw: Arc<Gateway>,
    chain: Chain,
    request: Rc<RequestContext>,
    call: Call,
    wants: Wants,
    permit: InFlight,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(request_stream::BUFFER);
    actix_rt::spawn(async move {
        let via = Via::Stream {
            tx: tx.clone(),
            wants,
        };
        if let Some(shaped) = answer(&gw, &chain, &request, call, via).await {
            let _ = tx.send(shaped.body).await;
        }
        drop(permit);
    });
    rx
}

/// The request's span: session, request id, method, backend (recorded at dispatch), generation.
fn span(request: &RequestContext, call: &Call, generation: Generation) -> tracing::Span {
    tracing::info_span!(
        "request",
        session = request.session().map(|s| tracing::field::display(ShortId(&s.id))),
        id = %call.request().id,
        method = %call.method(),
        backend = tracing::field::Empty,
        generation = %generation,
        principal = request.principal().map(|p| tracing::field::display(&p.name)),
    )
}

/// What the request's OpenTelemetry span records of it (see `telemetry::spans`).
struct Facts<'a> {
    call: &'a Call,
    session: Option<String>,
    id: String,
    generation: Generation,
    transport: Transport,
}

fn facts<'a>(request: &RequestContext, call: &'a Call, generation: Generation) -> Facts<'a> {
    Facts {
        call,
        session: request.session().map(|s| ShortId(&s.id).to_string()),
        id: call.request().id.to_string(),
        generation,
        transport: request.transport(),
    }
}

impl Facts<'_> {
    fn as_facts(&self) -> RequestFacts<'_> {
        let target = self.call.target().and_then(|t| match t {
            protocol::validate::Target::Tool { name, .. } => Some((name.as_str(), false)),
            protocol::validate::Target::Prompt { name, .. } => Some((name.as_str(), true)),
            protocol::validate::Target::Resource { .. } => None,
        });
        RequestFacts {
            method: self.call.method().as_str(),
            target: target.map(|(name, _)| name),
            prompt: target.is_some_and(|(_, prompt)| prompt),
            id: &self.id,
            session: self.session.as_deref(),
            generation: self.generation.as_str(),
            http: !matches!(self.transport, Transport::Stdio),
            params: self.call.request().params.as_deref(),
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
