//! [`BackendRequest`]: one request for a backend, as the gateway hands it to [`crate::BackendHandle::call`]
//! and as every link sends it.

use std::time::Duration;

use protocol::method::Method;
use serde_json::value::RawValue;

use crate::related::RelatedSink;
use crate::share::Caller;

/// One request for a backend, already rewritten for it by the gateway.
#[derive(Debug, Clone)]
pub struct BackendRequest {
    /// The method.
    pub method: Method,
    /// The params, with names already de-prefixed for this backend; may carry a client `_meta`.
    pub params: Option<Box<RawValue>>,
    /// The capabilities to declare to a modern backend for this request; `None` declares `{}`.
    pub client_capabilities: Option<serde_json::Value>,
    /// The `Mcp-Name` value (already de-prefixed) for `tools/call`, `prompts/get`, `resources/read`.
    pub name: Option<String>,
    /// Ready-made `("Region", encoded value)` pairs, sent as `Mcp-Param-Region` headers.
    pub param_headers: Vec<(String, String)>,
    /// Where this request's own messages go: its progress, on HTTP the notifications the backend sends on
    /// the request's response stream, and the requests the backend asks while serving it
    /// ([`crate::Related::InputRequest`]: sampling, elicitation, roots), which must be answered through their
    /// `reply`. `None`: notifications are not wanted (a client progress token is removed) and the backend's
    /// requests are refused: -32021 naming a capability `client_capabilities` lacks, else -32601.
    pub related: Option<RelatedSink>,
    /// This request's deadline instead of the backend's request timeout (a tool's own, from its backend's
    /// `tool_timeouts_ms`).
    pub timeout: Option<Duration>,
    /// Who the request counts against for the backend's per-caller share (`max_in_flight_per_caller`);
    /// `None`: only the backend's own bound applies (the gateway's own requests).
    pub caller: Option<Caller>,
    /// This request's own credential (a token exchanged for its principal), sent instead of the backend's
    /// in the backend credential's header. Only a 2026-07-28 backend takes one: a legacy backend's one
    /// session must never carry several principals' identities, so such a request is refused there.
    pub credential: Option<reqwest::header::HeaderValue>,
    /// The gateway's own trace context for this request (its backend-call span), sent in `_meta` and, to
    /// an HTTP backend, as `traceparent`/`tracestate` headers. `None` (tracing off): nothing is added and
    /// the params' `_meta` passes as it came.
    pub trace: Option<crate::TraceContext>,
    /// The wire name of an extension's method this request is (`interceptors/list`,
    /// `interceptor/invoke`): sent instead of `method`'s, which then only classifies the request (its
    /// permits, its error shape). `None`: `method` is the request.
    pub extension: Option<&'static str>,
}

impl BackendRequest {
    /// The method's name on the wire.
    pub fn wire_name(&self) -> &'static str {
        self.extension.unwrap_or(self.method.as_str())
    }

    /// A request with params and nothing else.
    pub fn new(method: Method, params: Option<Box<RawValue>>) -> BackendRequest {
        BackendRequest {
            method,
            params,
            client_capabilities: None,
            name: None,
            param_headers: Vec::new(),
            related: None,
            timeout: None,
            caller: None,
            credential: None,
            trace: None,
            extension: None,
        }
    }
}
