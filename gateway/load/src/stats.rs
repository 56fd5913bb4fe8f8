//! What a run measures: the operations, the outcome of every request (by class, HTTP status and JSON-RPC
//! code), and latency in HDR histograms (microseconds, 3 significant digits: every percentile is exact to
//! 0.1 %, memory is fixed whatever the count, and histograms of different shards add up exactly).
//!
//! Recording goes to one of a few shards (a `std::sync::Mutex` each, held for the few nanoseconds of an
//! increment, never across an `.await`); the report merges them at the end.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::ask::{AskEras, Tally};

/// The largest latency a histogram tells apart (larger values are recorded as this): one hour.
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Significant decimal digits kept by the histograms.
const SIGFIG: u8 = 3;

/// What a request did. The first five are what `--mix` chooses from and what the headline numbers count;
/// the others are the session set-up and tear-down around them, reported apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Op {
    ToolsList,
    ToolsCall,
    ResourcesRead,
    /// Legacy: a new session (`initialize` + `notifications/initialized`) replacing the old one, which is
    /// then deleted. Modern: `server/discover` again, as a fresh client would.
    Churn,
    /// A `tools/call` of `--ask-tool`, the server's questions answered while it runs (`ask`).
    Ask,
    /// Legacy set-up: `initialize` + `notifications/initialized`.
    Initialize,
    /// Modern set-up: `server/discover`.
    Discover,
    /// Legacy tear-down: `DELETE` of the session.
    Delete,
    /// `--scenario`: every step of every group together (the report's `steps` has them by name).
    Step,
}

impl Op {
    /// Every operation, in report order.
    pub(crate) const ALL: [Op; 9] = [
        Op::ToolsList,
        Op::ToolsCall,
        Op::ResourcesRead,
        Op::Churn,
        Op::Ask,
        Op::Initialize,
        Op::Discover,
        Op::Delete,
        Op::Step,
    ];

    /// Its name in `--mix`, the table and the JSON report.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Op::ToolsList => "tools/list",
            Op::ToolsCall => "tools/call",
            Op::ResourcesRead => "resources/read",
            Op::Churn => "churn",
            Op::Ask => "ask",
            Op::Initialize => "initialize",
            Op::Discover => "server/discover",
            Op::Delete => "delete",
            Op::Step => "scenario",
        }
    }

    /// Whether it is one of the load's own requests (counted in the headline numbers).
    pub(crate) const fn measured(self) -> bool {
        matches!(
            self,
            Op::ToolsList | Op::ToolsCall | Op::ResourcesRead | Op::Churn | Op::Ask | Op::Step
        )
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A JSON-RPC result (not `isError`), id matching.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// A JSON-RPC error with this code (whatever the HTTP status).
    RpcError(i64),
    /// A non-2xx HTTP status without a JSON-RPC error in the body (or an ask's answer not accepted with
    /// 202).
    HttpError,
    /// A result the load generator does not follow up (`resultType` `input_required`, `task`, …).
    Incomplete,
    /// An answer that breaks the protocol: the reason.
    Invalid(&'static str),
    /// No complete answer within `--timeout`.
    Timeout,
    /// The connection failed: how (refused, closed before any answer, …; a closed set).
    Transport(&'static str),
    /// Open loop only: not sent, because `--max-in-flight` requests were already in flight.
    Overflow,
}

impl Outcome {
    /// Whether it counts as an error in the headline numbers.
    pub(crate) fn is_error(&self) -> bool {
        !matches!(self, Outcome::Ok)
    }
}

/// Counts of outcomes: by class, by HTTP status and by JSON-RPC code.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcomes {
    /// Results (not `isError`).
    pub ok: u64,
    /// Results with `isError: true`.
    pub tool_error: u64,
    /// JSON-RPC errors (any HTTP status).
    pub jsonrpc_error: u64,
    /// Non-2xx answers without a JSON-RPC error, and asks whose answer was not accepted with 202.
    pub http_error: u64,
    /// `input_required` or `task` results not followed up (an ask: still `input_required` after its rounds).
    pub incomplete: u64,
    /// Answers that break the protocol (id mismatch, not JSON-RPC, no `resultType` on 2026-07-28, …).
    pub invalid_response: u64,
    /// No complete answer within `--timeout`.
    pub timeout: u64,
    /// Connection failures.
    pub transport_error: u64,
    /// Open loop: not sent because `--max-in-flight` requests were in flight.
    pub overflow: u64,
    /// Every answer by HTTP status.
    pub by_http_status: BTreeMap<u16, u64>,
    /// Every JSON-RPC error by code.
    pub by_jsonrpc_code: BTreeMap<i64, u64>,
    /// `invalid_response` by reason.
    pub invalid_reasons: BTreeMap<String, u64>,
    /// `transport_error` by kind.
    #[serde(default)]
    pub transport_reasons: BTreeMap<String, u64>,
}

impl Outcomes {
    /// Counts one request: its HTTP status when it got one, and its outcome.
    pub(crate) fn add(&mut self, status: Option<u16>, outcome: &Outcome) {
        if let Some(s) = status {
            *self.by_http_status.entry(s).or_default() += 1;
        }
        match outcome {
            Outcome::Ok => self.ok += 1,
            Outcome::ToolError => self.tool_error += 1,
            Outcome::RpcError(code) => {
                self.jsonrpc_error += 1;
                *self.by_jsonrpc_code.entry(*code).or_default() += 1;
            }
            Outcome::HttpError => self.http_error += 1,
            Outcome::Incomplete => self.incomplete += 1,
            Outcome::Invalid(why) => {
                self.invalid_response += 1;
                *self.invalid_reasons.entry((*why).to_owned()).or_default() += 1;
            }
            Outcome::Timeout => self.timeout += 1,
            Outcome::Transport(kind) => {
                self.transport_error += 1;
                *self
                    .transport_reasons
                    .entry((*kind).to_owned())
                    .or_default() += 1;
            }
            Outcome::Overflow => self.overflow += 1,
        }
    }

    /// Adds another set of counts.
    pub(crate) fn merge(&mut self, other: &Outcomes) {
        self.ok += other.ok;
        self.tool_error += other.tool_error;
        self.jsonrpc_error += other.jsonrpc_error;
        self.http_error += other.http_error;
        self.incomplete += other.incomplete;
        self.invalid_response += other.invalid_response;
        self.timeout += other.timeout;
        self.transport_error += other.transport_error;
        self.overflow += other.overflow;
        for (k, v) in &other.by_http_status {
            *self.by_http_status.entry(*k).or_default() += v;
        }
        for (k, v) in &other.by_jsonrpc_code {
            *self.by_jsonrpc_code.entry(*k).or_default() += v;
        }
        for (k, v) in &other.invalid_reasons {
            *self.invalid_reasons.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.transport_reasons {
            *self.transport_reasons.entry(k.clone()).or_default() += v;
        }
    }

    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.ok + self.errors()
    }

    /// Every request that did not end in a plain result.
    pub fn errors(&self) -> u64 {
        self.tool_error
            + self.jsonrpc_error
            + self.http_error
            + self.incomplete
            + self.invalid_response
            + self.timeout
            + self.transport_error
            + self.overflow
    }
}

/// An empty latency histogram (microseconds).
pub(crate) fn new_histogram() -> Histogram<u64> {
    // Constant bounds that hdrhistogram accepts (low ≥ 1, high ≥ 2 × low, sigfig ≤ 5): cannot fail.
    Histogram::new_with_bounds(1, MAX_LATENCY_US, SIGFIG)
        .expect("constant histogram bounds are valid")
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Smallest.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Latency {
    /// The percentiles of a histogram of microseconds (all zero when it is empty).
    pub(crate) fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
        }
    }
}

/// What one operation recorded.
#[derive(Debug, Clone)]
pub(crate) struct OpStats {
    /// Latency of every request that was sent (whatever its outcome); allocated on first use.
    pub(crate) latency: Option<Histogram<u64>>,
    pub(crate) outcomes: Outcomes,
}

/// Everything recorded, per operation.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    ops: Vec<OpStats>,
    /// What the asks did besides their outcomes, per era.
    pub(crate) asks: AskEras,
}

impl Default for Stats {
    fn default() -> Stats {
        let empty = OpStats {
            latency: None,
            outcomes: Outcomes::default(),
        };
        Stats {
            ops: vec![empty; Op::ALL.len()],
            asks: AskEras::default(),
        }
    }
}

impl Stats {
    /// Records one request: its outcome, and its latency unless it was never sent.
    pub(crate) fn record(
        &mut self,
        op: Op,
        status: Option<u16>,
        outcome: &Outcome,
        latency: Option<Duration>,
    ) {
        let s = &mut self.ops[op.index()];
        s.outcomes.add(status, outcome);
        if let Some(d) = latency {
            let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            s.latency
                .get_or_insert_with(new_histogram)
                .saturating_record(us);
        }
    }

    /// Records what one ask did besides its outcome (recorded by [`Stats::record`]).
    pub(crate) fn record_ask(&mut self, modern: bool, tally: &Tally, ok: bool) {
        self.asks.add(modern, tally, ok);
    }

    /// Adds another shard's records.
    pub(crate) fn merge(&mut self, other: &Stats) {
        self.asks.merge(&other.asks);
        for (mine, theirs) in self.ops.iter_mut().zip(&other.ops) {
            mine.outcomes.merge(&theirs.outcomes);
            if let Some(h) = &theirs.latency {
                let into = mine.latency.get_or_insert_with(new_histogram);
                // Same bounds on both sides, so adding cannot fail; saturate in the impossible case.
                if into.add(h).is_err() {
                    for v in h.iter_recorded() {
                        into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
                    }
                }
            }
        }
    }

    /// What `op` recorded.
    pub(crate) fn op(&self, op: Op) -> &OpStats {
        &self.ops[op.index()]
    }

    /// The measured operations together: one histogram and one set of counts.
    pub(crate) fn measured(&self) -> (Histogram<u64>, Outcomes) {
        let mut h = new_histogram();
        let mut o = Outcomes::default();
        for op in Op::ALL.into_iter().filter(|op| op.measured()) {
            let s = self.op(op);
            o.merge(&s.outcomes);
            if let Some(l) = &s.latency {
                let _ = h.add(l);
            }
        }
        (h, o)
    }
}

/// Shards of [`Stats`], so that concurrent sessions rarely wait for each other.
#[derive(Debug)]
pub(crate) struct Shards(Vec<Mutex<Stats>>);

impl Shards {
    pub(crate) fn new(n: usize) -> Shards {
        Shards(
            (0..n.max(1))
                .map(|_| Mutex::new(Stats::default()))
                .collect(),
        )
    }

    /// Records into the shard of `key` (a session index).
    pub(crate) fn record(
        &self,
        key: usize,
        op: Op,
        status: Option<u16>,
        outcome: &Outcome,
        latency: Option<Duration>,
    ) {
        let shard = &self.0[key % self.0.len()];
        // A poisoned shard still holds valid counts (record cannot panic halfway in practice).
        let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
        s.record(op, status, outcome, latency);
    }

    /// Records what one ask of session `key` did besides its outcome.
    pub(crate) fn record_ask(&self, key: usize, modern: bool, tally: &Tally, ok: bool) {
        let shard = &self.0[key % self.0.len()];
        let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
        s.record_ask(modern, tally, ok);
    }

    /// All shards merged.
    pub(crate) fn merged(&self) -> Stats {
        let mut all = Stats::default();
        for shard in &self.0 {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            all.merge(&s);
        }
        all
    }
}

#[cfg(test)]
mod tests;
