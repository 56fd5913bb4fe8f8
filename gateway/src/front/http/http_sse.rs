//! The 2024-11-05 HTTP+SSE transport: `GET /sse` opens the stream and names the endpoint in its first event;
//! the client POSTs every message to `/messages?sessionId=…` (answered 202) and reads every response as a
//! `message` event on the stream.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use protocol::validate::{HttpMethod, Rejection};
use serde::Deserialize;
use tokio::sync::mpsc;

use super::body::{BodyLimits, read_body};
use super::stream::{KEEP_ALIVE, sse_body};
use super::{Worker, rejection_response};
use crate::auth_context::AuthContext;
use crate::pipeline::answer::{Answer, Answering, pump, start_session};
use crate::pipeline::routing::Origin;
use crate::session::Transport;
use crate::session::sse_event;

/// Events an HTTP+SSE stream buffers before the client is considered too slow.
const STREAM_BUFFER: usize = 256;

pub(super) async fn open(req: HttpRequest, worker: web::Data<Worker>) -> HttpResponse {
    if let Err(r) = worker.origin.check(&req) {
        return rejection_response(&r);
    }
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let Some(id) = worker.gw.sse_connections.open(tx) else {
        return rejection_response(&Rejection::overloaded(
            "too many open HTTP+SSE streams",
            None,
        ));
    };
    let endpoint = Bytes::from(format!(
        "event: endpoint\ndata: /messages?sessionId={id}\n\n"
    ));
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(sse_body(Some(endpoint), rx, KEEP_ALIVE))
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
    let id = &query.session_id;
    let session = gw
        .sessions
        .get(id)
        .filter(|s| s.transport == Transport::HttpSse);
    let pending = if session.is_none() {
        gw.sse_connections.take(id)
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
    let deliver = |bytes: Vec<u8>| match (&session, &pending) {
        (Some(s), _) => s.handle.push(sse_event(&bytes)).is_ok(),
        (None, Some(tx)) => tx.try_send(sse_event(&bytes)).is_ok(),
        (None, None) => false,
    };
    let routed = match worker
        .routing
        .route(
            Origin::Http(HttpMethod::Post, headers),
            body,
            session.clone(),
        )
        .await
    {
        Ok(r) => r,
        Err(r) => {
            deliver(r.body());
            if let (Some(tx), None) = (pending, &session) {
                gw.sse_connections.put_back(id, tx);
            }
            return HttpResponse::Accepted().finish();
        }
    };
    let answering = Answering {
        gw,
        response: &worker.response,
        chain: worker.routing.chain(),
        session: session.as_ref(),
        can_stream: true,
        auth: AuthContext::of_headers(req.headers()),
        transport: Transport::HttpSse,
    };
    match answering.answer(routed).await {
        Answer::Initialize {
            generation,
            params,
            shaped,
        } => {
            let Some(tx) = pending else {
                return rejection_response(&Rejection::already_initialized());
            };
            match start_session(
                gw,
                Some(id.clone()),
                generation,
                &params,
                Transport::HttpSse,
            ) {
                Ok(s) => {
                    if s.handle.attach_stream(tx).is_ok() {
                        let _ = s.handle.push(sse_event(&shaped.body));
                    }
                    HttpResponse::Accepted().finish()
                }
                Err(refused) => rejection_response(&refused),
            }
        }
        Answer::Message(shaped) => {
            deliver(shaped.body);
            HttpResponse::Accepted().finish()
        }
        Answer::Stream(rx) => {
            // Every message of the request travels on the session's stream, in order.
            if let Some(s) = session.clone() {
                actix_rt::spawn(pump(rx, async move |message| {
                    s.handle.push(sse_event(&message)).is_ok()
                }));
            }
            HttpResponse::Accepted().finish()
        }
        Answer::Batch(bodies) => {
            deliver(protocol::shape::batch(&bodies).body);
            HttpResponse::Accepted().finish()
        }
        Answer::Accepted | Answer::Cancelled | Answer::OpenStream | Answer::EndSession => {
            if let (Some(tx), None) = (pending, &session) {
                gw.sse_connections.put_back(id, tx);
            }
            HttpResponse::Accepted().finish()
        }
    }
}
