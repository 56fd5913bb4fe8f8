//! Modern (2026-07-28) Streamable HTTP backends: stateless POSTs carrying the routing headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) and the `_meta` stamp; the probe.
//! Cancellation is dropping the response stream (the spec's rule for modern HTTP); a `subscriptions/listen`
//! keeps its response stream open as the subscription ([`ModernLink::stream`]).
//!
//! Lenient in what it accepts: the spec forbids a 2026-07-28 server to send requests on a response stream,
//! but SDK servers in their stateless mode do (sampling, elicitation, roots while a tool runs), so they are
//! relayed like a legacy backend's, and the answer is POSTed back to the endpoint as a JSON-RPC response
//! with `MCP-Protocol-Version` (the only header such a POST can carry).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use protocol::ErrorCode;
use protocol::headers::{encode_value, names};
use protocol::payload::DiscoverResult;
use protocol::shape::Failure;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::{
    BackendResponse, Exchange, Poster, SizeLimits, is_outage, json_headers, read_reply,
    status_failure, version_header,
};
use crate::description::{ServerDescription, TransportKind};
use crate::handshake::{self, MODERN, Probe};
use crate::inbound::Inbound;
use crate::link::context::{Connected, Lifeline, LinkContext, Verdict};
use crate::outbox::Outbox;
use crate::request::BackendRequest;
use crate::wire;

/// A modern backend. Stateless: every request stands alone.
#[derive(Debug, Clone)]
pub(crate) struct ModernLink(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    ctx: Arc<LinkContext>,
    url: Url,
    /// The data path's requests (`exchange`; the probe and best-effort posts go through reqwest).
    exchange: Exchange,
    last_id: AtomicI64,
    /// Messages on response streams: notifications, and the backend's requests, answered through an
    /// [`EndpointPoster`].
    inbound: Inbound,
    /// Cut when an answer shows the backend is not (or no longer) the modern server it was probed as: the
    /// actor then reconnects, which probes the era again.
    lifeline: Lifeline,
}

/// What the probe found.
pub(super) enum Probed {
    Judged(Probe),
    Outage(String),
}

/// POSTs `server/discover` with the 2026 headers and judges the answer.
pub(super) async fn probe(ctx: &Arc<LinkContext>, client: &reqwest::Client, url: &Url) -> Probed {
    let params = ctx.discover_params();
    let body = wire::request(0, "server/discover", Some(&params));
    let mut headers = json_headers();
    headers.insert(names::PROTOCOL_VERSION, version_header(MODERN));
    headers.insert(names::METHOD, HeaderValue::from_static("server/discover"));
    ctx.config.credential.apply(&mut headers);
    let inbound = Inbound::new(ctx.notifier.clone(), None, None);
    let limit = ctx.config.connect_timeout;
    let attempt = async {
        let response = client
            .post(url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("server/discover failed: {}", super::chain(&e)))?;
        if let Some(refused) =
            super::edge::redirect_refusal(response.status(), response.headers(), response.url())
        {
            return Err(refused);
        }
        let status = response.status();
        if status == StatusCode::OK {
            return Ok(
                match read_reply(response, 0, &inbound, SizeLimits::of(ctx)).await {
                    Ok(reply) => handshake::judge_discover(reply),
                    Err(e) => Probe::Legacy(format!("server/discover answer is unrecognised: {e}")),
                },
            );
        }
        if is_outage(status) {
            return Err(format!("server/discover answered HTTP {status}"));
        }
        let body = super::error_body(response).await;
        Ok(match handshake::modern_refusal_in_body(&body) {
            Some(why) => Probe::ModernRefused(why),
            None => Probe::Legacy(format!("server/discover answered HTTP {status}")),
        })
    };
    match tokio::time::timeout(limit, attempt).await {
        Ok(Ok(probe)) => Probed::Judged(probe),
        Ok(Err(reason)) => Probed::Outage(reason),
        Err(_) => Probed::Outage(format!(
            "no answer to server/discover within {} ms",
            limit.as_millis()
        )),
    }
}

/// The connection after a successful probe.
pub(super) fn connected(
    ctx: Arc<LinkContext>,
    client: reqwest::Client,
    url: Url,
    exchange: Exchange,
    discover: DiscoverResult,
) -> Connected<ModernLink> {
    let description = ServerDescription::from_discover(discover, TransportKind::StreamableHttp);
    let outbox: Arc<dyn Outbox> = Arc::new(EndpointPoster {
        poster: Poster::start(client, Arc::from(ctx.name()), ctx.config.credential.clone()),
        url: url.clone(),
    });
    let inbound = Inbound::new(ctx.notifier.clone(), None, Some(outbox));
    let lifeline = Lifeline::default();
    let link = ModernLink(Arc::new(Inner {
        ctx,
        url,
        exchange,
        last_id: AtomicI64::new(0),
        inbound,
        lifeline: lifeline.clone(),
    }));
    Connected {
        link,
        description: Arc::new(description),
        verdict: Verdict::Modern,
        // No connection between requests to lose; cut only when the era assumption fails.
        lifeline,
    }
}

impl ModernLink {
    /// One request, answered by `deadline`. Dropping the future drops the response stream, which a modern
    /// backend takes as the cancellation.
    pub(crate) async fn call(
        &self,
        mut request: BackendRequest,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Failure> {
        let inbound = self.0.inbound.for_request(&mut request, deadline);
        let method = request.method;
        let exchange = async {
            let (id, response) = self.post(request).await?;
            self.read(method, id, response, &inbound).await
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.0.ctx.timeout()),
        }
    }

    /// A long-lived request (`subscriptions/listen`): its response stream is read until the backend ends it
    /// with the final response, which is returned; the notifications before it go to `inbound`. Only the
    /// response's head has a deadline. Dropping the future drops the stream, which ends the request.
    pub(crate) async fn stream(
        &self,
        request: BackendRequest,
        open_by: Instant,
        inbound: &Inbound,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &*self.0.ctx;
        let method = request.method;
        let (id, response) = match tokio::time::timeout_at(open_by, self.post(request)).await {
            Ok(opened) => opened?,
            Err(_) => return Err(ctx.timeout()),
        };
        self.read(method, id, response, inbound).await
    }

    /// Reads the answer to request `id` from its 200 response.
    async fn read(
        &self,
        method: protocol::Method,
        id: i64,
        response: BackendResponse,
        inbound: &Inbound,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &*self.0.ctx;
        match read_reply(response, id, inbound, SizeLimits::of(ctx)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ctx.backend_error(MODERN, method, error)),
            Err(e) => Err(e.into_failure(ctx)),
        }
    }

    /// POSTs a request under a fresh id; its id and the 200 response (whose body the caller reads), or
    /// the failure the answer means.
    async fn post(&self, mut request: BackendRequest) -> Result<(i64, BackendResponse), Failure> {
        let inner = &*self.0;
        let ctx = &*inner.ctx;
        let mut headers =
            routing_headers(&request).map_err(|reason| Failure::Internal { reason })?;
        ctx.config.credential.apply(&mut headers);
        if let Some(trace) = &request.trace {
            trace.apply(&mut headers);
        }
        let own = request.credential.take();
        let carries_own = own.is_some();
        if let Some(own) = own {
            headers.insert(ctx.config.credential.header_name(), own);
        }
        let id = inner.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let body = ctx.modern_body(id, &mut request)?;
        // Sent once more only if it never reached the backend (`exchange`).
        let response = inner
            .exchange
            .post(ctx, headers, body)
            .await
            .map_err(|reason| ctx.unavailable(reason))?;
        let status = response.status();
        if carries_own && let Some(refused) = super::refused_credential(ctx, &response) {
            return Err(refused);
        }
        if status != StatusCode::OK {
            let failure = Box::pin(status_failure(
                ctx,
                MODERN,
                request.method,
                response,
                &inner.url,
            ))
            .await;
            if let Some(why) = era_assumption_failed(status, &failure) {
                inner.lifeline.cut(why);
            }
            return Err(failure);
        }
        Ok((id, response))
    }
}

/// Answers to a modern backend's requests, POSTed to its endpoint as JSON-RPC responses.
#[derive(Debug)]
struct EndpointPoster {
    poster: Poster,
    url: Url,
}

impl Outbox for EndpointPoster {
    fn deliver(&self, message: Vec<u8>) -> bool {
        let mut headers = json_headers();
        headers.insert(names::PROTOCOL_VERSION, version_header(MODERN));
        self.poster.post(self.url.clone(), headers, message)
    }
}

/// Whether a refused request shows that the backend no longer serves 2026-07-28 as probed: it declines the
/// version (-32022), or it refuses a modern request at the HTTP level without any modern error (a legacy
/// server answering 400/404/405). Header mismatches and missing capabilities are ordinary modern answers.
fn era_assumption_failed(status: StatusCode, failure: &Failure) -> Option<String> {
    match failure {
        Failure::Backend { error, .. } if error.code() == ErrorCode::UnsupportedProtocolVersion => {
            Some(format!(
                "the backend declined protocol version 2026-07-28 ({}); probing its era again",
                error.message()
            ))
        }
        Failure::Unavailable { .. }
            if matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ) =>
        {
            Some(format!(
                "the backend refused a 2026-07-28 request with HTTP {status}; probing its era again"
            ))
        }
        _ => None,
    }
}

/// The 2026-07-28 headers of a request: protocol version, method, name and parameter headers.
fn routing_headers(request: &BackendRequest) -> Result<HeaderMap, String> {
    let mut headers = json_headers();
    headers.insert(names::PROTOCOL_VERSION, version_header(MODERN));
    headers.insert(names::METHOD, HeaderValue::from_static(request.wire_name()));
    if let Some(name) = &request.name {
        let value = HeaderValue::from_str(&encode_value(name))
            .map_err(|e| format!("cannot send Mcp-Name {name:?}: {e}"))?;
        headers.insert(names::NAME, value);
    }
    for (param, value) in &request.param_headers {
        let header = format!("{}{param}", names::PARAM_PREFIX);
        let name = HeaderName::from_bytes(header.as_bytes())
            .map_err(|e| format!("cannot send header {header:?}: {e}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| format!("cannot send header {header:?}: {e}"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::method::Method;

    #[test]
    fn routing_headers_are_encoded() {
        let request = BackendRequest {
            method: Method::ToolsCall,
            params: None,
            client_capabilities: None,
            name: Some("météo".into()),
            param_headers: vec![("Region".into(), "eu-west".into())],
            related: None,
            timeout: None,
            caller: None,
            credential: None,
            trace: None,
            extension: None,
        };
        let h = routing_headers(&request).unwrap();
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "=?base64?bcOpdMOpbw==?=");
        assert_eq!(h["mcp-param-region"], "eu-west");
        let bad = BackendRequest {
            param_headers: vec![("Bad Name".into(), "x".into())],
            ..request
        };
        assert!(routing_headers(&bad).is_err());
    }
}
