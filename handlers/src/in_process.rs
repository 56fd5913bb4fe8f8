//! Backends served inside the gateway process (built-in servers, DESIGN §3: "in-process handlers implement
//! the same trait"): an [`InProcessServer`] answers 2026-07-28 JSON-RPC messages given as bytes, and its
//! link calls it directly on the caller's thread — no pipe, no socket, no child process.
//!
//! The link speaks 2026-07-28 only (the server must answer `server/discover` with it): every request is
//! self-contained, so nothing is shared between calls but the server itself. Only final responses come
//! back: an in-process server sends no notifications and asks the client nothing, and a request's future
//! dropped before it answers is the cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use protocol::message::{Parsed, parse};
use protocol::shape::Failure;
use protocol::{Message, RequestId};
use serde_json::value::RawValue;
use tokio::time::Instant;

use crate::config::InProcessServer;
use crate::description::{ServerDescription, TransportKind};
use crate::handshake::{self, MODERN, Probe};
use crate::link::context::{
    ConnectFailure, Connected, Lifeline, LinkContext, Verdict, VerdictUpdate,
};
use crate::pending::Reply;
use crate::request::BackendRequest;
use crate::wire;

/// The link to an in-process server.
#[derive(Clone)]
pub(crate) struct InProcessLink(Arc<Inner>);

struct Inner {
    ctx: Arc<LinkContext>,
    server: Arc<dyn InProcessServer>,
    last_id: AtomicI64,
}

impl std::fmt::Debug for InProcessLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessLink")
            .field("backend", &self.0.ctx.name())
            .finish_non_exhaustive()
    }
}

/// `server/discover`, judged like any backend's.
pub(crate) async fn connect(
    ctx: Arc<LinkContext>,
    server: Arc<dyn InProcessServer>,
) -> Result<Connected<InProcessLink>, ConnectFailure> {
    let params = ctx.discover_params();
    let answer = tokio::time::timeout(
        ctx.config.connect_timeout,
        server.handle(wire::request(0, "server/discover", Some(&params))),
    )
    .await
    .map_err(|_| ConnectFailure::outage("server/discover was not answered in time"))?;
    let reply = answer
        .as_deref()
        .and_then(|bytes| reply_to(bytes, 0))
        .ok_or_else(|| ConnectFailure::outage("server/discover got no response"))?;
    match handshake::judge_discover(reply) {
        Probe::Modern(d) => {
            let description = Arc::new(ServerDescription::from_discover(
                d,
                TransportKind::InProcess,
            ));
            let link = InProcessLink(Arc::new(Inner {
                ctx,
                server,
                last_id: AtomicI64::new(0),
            }));
            Ok(Connected {
                link,
                description,
                verdict: Verdict::Modern,
                lifeline: Lifeline::default(),
            })
        }
        Probe::ModernRefused(why) | Probe::Legacy(why) => Err(ConnectFailure::new(
            format!("an in-process server must serve {MODERN}: {why}"),
            VerdictUpdate::Keep,
        )),
    }
}

impl InProcessLink {
    /// One request, answered by `deadline`.
    pub(crate) async fn call(
        &self,
        mut request: BackendRequest,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Failure> {
        let inner = &*self.0;
        let ctx = &*inner.ctx;
        let method = request.method;
        let id = inner.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let body = ctx.modern_body(id, &mut request)?;
        let answer = match tokio::time::timeout_at(deadline, inner.server.handle(body)).await {
            Ok(answer) => answer,
            Err(_) => return Err(ctx.timeout()),
        };
        if answer
            .as_ref()
            .is_some_and(|bytes| bytes.len() > ctx.config.max_message_bytes)
        {
            return Err(Failure::TooLarge {
                backend: ctx.name().to_owned(),
                limit: ctx.config.max_message_bytes,
                per: "message",
            });
        }
        match answer.as_deref().and_then(|bytes| reply_to(bytes, id)) {
            Some(Ok(result)) => Ok(result),
            Some(Err(error)) => Err(ctx.backend_error(MODERN, method, error)),
            None => Err(Failure::Crashed {
                backend: ctx.name().to_owned(),
                reason: "the in-process server gave no response".to_owned(),
            }),
        }
    }
}

/// How an in-process server answers one message: `answer` gets each request and returns its response's
/// bytes; a notification gets nothing; a batch or a message that is not JSON-RPC gets the 2026-07-28 error
/// response saying why. For servers written on top of it (the OpenAPI backends, a library's `ToolServer`).
pub fn answer_requests<F, Fut>(message: Vec<u8>, answer: F) -> crate::config::InProcessAnswer
where
    F: FnOnce(protocol::Request) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Vec<u8>> + Send + 'static,
{
    Box::pin(async move {
        let refused = |err: protocol::Error| {
            protocol::shape::response_bytes(&protocol::Response::error(None, err), MODERN)
        };
        match parse(&message) {
            Ok(Parsed::Single(Message::Request(request))) => Some(answer(request).await),
            Ok(Parsed::Single(_)) => None,
            Ok(Parsed::Batch(_)) => Some(refused(protocol::Error::new(
                protocol::ErrorCode::InvalidRequest,
                "batches are not served",
            ))),
            Err(e) => Some(refused(e.error)),
        }
    })
}

/// The reply in `bytes` if it is the response to `id`.
fn reply_to(bytes: &[u8], id: i64) -> Option<Reply> {
    match parse(bytes.trim_ascii()) {
        Ok(Parsed::Single(Message::Response(r)))
            if r.id.as_ref().and_then(RequestId::as_i64) == Some(id) =>
        {
            Some(r.body)
        }
        _ => None,
    }
}
