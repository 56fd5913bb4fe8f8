//! The data path's exchange with an HTTP backend: one POST on hyper's client connections driven directly,
//! the request head built from parts made once per backend ([`Exchange::new`]: the URL parsed and its host
//! normalized once, `Host` pre-encoded), over this worker thread's own connections to the backend (a pool
//! per backend per thread, no lock: a request never crosses threads, as with `thread_client`).
//!
//! HTTP/1.1 with keep-alive by default; HTTP/2 when the backend's `http2` setting says so for an `http://`
//! URL (prior knowledge, h2c) or when TLS negotiates it by ALPN, one multiplexed connection per thread.
//!
//! Only a request the backend cannot have received is sent again, and nothing is copied for that: hyper
//! hands back a request it did not write. A pooled connection found closed is replaced at once; a
//! connection that could not be made is retried once, after a pause, within the backend's retry budget
//! (`crate::retry`). No redirect is followed (none is asked for: this is one exchange, and a 3xx answer is
//! refused by its caller, `edge::redirect_refusal`). Idle connections are kept [`super::POOL_IDLE`], at
//! most [`MAX_IDLE`] per backend per thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{PathAndQuery, Uri};
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use reqwest::Url;
use reqwest::header::{HOST, HeaderMap, HeaderValue};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tracing::debug;

use super::response::BackendResponse;
use crate::link::context::LinkContext;

/// Idle connections kept per backend per thread; more are closed when their answer ends.
pub(crate) const MAX_IDLE: usize = 256;

type Request = http::Request<Full<Bytes>>;

/// How one backend is reached, made once per connection of the link ([`Exchange::new`]).
#[derive(Debug, Clone)]
pub(crate) struct Exchange(Arc<Target>);

struct Target {
    /// Keys this backend's pool on each thread.
    id: u64,
    /// Where connections go: the URL's own host (a TLS server name override changes SNI and `Host`,
    /// never the address) and port.
    connect_host: String,
    port: u16,
    /// `Host`: the request URL's authority.
    host: HeaderValue,
    /// The request target of HTTP/1.1 (origin form) and of HTTP/2 (absolute, for its pseudo-headers).
    path: Uri,
    absolute: Uri,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    h2c: bool,
    connect_timeout: Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("id", &self.id)
            .field("host", &self.host)
            .field("tls", &self.tls.is_some())
            .field("h2c", &self.h2c)
            .finish_non_exhaustive()
    }
}

/// Why an exchange failed; `unsent` holds the request when the backend cannot have received it.
pub(crate) struct Failed {
    pub(crate) reason: String,
    unsent: Option<Request>,
}

impl Exchange {
    /// The exchange of `ctx`'s backend, whose requests go to `url` (the request URL: a TLS server name
    /// override is its host); connections go to the configured URL's host.
    pub(crate) fn new(ctx: &LinkContext, url: &Url) -> Result<Exchange, String> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let https = url.scheme() == "https";
        let configured = match &ctx.config.transport {
            crate::config::Transport::Http { url } => url.as_str(),
            _ => return Err("not an http backend".to_owned()),
        };
        let connect_url = &Url::parse(configured).map_err(|e| format!("invalid backend url: {e}"))?;
        let connect_host = connect_url
            .host_str()
            .ok_or("the backend url has no host")?
            .trim_matches(['[', ']'])
            .to_owned();
        let port = connect_url
            .port_or_known_default()
            .ok_or("the backend url has no port")?;
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let host = HeaderValue::from_str(authority).map_err(|e| format!("backend host: {e}"))?;
        let path_and_query = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let path = Uri::from(
            PathAndQuery::try_from(path_and_query).map_err(|e| format!("backend path: {e}"))?,
        );
        let absolute = Uri::try_from(&url[..url::Position::AfterQuery])
            .map_err(|e| format!("backend url: {e}"))?;
        let tls = if https {
            let config = Arc::new(ctx.tls()?.clone());
            let name = url.host_str().ok_or("the backend url has no host")?;
            let name = ServerName::try_from(name.trim_matches(['[', ']']).to_owned())
                .map_err(|e| format!("backend tls server name: {e}"))?;
            Some((tokio_rustls::TlsConnector::from(config), name))
        } else {
            None
        };
        Ok(Exchange(Arc::new(Target {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            connect_host,
            port,
            host,
            path,
            absolute,
            tls,
            h2c: !https && ctx.config.http2,
            connect_timeout: ctx.config.connect_timeout,
        })))
    }

    /// POSTs `body` with `headers` (the caller's: content type, accept, the MCP headers, the credential;
    /// `Host` is added here) and returns the answer's head, its body still to read.
    pub(crate) async fn post(
        &self,
        ctx: &LinkContext,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<BackendResponse, String> {
        let mut request = http::Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = http::Method::POST;
        *request.headers_mut() = headers;
        request
            .headers_mut()
            .insert(HOST, self.0.host.clone());
        ctx.retries
            .run(|r| self.attempt(r), request, |f: &mut Failed| f.unsent.take())
            .await
            .map_err(|f| f.reason)
    }

    /// One attempt: a pooled connection (a closed one replaced by a fresh one at once) or a new one.
    async fn attempt(&self, mut request: Request) -> Result<BackendResponse, Failed> {
        let target = &self.0;
        while let Some(sender) = checkout(target) {
            match send(target, sender, request).await {
                Ok(response) => return Ok(response),
                Err(Failed {
                    unsent: Some(unsent),
                    ..
                }) => request = unsent,
                Err(failed) => return Err(failed),
            }
        }
        let sender = match connect(target).await {
            Ok(sender) => sender,
            Err(reason) => {
                return Err(Failed {
                    reason,
                    unsent: Some(request),
                });
            }
        };
        send(target, sender, request).await
    }
}

/// A connection's sending half.
enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    Http2(http2::SendRequest<Full<Bytes>>),
}

async fn send(target: &Arc<Target>, sender: Sender, mut request: Request) -> Result<BackendResponse, Failed> {
    let unsent = |mut e: hyper::client::conn::TrySendError<Request>| Failed {
        unsent: e.take_message(),
        reason: format!("the request failed: {}", super::chain(e.error())),
    };
    match sender {
        Sender::Http1(mut sender) => {
            *request.uri_mut() = target.path.clone();
            if sender.ready().await.is_err() {
                return Err(Failed {
                    reason: "the connection closed".to_owned(),
                    unsent: Some(request),
                });
            }
            let response = sender.try_send_request(request).await.map_err(unsent)?;
            let checkin = Checkin {
                target: Arc::downgrade(target),
                id: target.id,
                sender,
            };
            Ok(BackendResponse::from_hyper(response, Some(checkin)))
        }
        Sender::Http2(mut sender) => {
            *request.uri_mut() = target.absolute.clone();
            *request.version_mut() = http::Version::HTTP_2;
            // HTTP/2 carries the authority in its own pseudo-header.
            request.headers_mut().remove(HOST);
            if sender.ready().await.is_err() {
                forget_h2(target.id);
                return Err(Failed {
                    reason: "the connection closed".to_owned(),
                    unsent: Some(request),
                });
            }
            let response = sender.try_send_request(request).await.map_err(unsent)?;
            Ok(BackendResponse::from_hyper(response, None))
        }
    }
}

/// Returns an HTTP/1.1 connection to its thread's pool once its answer has been read to the end.
#[derive(Debug)]
pub(crate) struct Checkin {
    target: Weak<Target>,
    id: u64,
    sender: http1::SendRequest<Full<Bytes>>,
}

impl Checkin {
    pub(super) fn done(self) {
        if self.sender.is_closed() || self.target.strong_count() == 0 {
            return;
        }
        let _ = POOLS.try_with(|pools| {
            let mut pools = pools.borrow_mut();
            let pool = pools.entry(self.id).or_insert_with(|| Pool::new(&self.target));
            if pool.idle.len() < MAX_IDLE {
                pool.idle.push((self.sender, Instant::now()));
            }
        });
    }
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sender::Http1(_) => "Sender::Http1",
            Sender::Http2(_) => "Sender::Http2",
        })
    }
}

/// One backend's connections on one thread.
struct Pool {
    target: Weak<Target>,
    /// HTTP/1.1 connections with no request on them, and since when.
    idle: Vec<(http1::SendRequest<Full<Bytes>>, Instant)>,
    /// The HTTP/2 connection every request of the thread shares.
    h2: Option<http2::SendRequest<Full<Bytes>>>,
}

impl Pool {
    fn new(target: &Weak<Target>) -> Pool {
        Pool {
            target: target.clone(),
            idle: Vec::new(),
            h2: None,
        }
    }
}

thread_local! {
    static POOLS: RefCell<HashMap<u64, Pool>> = RefCell::default();
}

/// A pooled connection that is still open and was idle less than [`super::POOL_IDLE`] (the most recently
/// used first); older ones are closed on the way.
fn checkout(target: &Arc<Target>) -> Option<Sender> {
    POOLS.with(|pools| {
        let mut pools = pools.borrow_mut();
        let pool = pools.get_mut(&target.id)?;
        if let Some(h2) = &pool.h2 {
            if !h2.is_closed() {
                return Some(Sender::Http2(h2.clone()));
            }
            pool.h2 = None;
        }
        let now = Instant::now();
        while let Some((sender, since)) = pool.idle.pop() {
            if !sender.is_closed() && now.duration_since(since) < super::POOL_IDLE {
                return Some(Sender::Http1(sender));
            }
        }
        None
    })
}

fn forget_h2(id: u64) {
    let _ = POOLS.try_with(|pools| {
        if let Some(pool) = pools.borrow_mut().get_mut(&id) {
            pool.h2 = None;
        }
    });
}

/// A new connection, within the backend's connect timeout; its driving task runs on this thread.
async fn connect(target: &Arc<Target>) -> Result<Sender, String> {
    let made = tokio::time::timeout(target.connect_timeout, open(target)).await;
    let sender = made.unwrap_or_else(|_| {
        Err(format!(
            "no connection within {} ms",
            target.connect_timeout.as_millis()
        ))
    })?;
    POOLS.with(|pools| {
        let mut pools = pools.borrow_mut();
        // The pools of backends that are gone (a reload replaced them) go with their connections.
        pools.retain(|_, pool| pool.target.strong_count() > 0);
        let pool = pools
            .entry(target.id)
            .or_insert_with(|| Pool::new(&Arc::downgrade(target)));
        if let Sender::Http2(h2) = &sender {
            pool.h2 = Some(h2.clone());
        }
    });
    Ok(sender)
}

async fn open(target: &Target) -> Result<Sender, String> {
    let host = target.connect_host.as_str();
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, target.port))
        .await
        .map_err(|e| format!("cannot resolve the backend's host: {e}"))?
        .collect();
    let mut last = "the backend's host resolves to no address".to_owned();
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to the backend: {e}"),
        }
    }
    let stream = stream.ok_or(last)?;
    let _ = stream.set_nodelay(true);
    match &target.tls {
        None if target.h2c => handshake_h2(TokioIo::new(stream)).await,
        None => handshake_h1(TokioIo::new(stream)).await,
        Some((connector, name)) => {
            let tls = connector
                .connect(name.clone(), stream)
                .await
                .map_err(|e| format!("tls handshake with the backend failed: {e}"))?;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            if h2 {
                handshake_h2(TokioIo::new(tls)).await
            } else {
                handshake_h1(TokioIo::new(tls)).await
            }
        }
    }
}

async fn handshake_h1<I>(io: I) -> Result<Sender, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = http1::handshake(io)
        .await
        .map_err(|e| format!("http/1.1 handshake with the backend failed: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            debug!(error = %super::chain(&e), "a connection to a backend ended");
        }
    });
    Ok(Sender::Http1(sender))
}

async fn handshake_h2<I>(io: I) -> Result<Sender, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = http2::handshake(TokioExecutor::new(), io)
        .await
        .map_err(|e| format!("http/2 handshake with the backend failed: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            debug!(error = %super::chain(&e), "an http/2 connection to a backend ended");
        }
    });
    Ok(Sender::Http2(sender))
}
