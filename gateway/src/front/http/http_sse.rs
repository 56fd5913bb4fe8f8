//! The 2024-11-05 HTTP+SSE transport: `GET /sse` opens the stream and names the endpoint in its first event;
//! the client POSTs every message to `/messages?sessionId=…` (answered 202) and reads every response as a
//! `message` event on the stream.

use std::sync::Arc;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use protocol::shape::Shaped;
use protocol::validate::{Accepts, HttpMethod, Rejection};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::body::{BodyLimits, read_body};
use super::connections::Connection;
use super::stream::{KEEP_ALIVE, Watch, sse_body, watched, write_timeout};
use super::{Worker, event_stream, rejection_response};
use crate::pipeline::answer::pump;
use crate::pipeline::context::Accepted;
use crate::pipeline::deliver::Output;
use crate::pipeline::routing::Origin;
use crate::session::{Session, Transport, sse_event};
use crate::state::Gateway;
use actix_web::http::header::AUTHORIZATION;

use crate::auth_context::AuthContext;

/// Events an HTTP+SSE stream buffers before the client is considered too slow.
const STREAM_BUFFER: usize = 1024;

pub(super) async fn open(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    if let Err(r) = worker.origin.check(&req) {
        return rejection_response(&r);
    }
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let (_, bound_to) = identity(&req, &worker.gw);
    let Some(id) = worker.gw.sse_connections.open(tx, bound_to) else {
        return rejection_response(&Rejection::overloaded(
            "too many open HTTP+SSE streams",
            None,
        ));
    };
    let endpoint = Bytes::from(format!(
        "event: endpoint\ndata: /messages?sessionId={id}\n\n"
    ));
    let phase = worker.gw.drain.watch();
    let watch = Watch {
        connection: req.conn_data::<Arc<Connection>>().cloned(),
        write_timeout: write_timeout(&worker.gw),
        session: Some(id.to_string()),
        abandoned: None,
        open: worker
            .gw
            .metrics
            .stream_opened(crate::metrics::Transport::HttpSse),
    };
    event_stream().streaming(watched(
        sse_body(Some(endpoint), rx, KEEP_ALIVE, phase),
        watch,
    ))
}

/// The request's authorization context and, with `[auth]` on, the principal binding its session and
/// stream must have.
fn identity(req: &HttpRequest, gw: &Gateway) -> (AuthContext, Option<[u8; 16]>) {
    let principal = super::gate::principal_of(req);
    let authorization = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    let auth = gw.auth_context(principal.as_deref(), authorization);
    (auth, gw.binding(principal.as_deref(), auth))
}

#[derive(Deserialize)]
pub(super) struct Query {
    #[serde(rename = "sessionId")]
    session_id: String,
}

pub(super) async fn post(
    req: HttpRequest,
    query: web::Query<Query>,
    payload: web::Payload,
    worker: web::Data<Worker>,
) -> HttpResponse {
    if let Err(r) = worker.origin.check(&req) {
        return rejection_response(&r);
    }
    let gw = &worker.gw;
    let limits = BodyLimits::from_config(&gw.config.server);
    let body = match read_body(req.headers(), payload, limits).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    gw.metrics
        .received(crate::metrics::Transport::HttpSse, body.len());
    let id = &query.session_id;
    let principal = super::gate::principal_of(&req);
    let (auth, bound_to) = identity(&req, gw);
    // An HTTP+SSE session lives with its stream on this replica: never rebuilt from its id. One bound to
    // another principal is unknown to this one.
    let session = gw
        .sessions
        .peek(id)
        .filter(|s| s.transport == Transport::HttpSse && s.bound_to == bound_to)
        .inspect(|s| s.touch());
    let pending = if session.is_none() {
        gw.sse_connections.take(id, bound_to)
    } else {
        None
    };
    if session.is_none() && pending.is_none() {
        return rejection_response(&Rejection::unknown_session(
            "unknown sessionId: open GET /sse first",
        ));
    }
    // The stream is the transport; validation sees the session as Streamable HTTP would.
    let mut headers = HeaderMap::new();
    headers.insert(
        HeaderName::from_static("content-type"),
        HeaderValue::from_static("application/json"),
    );
    if session.is_some() {
        if let Ok(v) = HeaderValue::from_str(id) {
            headers.insert(HeaderName::from_static("mcp-session-id"), v);
        }
    }
    let accepted = Accepted {
        session: session.clone(),
        auth,
        principal,
        client: super::client_ip(&req, gw),
        transport: Transport::HttpSse,
        endpoint: worker.gw.endpoints.default_endpoint().clone(),
        headers: Vec::new(),
    };
    let mut out = SseOutput {
        gw,
        id,
        session: session.clone(),
        pending,
        bound_to,
    };
    let origin = Origin::Http(HttpMethod::Post, headers);
    accepted
        .deliver(&worker.routing, origin, body, &mut out)
        .await
}

/// HTTP+SSE's output: every message is an event on the session's stream (or, before `initialize`, on the
/// stream the client opened), and the POST itself is answered 202.
struct SseOutput<'a> {
    gw: &'a Gateway,
    /// The stream's id, which a session started on it takes.
    id: &'a str,
    session: Option<Arc<Session>>,
    /// The stream opened by `GET /sse` and not yet initialized.
    pending: Option<mpsc::Sender<Bytes>>,
    /// The principal binding of the stream (with `[auth]` on).
    bound_to: Option<[u8; 16]>,
}

impl SseOutput<'_> {
    /// Sends one message as an event; `false` when the stream is gone or too slow.
    fn push(&self, message: &[u8]) -> bool {
        match (&self.session, &self.pending) {
            (Some(s), _) => s.handle.push(sse_event(message)).is_ok(),
            (None, Some(tx)) => tx.try_send(sse_event(message)).is_ok(),
            (None, None) => false,
        }
    }

    /// 202, the stream not initialized yet handed back for the `initialize` still to come.
    fn done(&mut self) -> HttpResponse {
        if let (Some(tx), None) = (self.pending.take(), &self.session) {
            self.gw.sse_connections.put_back(self.id, tx, self.bound_to);
        }
        HttpResponse::Accepted().finish()
    }
}

impl Output for SseOutput<'_> {
    type Reply = HttpResponse;

    fn can_stream(&self, _: Accepts) -> bool {
        true
    }

    async fn message(&mut self, shaped: Shaped, _: Accepts) -> HttpResponse {
        self.push(&shaped.body);
        self.done()
    }

    async fn stream(&mut self, rx: mpsc::Receiver<Vec<u8>>) -> HttpResponse {
        // Every message of the request travels on the session's stream, in order.
        if let Some(s) = self.session.clone() {
            actix_rt::spawn(pump(rx, async move |message| {
                s.handle.push(sse_event(&message)).is_ok()
            }));
        }
        self.done()
    }

    async fn accepted(&mut self) -> HttpResponse {
        self.done()
    }

    fn new_session(&self) -> Result<Option<String>, Rejection> {
        match self.pending {
            Some(_) => Ok(Some(self.id.to_owned())),
            None => Err(Rejection::already_initialized()),
        }
    }

    async fn started(&mut self, session: Arc<Session>, shaped: Shaped, _: Accepts) -> HttpResponse {
        if let Some(tx) = self.pending.take() {
            if session.handle.attach_stream(tx).is_ok() {
                let _ = session.handle.push(sse_event(&shaped.body));
            }
        }
        HttpResponse::Accepted().finish()
    }

    /// A GET is not a message of this transport (its stream is `GET /sse`).
    async fn open_stream(&mut self, _: &Arc<Session>) -> HttpResponse {
        self.done()
    }

    async fn ended(&mut self) -> HttpResponse {
        self.done()
    }
}
