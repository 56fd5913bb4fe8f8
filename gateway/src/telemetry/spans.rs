//! The spans of one JSON-RPC request, named and attributed by OpenTelemetry's MCP semantic conventions
//! (`mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version`, `gen_ai.tool.name`,
//! …; the gateway's own facts under `mcpgw.`):
//!
//! - the request span (kind server, `{method} {target}`), from the start of routing to the answer, whose
//!   parent is the client's trace context ([`super::parent`]) when it sent a valid one;
//! - its children: `mcpgw.route` (validation, recorded afterwards with its own start and end), each backend
//!   call (kind client, [`BackendSpan`]: its context is what the backend receives) and `mcpgw.shape`.
//!
//! The request span travels as the current OpenTelemetry `Context` of the request's future
//! (`opentelemetry::context::FutureExt::with_context`), so the dispatch finds it without being handed it.
//! Every helper is a no-op returning `None` when [`super::traces::on`] is false. Never an argument, a
//! result or a full session id in an attribute.

use std::time::SystemTime;

use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;

use super::parent::{self, Carrier};
use super::traces::tracer;

/// Where a request's trace starts, taken when routing begins (traces on only): the time, and the parent
/// the client's HTTP headers name.
#[derive(Debug, Clone)]
pub struct Arrival {
    start: SystemTime,
    routed: SystemTime,
    header: Option<Context>,
}

impl Arrival {
    /// `None` when traces are off; else now, and the parent in `traceparent`/`tracestate` as
    /// `header(name)` finds them.
    pub fn begin<'h>(header: impl Fn(&str) -> Option<&'h str>) -> Option<Arrival> {
        tracer()?;
        let now = SystemTime::now();
        Some(Arrival {
            start: now,
            routed: now,
            header: parent::remote(Carrier {
                traceparent: header(handlers::TRACEPARENT),
                tracestate: header(handlers::TRACESTATE),
            }),
        })
    }

    /// Routing ended now.
    pub fn routed(mut self) -> Arrival {
        self.routed = SystemTime::now();
        self
    }
}

/// What the request span says of a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The MCP method.
    pub method: &'a str,
    /// The tool or prompt name (the span name's target), if the method has one.
    pub target: Option<&'a str>,
    /// Whether the target is a prompt's (else a tool's).
    pub prompt: bool,
    /// The JSON-RPC id as the client wrote it (raw JSON).
    pub id: &'a str,
    /// The session's short id (never the whole id).
    pub session: Option<&'a str>,
    /// The generation (MCP protocol version) the client speaks.
    pub generation: &'a str,
    /// `true` over HTTP, `false` over stdio.
    pub http: bool,
    /// The request's params, whose `_meta` may carry the client's trace context.
    pub params: Option<&'a RawValue>,
}

/// A request's span, the current span of its work; ended by [`RequestSpan::end`] (or when dropped).
#[derive(Debug, Clone)]
pub struct RequestSpan {
    cx: Context,
}

impl RequestSpan {
    /// Starts the request span at `arrival`'s start and records routing as its first child.
    pub fn start(arrival: &Arrival, facts: &RequestFacts<'_>) -> Option<RequestSpan> {
        let tracer = tracer()?;
        let parent = parent::from_meta(facts.params)
            .or_else(|| arrival.header.clone())
            .unwrap_or_default();
        let name = match facts.target {
            Some(target) => format!("{} {target}", facts.method),
            None => facts.method.to_owned(),
        };
        let id = match serde_json::from_str::<String>(facts.id) {
            Ok(text) => text,
            Err(_) => facts.id.to_owned(),
        };
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", facts.method.to_owned()),
            KeyValue::new("jsonrpc.request.id", id),
            KeyValue::new("mcp.protocol.version", facts.generation.to_owned()),
            KeyValue::new("network.transport", if facts.http { "tcp" } else { "pipe" }),
        ];
        if facts.http {
            attributes.push(KeyValue::new("network.protocol.name", "http"));
        }
        if let Some(session) = facts.session {
            attributes.push(KeyValue::new("mcp.session.id", session.to_owned()));
        }
        if let Some(target) = facts.target {
            if facts.prompt {
                attributes.push(KeyValue::new("gen_ai.prompt.name", target.to_owned()));
            } else {
                attributes.push(KeyValue::new("gen_ai.tool.name", target.to_owned()));
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
        }
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_start_time(arrival.start)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        let cx = parent.with_span(span);
        let mut route = tracer
            .span_builder("mcpgw.route")
            .with_kind(SpanKind::Internal)
            .with_start_time(arrival.start)
            .start_with_context(tracer, &cx);
        route.end_with_timestamp(arrival.routed);
        Some(RequestSpan { cx })
    }

    /// The context the request's work runs in (its span current).
    pub fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span now.
    pub fn end(&self) {
        self.cx.span().end();
    }
}

/// Records on the current span (the request's) the backend a request was routed to.
pub fn record_backend(backend: &str) {
    if tracer().is_none() {
        return;
    }
    let cx = Context::current();
    cx.span()
        .set_attribute(KeyValue::new("mcpgw.backend", backend.to_owned()));
}

/// Records on the current span (the request's) that the request failed: `error.type`, and the JSON-RPC
/// error code when the answer is one.
pub fn record_failure(error_type: &str, code: Option<i64>) {
    if tracer().is_none() {
        return;
    }
    let cx = Context::current();
    let span = cx.span();
    span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
    if let Some(code) = code {
        span.set_attribute(KeyValue::new("rpc.response.status_code", code.to_string()));
    }
    span.set_status(Status::error(error_type.to_owned()));
}

/// A child of the current span (`mcpgw.shape`, …), ended when dropped. `None` when traces are off or no
/// request span is current.
pub fn child(name: &'static str) -> Option<ChildSpan> {
    let tracer = tracer()?;
    let cx = Context::current();
    if !cx.has_active_span() {
        return None;
    }
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Internal)
        .start_with_context(tracer, &cx);
    Some(ChildSpan(span))
}

/// A span ended when dropped.
#[derive(Debug)]
pub struct ChildSpan(opentelemetry_sdk::trace::Span);

impl Drop for ChildSpan {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// One call to a backend: a client span, child of the current (request) span. Its context is the
/// backend's parent: [`BackendSpan::trace_context`] for `handlers::BackendRequest::trace`.
#[derive(Debug)]
pub struct BackendSpan {
    cx: Context,
}

impl BackendSpan {
    /// `None` when traces are off or no request span is current (the gateway's own requests).
    pub fn start(backend: &str, method: &str, name: Option<&str>) -> Option<BackendSpan> {
        let tracer = tracer()?;
        let parent = Context::current();
        if !parent.has_active_span() {
            return None;
        }
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", method.to_owned()),
            KeyValue::new("mcpgw.backend", backend.to_owned()),
        ];
        if let Some(name) = name {
            let key = match method {
                "tools/call" => "gen_ai.tool.name",
                "prompts/get" => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            attributes.push(KeyValue::new(key, name.to_owned()));
        }
        let span_name = match (method, name) {
            ("tools/call" | "prompts/get", Some(name)) => format!("{method} {name}"),
            _ => method.to_owned(),
        };
        let span = tracer
            .span_builder(span_name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        Some(BackendSpan {
            cx: parent.with_span(span),
        })
    }

    /// The W3C trace context of this span, as the backend gets it.
    pub fn trace_context(&self) -> handlers::TraceContext {
        let span = self.cx.span();
        let sc = span.span_context();
        handlers::TraceContext {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags().to_u8()
            ),
            tracestate: sc.trace_state().header(),
        }
    }

    /// Ends the span with the call's outcome (`ok`, or the failure's kind, also its `error.type`).
    pub fn end(self, outcome: Result<(), &str>) {
        let span = self.cx.span();
        match outcome {
            Ok(()) => span.set_attribute(KeyValue::new("mcpgw.outcome", "ok")),
            Err(kind) => {
                span.set_attribute(KeyValue::new("mcpgw.outcome", kind.to_owned()));
                span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
                span.set_status(Status::error(kind.to_owned()));
            }
        }
        span.end();
    }
}
