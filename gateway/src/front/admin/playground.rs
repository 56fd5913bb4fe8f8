//! The admin page's playground: `POST /admin/call` with `{"name": TOOL, "arguments": {…}}` calls one tool
//! and answers the JSON-RPC response. It is an ordinary 2026-07-28 `tools/call` through the same pipeline as
//! every client's — validated against the view of the operator who asks (with `[auth]`, the principal the
//! admin guard authenticated; without it, the view of a request without a principal), its middlewares,
//! limits and access log (transport `admin`) — so the page can call nothing its operator could not call at
//! `/mcp`. Behind the admin guard, like every admin route: the same-origin checks and the `X-Mcpgw-Admin`
//! header a browser sends cross-site only after a preflight that is never granted (no CSRF).
//!
//! Bounded: the body is at most [`MAX_BODY`]; one request at a time per page load is the page's own
//! discipline, and each call holds a routing permit like any request and has its backend's deadline.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use protocol::Rejection;
use protocol::shape::Shaped;
use protocol::validate::Accepts;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::Receiver;

use super::Admin;
use crate::front::http::Worker;
use crate::front::http::gate::principal_of;
use crate::pipeline::context::Accepted;
use crate::pipeline::deliver::{Output, settle};
use crate::pipeline::routing::Origin;
use crate::session::{Session, Transport};

/// The largest call the playground takes (a tool's arguments typed into a form).
pub(super) const MAX_BODY: usize = 256 * 1024;

/// What the page sends.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Call {
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// `POST /admin/call`.
pub(super) async fn call(
    req: HttpRequest,
    body: web::Json<Call>,
    admin: web::Data<Admin>,
    worker: web::Data<Worker>,
) -> HttpResponse {
    let Call { name, arguments } = body.into_inner();
    let principal = principal_of(&req);
    // As the front door makes it: the principal's context with `[auth]`, else the header's digest.
    let authorization = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    let auth = admin.gw.auth_context(principal.as_deref(), authorization);
    let accepted = Arc::new(Accepted {
        session: None,
        auth,
        principal,
        client: req.peer_addr().map(|a| a.ip()),
        transport: Transport::Admin,
        endpoint: admin.gw.endpoints.default_endpoint().clone(),
        headers: Vec::new(),
    });
    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "mcpgw-admin-playground", "version": env!("CARGO_PKG_VERSION")}
            },
            "name": name,
            "arguments": arguments,
        }
    });
    let body = Bytes::from(request.to_string());
    let answer = match worker
        .routing
        .route(Origin::Stdio, body.clone(), Arc::clone(&accepted))
        .await
    {
        Ok(routed) => settle(&worker.routing, accepted, routed, &mut Collected).await,
        Err(rejection) => {
            crate::pipeline::deliver::count_refused(&admin.gw, Transport::Admin, &rejection, &body);
            Some(rejection.body())
        }
    };
    let response: Value = answer
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null);
    HttpResponse::Ok().json(json!({ "response": response }))
}

/// The one message a playground call is answered with (no stream: the page shows the final response).
struct Collected;

impl Output for Collected {
    type Reply = Option<Vec<u8>>;

    fn can_stream(&self, _: Accepts) -> bool {
        false
    }

    async fn message(&mut self, shaped: Shaped, _: Accepts) -> Self::Reply {
        Some(shaped.body)
    }

    async fn stream(&mut self, mut rx: Receiver<Vec<u8>>) -> Self::Reply {
        // Not asked for (`can_stream` is false); should one come, its last message is the response.
        let mut last = None;
        while let Some(message) = rx.recv().await {
            if !message.is_empty() {
                last = Some(message);
            }
        }
        last
    }

    async fn accepted(&mut self) -> Self::Reply {
        None
    }

    fn new_session(&self) -> Result<Option<String>, Rejection> {
        Err(Rejection::already_initialized())
    }

    async fn started(&mut self, _: Arc<Session>, shaped: Shaped, _: Accepts) -> Self::Reply {
        Some(shaped.body)
    }

    async fn open_stream(&mut self, _: &Arc<Session>) -> Self::Reply {
        None
    }

    async fn ended(&mut self) -> Self::Reply {
        None
    }
}
