//! The dispatch of a request answered as a stream (the call sequence itself is `pipeline::call`'s, the same
//! for every call): when a client asked for progress (`_meta.progressToken`) or logging (a
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

use std::borrow::Cow;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use handlers::Related;
use protocol::payload::LoggingLevel;
use protocol::shape::Failure;
use protocol::validate::Call;
use protocol::{Generation, Message, Notification};
use tokio::sync::mpsc;

use crate::bridge::input;
use crate::notify::completion;
use crate::notify::fanout::level_passes;
use crate::pipeline::dispatch::{Dispatch, UrlAsk};
use crate::pipeline::response::Outcome;
use crate::session::Session;

/// Messages buffered for a slow client before its notifications are dropped (the response never is).
pub(crate) const BUFFER: usize = 1024;

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

/// The call's dispatch, asking a legacy client for the input a 2026-07-28 backend needs, round after
/// round (bounded).
pub(crate) async fn rounds(
    base: &Dispatch<'_>,
    mut call: Call,
    tx: &mpsc::Sender<Vec<u8>>,
    wants: Wants,
) -> Outcome {
    let mut round = 0;
    // The ids the gateway gave the URL elicitations it asked for the backend.
    let mut asked_urls: Vec<String> = Vec::new();
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
            if matches!(outcome, Outcome::Result(_)) {
                completed(tx, &asked_urls);
            }
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
        let mut requests = question.requests;
        let backend = base.backend.get().cloned().unwrap_or_default();
        match base.url_ids(&call, &backend, &mut requests) {
            Ok(ids) => asked_urls.extend(ids),
            Err(refused) => return refused,
        }
        if let Err(refused) = base.questions(&backend, &mut requests) {
            return refused;
        }
        match input::request_input(session, tx, requests).await {
            Ok(responses) => call = input::retry(&call, responses, question.request_state),
            Err(reason) => return Outcome::Failed(Failure::Internal { reason }),
        }
    }
}

/// Tells a legacy client that the URL elicitations it was asked on a 2026-07-28 backend's behalf are
/// complete: the backend's retry was answered.
fn completed(tx: &mpsc::Sender<Vec<u8>>, ids: &[String]) {
    for id in ids {
        let params = serde_json::json!({ "elicitationId": id });
        let n = Notification::new("notifications/elicitation/complete", Some(&params));
        if tx.try_send(Message::Notification(n).to_bytes()).is_err() {
            crate::session::note_stream_dropped("the request's stream is full");
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
    let dispatch = base.with_sink(sink);
    let run = dispatch.run(call);
    tokio::pin!(run);
    let routed_to = &dispatch.backend;
    // The backend's requests waiting for the client's answer, beside the call (bounded by the sink).
    let mut asking = FuturesUnordered::new();
    let outcome = loop {
        tokio::select! {
            outcome = &mut run => break outcome,
            Some(r) = related.recv() => match r {
                Related::Notification(n) => forward(&dispatch, tx, n, wants),
                Related::InputRequest { request, reply } => {
                    let backend = dispatch.backend.get().map_or("", String::as_str);
                    let request = match dispatch.question(backend, request) {
                        Ok(request) => request,
                        Err(withheld) => {
                            let _ = reply.send(Err(withheld));
                            continue;
                        }
                    };
                    match dispatch.url_asked(call, backend, &request) {
                        UrlAsk::Refused { to_backend, .. } => {
                            tracing::debug!(%backend, error = %to_backend, "a url elicitation was not relayed");
                            let _ = reply.send(Err(to_backend));
                        }
                        UrlAsk::Form | UrlAsk::Ask(_) => {
                            asking.push(input::relay_input_request(session, tx, request, reply));
                        }
                    }
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
            forward(&dispatch, tx, n, wants);
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

/// Passes a notification on if the client wants it; a full stream drops notifications, never blocks. A URL
/// elicitation's completion goes only where its elicitation was relayed (`notify::completion`).
fn forward(dispatch: &Dispatch<'_>, tx: &mpsc::Sender<Vec<u8>>, n: Notification, wants: Wants) {
    if n.method == "notifications/message" && !level_passes(&n, wants.log_level) {
        return;
    }
    // `[redaction]` judges what the backend says while it works as it judges its answer.
    let n = match &dispatch.gw.live().redaction {
        Some(redactor) => {
            let backend = dispatch.backend.get().map_or("", String::as_str);
            let principal = dispatch.principal.as_deref().unwrap_or("-");
            match redactor.notification(&dispatch.gw.metrics, backend, principal, &n) {
                Some(Cow::Owned(redacted)) => redacted,
                Some(Cow::Borrowed(_)) => n,
                None => return,
            }
        }
        None => n,
    };
    if n.method == "notifications/elicitation/complete" {
        let backend = dispatch.backend.get().map_or("", String::as_str);
        let here = completion::deliver(dispatch.gw, backend, &n, dispatch.session);
        if here != completion::Delivered::Here {
            return;
        }
    }
    if tx.try_send(Message::Notification(n).to_bytes()).is_err() {
        crate::session::note_stream_dropped("the request's stream is full");
    }
}
