//! The scrape: the counted series of [`Metrics`] and the states read at scrape time ([`State`]) written in
//! Prometheus's text format 0.0.4 or OpenMetrics 1.0, both by prometheus-client's encoders (one
//! `Collector` registered in a registry made per scrape). Series never recorded are left out.
//!
//! It must not be on a request's path: it reads every table once per scrape.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use protocol::Generation;

use super::histogram::Histogram;
use super::labels::{
    BackendOutcome, GENERATIONS, METHODS, MethodLabel, OUTCOMES, Outcome, SessionEnd, Transport,
    generation_label,
};
use super::{Metrics, build_info, request_index};

/// The exposition format a scrape asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4 (the default).
    Prometheus,
    /// OpenMetrics 1.0 text, when the `Accept` header names it.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names `application/openmetrics-text`
    /// (with a `q` above zero), else the 0.0.4 text.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let asks = accept.is_some_and(|a| {
            a.split(',').any(|range| {
                let mut parts = range.split(';').map(str::trim);
                let media = parts.next().unwrap_or_default();
                let refused = parts.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
            })
        });
        if asks {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// One backend as the scrape reads it (`handlers::BackendHandle::status`, the catalog, the ledger).
#[derive(Debug, Clone, Default)]
pub struct BackendGauges {
    /// Its configured name.
    pub name: String,
    /// Ready (its handshake done, requests go through).
    pub up: bool,
    /// `connecting`, `ready`, `down` or `stopped`.
    pub state: &'static str,
    /// `stdio`, `streamable_http`, `http_sse` or `in_process`.
    pub transport: &'static str,
    /// The generation it speaks, while ready.
    pub generation: Option<Generation>,
    /// Data-path requests in flight, and its `max_in_flight`.
    pub in_flight: u64,
    /// Its `max_in_flight`.
    pub max_in_flight: u64,
    /// Times it became ready again after its first connection.
    pub restarts: u64,
    /// `closed`, `open` or `half_open`.
    pub circuit: &'static str,
    /// In the current catalog: tools, prompts, resources, resource templates.
    pub catalog: [u64; 4],
}

/// What the scrape reads from the gateway's sources of truth.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Every configured backend.
    pub backends: Vec<BackendGauges>,
    /// Legacy sessions with an actor on this replica, per generation (in `Generation::ALL` order).
    pub sessions: [u64; Generation::ALL.len()],
    /// Requests in flight (the drain's count).
    pub in_flight: u64,
    /// Messages a slow consumer lost (`/readyz`'s `messages_dropped`).
    pub messages_dropped: u64,
}

/// The metrics and the state, written in `format`.
pub fn encode(metrics: &Arc<Metrics>, state: State, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape {
        metrics: Arc::clone(metrics),
        state,
    }));
    let mut out = String::new();
    let written = match format {
        Format::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        }
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
    };
    if written.is_err() {
        // Writing to a String does not fail; a scrape must still end well-formed.
        out.clear();
        if format == Format::OpenMetrics {
            out.push_str("# EOF\n");
        }
    }
    out
}

#[derive(Debug)]
struct Scrape {
    metrics: Arc<Metrics>,
    state: State,
}

type Labels<'a> = Vec<(&'a str, &'a str)>;

fn counter(m: &mut MetricEncoder, labels: &Labels, v: u64) -> std::fmt::Result {
    m.encode_family(labels)?
        .encode_counter::<NoLabelSet, u64, u64>(&v, None)
}

fn gauge(m: &mut MetricEncoder, labels: &Labels, v: i64) -> std::fmt::Result {
    m.encode_family(labels)?.encode_gauge(&v)
}

fn histogram(m: &mut MetricEncoder, labels: &Labels, h: &Histogram) -> std::fmt::Result {
    let (sum, count, buckets) = h.read();
    m.encode_family(labels)?
        .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let m = &self.metrics;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);

        let mut f = e.encode_descriptor(
            "mcpgw_build",
            "The gateway's version and platform.",
            None,
            MetricType::Info,
        )?;
        let info: Labels = build_info().into_iter().collect();
        f.encode_info(&info)?;

        // Requests: every label combination recorded at least once.
        let mut f = e.encode_descriptor(
            "mcpgw_requests",
            "JSON-RPC requests answered or refused, by method, client generation, transport and outcome (code: the JSON-RPC error code of jsonrpc_error and rejection).",
            None,
            MetricType::Counter,
        )?;
        for method in 0..METHODS {
            for g in 0..GENERATIONS {
                let generation = Generation::ALL.get(g).copied();
                for t in Transport::ALL {
                    for o in 0..OUTCOMES {
                        let outcome = Outcome::at(o);
                        let label = MethodLabel::at(method);
                        let v = load(&m.requests[request_index(label, generation, t, outcome)]);
                        if v == 0 {
                            continue;
                        }
                        let (name, code) = outcome.labels();
                        let mut labels: Labels = vec![
                            ("method", label.as_str()),
                            ("generation", generation_label(g)),
                            ("transport", t.as_str()),
                            ("outcome", name),
                        ];
                        if !code.is_empty() {
                            labels.push(("code", code));
                        }
                        counter(&mut f, &labels, v)?;
                    }
                }
            }
        }

        for (name, help, table) in [
            (
                "mcpgw_request_duration_seconds",
                "Time from a request's acceptance to its answer, by method.",
                &m.duration,
            ),
            (
                "mcpgw_gateway_overhead_seconds",
                "The part of a request's time not spent waiting on a backend (validation, middlewares, dispatch, shaping), by method.",
                &m.overhead,
            ),
        ] {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Histogram)?;
            for (i, h) in table.iter().enumerate() {
                if !h.is_empty() {
                    histogram(&mut f, &vec![("method", MethodLabel::at(i).as_str())], h)?;
                }
            }
        }

        let mut f = e.encode_descriptor(
            "mcpgw_backend_requests",
            "Calls to a backend, by outcome (ok, tool_error, or the failure's kind).",
            None,
            MetricType::Counter,
        )?;
        for (name, series) in m.backend_names.iter().zip(m.backends.iter()) {
            for (o, c) in series.requests.iter().enumerate() {
                let v = load(c);
                if v > 0 {
                    let labels = vec![
                        ("backend", name.as_str()),
                        ("outcome", BackendOutcome::label(o)),
                    ];
                    counter(&mut f, &labels, v)?;
                }
            }
        }
        let mut f = e.encode_descriptor(
            "mcpgw_backend_request_duration_seconds",
            "Time a backend took to answer a call (as the gateway waited for it).",
            None,
            MetricType::Histogram,
        )?;
        for (name, series) in m.backend_names.iter().zip(m.backends.iter()) {
            if !series.duration.is_empty() {
                histogram(&mut f, &vec![("backend", name.as_str())], &series.duration)?;
            }
        }

        if let Some(tools) = &m.tools {
            let series = tools.snapshot();
            let mut f = e.encode_descriptor(
                "mcpgw_tool_calls",
                "Calls of a tool at its backend, by outcome ([telemetry] per_tool_metrics).",
                None,
                MetricType::Counter,
            )?;
            for (b, tool, stats) in &series {
                for (o, c) in stats.requests.iter().enumerate() {
                    let v = load(c);
                    if v > 0 {
                        let labels = vec![
                            ("backend", m.backend_names[*b].as_str()),
                            ("tool", tool.as_str()),
                            ("outcome", BackendOutcome::label(o)),
                        ];
                        counter(&mut f, &labels, v)?;
                    }
                }
            }
            let mut f = e.encode_descriptor(
                "mcpgw_tool_call_duration_seconds",
                "Time a backend took to answer a call of a tool ([telemetry] per_tool_metrics).",
                None,
                MetricType::Histogram,
            )?;
            for (b, tool, stats) in &series {
                if !stats.duration.is_empty() {
                    let labels = vec![
                        ("backend", m.backend_names[*b].as_str()),
                        ("tool", tool.as_str()),
                    ];
                    histogram(&mut f, &labels, &stats.duration)?;
                }
            }
        }

        self.encode_backends(&mut e)?;
        self.encode_sessions(&mut e)?;

        let mut f = e.encode_descriptor(
            "mcpgw_streams_open",
            "Response streams open now (SSE responses, sessions' GET streams, HTTP+SSE streams).",
            None,
            MetricType::Gauge,
        )?;
        gauge(&mut f, &vec![], to_i64(load(&m.streams_open)))?;
        let mut f = e.encode_descriptor(
            "mcpgw_requests_in_flight",
            "Requests accepted and not yet answered.",
            None,
            MetricType::Gauge,
        )?;
        gauge(&mut f, &vec![], to_i64(self.state.in_flight))?;
        for (name, help, value) in [
            (
                "mcpgw_cache_hits",
                "resources/read answered from the gateway's cache.",
                load(&m.cache_hits),
            ),
            (
                "mcpgw_cache_misses",
                "resources/read not found in the gateway's cache.",
                load(&m.cache_misses),
            ),
            (
                "mcpgw_messages_dropped",
                "Messages a slow consumer lost (its stream or event channel full).",
                self.state.messages_dropped,
            ),
        ] {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Counter)?;
            counter(&mut f, &vec![], value)?;
        }
        if !m.redaction_labels.is_empty() {
            let mut f = e.encode_descriptor(
                "mcpgw_redactions",
                "Backend answers in which [redaction] found a pattern, by pattern (custom: the operator's own) and mode.",
                None,
                MetricType::Counter,
            )?;
            for (label, counts) in m.redaction_labels.iter().zip(m.redactions.iter()) {
                for (mode, count) in super::REDACTION_MODES.iter().zip(counts) {
                    let v = load(count);
                    if v > 0 {
                        counter(&mut f, &vec![("pattern", label), ("mode", mode)], v)?;
                    }
                }
            }
        }
        for (name, help, table) in [
            (
                "mcpgw_received_bytes",
                "Request body bytes read, by transport.",
                &m.received,
            ),
            (
                "mcpgw_sent_bytes",
                "Response body bytes written (streams included), by transport.",
                &m.sent,
            ),
        ] {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Counter)?;
            for t in Transport::ALL {
                counter(
                    &mut f,
                    &vec![("transport", t.as_str())],
                    load(&table[t as usize]),
                )?;
            }
        }
        Ok(())
    }
}

impl Scrape {
    fn encode_backends(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let backends = &self.state.backends;
        let mut f = e.encode_descriptor(
            "mcpgw_backend_up",
            "1 when the backend is ready (its handshake done), else 0.",
            None,
            MetricType::Gauge,
        )?;
        for b in backends {
            gauge(&mut f, &vec![("backend", b.name.as_str())], i64::from(b.up))?;
        }
        let mut f = e.encode_descriptor(
            "mcpgw_backend",
            "A backend's state, transport, era and generation.",
            None,
            MetricType::Info,
        )?;
        for b in backends {
            let (era, generation) = match b.generation {
                Some(g) if g.is_modern() => ("modern", g.as_str()),
                Some(g) => ("legacy", g.as_str()),
                None => ("none", "none"),
            };
            let labels = vec![
                ("backend", b.name.as_str()),
                ("state", b.state),
                ("transport", b.transport),
                ("era", era),
                ("generation", generation),
            ];
            f.encode_info(&labels)?;
        }
        for (name, help, read) in [
            (
                "mcpgw_backend_in_flight",
                "Data-path requests (calls, reads, gets, completions) in flight at a backend.",
                (|b: &BackendGauges| b.in_flight) as fn(&BackendGauges) -> u64,
            ),
            (
                "mcpgw_backend_max_in_flight",
                "A backend's max_in_flight.",
                |b: &BackendGauges| b.max_in_flight,
            ),
        ] {
            let mut f = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for b in backends {
                gauge(&mut f, &vec![("backend", b.name.as_str())], to_i64(read(b)))?;
            }
        }
        let mut f = e.encode_descriptor(
            "mcpgw_backend_restarts",
            "Times a backend became ready again after its first connection (reconnects and restarts).",
            None,
            MetricType::Counter,
        )?;
        for b in backends {
            counter(&mut f, &vec![("backend", b.name.as_str())], b.restarts)?;
        }
        let mut f = e.encode_descriptor(
            "mcpgw_backend_circuit_state",
            "A backend's circuit breaker: 1 for its current state (closed, open, half_open), 0 for the others.",
            None,
            MetricType::Gauge,
        )?;
        for b in backends {
            for state in ["closed", "open", "half_open"] {
                let labels = vec![("backend", b.name.as_str()), ("state", state)];
                gauge(&mut f, &labels, i64::from(b.circuit == state))?;
            }
        }
        let mut f = e.encode_descriptor(
            "mcpgw_backend_catalog_items",
            "What a backend contributes to the current catalog, by kind.",
            None,
            MetricType::Gauge,
        )?;
        for b in backends {
            for (kind, n) in ["tools", "prompts", "resources", "resource_templates"]
                .into_iter()
                .zip(b.catalog)
            {
                let labels = vec![("backend", b.name.as_str()), ("kind", kind)];
                gauge(&mut f, &labels, to_i64(n))?;
            }
        }
        Ok(())
    }

    fn encode_sessions(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let counts = &self.metrics.sessions;
        let mut f = e.encode_descriptor(
            "mcpgw_sessions",
            "Legacy sessions live on this replica (with an actor), by generation.",
            None,
            MetricType::Gauge,
        )?;
        for (g, n) in Generation::ALL.iter().zip(self.state.sessions) {
            gauge(&mut f, &vec![("generation", g.as_str())], to_i64(n))?;
        }
        let mut f = e.encode_descriptor(
            "mcpgw_sessions_created",
            "Legacy sessions created by an initialize, by generation.",
            None,
            MetricType::Counter,
        )?;
        for g in Generation::ALL {
            counter(
                &mut f,
                &vec![("generation", g.as_str())],
                counts.created_of(g),
            )?;
        }
        let mut f = e.encode_descriptor(
            "mcpgw_sessions_ended",
            "Legacy sessions ended, by generation and reason (deleted, idle, expired, key_dropped, stdio_closed, stream_closed).",
            None,
            MetricType::Counter,
        )?;
        for g in Generation::ALL {
            for why in SessionEnd::ALL {
                let v = counts.ended_of(g, why);
                if v > 0 {
                    let labels = vec![("generation", g.as_str()), ("reason", why.as_str())];
                    counter(&mut f, &labels, v)?;
                }
            }
        }
        Ok(())
    }
}
