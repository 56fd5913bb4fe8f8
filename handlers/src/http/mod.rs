//! HTTP backends: Streamable HTTP in either era, and the 2024-11-05 HTTP+SSE transport; the era is found
//! once per backend URL and remembered.
//!
//! Era detection (MCP 2026-07-28 `basic/transports/streamable-http`, backward compatibility): POST
//! `server/discover` with the 2026 headers. 200 with a `DiscoverResult` means modern; 400 with a recognised
//! modern error (-32022, -32021, -32020) means modern; any other answer means legacy: POST `initialize`; if
//! that gets 400, 404 or 405 without a modern body, the backend is tried as 2024-11-05 HTTP+SSE (GET the
//! URL, wait for the `endpoint` event). A connection error, a timeout, 401/403, 408/429 or 5xx is an outage,
//! never era evidence: the actor retries with backoff.
//!
//! No redirect is followed: a 3xx is refused with its target's host named, and URLs are shown without their
//! userinfo or query (`edge`). Answers are read in `reply`, whose errors never carry what a body held.

mod connections;
pub mod edge;
mod event_stream;
mod exchange;
mod legacy;
mod modern;
mod reply;
mod response;
mod sse;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

pub(crate) use legacy::LegacyLink;
pub(crate) use modern::ModernLink;
pub(crate) use sse::SseLink;

pub(crate) use exchange::Exchange;
pub(crate) use reply::{ReadError, Resume, SizeLimits, error_body, read_reply, read_stream_reply};
pub(crate) use response::BackendResponse;

use protocol::Generation;
use protocol::method::Method;
use protocol::shape::Failure;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::config::{BackendConfig, EraPin, Transport};
use crate::handshake::{self, Probe};
use crate::link::context::{ConnectFailure, Connected, LinkContext, Verdict, VerdictUpdate};

/// The largest error body read (only to look for a JSON-RPC error in it).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Best-effort posts (cancellations, answers to backend requests) that may wait; more are dropped.
const POST_QUEUE: usize = 256;
/// The deadline of one best-effort post.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an idle pooled connection to a backend is reused: below the keep-alive of common servers
/// (actix-web closes an idle connection after 5 s), so a request never goes out on a connection the backend
/// is closing at that moment (a spurious "connection closed before message completed").
pub(crate) const POOL_IDLE: Duration = Duration::from_secs(4);

/// The HTTP client of one backend, with its TLS settings. No overall timeout: event streams are long-lived,
/// and every request has its own deadline.
pub(crate) fn client(ctx: &LinkContext) -> Result<reqwest::Client, String> {
    let config = &ctx.config;
    let url = match &config.transport {
        Transport::Http { url } => url.as_str(),
        _ => "",
    };
    // No redirect is followed: a 3xx is refused with its target's host named (`edge::redirect_refusal`).
    let mut builder = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .pool_idle_timeout(POOL_IDLE)
        .redirect(reqwest::redirect::Policy::none());
    if config.http2 && url.starts_with("http://") {
        builder = builder.http2_prior_knowledge();
    }
    tls::configure(builder, ctx.tls()?.clone(), &config.tls, url)?
        .build()
        .map_err(|e| format!("cannot build the http client: {}", chain(&e)))
}

/// An HTTP client for the gateway's own requests to `url` (a JWKS document, a token endpoint): these TLS
/// settings, `timeout` for connecting and for the whole request, and no redirect followed (a key set or a
/// token must come from where the configuration says).
pub fn outbound_client(
    tls: &crate::config::TlsClient,
    url: &str,
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    outbound_client_with(tls, url, timeout, |builder| builder)
}

/// [`outbound_client`], with `adjust` applied to the builder last (the gateway's egress rule sets its DNS
/// resolver there).
pub fn outbound_client_with(
    tls: &crate::config::TlsClient,
    url: &str,
    timeout: Duration,
    adjust: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, String> {
    let config = tls::client_config(tls, url.starts_with("https://"))?;
    let builder = reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none());
    adjust(tls::configure(builder, config, tls, url)?)
        .build()
        .map_err(|e| format!("cannot build the http client: {}", chain(&e)))
}

/// An HTTP client for a REST API the gateway calls on a backend's behalf (an openapi backend): the backend's
/// TLS settings, `connect_timeout` for connecting (each call's deadline is the caller's), pooled
/// connections like a backend's, and at most `max_redirects` redirects, each followed only when `follow`
/// accepts its target (the API's own origin): any other is returned as it is, not followed.
pub fn rest_client(
    tls: &crate::config::TlsClient,
    url: &str,
    connect_timeout: Duration,
    follow: impl Fn(&reqwest::Url) -> bool + Send + Sync + 'static,
    max_redirects: usize,
) -> Result<reqwest::Client, String> {
    let config = tls::client_config(tls, url.starts_with("https://"))?;
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max_redirects {
            attempt.error("too many redirects")
        } else if follow(attempt.url()) {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(POOL_IDLE)
        .redirect(policy);
    tls::configure(builder, config, tls, url)?
        .build()
        .map_err(|e| format!("cannot build the http client: {}", chain(&e)))
}

/// An error with its causes, outermost first (`reqwest` says only "error sending request" on its own; the
/// reason, such as an untrusted certificate, is in its sources). A URL reqwest names is shown without its
/// userinfo or query ([`edge::shown_url`]): this text reaches `/readyz`, clients' errors and logs.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let url_of = |e: &(dyn std::error::Error + 'static)| {
        e.downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::url)
            .cloned()
    };
    let mut text = e.to_string();
    let mut urls: Vec<Url> = url_of(e).into_iter().collect();
    let mut source = e.source();
    while let Some(cause) = source {
        urls.extend(url_of(cause));
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    urls.iter().fold(text, edge::redact)
}

/// The HTTP client of `ctx`'s backend for the current thread, made on first use: requests go out on
/// connections this thread's runtime drives, so a request never crosses threads (a pooled connection runs
/// as a task on the runtime that opened it). One per backend per thread; `fallback` if none can be built.
pub(crate) fn thread_client(ctx: &LinkContext, fallback: &reqwest::Client) -> reqwest::Client {
    thread_local! {
        static CLIENTS: std::cell::RefCell<std::collections::HashMap<u64, reqwest::Client>> =
            std::cell::RefCell::default();
    }
    CLIENTS.with(|clients| {
        let mut clients = clients.borrow_mut();
        clients
            .entry(ctx.id)
            .or_insert_with(|| client(ctx).unwrap_or_else(|_| fallback.clone()))
            .clone()
    })
}

/// Connects to an HTTP backend: the remembered era's handshake, or the probe and its fallbacks; `L` is the
/// link the caller holds, whichever transport the era turns out to take.
pub(crate) async fn connect<L>(
    ctx: Arc<LinkContext>,
    client: reqwest::Client,
    remembered: Option<Verdict>,
) -> Result<Connected<L>, ConnectFailure>
where
    L: From<ModernLink> + From<LegacyLink> + From<SseLink>,
{
    let url = endpoint_url(&ctx.config).map_err(ConnectFailure::outage)?;
    let mut learned = VerdictUpdate::Keep;
    if matches!(remembered, None | Some(Verdict::Modern)) {
        match modern::probe(&ctx, &client, &url).await {
            modern::Probed::Judged(Probe::Modern(d)) => {
                let exchange = Exchange::new(&ctx, &url).map_err(ConnectFailure::outage)?;
                return Ok(modern::connected(ctx, client, url, exchange, d).map(L::from));
            }
            modern::Probed::Judged(Probe::ModernRefused(reason)) => {
                return Err(ConnectFailure::new(
                    reason,
                    VerdictUpdate::Learned(Verdict::Modern),
                ));
            }
            modern::Probed::Judged(Probe::Legacy(why)) if ctx.config.era == EraPin::Modern => {
                return Err(ConnectFailure::pinned(EraPin::Modern, &why));
            }
            modern::Probed::Judged(Probe::Legacy(why)) => {
                debug!(backend = %ctx.name(), %why, "not a modern backend: initializing");
                learned = VerdictUpdate::Learned(Verdict::Legacy);
            }
            modern::Probed::Outage(reason) => return Err(ConnectFailure::outage(reason)),
        }
    }
    if remembered != Some(Verdict::LegacySse) {
        match legacy::connect(&ctx, &client, &url).await {
            Ok(c) => return Ok(c.map(L::from)),
            Err(legacy::Refused::NotStreamable(why)) => {
                debug!(backend = %ctx.name(), %why, "no streamable http: trying http+sse");
            }
            Err(
                legacy::Refused::Outage(reason) | legacy::Refused::Credential { why: reason, .. },
            ) => {
                return Err(ConnectFailure::new(reason, learned));
            }
            Err(legacy::Refused::Failed(reason)) => {
                let verdict = if remembered == Some(Verdict::Legacy) {
                    VerdictUpdate::Forget
                } else {
                    learned
                };
                return Err(ConnectFailure::new(reason, verdict));
            }
        }
    }
    match sse::connect(&ctx, &client, &url).await {
        Ok(c) => Ok(c.map(L::from)),
        Err(sse::Refused::Outage(reason)) => Err(ConnectFailure::new(
            reason,
            VerdictUpdate::Learned(Verdict::LegacySse),
        )),
        Err(sse::Refused::NotSse(why)) => Err(ConnectFailure::new(
            format!("the backend answers none of the MCP HTTP transports ({why})"),
            VerdictUpdate::Forget,
        )),
        Err(sse::Refused::Failed(reason)) => Err(ConnectFailure::new(
            reason,
            VerdictUpdate::Learned(Verdict::LegacySse),
        )),
    }
}

fn endpoint_url(config: &BackendConfig) -> Result<Url, String> {
    let Transport::Http { url } = &config.transport else {
        return Err("not an http backend".to_owned());
    };
    let url = Url::parse(url).map_err(|e| format!("invalid backend url: {e}"))?;
    match url.scheme() {
        "http" => Ok(url),
        "https" => tls::request_url(url, &config.tls),
        other => Err(format!("unsupported url scheme {other:?}")),
    }
}

/// Statuses that say the backend cannot serve now, not what it is.
fn is_outage(status: StatusCode) -> bool {
    status.is_server_error()
        || matches!(
            status,
            StatusCode::UNAUTHORIZED
                | StatusCode::FORBIDDEN
                | StatusCode::REQUEST_TIMEOUT
                | StatusCode::TOO_MANY_REQUESTS
        )
}

/// The longest `WWW-Authenticate` challenge kept from a backend's refusal.
const MAX_CHALLENGE: usize = 4096;

/// A 401 or 403 answering a request that carried its principal's own credential: that principal's
/// token was refused (never an outage of the backend), with the backend's challenge for the gateway.
pub(crate) fn refused_credential(ctx: &LinkContext, response: &BackendResponse) -> Option<Failure> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    Some(Failure::Unauthorized {
        backend: ctx.name().to_owned(),
        status: status.as_u16(),
        challenge: challenge_of(response.headers()),
    })
}

/// A response's `WWW-Authenticate` challenge, if it has one of at most [`MAX_CHALLENGE`] bytes.
pub(crate) fn challenge_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_CHALLENGE)
        .map(str::to_owned)
}

/// `Content-Type: application/json` and `Accept: application/json, text/event-stream`.
fn json_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    h
}

/// The `MCP-Protocol-Version` header value for a generation.
fn version_header(generation: Generation) -> HeaderValue {
    HeaderValue::from_static(generation.as_str())
}

/// What a non-200 answer to a request for `url` means: a refused redirect, the JSON-RPC error in its body
/// (such as -32020 when an `Mcp-Param` header did not match), or an outage.
async fn status_failure(
    ctx: &LinkContext,
    generation: Generation,
    method: Method,
    response: BackendResponse,
    url: &Url,
) -> Failure {
    if let Some(refused) = edge::redirect_refusal(response.status(), response.headers(), url) {
        return ctx.unavailable(refused);
    }
    let status = response.status();
    let body = error_body(response).await;
    match handshake::error_in_body(&body) {
        Some(error) => ctx.backend_error(generation, method, error),
        None => ctx.unavailable(format!("the backend answered HTTP {status}")),
    }
}

/// Fire-and-forget POSTs of one backend (cancellations, answers to its requests), one at a time through a
/// bounded queue, each with its own deadline.
#[derive(Debug, Clone)]
pub(crate) struct Poster {
    tx: mpsc::Sender<(Url, HeaderMap, Vec<u8>)>,
    backend: Arc<str>,
}

impl Poster {
    /// Starts the posting task on the current arbiter; it ends when every clone is gone.
    fn start(client: reqwest::Client, backend: Arc<str>, credential: crate::Credential) -> Poster {
        let (tx, mut rx) = mpsc::channel::<(Url, HeaderMap, Vec<u8>)>(POST_QUEUE);
        let name = Arc::clone(&backend);
        actix_rt::spawn(async move {
            while let Some((url, mut headers, body)) = rx.recv().await {
                credential.apply(&mut headers);
                let sent = client
                    .post(url)
                    .headers(headers)
                    .body(body)
                    .timeout(POST_TIMEOUT)
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().is_success() => {}
                    Ok(r) => debug!(%backend, status = %r.status(), "backend refused a message"),
                    Err(e) => {
                        debug!(%backend, error = %chain(&e), "posting a message to the backend failed")
                    }
                }
            }
        });
        Poster { tx, backend: name }
    }

    /// Queues one post; false when the queue is full.
    fn post(&self, url: Url, headers: HeaderMap, body: Vec<u8>) -> bool {
        let queued = self.tx.try_send((url, headers, body)).is_ok();
        if !queued {
            warn!(backend = %self.backend, "post queue full: dropping a message to the backend");
        }
        queued
    }
}
