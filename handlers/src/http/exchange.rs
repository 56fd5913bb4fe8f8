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

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::uri::{PathAndQuery, Uri};
use http_body_util::Full;
use reqwest::Url;
use reqwest::header::{HOST, HeaderMap, HeaderValue};
use rustls::pki_types::ServerName;

use super::connections::{Checkin, Sender, Target, checkout, connect, forget_h2};
use super::response::BackendResponse;
use crate::link::context::LinkContext;

type Request = http::Request<Full<Bytes>>;

/// How one backend is reached, made once per connection of the link ([`Exchange::new`]).
#[derive(Debug, Clone)]
pub(crate) struct Exchange(Arc<Target>);

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
        let connect_url =
            &Url::parse(configured).map_err(|e| format!("invalid backend url: {e}"))?;
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
            h2c_connecting: tokio::sync::Mutex::new(()),
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
        request.headers_mut().insert(HOST, self.0.host.clone());
        ctx.retries
            .run(
                |r| self.attempt(r),
                request,
                |f: &mut Failed| f.unsent.take(),
            )
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
        // One h2c connection per thread carries every request: the first to find none makes it.
        let connecting = if target.h2c {
            let held = target.h2c_connecting.lock().await;
            if let Some(sender) = checkout(target) {
                return send(target, sender, request).await;
            }
            Some(held)
        } else {
            None
        };
        // Boxed: connecting (TCP, TLS, the HTTP handshake) is rare on a warm pool, and inline its state
        // would make every call's future several kilobytes larger.
        let connected = Box::pin(connect(target)).await;
        drop(connecting);
        let sender = match connected {
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

async fn send(
    target: &Arc<Target>,
    sender: Sender,
    mut request: Request,
) -> Result<BackendResponse, Failed> {
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
