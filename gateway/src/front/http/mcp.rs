//! `/mcp` and each `[[endpoint]]`'s path: Streamable HTTP for legacy sessions and modern stateless requests
//! side by side, decided per request from the body by `protocol::validate`. An endpoint with
//! `[endpoint.access]` refuses a principal it does not admit with 403 before its body is read, before any
//! session lookup or any look at the catalog.

use std::sync::Arc;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use protocol::shape::Shaped;
use protocol::validate::{Accepts, HttpMethod, Rejection};
use tokio::sync::mpsc;

use super::body::{BodyLimits, read_body};
use super::connections::Connection;
use super::stream::{KEEP_ALIVE, Watch, messages_body, sse_body, watched, write_timeout};
use super::{Worker, event_stream, message_response, rejection_response};
use crate::endpoint::{Endpoint, Refused};
use crate::pipeline::context::Accepted;
use crate::pipeline::deliver::Output;
use crate::pipeline::routing::Origin;
use crate::session::{Session, StoreFull, Transport};
use crate::state::Gateway;
use actix_web::body::{BodySize, MessageBody};
use actix_web::http::header::AUTHORIZATION;

/// The endpoint a resource serves (its app data).
#[derive(Debug, Clone)]
pub(super) struct At(pub Arc<Endpoint>);

/// The endpoint `req` arrived at.
fn endpoint_of(req: &HttpRequest, worker: &Worker) -> Arc<Endpoint> {
    req.app_data::<At>().map_or_else(
        || worker.gw.endpoints.default_endpoint().clone(),
        |at| at.0.clone(),
    )
}

/// 403 when the endpoint does not admit the request's principal (RFC 6750's `insufficient_scope` when it
/// lacks scopes).
fn refused_here(req: &HttpRequest, endpoint: &Endpoint) -> Option<HttpResponse> {
    let principal = super::gate::principal_of(req);
    let refused = endpoint.admits(principal.as_deref()).err()?;
    tracing::info!(
        endpoint = %endpoint.path,
        principal = %principal.as_ref().map_or("-", |p| p.name.as_str()),
        why = %refused,
        "refused: not admitted to the endpoint"
    );
    let mut resp = HttpResponse::Forbidden();
    resp.insert_header(("Cache-Control", "no-store"));
    let error = match &refused {
        Refused::NotAdmitted { .. } => "forbidden",
        Refused::InsufficientScope { missing, .. } => {
            resp.insert_header((
                "WWW-Authenticate",
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                    missing.join(" ")
                ),
            ));
            "insufficient_scope"
        }
    };
    Some(resp.json(serde_json::json!({
        "error": error,
        "error_description": refused.to_string(),
    })))
}

/// Events a session's GET stream buffers before the client is considered too slow.
const STREAM_BUFFER: usize = 1024;

/// The session a request names, if it is live (rebuilt from its id when this replica holds no actor for
/// it), marked used; `Err` when the store cannot make room for its actor now.
async fn session_of(
    req: &HttpRequest,
    worker: &Worker,
    bound_to: Option<[u8; 16]>,
) -> Result<Option<Arc<Session>>, StoreFull> {
    let Some(id) = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    worker.gw.sessions.find(id, bound_to).await
}

pub(super) async fn post(
    req: HttpRequest,
    payload: web::Payload,
    worker: web::Data<Worker>,
) -> HttpResponse {
    if let Err(r) = worker.origin.check(&req) {
        return rejection_response(&r);
    }
    let endpoint = endpoint_of(&req, &worker);
    if let Some(refused) = refused_here(&req, &endpoint) {
        // What the client still sends of the body is read first, so that it reads the 403.
        super::body::drain(req.headers(), payload).await;
        return refused;
    }
    let limits = BodyLimits::from_config(&worker.gw.config.server);
    let body = match read_body(req.headers(), payload, limits).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    worker.gw.metrics.received(STREAMABLE, body.len());
    handle(&req, HttpMethod::Post, body, &worker, endpoint).await
}

pub(super) async fn get(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    bodiless(&req, HttpMethod::Get, &worker).await
}

pub(super) async fn delete(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    bodiless(&req, HttpMethod::Delete, &worker).await
}

pub(super) async fn other(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    bodiless(&req, HttpMethod::Other, &worker).await
}

async fn bodiless(req: &HttpRequest, method: HttpMethod, worker: &Worker) -> HttpResponse {
    let endpoint = endpoint_of(req, worker);
    if let Some(refused) = refused_here(req, &endpoint) {
        return refused;
    }
    handle(req, method, Bytes::new(), worker, endpoint).await
}

async fn handle(
    req: &HttpRequest,
    method: HttpMethod,
    body: Bytes,
    worker: &Worker,
    endpoint: Arc<Endpoint>,
) -> HttpResponse {
    if let Err(r) = worker.origin.check(req) {
        return rejection_response(&r);
    }
    let principal = super::gate::principal_of(req);
    let authorization = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    let auth = worker.gw.auth_context(principal.as_deref(), authorization);
    let mut accepted = Accepted {
        session: None,
        auth,
        principal,
        client: super::client_ip(req, &worker.gw),
        transport: Transport::StreamableHttp,
        endpoint,
        headers: Vec::new(),
    };
    let session = match session_of(req, worker, accepted.binding(&worker.gw)).await {
        Ok(session) => session,
        Err(full) => {
            let refused = Rejection::overloaded(&full.to_string(), None);
            crate::pipeline::deliver::count_refused(
                &worker.gw,
                Transport::StreamableHttp,
                &refused,
                &body,
            );
            return rejection_response(&refused);
        }
    };
    accepted.session = session;
    let origin = Origin::Http(method, req.headers().clone());
    let response = accepted
        .deliver(
            &worker.routing,
            origin,
            body,
            &mut HttpOutput(&worker.gw, req.conn_data::<Arc<Connection>>().cloned()),
        )
        .await;
    // A whole body is counted here; a stream's events as they are written (`stream::watched`).
    if let BodySize::Sized(n) = response.body().size() {
        worker
            .gw
            .metrics
            .sent(STREAMABLE, usize::try_from(n).unwrap_or(usize::MAX));
    }
    response
}

const STREAMABLE: crate::metrics::Transport = crate::metrics::Transport::StreamableHttp;

/// Streamable HTTP's output: the response to the POST (JSON, or an SSE stream), 202, 204.
struct HttpOutput<'a>(&'a Gateway, Option<Arc<Connection>>);

impl Output for HttpOutput<'_> {
    type Reply = HttpResponse;

    fn can_stream(&self, accepts: Accepts) -> bool {
        accepts.sse
    }

    async fn message(&mut self, shaped: Shaped, accepts: Accepts) -> HttpResponse {
        message_response(shaped, accepts)
    }

    async fn stream(&mut self, rx: mpsc::Receiver<Vec<u8>>) -> HttpResponse {
        let watch = Watch {
            connection: self.1.clone(),
            write_timeout: write_timeout(self.0),
            session: None,
            abandoned: None,
            open: self.0.metrics.stream_opened(STREAMABLE),
        };
        event_stream().streaming(watched(messages_body(rx, self.0.drain.watch()), watch))
    }

    async fn accepted(&mut self) -> HttpResponse {
        HttpResponse::Accepted().finish()
    }

    async fn started(
        &mut self,
        session: Arc<Session>,
        shaped: Shaped,
        accepts: Accepts,
    ) -> HttpResponse {
        let mut resp = message_response(shaped, accepts);
        if let Ok(value) = HeaderValue::from_str(&session.id) {
            resp.headers_mut()
                .insert(HeaderName::from_static("mcp-session-id"), value);
        }
        resp
    }

    async fn open_stream(&mut self, session: &Arc<Session>) -> HttpResponse {
        open_stream(session, self.0, self.1.clone())
    }

    async fn ended(&mut self) -> HttpResponse {
        HttpResponse::NoContent().finish()
    }
}

/// The session's standalone GET stream: server-to-client messages unrelated to a request, keep-alives.
fn open_stream(
    session: &Session,
    gw: &Gateway,
    connection: Option<Arc<Connection>>,
) -> HttpResponse {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let watch = Watch {
        connection,
        write_timeout: write_timeout(gw),
        session: Some(session.id.to_string()),
        abandoned: Some(tx.downgrade()),
        open: gw.metrics.stream_opened(STREAMABLE),
    };
    if session.handle.attach_stream(tx).is_err() {
        return rejection_response(&Rejection::overloaded(
            "the session cannot take its stream now",
            Some(session.generation),
        ));
    }
    event_stream().streaming(watched(
        sse_body(None, rx, KEEP_ALIVE, gw.drain.watch()),
        watch,
    ))
}
