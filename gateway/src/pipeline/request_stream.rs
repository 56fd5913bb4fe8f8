//! Requests answered as a stream: when a client asked for progress (`_meta.progressToken`) or logging (a
//! `_meta` log level on 2026-07-28, `logging/setLevel` on a legacy session) and can receive a stream, the
//! request's own notifications go to it as they happen — progress, and log messages at or above the
//! client's level — followed by the response. Nobody else sees them. A client that goes away (closes the
//! stream) cancels the backend request: the dispatch is dropped, which abandons the backend call.
//!
//! A legacy client that declared sampling, elicitation or roots is streamed too on the methods that may need
//! input: when a 2026-07-28 backend answers `input_required`, the gateway asks the client the real
//! server-to-client requests on this stream, waits for its answers (they arrive as separate POSTs, matched by
//! the session), and retries the backend request with `inputResponses` and the backend's `requestState` —
//! bounded in rounds and time. The same client is asked a legacy backend's own requests (sampling,
//! elicitation, roots) that it sends while serving this request: they go out on this stream with the
//! gateway's id and the client's answer goes back to the backend (see [`input::relay_input_request`]).

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use handlers::Related;
use protocol::payload::LoggingLevel;
use protocol::shape::Failure;
use protocol::validate::Call;
use protocol::{Generation, Message, Notification};
use tokio::sync::mpsc;

use crate::auth_context::AuthContext;
use tracing::Instrument;

use crate::bridge::input;
use crate::catalog::CatalogSnapshot;
use crate::notify::changes::level_passes;
use crate::pipeline::dispatch::Dispatch;
use crate::pipeline::response::{Outcome, ResponseHandle};
use crate::pipeline::routing::InFlight;
use crate::pipeline::{Chain, MwContext, Response, Transport};
use crate::session::Session;
use crate::state::Gateway;

/// Messages buffered for a slow client before its notifications are dropped (the response never is).
const BUFFER: usize = 1024;

/// What a streamed request wants to hear besides its response.
#[derive(Debug, Clone, Copy)]
pub struct Wants {
    /// Log messages at or above this level.
    pub log_level: Option<LoggingLevel>,
}

/// Whether a call should be streamed, and what it wants: only when the client can receive a stream and
/// asked for progress or logging.
pub fn wants(
    call: &Call,
    generation: Generation,
    session: Option<&Session>,
    can_stream: bool,
) -> Option<Wants> {
    if !can_stream {
        return None;
    }
    let log_level = if generation.is_modern() {
        call.meta().log_level
    } else {
        session.and_then(Session::log_level)
    };
    let may_ask = !generation.is_modern()
        && call.method().may_require_input()
        && session.is_some_and(|s| {
            ["sampling", "elicitation", "roots"]
                .iter()
                .any(|c| s.client_capabilities.get(c).is_some())
        });
    (call.meta().progress_token.is_some() || log_level.is_some() || may_ask)
        .then_some(Wants { log_level })
}

/// Everything the streamed request owns.
#[derive(Debug)]
pub struct Streamed {
    /// The gateway.
    pub gw: Arc<Gateway>,
    /// The worker's response actor.
    pub response: ResponseHandle,
    /// The snapshot the call was validated against.
    pub snapshot: Arc<CatalogSnapshot>,
    /// The legacy session, if any.
    pub session: Option<Arc<Session>>,
    /// Who is asking.
    pub auth: AuthContext,
    /// The principal authentication established.
    pub principal: Option<std::sync::Arc<crate::auth::Principal>>,
    /// The client's IP address (see `Answering::client`).
    pub client: Option<std::net::IpAddr>,
    /// The call.
    pub call: Call,
    /// The client's generation.
    pub generation: Generation,
    /// What it wants to hear.
    pub wants: Wants,
    /// How it arrived.
    pub transport: Transport,
    /// The endpoint it arrived at.
    pub endpoint: Arc<crate::endpoint::Endpoint>,
    /// The worker's middleware chain.
    pub chain: Chain,
    /// Its place in the worker's in-flight bound, held until the response is sent.
    pub permit: InFlight,
    /// The request's tracing span.
    pub span: tracing::Span,
    /// Its OpenTelemetry span, with `[traces]`: the stream's work runs in its context, and ends it.
    pub otel: Option<crate::telemetry::spans::RequestSpan>,
    /// When it was accepted (its duration is counted from here).
    pub accepted: std::time::Instant,
}

/// Starts the request on the current arbiter; its messages (notifications, then the response) arrive on the
/// returned channel, which closes after the response.
pub fn start(s: Streamed) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(BUFFER);
    let span = s.span.clone();
    match s
        .otel
        .as_ref()
        .map(crate::telemetry::spans::RequestSpan::context)
    {
        Some(cx) => {
            use opentelemetry::context::FutureExt as _;
            actix_rt::spawn(run(s, tx).instrument(span).with_context(cx));
        }
        None => {
            actix_rt::spawn(run(s, tx).instrument(span));
        }
    }
    rx
}

async fn run(s: Streamed, tx: mpsc::Sender<Vec<u8>>) {
    let session = s.session.clone();
    let registered = session
        .as_ref()
        .and_then(|sess| sess.in_flight().register(&s.call.request().id));
    let work = run_rounds(s, tx);
    match &registered {
        // A legacy client's notifications/cancelled ends the stream without a response.
        Some(r) => tokio::select! {
            () = work => {}
            () = r.cancelled() => tracing::info!("cancelled by the client"),
        },
        None => work.await,
    }
}

async fn run_rounds(s: Streamed, tx: mpsc::Sender<Vec<u8>>) {
    let Streamed {
        gw,
        response,
        snapshot,
        session,
        auth,
        client,
        call,
        generation,
        wants,
        transport,
        endpoint,
        chain,
        permit,
        span: _,
        otel,
        principal,
        accepted,
    } = s;
    let in_backends = std::rc::Rc::new(std::cell::Cell::new(std::time::Duration::ZERO));
    let waited = in_backends.clone();
    let (id, method) = (call.request().id.clone(), call.method());
    let ctx = MwContext::new(call, generation, transport)
        .with_principal(principal)
        .with_route(&snapshot, client);
    let drain_gw = gw.clone();
    let dispatched = {
        let tx = tx.clone();
        let at = endpoint.clone();
        chain.run(ctx, move |ctx| async move {
            let base = Dispatch::new(&gw, &snapshot, generation, session.as_deref(), auth, client)
                .with_subject(ctx.principal())
                .at(at);
            let Some(call) = ctx.into_call() else {
                return crate::pipeline::answer::not_a_call();
            };
            let outcome = rounds(&base, call, &tx, wants).await;
            waited.set(base.backend_time.get());
            Response::dispatched(outcome, base.backend.get().cloned())
        })
    };
    let outcome = crate::pipeline::answer::unless_cut_off(&drain_gw, dispatched).await;
    crate::pipeline::answer::record_outcome(&outcome);
    let counted = outcome.metric(method);
    let shaping = crate::telemetry::spans::child("mcpgw.shape");
    let shaped = response
        .shape(id, method, generation, outcome, &endpoint)
        .await;
    drop(shaping);
    drain_gw.metrics.answered(crate::metrics::Answered {
        method: method.into(),
        generation: Some(generation),
        transport: transport.into(),
        outcome: counted,
        took: Some(accepted.elapsed()),
        in_backends: in_backends.get(),
    });
    let _ = tx.send(shaped.body).await;
    if let Some(otel) = otel {
        otel.end();
    }
    drop(permit);
}

/// The call's dispatch, asking a legacy client for the input a 2026-07-28 backend needs, round after
/// round (bounded).
async fn rounds(
    base: &Dispatch<'_>,
    mut call: Call,
    tx: &mpsc::Sender<Vec<u8>>,
    wants: Wants,
) -> Outcome {
    let mut round = 0;
    loop {
        let Some(outcome) = dispatch_once(base, &call, tx, wants).await else {
            tracing::debug!("the client closed the request's stream: cancelling it");
            return Outcome::Failed(Failure::Internal {
                reason: "the client closed the request's stream".into(),
            });
        };
        let (Some(session), Some(question)) =
            (base.session, input_required(&outcome, base.generation))
        else {
            return outcome;
        };
        round += 1;
        if round > input::MAX_ROUNDS {
            return Outcome::Failed(Failure::Internal {
                reason: format!(
                    "the backend still needed client input after {} rounds",
                    input::MAX_ROUNDS
                ),
            });
        }
        match input::request_input(session, tx, question.requests).await {
            Ok(responses) => call = input::retry(&call, responses, question.request_state),
            Err(reason) => return Outcome::Failed(Failure::Internal { reason }),
        }
    }
}

/// One dispatch of the call (in `base`'s context, with its own sink), passing its notifications on and
/// relaying the backend's requests to the client; `None` when the client went away meanwhile.
async fn dispatch_once(
    base: &Dispatch<'_>,
    call: &Call,
    tx: &mpsc::Sender<Vec<u8>>,
    wants: Wants,
) -> Option<Outcome> {
    let (sink, mut related) = mpsc::channel::<Related>(BUFFER);
    let session = base.session;
    let dispatch = Dispatch {
        gw: base.gw,
        snapshot: base.snapshot,
        generation: base.generation,
        session,
        related: Some(sink),
        auth: base.auth,
        caller: base.caller,
        backend: std::cell::OnceCell::new(),
        backend_time: std::cell::Cell::new(std::time::Duration::ZERO),
        subject: base.subject.clone(),
        endpoint: base.endpoint.clone(),
    };
    let run = dispatch.run(call);
    tokio::pin!(run);
    let routed_to = &dispatch.backend;
    // The backend's requests waiting for the client's answer, beside the call (bounded by the sink).
    let mut asking = FuturesUnordered::new();
    let outcome = loop {
        tokio::select! {
            outcome = &mut run => break outcome,
            Some(r) = related.recv() => match r {
                Related::Notification(n) => forward(tx, n, wants),
                Related::InputRequest { request, reply } => {
                    asking.push(input::relay_input_request(session, tx, request, reply));
                }
            },
            Some(()) = asking.next(), if !asking.is_empty() => {}
            () = tx.closed() => return None,
        }
    };
    if let Some(backend) = routed_to.get() {
        let _ = base.backend.set(backend.clone());
    }
    base.backend_time
        .set(base.backend_time.get() + dispatch.backend_time.get());
    // Questions still open are withdrawn: the backend answered without them.
    while let Ok(r) = related.try_recv() {
        if let Related::Notification(n) = r {
            forward(tx, n, wants);
        }
    }
    Some(outcome)
}

/// A 2026-07-28 backend's `input_required` answer that a legacy client must be asked about.
fn input_required(outcome: &Outcome, generation: Generation) -> Option<input::Question> {
    match outcome {
        Outcome::Result(raw) if !generation.is_modern() => input::Question::read(raw),
        _ => None,
    }
}

/// Passes a notification on if the client wants it; a full stream drops notifications, never blocks.
fn forward(tx: &mpsc::Sender<Vec<u8>>, n: Notification, wants: Wants) {
    if n.method == "notifications/message" && !level_passes(&n, wants.log_level) {
        return;
    }
    if tx.try_send(Message::Notification(n).to_bytes()).is_err() {
        crate::session::note_stream_dropped("the request's stream is full");
    }
}
