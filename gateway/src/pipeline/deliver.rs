//! The one transport adapter: from a routed request to what its transport sends back. Everything but the
//! writing is done here, the same way for every transport (Streamable HTTP, HTTP+SSE, stdio, and the
//! in-process harness): a refusal before any handler runs, the answer, a batch's framing, the session an
//! accepted `initialize` starts, a DELETE's end of a session, a GET's stream. A transport only implements
//! [`Output`]: how one message, a stream of messages, or nothing at all reach its client.
//!
//! It must not shape anything (statuses and bodies come from `protocol::shape` through the response actor
//! and the [`protocol::Rejection`]s), and no transport decides any of the above for itself.

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use protocol::shape::Shaped;
use protocol::validate::{Accepts, Rejection};
use tokio::sync::mpsc::Receiver;

use crate::metrics::{MethodLabel, Outcome};
use crate::pipeline::answer::{Answer, Answering, start_session};
use crate::pipeline::context::{Accepted, RequestContext};
use crate::pipeline::routing::{Origin, Routed, RoutingHandle};
use crate::session::{Ending, Session};

/// How a transport writes what the pipeline decided. `Reply` is what its handler returns (an HTTP
/// response, nothing for a stdio line).
pub(crate) trait Output {
    /// What the transport's handler returns for one request.
    type Reply;

    /// Whether a request's own messages can travel before its response: an HTTP response stream only when
    /// the client accepts `text/event-stream`; HTTP+SSE and stdio always.
    fn can_stream(&self, accepts: Accepts) -> bool;

    /// One complete message (a response, a refusal, a batch's array) with the status and headers shaping
    /// chose, for a client that accepts `accepts`.
    async fn message(&mut self, shaped: Shaped, accepts: Accepts) -> Self::Reply;

    /// A refusal (before validation or of a session): by default one message like any other.
    async fn refused(&mut self, rejection: Rejection) -> Self::Reply {
        self.message(rejection.shaped(), Accepts::JSON).await
    }

    /// A request answered as a stream: its messages in order, empty ones keep-alives.
    async fn stream(&mut self, rx: Receiver<Vec<u8>>) -> Self::Reply;

    /// Nothing to send back (notifications, client responses, a cancelled request): HTTP's 202.
    async fn accepted(&mut self) -> Self::Reply;

    /// Whether `initialize` may start a session here, and the id it takes (`Some`: HTTP+SSE, whose
    /// session is named by its stream; `None`: a new one).
    fn new_session(&self) -> Result<Option<String>, Rejection> {
        Ok(None)
    }

    /// `initialize` started `session`; `shaped` carries its result.
    async fn started(
        &mut self,
        session: Arc<Session>,
        shaped: Shaped,
        accepts: Accepts,
    ) -> Self::Reply;

    /// A GET on a live session: its standalone stream. Only Streamable HTTP has one.
    async fn open_stream(&mut self, session: &Arc<Session>) -> Self::Reply;

    /// A DELETE ended the session.
    async fn ended(&mut self) -> Self::Reply;
}

/// Counts a request refused by routing (validation, the in-flight bound, a starting or stopping gateway),
/// with the method read from its body again: transports that route by themselves (stdio) call it too.
pub(crate) fn count_refused(
    gw: &crate::state::Gateway,
    transport: crate::session::Transport,
    rejection: &Rejection,
    body: &[u8],
) {
    gw.metrics.answered(crate::metrics::Answered {
        method: method_of(body),
        generation: rejection.generation,
        transport: transport.into(),
        outcome: Outcome::of_refusal(rejection.status, rejection.error.code()),
        took: None,
        in_backends: std::time::Duration::ZERO,
    });
}

/// The method of a refused request's body, as a label: `none` when it is not one JSON-RPC message with a
/// string `method`.
fn method_of(body: &[u8]) -> MethodLabel {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_slice::<Named>(body) {
        Ok(Named { method: Some(m) }) => MethodLabel::of_name(&m),
        _ => MethodLabel::None,
    }
}

/// The answer to a GET or DELETE that names no live session.
fn no_session() -> Rejection {
    Rejection::unknown_session("no live session by this Mcp-Session-Id: initialize first")
}

impl Accepted {
    /// Validates a request (routing), answers it, and writes the answer through `out`.
    pub(crate) async fn deliver<O: Output>(
        mut self,
        routing: &RoutingHandle,
        origin: Origin,
        body: Bytes,
        out: &mut O,
    ) -> O::Reply {
        let readable = &routing.gateway().readable_headers;
        if let (false, Origin::Http(_, headers)) = (readable.is_empty(), &origin) {
            self.headers = readable
                .iter()
                .filter_map(|name| {
                    let value = headers.get(name.as_str())?.to_str().ok()?;
                    Some((name.as_str().to_owned(), value.to_owned()))
                })
                .collect();
        }
        // A refusal is counted with the method read from the body again (only then).
        let raw = body.clone();
        let accepted = Arc::new(self);
        let routed = match routing.route(origin, body, Arc::clone(&accepted)).await {
            Ok(r) => r,
            Err(r) => {
                count_refused(routing.gateway(), accepted.transport, &r, &raw);
                return out.refused(r).await;
            }
        };
        settle(routing, accepted, routed, out).await
    }
}

/// Builds the request's context of what the front accepted and what routing resolved, answers the request
/// and writes the answer through `out`.
pub(crate) async fn settle<O: Output>(
    routing: &RoutingHandle,
    accepted: Arc<Accepted>,
    routed: Routed,
    out: &mut O,
) -> O::Reply {
    let Routed {
        valid,
        view,
        permit,
        trace,
        arrived,
    } = routed;
    let accepts = valid.accepts();
    let gw = routing.gateway();
    let request = Rc::new(RequestContext::new(
        accepted,
        view,
        valid.generation(),
        out.can_stream(accepts),
        arrived,
        trace,
    ));
    if let Some(session) = request.session() {
        // What the gateway sends it outside its requests is judged by this reader's view.
        read_by(session, &request);
    }
    let answering = Answering {
        gw,
        chain: routing.chain(),
        request: Rc::clone(&request),
    };
    match answering.answer(valid, permit).await {
        Answer::Accepted | Answer::Cancelled => out.accepted().await,
        Answer::Message(shaped) => out.message(shaped, accepts).await,
        Answer::Batch(bodies) => out.message(protocol::shape::batch(&bodies), accepts).await,
        Answer::Stream(rx) => out.stream(rx).await,
        Answer::Initialize {
            generation,
            params,
            shaped,
        } => {
            let initialize = MethodLabel::Spec(protocol::Method::Initialize);
            let id = match out.new_session() {
                Ok(id) => id,
                Err(refused) => {
                    answering.refused(&refused, initialize);
                    return out.refused(refused).await;
                }
            };
            let accepted = request.accepted();
            match start_session(
                gw,
                id,
                generation,
                &params,
                accepted.transport,
                accepted.binding(gw),
            ) {
                Ok(session) => {
                    read_by(&session, &request);
                    answering.count(initialize, Some(generation), Outcome::Ok, arrived);
                    out.started(session, shaped, accepts).await
                }
                Err(refused) => {
                    answering.refused(&refused, initialize);
                    out.refused(refused).await
                }
            }
        }
        Answer::OpenStream => match request.session() {
            Some(s) => out.open_stream(s).await,
            None => out.refused(no_session()).await,
        },
        Answer::EndSession => match request.session() {
            Some(s) => {
                gw.sessions.end(&s.id, Ending::Deleted);
                out.ended().await
            }
            None => out.refused(no_session()).await,
        },
    }
}

/// Records who reads what the gateway sends `session` outside its requests: this request's reader.
fn read_by(session: &Session, request: &RequestContext) {
    session.read_by(request.endpoint().index, request.principal().map(|p| &**p));
}
