//! HTTP exchanges and the check of every answer. [`Wire`] is one reqwest client (connection pool sized to
//! the sessions, no proxy, no redirects, pinned to the checked addresses) and the per-request deadline;
//! [`classify`] turns an answer into an [`Outcome`]: the JSON-RPC message is found in a JSON body or in
//! the SSE events of a `text/event-stream` body, its `jsonrpc` and `id` must match, then result or error,
//! `isError`, and on 2026-07-28 a `resultType`.

use std::borrow::Cow;
use std::future::Future;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use protocol::headers::names;
use reqwest::header::HeaderMap;
use reqwest::{Client, Url};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::LoadError;
use super::stats::Outcome;
use super::target::Target;

/// The largest body read; a larger one is an invalid answer.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// How long an idle pooled connection is reused. Below the keep-alive of common servers (actix-web, and so
/// mcpgw and the mock backend, close an idle connection after 5 s): reusing a connection at the moment the
/// server closes it fails with "connection closed before message completed", an error of the generator's
/// pooling rather than of the target (seen in long open-loop runs: a few calls in 100,000).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// The HTTP clients of the whole run: one link per source address (`--source-addrs`; one link without it),
/// requests spread over them round robin.
#[derive(Debug, Clone)]
pub(crate) struct Wire {
    links: std::sync::Arc<[Link]>,
    /// The next request's link.
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    url: Url,
    timeout: Duration,
    /// Sendings again (see [`closed_before_any_answer`]).
    resent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The clients of one source address.
#[derive(Debug)]
struct Link {
    pooled: Client,
    /// The same client keeping no idle connection: what a request is sent again on (a new connection, never
    /// another pooled one that the same load balancer reload may have closed as well).
    fresh: Client,
}

/// An HTTP answer, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) session_id: Option<String>,
    event_stream: bool,
    pub(crate) body: Bytes,
}

impl Wire {
    /// Clients for `target` keeping up to `pool` idle connections in all (one per session), connecting from
    /// `sources` (none: the system's choice).
    pub(crate) fn new(
        target: &Target,
        pool: usize,
        timeout: Duration,
        sources: &[IpAddr],
        headers: &reqwest::header::HeaderMap,
    ) -> Result<Wire, LoadError> {
        // https targets: the platform's roots, through the process's one rustls provider; an http target
        // reads no roots at all.
        handlers::install_tls_provider();
        let build = |pool: usize, source: Option<IpAddr>| {
            let mut b = Client::builder()
                .local_address(source)
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(pool)
                .pool_idle_timeout(POOL_IDLE)
                .tcp_nodelay(true)
                .default_headers(headers.clone())
                .connect_timeout(timeout)
                .http1_only();
            if let Some((name, addrs)) = &target.pinned {
                b = b.resolve_to_addrs(name, addrs);
            }
            if target.url.scheme() == "http" {
                b = b.tls_backend_preconfigured(handlers::plain_tls_config());
            }
            b.build().map_err(|e| LoadError::Client(e.to_string()))
        };
        let sources: Vec<Option<IpAddr>> = if sources.is_empty() {
            vec![None]
        } else {
            sources.iter().copied().map(Some).collect()
        };
        let per_link = pool.div_ceil(sources.len());
        let links = sources
            .into_iter()
            .map(|source| {
                Ok(Link {
                    pooled: build(per_link, source)?,
                    fresh: build(0, source)?,
                })
            })
            .collect::<Result<Vec<Link>, LoadError>>()?;
        Ok(Wire {
            links: links.into(),
            next: Default::default(),
            url: target.url.clone(),
            timeout,
            resent: Default::default(),
        })
    }

    /// The target's URL.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// Requests sent a second time so far, because their keep-alive connection closed before any answer.
    pub(crate) fn resent(&self) -> u64 {
        self.resent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The deadline of one request.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POSTs `body`; the whole exchange (connect, send, read the body) within the request deadline.
    pub(crate) async fn post(&self, headers: HeaderMap, body: Bytes) -> Result<Answer, Failure> {
        self.post_by(headers, body, Instant::now() + self.timeout)
            .await
    }

    /// POSTs `body`; the whole exchange by `deadline`.
    pub(crate) async fn post_by(
        &self,
        headers: HeaderMap,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Answer, Failure> {
        let work = async {
            let opened = self.send(self.post_request(headers, body)).await?;
            opened.rest().await
        };
        by(deadline, work).await
    }

    /// POSTs `body` and returns once the answer's head is in (by `deadline`): its body is read by the caller,
    /// piece by piece ([`Opened::chunk`]), as an SSE stream is.
    pub(crate) async fn open(
        &self,
        headers: HeaderMap,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Opened, Failure> {
        by(deadline, self.send(self.post_request(headers, body))).await
    }

    /// `GET` (a legacy session's standalone SSE stream); returns once the answer's head is in, by
    /// `deadline`, its body read by the caller as [`Wire::open`]'s is.
    pub(crate) async fn get(
        &self,
        headers: HeaderMap,
        deadline: Instant,
    ) -> Result<Opened, Failure> {
        let req = self.links[0].pooled.get(self.url.clone()).headers(headers);
        by(deadline, self.send(req)).await
    }

    /// `DELETE` (the end of a legacy session).
    pub(crate) async fn delete(&self, headers: HeaderMap) -> Result<Answer, Failure> {
        let req = self.links[0]
            .pooled
            .delete(self.url.clone())
            .headers(headers);
        let work = async { self.send(req).await?.rest().await };
        by(Instant::now() + self.timeout, work).await
    }

    /// The next request's link.
    fn link(&self) -> &Link {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.links[n % self.links.len()]
    }

    fn post_request(&self, headers: HeaderMap, body: Bytes) -> reqwest::RequestBuilder {
        // Built by any client; sent by the link `send` picks.
        self.links[0]
            .pooled
            .post(self.url.clone())
            .headers(headers)
            .body(body)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Opened, Failure> {
        let req = req.build().map_err(|e| Failure::of(&e))?;
        let mut again = req.try_clone();
        let link = self.link();
        let mut sent = link.pooled.execute(req).await;
        // A connection closed before any answer is sent again on a new one, at most `MAX_RESENDS` times: a
        // proxy reloading (nginx -s reload) may close the new connection too, when an old worker accepted it
        // just before it stopped accepting.
        for _ in 0..MAX_RESENDS {
            let (Err(e), Some(req)) = (&sent, again.take()) else {
                break;
            };
            if !closed_before_any_answer(e) {
                break;
            }
            again = req.try_clone();
            self.resent
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            sent = link.fresh.execute(req).await;
        }
        let resp = sent.map_err(|e| Failure::of(&e))?;
        let status = resp.status().as_u16();
        let session_id = resp
            .headers()
            .get(names::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let event_stream = resp
            .headers()
            .get(names::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
        Ok(Opened {
            status,
            session_id,
            event_stream,
            resp,
            read: 0,
        })
    }
}

/// How many times one request is sent again after its connection closed before any answer.
const MAX_RESENDS: usize = 2;

/// `work`, or [`Failure::Timeout`] at `deadline`.
async fn by<T>(
    deadline: Instant,
    work: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    tokio::time::timeout_at(deadline.into(), work)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// An answer whose head is in and whose body is still to be read.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) status: u16,
    pub(crate) event_stream: bool,
    session_id: Option<String>,
    resp: reqwest::Response,
    /// Bytes of the body read so far.
    read: usize,
}

impl Opened {
    /// The next piece of the body (`None` at its end), by `deadline`; more than [`MAX_BODY`] in all is
    /// [`Failure::TooLarge`].
    pub(crate) async fn chunk(&mut self, deadline: Instant) -> Result<Option<Bytes>, Failure> {
        let next = by(deadline, async {
            self.resp.chunk().await.map_err(|e| Failure::of(&e))
        })
        .await?;
        if let Some(c) = &next {
            self.read += c.len();
            if self.read > MAX_BODY {
                return Err(Failure::TooLarge);
            }
        }
        Ok(next)
    }

    /// The whole body (no deadline of its own: the caller's bounds it).
    async fn rest(mut self) -> Result<Answer, Failure> {
        let mut body = BytesMut::new();
        while let Some(chunk) = self.resp.chunk().await.map_err(|e| Failure::of(&e))? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(Failure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status: self.status,
            session_id: self.session_id,
            event_stream: self.event_stream,
            body: body.freeze(),
        })
    }

    /// The whole body, by `deadline`.
    pub(crate) async fn read_to_end(self, deadline: Instant) -> Result<Answer, Failure> {
        by(deadline, self.rest()).await
    }
}

impl Answer {
    /// One JSON-RPC message (taken out of an SSE stream) as if it were the body of an answer with `status`.
    pub(crate) fn message(status: u16, body: Bytes) -> Answer {
        Answer {
            status,
            session_id: None,
            event_stream: false,
            body,
        }
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    id: Option<Value>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: Option<i64>,
}

#[derive(Deserialize)]
struct ResultPeek<'a> {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(rename = "resultType", borrow)]
    result_type: Option<Cow<'a, str>>,
}

/// What to check in an answer to request `id`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect {
    pub(crate) id: u64,
    /// 2026-07-28: a result must carry `resultType`.
    pub(crate) modern: bool,
}

/// The outcome of an answer to a request.
pub(crate) fn classify(answer: &Answer, expect: Expect) -> Outcome {
    let ok_status = (200..300).contains(&answer.status);
    let text = match message(answer, expect.id) {
        Some(t) => t,
        None if !ok_status => return Outcome::HttpError,
        None if answer.event_stream => return Outcome::Invalid("no response in the event stream"),
        None if answer.body.iter().all(u8::is_ascii_whitespace) => {
            return Outcome::Invalid("no json-rpc response");
        }
        None => return Outcome::Invalid("not json"),
    };
    let Ok(env) = serde_json::from_slice::<Envelope<'_>>(&text) else {
        return if !ok_status {
            Outcome::HttpError
        } else if serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_err() {
            Outcome::Invalid("not json")
        } else {
            Outcome::Invalid("not a json-rpc response")
        };
    };
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Outcome::Invalid("jsonrpc is not \"2.0\"");
    }
    let id_matches = env.id.as_ref().and_then(Value::as_u64) == Some(expect.id);
    if let Some(err) = env.error {
        if !id_matches && env.id.is_some() {
            return Outcome::Invalid("id mismatch");
        }
        return match err.code {
            Some(code) => Outcome::RpcError(code),
            None => Outcome::Invalid("error without a code"),
        };
    }
    let Some(result) = env.result else {
        return Outcome::Invalid("neither result nor error");
    };
    if !id_matches {
        return Outcome::Invalid("id mismatch");
    }
    if !ok_status {
        return Outcome::HttpError;
    }
    let Ok(peek) = serde_json::from_str::<ResultPeek<'_>>(result.get()) else {
        return Outcome::Invalid("result is not an object");
    };
    match peek.result_type.as_deref() {
        None if expect.modern => return Outcome::Invalid("no resultType"),
        None | Some("complete") => {}
        Some(_) => return Outcome::Incomplete,
    }
    if peek.is_error == Some(true) {
        Outcome::ToolError
    } else {
        Outcome::Ok
    }
}

/// The outcome of an answer that has no JSON-RPC body (a notification's 202, a `DELETE`).
pub(crate) fn classify_bare(status: u16, allowed: &[u16]) -> Outcome {
    if (200..300).contains(&status) || allowed.contains(&status) {
        Outcome::Ok
    } else {
        Outcome::HttpError
    }
}

/// The result of a successful answer, parsed (for set-up and probing, not the hot path).
pub(crate) fn result_of(answer: &Answer, expect: Expect) -> Result<Value, String> {
    let text = message(answer, expect.id)
        .ok_or_else(|| format!("HTTP {} without a JSON-RPC response", answer.status))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(err) = v.get("error") {
        return Err(format!("HTTP {}, JSON-RPC error {err}", answer.status));
    }
    match classify(answer, expect) {
        Outcome::Ok | Outcome::ToolError => {}
        other => return Err(format!("HTTP {}: {other:?}", answer.status)),
    }
    v.get("result")
        .cloned()
        .ok_or_else(|| "no result".to_owned())
}

/// The bytes of the JSON-RPC message answering `id`: the body, or the data of the SSE event that answers
/// it (events without it, such as notifications, are skipped).
fn message(answer: &Answer, id: u64) -> Option<Cow<'_, [u8]>> {
    if !answer.event_stream {
        let body = answer.body.trim_ascii();
        return (!body.is_empty()).then_some(Cow::Borrowed(body));
    }
    let text = std::str::from_utf8(&answer.body).ok()?;
    let mut data = String::new();
    let mut answered = None;
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                if answers(&data, id) {
                    answered = Some(std::mem::take(&mut data));
                    break;
                }
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    answered.map(|d| Cow::Owned(d.into_bytes()))
}

/// Whether an SSE event's data is a response to `id` (or an error without an id).
pub(crate) fn answers(data: &str, id: u64) -> bool {
    match serde_json::from_str::<Envelope<'_>>(data) {
        Ok(env) if env.result.is_some() || env.error.is_some() => {
            env.id.as_ref().is_none_or(|v| v.as_u64() == Some(id))
        }
        _ => false,
    }
}

mod failure;
pub(crate) use failure::Failure;
use failure::closed_before_any_answer;

#[cfg(test)]
mod tests;
