//! `/mcp`: Streamable HTTP for legacy sessions and modern stateless requests side by side, decided per request
//! from the body by `protocol::validate`.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use protocol::validate::{HttpMethod, Rejection};
use tokio::sync::mpsc;

use super::body::{BodyLimits, read_body};
use super::stream::{KEEP_ALIVE, messages_body, sse_body};
use super::{Worker, message_response, rejection_response};
use crate::auth_context::AuthContext;
use crate::pipeline::answer::{Answer, Answering, start_session};
use crate::pipeline::routing::Origin;
use crate::session::{Ending, Session, Transport};

/// Events a session's GET stream buffers before the client is considered too slow.
const STREAM_BUFFER: usize = 256;

/// The session a request names, if it is live (and marks it used).
fn session_of(req: &HttpRequest, worker: &Worker) -> Option<Arc<Session>> {
    let id = req.headers().get("mcp-session-id")?.to_str().ok()?;
    worker.gw.sessions.get(id)
}

pub(super) async fn post(
    req: HttpRequest,
    payload: web::Payload,
    worker: web::Data<Worker>,
) -> HttpResponse {
    if let Err(r) = worker.origin.check(&req) {
        return rejection_response(&r);
    }
    let limits = BodyLimits::from_config(&worker.gw.config.server);
    let body = match read_body(req.headers(), payload, limits).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    handle(&req, HttpMethod::Post, body, &worker).await
}

pub(super) async fn get(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    handle(&req, HttpMethod::Get, Bytes::new(), &worker).await
}

pub(super) async fn delete(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    handle(&req, HttpMethod::Delete, Bytes::new(), &worker).await
}

pub(super) async fn other(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    handle(&req, HttpMethod::Other, Bytes::new(), &worker).await
}

async fn handle(
    req: &HttpRequest,
    method: HttpMethod,
    body: Bytes,
    worker: &Worker,
) -> HttpResponse {
    if let Err(r) = worker.origin.check(req) {
        return rejection_response(&r);
    }
    let session = session_of(req, worker);
    let origin = Origin::Http(method, req.headers().clone());
    let routed = match worker.routing.route(origin, body, session.clone()).await {
        Ok(r) => r,
        Err(r) => return rejection_response(&r),
    };
    let accepts = routed.valid.accepts();
    let answering = Answering {
        gw: &worker.gw,
        response: &worker.response,
        chain: worker.routing.chain(),
        session: session.as_ref(),
        can_stream: accepts.sse,
        auth: AuthContext::of_headers(req.headers()),
        transport: Transport::StreamableHttp,
    };
    match answering.answer(routed).await {
        Answer::Accepted | Answer::Cancelled => HttpResponse::Accepted().finish(),
        Answer::Message(shaped) => message_response(shaped, accepts),
        Answer::Batch(bodies) => message_response(protocol::shape::batch(&bodies), accepts),
        Answer::Stream(rx) => HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header(("Cache-Control", "no-cache"))
            .insert_header(("X-Accel-Buffering", "no"))
            .streaming(messages_body(rx)),
        Answer::Initialize {
            generation,
            params,
            shaped,
        } => {
            match start_session(
                &worker.gw,
                None,
                generation,
                &params,
                Transport::StreamableHttp,
            ) {
                Ok(session) => {
                    let mut resp = message_response(shaped, accepts);
                    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&session.id) {
                        resp.headers_mut().insert(
                            actix_web::http::header::HeaderName::from_static("mcp-session-id"),
                            value,
                        );
                    }
                    resp
                }
                Err(refused) => rejection_response(&refused),
            }
        }
        Answer::OpenStream => match session {
            Some(s) => open_stream(&s),
            None => rejection_response(&Rejection::unknown_session(
                "no live session by this Mcp-Session-Id: initialize first",
            )),
        },
        Answer::EndSession => match session {
            Some(s) => {
                worker.gw.sessions.end(&s.id, Ending::Deleted);
                HttpResponse::NoContent().finish()
            }
            None => rejection_response(&Rejection::unknown_session(
                "no live session by this Mcp-Session-Id: initialize first",
            )),
        },
    }
}

/// The session's standalone GET stream: server-to-client messages unrelated to a request, keep-alives.
fn open_stream(session: &Session) -> HttpResponse {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    if session.handle.attach_stream(tx).is_err() {
        return rejection_response(&Rejection::overloaded(
            "the session cannot take its stream now",
            Some(session.generation),
        ));
    }
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(sse_body(None, rx, KEEP_ALIVE))
}
