//! The gateway's metrics (`GET /metrics`): what is counted on the request path, kept in fixed tables of
//! atomics indexed by closed label sets (methods, generations, transports, outcomes, configured backends),
//! and encoded at scrape time with prometheus-client, in Prometheus's text format 0.0.4 or OpenMetrics 1.0
//! ([`encode`]). Gauges that are states (sessions live, a backend's in flight, up, circuit, catalog size)
//! are not kept here: the scrape reads them from their sources of truth and hands them in ([`State`]).
//!
//! **Recording takes no lock**: an array index and a relaxed atomic add or two (per-tool series, when
//! `[telemetry] per_tool_metrics` is on, are found through a per-thread cache after a thread's first call
//! of a tool). It must not import any domain above `config`, allocate on a request's path, or take a label
//! value a client chose.

mod encode;
mod histogram;
mod labels;
mod tools;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use protocol::Generation;

pub use encode::{BackendGauges, Format, State, encode};
pub use histogram::{Histogram};
#[cfg(any(test, feature = "internals"))]
pub use histogram::BOUNDS_SECONDS;
use labels::{
    BACKEND_OUTCOMES, GENERATIONS, METHODS, OUTCOMES, SESSION_ENDS, TRANSPORTS, generation_index,
};
pub use labels::{BackendOutcome, Code, MethodLabel, Outcome, SessionEnd, Transport};
#[cfg(any(test, feature = "internals"))]
pub use labels::KNOWN_CODES;

/// One answered request, as the metrics see it.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    /// Its method.
    pub method: MethodLabel,
    /// The client's generation, when known.
    pub generation: Option<Generation>,
    /// How it arrived.
    pub transport: Transport,
    /// What it ended in.
    pub outcome: Outcome,
    /// From its acceptance (before validation) to its answer; `None` for a refusal before validation ended.
    pub took: Option<Duration>,
    /// The part of `took` spent waiting on backends.
    pub in_backends: Duration,
}

/// Everything counted on the request path. One per gateway (`Gateway::metrics`), shared by every worker.
#[derive(Debug)]
pub struct Metrics {
    /// `mcpgw_requests_total`, indexed by [`request_index`].
    requests: Box<[AtomicU64]>,
    /// `mcpgw_request_duration_seconds`, per method.
    duration: Box<[Histogram]>,
    /// `mcpgw_gateway_overhead_seconds`, per method: the time not spent waiting on a backend.
    overhead: Box<[Histogram]>,
    /// Configured backends, sorted by name (their index in `backends`).
    backend_names: Box<[String]>,
    backends: Box<[BackendSeries]>,
    tools: Option<tools::ToolSeries>,
    streams_open: AtomicU64,
    received: [AtomicU64; TRANSPORTS],
    sent: [AtomicU64; TRANSPORTS],
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    sessions: Arc<SessionCounters>,
    /// `mcpgw_redactions_total`: per pattern label (`with_redaction_labels`), per mode
    /// ([`REDACTION_MODES`]).
    redaction_labels: Box<[&'static str]>,
    redactions: Box<[[AtomicU64; 3]]>,
}

/// The modes of `mcpgw_redactions_total`, in the order `Metrics::redacted` takes them.
pub const REDACTION_MODES: [&str; 3] = ["redact", "refuse", "audit"];

/// One backend's calls: by outcome, and their durations.
#[derive(Debug, Default)]
struct BackendSeries {
    requests: [AtomicU64; BACKEND_OUTCOMES],
    duration: Histogram,
}

fn request_index(method: MethodLabel, g: Option<Generation>, t: Transport, o: Outcome) -> usize {
    ((method.index() * GENERATIONS + generation_index(g)) * TRANSPORTS + t as usize) * OUTCOMES
        + o.index()
}

impl Metrics {
    /// The metrics of a gateway with these backends; `per_tool` is `[telemetry] per_tool_metrics`;
    /// `sessions` the session store's own counters (it counts, the scrape reads them here).
    pub fn new<'a>(
        backends: impl IntoIterator<Item = &'a str>,
        per_tool: bool,
        sessions: Arc<SessionCounters>,
    ) -> Metrics {
        let mut names: Vec<String> = backends.into_iter().map(str::to_owned).collect();
        names.sort();
        names.dedup();
        let size = METHODS * GENERATIONS * TRANSPORTS * OUTCOMES;
        Metrics {
            requests: (0..size).map(|_| AtomicU64::new(0)).collect(),
            duration: (0..METHODS).map(|_| Histogram::default()).collect(),
            overhead: (0..METHODS).map(|_| Histogram::default()).collect(),
            backends: names.iter().map(|_| BackendSeries::default()).collect(),
            tools: per_tool.then(|| tools::ToolSeries::new(names.len())),
            backend_names: names.into_boxed_slice(),
            streams_open: AtomicU64::new(0),
            received: Default::default(),
            sent: Default::default(),
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
            sessions,
            redaction_labels: Box::new([]),
            redactions: Box::new([]),
        }
    }

    /// The same metrics, counting redactions under these pattern labels (a fixed set: the built-in
    /// secrets' names and one for the operator's own patterns).
    pub fn with_redaction_labels(mut self, labels: impl IntoIterator<Item = &'static str>) -> Metrics {
        self.redaction_labels = labels.into_iter().collect();
        self.redactions = self.redaction_labels.iter().map(|_| Default::default()).collect();
        self
    }

    /// One answer in which the pattern of label `label` was found, in mode `mode` (an index of
    /// [`REDACTION_MODES`]).
    pub fn redacted(&self, label: usize, mode: usize) {
        if let Some(c) = self.redactions.get(label).and_then(|m| m.get(mode)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts one answered (or refused) request; its durations when it has them.
    pub fn answered(&self, a: Answered) {
        let at = request_index(a.method, a.generation, a.transport, a.outcome);
        self.requests[at].fetch_add(1, Ordering::Relaxed);
        if let Some(took) = a.took {
            let m = a.method.index();
            self.duration[m].observe(took);
            self.overhead[m].observe(took.saturating_sub(a.in_backends));
        }
    }

    /// How many requests were counted with these labels (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn requests(
        &self,
        method: MethodLabel,
        g: Option<Generation>,
        t: Transport,
        o: Outcome,
    ) -> u64 {
        self.requests[request_index(method, g, t, o)].load(Ordering::Relaxed)
    }

    /// Every request counted, whatever its labels (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn requests_total(&self) -> u64 {
        self.requests
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// A configured backend's place in the tables (`None`: not configured).
    pub fn backend_at(&self, backend: &str) -> Option<BackendIndex> {
        self.backend_names
            .binary_search_by(|n| n.as_str().cmp(backend))
            .ok()
            .map(BackendIndex)
    }

    /// Whether calls are counted per tool too (`[telemetry] per_tool_metrics`).
    pub fn per_tool(&self) -> bool {
        self.tools.is_some()
    }

    /// Counts one call to a configured backend and its duration; `tool` is the backend's own name of the
    /// tool called, as the catalog holds it (counted per tool only with `per_tool_metrics`). A backend that
    /// is not configured is not counted.
    pub fn backend_call(
        &self,
        backend: &str,
        tool: Option<&str>,
        outcome: BackendOutcome,
        took: Duration,
    ) {
        if let Some(at) = self.backend_at(backend) {
            self.backend_call_at(at, tool, outcome, took);
        }
    }

    /// [`Metrics::backend_call`] for a backend already found.
    pub fn backend_call_at(
        &self,
        BackendIndex(at): BackendIndex,
        tool: Option<&str>,
        outcome: BackendOutcome,
        took: Duration,
    ) {
        let series = &self.backends[at];
        series.requests[outcome.index()].fetch_add(1, Ordering::Relaxed);
        series.duration.observe(took);
        if let (Some(tools), Some(tool)) = (&self.tools, tool) {
            tools.record(at, tool, outcome, took);
        }
    }

    /// Calls counted for a backend with this outcome (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn backend_requests(&self, backend: &str, outcome: BackendOutcome) -> u64 {
        self.backend_at(backend).map_or(0, |BackendIndex(at)| {
            self.backends[at].requests[outcome.index()].load(Ordering::Relaxed)
        })
    }

    /// A stream (an SSE response, a session's GET stream, an HTTP+SSE stream) opened; it counts as open
    /// until the guard is dropped, and the bytes written on it are counted through the guard.
    pub fn stream_opened(self: &Arc<Self>, transport: Transport) -> OpenStream {
        self.streams_open.fetch_add(1, Ordering::Relaxed);
        OpenStream {
            metrics: Arc::clone(self),
            transport,
        }
    }

    /// Request body bytes read.
    pub fn received(&self, transport: Transport, bytes: usize) {
        self.received[transport as usize].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Response body bytes written (a whole body, or one event of a stream).
    pub fn sent(&self, transport: Transport, bytes: usize) {
        self.sent[transport as usize].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A `resources/read` answered from the cache (`true`) or not found there.
    pub fn cache(&self, hit: bool) {
        let counter = if hit {
            &self.cache_hits
        } else {
            &self.cache_misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A configured backend's place in the metrics' tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendIndex(usize);

/// A stream counted as open (`mcpgw_streams_open`) until dropped.
#[derive(Debug)]
pub struct OpenStream {
    metrics: Arc<Metrics>,
    transport: Transport,
}

impl OpenStream {
    /// Bytes written on the stream.
    pub fn sent(&self, bytes: usize) {
        self.metrics.sent(self.transport, bytes);
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.metrics.streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Legacy sessions started and ended, per generation: counted by the session store, read by the scrape.
#[derive(Debug, Default)]
pub struct SessionCounters {
    created: [AtomicU64; Generation::ALL.len()],
    ended: [[AtomicU64; SESSION_ENDS]; Generation::ALL.len()],
}

impl SessionCounters {
    /// A session was created by an `initialize` (not one rebuilt from its id).
    pub fn created(&self, g: Generation) {
        self.created[g as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A session ended.
    pub fn ended(&self, g: Generation, why: SessionEnd) {
        self.ended[g as usize][why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Sessions created of a generation (tests).
    pub fn created_of(&self, g: Generation) -> u64 {
        self.created[g as usize].load(Ordering::Relaxed)
    }

    /// Sessions of a generation ended for this reason (tests).
    pub fn ended_of(&self, g: Generation, why: SessionEnd) -> u64 {
        self.ended[g as usize][why as usize].load(Ordering::Relaxed)
    }
}

/// The process's `mcpgw_build_info` labels.
pub fn build_info() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("version", env!("CARGO_PKG_VERSION")),
        ("os", std::env::consts::OS),
        ("arch", std::env::consts::ARCH),
    ])
}
