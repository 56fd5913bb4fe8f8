//! This thread's connections to a backend: where and how they are made ([`Target`], built once per
//! backend by `exchange`), the pool of idle HTTP/1.1 connections and the shared HTTP/2 one (per backend per
//! thread, no lock), and the return of a connection to its pool once its answer has been read to its end
//! ([`Checkin`], held by `response`). No import of `exchange` or `response`: they import this.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::uri::Uri;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use reqwest::header::HeaderValue;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tracing::debug;

/// Idle connections kept per backend per thread; more are closed when their answer ends.
pub(crate) const MAX_IDLE: usize = 256;

pub(super) struct Target {
    /// Keys this backend's pool on each thread.
    pub(super) id: u64,
    /// Where connections go: the URL's own host (a TLS server name override changes SNI and `Host`,
    /// never the address) and port.
    pub(super) connect_host: String,
    pub(super) port: u16,
    /// `Host`: the request URL's authority.
    pub(super) host: HeaderValue,
    /// The request target of HTTP/1.1 (origin form) and of HTTP/2 (absolute, for its pseudo-headers).
    pub(super) path: Uri,
    pub(super) absolute: Uri,
    pub(super) tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    pub(super) h2c: bool,
    /// Held while an h2c connection is being made: requests that find none wait for it instead of each
    /// opening their own.
    pub(super) h2c_connecting: tokio::sync::Mutex<()>,
    pub(super) connect_timeout: Duration,
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

/// A connection's sending half.
pub(super) enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    Http2(http2::SendRequest<Full<Bytes>>),
}

/// Returns an HTTP/1.1 connection to its thread's pool once its answer has been read to the end.
#[derive(Debug)]
pub(crate) struct Checkin {
    pub(super) target: Weak<Target>,
    pub(super) id: u64,
    pub(super) sender: http1::SendRequest<Full<Bytes>>,
}

impl Checkin {
    pub(crate) fn done(self) {
        if self.sender.is_closed() || self.target.strong_count() == 0 {
            return;
        }
        let _ = POOLS.try_with(|pools| {
            let mut pools = pools.borrow_mut();
            let pool = pools
                .entry(self.id)
                .or_insert_with(|| Pool::new(&self.target));
            // Connections idle past `POOL_IDLE` are closed here, not only when a checkout reaches them:
            // they were returned in order, so the stale ones are at the front.
            let now = Instant::now();
            let stale = pool
                .idle
                .iter()
                .position(|(_, since)| now.duration_since(*since) < super::POOL_IDLE)
                .unwrap_or(pool.idle.len());
            pool.idle.drain(..stale);
            if pool.idle.len() < MAX_IDLE {
                pool.idle.push((self.sender, now));
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
pub(super) fn checkout(target: &Arc<Target>) -> Option<Sender> {
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

pub(super) fn forget_h2(id: u64) {
    let _ = POOLS.try_with(|pools| {
        if let Some(pool) = pools.borrow_mut().get_mut(&id) {
            pool.h2 = None;
        }
    });
}

/// A new connection, within the backend's connect timeout; its driving task runs on this thread.
pub(super) async fn connect(target: &Arc<Target>) -> Result<Sender, String> {
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
