//! The gateway's pipeline in-process, with no socket: [`InProcessGateway::start`] starts the configured
//! backends as `serve` does (`start_backends`: a `builtin = ["mock-backend", …]` backend runs in this
//! process), builds the [`Gateway`] and its first catalog (serve's own `first_catalog`, which also starts the
//! event watcher), and starts one worker's actors (`front::http::Worker::start`: the routing actor with the
//! `[[middleware]]` chain). [`InProcessGateway::post`] then pushes one POST's headers
//! and body through the production path — `Accepted::deliver`: `RoutingHandle::route` (validation), the
//! request's context, `Answering::answer` (the worker's `Chain`, the dispatch, shaping) — and hands back what the HTTP front would write: status,
//! headers, body. The pipeline's tests and `benches/pipeline.rs` drive it.
//!
//! It must run inside an actix `System` (the actors start on the current arbiter). It must not re-implement
//! any step of the pipeline: it only does what `front::http::mcp` does around `route` and `answer` (the
//! session lookup by `Mcp-Session-Id`, the session created on `initialize`), minus what belongs to the
//! HTTP front door alone: the socket, the guard, the Host/Origin and CORS checks, the body reading and the
//! SSE framing.

use std::sync::Arc;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use handlers::{BackendEvent, BackendHandle};
use protocol::shape::Shaped;
use protocol::validate::{Accepts, HttpMethod};
use tokio::sync::mpsc;

use super::{EVENTS, ServeError, first_catalog};
use crate::config::Config;
use crate::front::http::Worker;
use crate::pipeline::Transport;
use crate::pipeline::context::Accepted;
use crate::pipeline::deliver::Output;
use crate::pipeline::routing::Origin;
use crate::session::{Ending, Session};
use crate::state::Gateway;
use crate::state::start::start_backends;

/// A started gateway driven in-process: the shared state and one worker's actors.
#[derive(Debug)]
pub struct InProcessGateway {
    gw: Arc<Gateway>,
    worker: Worker,
}

/// What the HTTP front would write for one POST: the status, the headers shaping chose (and
/// `mcp-session-id` after a successful `initialize`), and the JSON-RPC body (a batch's array; empty for
/// 202). A request answered as a stream has its messages in order in `streamed`, the last one (its
/// response) also in `body`.
#[derive(Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The HTTP status.
    pub status: u16,
    /// Headers besides the content type, as the front would add them.
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC message (or batch array) of the answer.
    pub body: Vec<u8>,
    /// Every message of a streamed answer (its notifications, then its response); empty otherwise.
    pub streamed: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .field("streamed", &self.streamed.len())
            .finish()
    }
}

impl Exchange {
    fn shaped(shaped: Shaped) -> Exchange {
        Exchange {
            status: shaped.status,
            headers: shaped
                .headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            body: shaped.body,
            streamed: Vec::new(),
        }
    }

    fn status(status: u16) -> Exchange {
        Exchange {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            streamed: Vec::new(),
        }
    }

    /// The value of a header (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A header pair that is not a valid HTTP header.
#[derive(Debug, thiserror::Error)]
#[error("not a valid HTTP header: {0}")]
pub struct InvalidHeader(String);

/// Request headers from name/value pairs, as a client would send them.
pub fn header_map(pairs: &[(&str, &str)]) -> Result<HeaderMap, InvalidHeader> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| InvalidHeader((*name).into()))?;
        let value = HeaderValue::from_str(value).map_err(|_| InvalidHeader(name.to_string()))?;
        map.append(name, value);
    }
    Ok(map)
}

impl InProcessGateway {
    /// Starts the configured backends, the gateway and its first catalog, and one worker's actors, on the
    /// current actix arbiter. Fails as `serve` does when the first catalog cannot be built (a collision).
    pub async fn start(config: Config) -> Result<InProcessGateway, ServeError> {
        let (events_tx, events_rx) = mpsc::channel(EVENTS);
        let backends = start_backends(
            &config,
            events_tx.clone(),
            &Default::default(),
            &Default::default(),
        );
        InProcessGateway::start_from(config, backends, events_rx, Some(events_tx)).await
    }

    /// As [`InProcessGateway::start`], with backends already started (their events on `events`); the
    /// config must still name each of them (`[[backend]]`).
    pub async fn start_with_backends(
        config: Config,
        backends: std::collections::BTreeMap<String, BackendHandle>,
        events: mpsc::Receiver<BackendEvent>,
    ) -> Result<InProcessGateway, ServeError> {
        InProcessGateway::start_from(config, backends, events, None).await
    }

    /// As [`InProcessGateway::start_with_backends`], with the sender of `events` too (for the backends a
    /// reload starts, and for a test that reports what a backend announces).
    pub async fn start_with_backends_and_events(
        config: Config,
        backends: std::collections::BTreeMap<String, BackendHandle>,
        events: (mpsc::Sender<BackendEvent>, mpsc::Receiver<BackendEvent>),
    ) -> Result<InProcessGateway, ServeError> {
        InProcessGateway::start_from(config, backends, events.1, Some(events.0)).await
    }

    async fn start_from(
        config: Config,
        backends: std::collections::BTreeMap<String, BackendHandle>,
        events: mpsc::Receiver<BackendEvent>,
        events_tx: Option<mpsc::Sender<BackendEvent>>,
    ) -> Result<InProcessGateway, ServeError> {
        let keys = Arc::new(crate::cluster::ClusterKeys::load(&config.cluster)?);
        // `[auth]` as `serve` builds it (nothing is fetched: the harness is handed its principals), so that
        // sessions, sealed states and the private cache are bound to a principal as in production.
        let auth = crate::auth::Authenticator::from_config(
            &config.auth,
            &std::sync::Arc::new(crate::egress::Egress::from_config(&config.egress)),
        )
        .map_err(ServeError::Auth)?;
        let mut gw = Gateway::new(config, backends, keys).with_auth(auth);
        if let Some(tx) = events_tx {
            gw = gw.with_events(tx);
        }
        let gw = Arc::new(gw);
        first_catalog(gw.clone(), events).await?;
        let worker = Worker::start(gw.clone(), Default::default());
        Ok(InProcessGateway { gw, worker })
    }

    /// The shared state.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gw
    }

    /// One POST to `/mcp` through the pipeline: validation, the middleware chain, the dispatch, shaping.
    pub async fn post(&self, headers: HeaderMap, body: Bytes) -> Exchange {
        self.post_as(None, headers, body).await
    }

    /// As [`InProcessGateway::post`], from `principal` as if authentication had established it.
    pub async fn post_as(
        &self,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Exchange {
        self.post_at(crate::endpoint::DEFAULT_PATH, principal, headers, body)
            .await
    }

    /// As [`InProcessGateway::post_as`], to the endpoint served at `path` (`/mcp` when none is), which
    /// admits `principal` or answers 403 as the HTTP front would.
    pub async fn post_at(
        &self,
        path: &str,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Exchange {
        self.exchange(path, principal, headers, body, ExchangeOutput::default())
            .await
    }

    /// As [`InProcessGateway::post_as`], for a request answered as a stream that may never end (a
    /// `subscriptions/listen`): its first `messages` messages, after which the client goes away (the stream
    /// is dropped). A request answered otherwise is answered as by `post_as`.
    pub async fn post_first(
        &self,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: HeaderMap,
        body: Bytes,
        messages: usize,
    ) -> Exchange {
        let out = ExchangeOutput {
            first: Some(messages),
        };
        let path = crate::endpoint::DEFAULT_PATH;
        self.exchange(path, principal, headers, body, out).await
    }

    async fn exchange(
        &self,
        path: &str,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: HeaderMap,
        body: Bytes,
        mut out: ExchangeOutput,
    ) -> Exchange {
        let accepted = match self.accept(path, principal, &headers).await {
            Ok(accepted) => accepted,
            Err(refused) => return refused,
        };
        let origin = Origin::Http(HttpMethod::Post, headers);
        accepted
            .deliver(&self.worker.routing, origin, body, &mut out)
            .await
    }

    /// As [`InProcessGateway::post_at`] for a request answered as a stream that does not end by itself (a
    /// `subscriptions/listen`): its messages as they come, on the returned channel (empty ones are
    /// keep-alives); dropping it is the client going away. Any other answer is `Err`.
    pub async fn open_stream_at(
        &self,
        path: &str,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<mpsc::Receiver<Vec<u8>>, Exchange> {
        let accepted = self.accept(path, principal, &headers).await?;
        let origin = Origin::Http(HttpMethod::Post, headers);
        accepted
            .deliver(&self.worker.routing, origin, body, &mut StreamOutput)
            .await
    }

    /// What the HTTP front accepts of a POST to `path` (the default endpoint when none is served there) by
    /// `principal`: its endpoint, which admits the principal or is answered 403, and its legacy session.
    async fn accept(
        &self,
        path: &str,
        principal: Option<Arc<crate::auth::Principal>>,
        headers: &HeaderMap,
    ) -> Result<Accepted, Exchange> {
        let gw = &self.worker.gw;
        let endpoint = gw
            .endpoints
            .all()
            .iter()
            .find(|e| e.path == path)
            .unwrap_or_else(|| gw.endpoints.default_endpoint())
            .clone();
        if let Err(refused) = endpoint.admits(principal.as_deref()) {
            return Err(Exchange {
                status: 403,
                headers: Vec::new(),
                body: refused.to_string().into_bytes(),
                streamed: Vec::new(),
            });
        }
        let id = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let authorization = headers
            .get(actix_web::http::header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        let auth = gw.auth_context(principal.as_deref(), authorization);
        let binding = endpoint.bind(gw.binding(principal.as_deref(), auth));
        let session = match id {
            Some(id) => gw.sessions.find(&id, binding).await.ok().flatten(),
            None => None,
        };
        Ok(Accepted {
            session,
            auth,
            // In-process: the caller says who authenticated (an embedding program's middleware may set one).
            principal,
            // One client with no socket: every request without a session counts against one address.
            client: Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            transport: Transport::StreamableHttp,
            endpoint,
            headers: Vec::new(),
        })
    }

    /// Ends a legacy session, as a DELETE with its `Mcp-Session-Id` would.
    pub fn end_session(&self, id: &str) {
        self.gw.sessions.end(id, Ending::Deleted);
    }

    /// Stops the backends.
    pub fn shutdown(&self) {
        for b in self.gw.live().backends.values() {
            b.shutdown();
        }
    }
}

/// The harness's output: what the HTTP front would send, collected (of a stream, its `first` messages
/// when set, else all of them).
#[derive(Default)]
struct ExchangeOutput {
    first: Option<usize>,
}

impl Output for ExchangeOutput {
    type Reply = Exchange;

    fn can_stream(&self, accepts: Accepts) -> bool {
        accepts.sse
    }

    async fn message(&mut self, shaped: Shaped, _: Accepts) -> Exchange {
        Exchange::shaped(shaped)
    }

    async fn stream(&mut self, mut rx: mpsc::Receiver<Vec<u8>>) -> Exchange {
        let mut streamed = Vec::new();
        while let Some(message) = rx.recv().await {
            if !message.is_empty() {
                streamed.push(message);
            }
            if self.first.is_some_and(|n| streamed.len() >= n) {
                break;
            }
        }
        Exchange {
            body: streamed.last().cloned().unwrap_or_default(),
            streamed,
            ..Exchange::status(200)
        }
    }

    async fn accepted(&mut self) -> Exchange {
        Exchange::status(202)
    }

    async fn started(&mut self, session: Arc<Session>, shaped: Shaped, _: Accepts) -> Exchange {
        let mut exchange = Exchange::shaped(shaped);
        exchange
            .headers
            .push(("mcp-session-id".into(), session.id.to_string()));
        exchange
    }

    /// A GET opens a stream and a DELETE ends a session: never the kind of a POST.
    async fn open_stream(&mut self, _: &Arc<Session>) -> Exchange {
        Exchange::status(405)
    }

    async fn ended(&mut self) -> Exchange {
        Exchange::status(405)
    }
}

/// The harness's output for a stream that does not end by itself: the stream handed over as it is.
struct StreamOutput;

impl Output for StreamOutput {
    type Reply = Result<mpsc::Receiver<Vec<u8>>, Exchange>;

    fn can_stream(&self, accepts: Accepts) -> bool {
        accepts.sse
    }

    async fn message(&mut self, shaped: Shaped, _: Accepts) -> Self::Reply {
        Err(Exchange::shaped(shaped))
    }

    async fn stream(&mut self, rx: mpsc::Receiver<Vec<u8>>) -> Self::Reply {
        Ok(rx)
    }

    async fn accepted(&mut self) -> Self::Reply {
        Err(Exchange::status(202))
    }

    async fn started(&mut self, _: Arc<Session>, shaped: Shaped, _: Accepts) -> Self::Reply {
        Err(Exchange::shaped(shaped))
    }

    async fn open_stream(&mut self, _: &Arc<Session>) -> Self::Reply {
        Err(Exchange::status(405))
    }

    async fn ended(&mut self) -> Self::Reply {
        Err(Exchange::status(405))
    }
}

#[cfg(test)]
mod endpoint_tests;
#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod lists_tests;
#[cfg(test)]
mod notify_tests;
#[cfg(test)]
mod openapi_tests;
#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod principal_tests;
#[cfg(test)]
mod reload_tests;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod shaping_tests;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
mod subscription_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod uri_policy_tests;
#[cfg(test)]
mod url_tests;
#[cfg(test)]
mod view_cache_tests;
