//! The result of a run: [`Report`], printed as a table on standard output and written as JSON by
//! `--json FILE`. The JSON's top level has `throughput_rps`, `latency_ms` (`p50`, `p90`, `p99`, `p999`,
//! `max`, plus `min` and `mean`) and `outcomes`, and also `requests`, `errors`, `duration_s`, `sessions`,
//! `era`, the per-operation breakdown (set-up and tear-down included, apart from the headline numbers; `ask`
//! with its questions answered and declined and its answers refused, in all and per era) and the generator's CPU use.

use std::collections::BTreeMap;
use std::path::Path;

use super::LoadError;
use super::args::Era;
use super::ask::AskReport;
use super::hdr;
use super::stats::{Latency, Op, OpStats, Outcomes, Stats};
use super::timeline::Timeline;
use super::watch::WatchReport;

/// What one operation did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct OpReport {
    /// Requests of this kind.
    pub requests: u64,
    /// … that did not end in a plain result.
    pub errors: u64,
    /// Whether it is one of the load's requests (false: session set-up or tear-down).
    pub measured: bool,
    /// Latency percentiles.
    pub latency_ms: Latency,
    /// Outcome counts.
    pub outcomes: Outcomes,
    /// `ask` only: `questions_answered`, `answers_refused` and `by_era` (beside the fields above).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub asks: Option<AskReport>,
    /// With `--hdr`: the latency histogram itself (microseconds), HDR's V2 serialization in base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdr: Option<String>,
}

impl OpReport {
    /// The report of what one operation (or one scenario step) recorded.
    /// With `hdr`, its histogram too.
    pub(crate) fn of(s: &OpStats, measured: bool, asks: Option<AskReport>, hdr: bool) -> OpReport {
        OpReport {
            requests: s.outcomes.total(),
            errors: s.outcomes.errors(),
            measured,
            latency_ms: s.latency.as_ref().map(Latency::of).unwrap_or_default(),
            outcomes: s.outcomes.clone(),
            asks,
            hdr: if hdr {
                s.latency.as_ref().map(hdr::encode)
            } else {
                None
            },
        }
    }
}

/// CPU used during the load, in cores (CPU seconds per second); `None` where it cannot be measured.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct CpuUse {
    /// The generator's threads.
    pub generator_cores: Option<f64>,
    /// The other threads of this process (with `--self-test`: the in-process mock backend).
    pub other_cores: Option<f64>,
    /// CPUs of this machine.
    pub available_cores: usize,
    /// The generator's worker threads.
    pub threads: usize,
}

impl CpuUse {
    /// The CPU the process's threads used over a load of `duration_s` (`cpu`: `None` where it cannot be
    /// measured), with `threads` generator workers.
    pub(crate) fn measured(
        cpu: Option<super::progress::Cpu>,
        duration_s: f64,
        threads: usize,
    ) -> CpuUse {
        let cores = |d: std::time::Duration| d.as_secs_f64() / duration_s.max(1e-9);
        CpuUse {
            generator_cores: cpu.map(|c| cores(c.generator)),
            other_cores: cpu.map(|c| cores(c.other)),
            available_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            threads,
        }
    }
}

/// The generator's resident memory (Linux), in MiB: before its sessions were set up, once they were, and at
/// its peak; and what each session added. `None` elsewhere, and in a merged report.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryUse {
    /// After the probe, before the set-up.
    pub before_setup_mib: f64,
    /// Once every session was set up, before the load.
    pub after_setup_mib: f64,
    /// The process's peak (`VmHWM`), the load included.
    pub peak_mib: f64,
    /// (after set-up − before) / sessions, in KiB.
    pub per_session_kib: f64,
}

/// When the load ran: from its first request to the end of its last, in milliseconds since the Unix epoch
/// (this machine's clock). Generators on several hosts compare theirs (`merge`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// The load's start.
    pub start_unix_ms: u64,
    /// The load's end.
    pub end_unix_ms: u64,
    /// With `--start-at`/`--start-in`: how late the load started (set-up took longer), else 0.
    #[serde(default)]
    pub late_ms: u64,
}

impl Window {
    /// The window of a load that started at `start` and lasted `duration_s`, `late_ms` after `--start-at`.
    pub(crate) fn of(start: std::time::SystemTime, duration_s: f64, late_ms: u64) -> Window {
        let start_unix_ms = super::unix_ms(start);
        Window {
            start_unix_ms,
            end_unix_ms: start_unix_ms + (duration_s * 1000.0).round() as u64,
            late_ms,
        }
    }

    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        self.end_unix_ms.saturating_sub(self.start_unix_ms) as f64 / 1000.0
    }

    /// Whether it overlaps `other` (shares more than an instant).
    pub fn overlaps(&self, other: &Window) -> bool {
        self.start_unix_ms < other.end_unix_ms && other.start_unix_ms < self.end_unix_ms
    }
}

/// The result of a run (or of several merged: `merge`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// The target.
    pub url: String,
    /// Whether the target was the in-process mock of `--self-test`.
    pub self_test: bool,
    /// Session era.
    pub era: Era,
    /// `closed` or `open`.
    pub mode: String,
    /// Open loop: the scheduled rate.
    pub rate_rps: Option<f64>,
    /// Concurrent sessions.
    pub sessions: usize,
    /// The scenario mix (`op=weight,…`).
    pub mix: String,
    /// The tool called, if any.
    pub tool: Option<String>,
    /// The resource read, if any.
    pub uri: Option<String>,
    /// The tool of `ask`, if any.
    pub ask_tool: Option<String>,
    /// Time to set the sessions up, before the load.
    pub setup_s: f64,
    /// Length of the load (from its start to the end of its last request).
    pub duration_s: f64,
    /// Measured requests (overflowed ones included).
    pub requests: u64,
    /// … that did not end in a plain result.
    pub errors: u64,
    /// Requests answered (any outcome, overflow excepted) per second.
    pub throughput_rps: f64,
    /// Latency of the measured requests.
    pub latency_ms: Latency,
    /// Outcomes of the measured requests.
    pub outcomes: Outcomes,
    /// Per operation, set-up and tear-down included.
    pub operations: BTreeMap<String, OpReport>,
    /// CPU use during the load.
    pub cpu: CpuUse,
    /// Why sending stopped: `requests`, `duration` or `deadline`.
    pub stopped: String,
    /// Requests still in flight when the hard deadline ended the run (not counted).
    pub abandoned: u64,
    /// Sendings again, on a new connection, of requests whose connection was closed before any answer came
    /// back (at most twice per request; each request is counted once, by the outcome of its last sending).
    pub resent: u64,
    /// When the load ran.
    #[serde(default)]
    pub window: Window,
    /// The generator's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    /// With `--hdr`: the measured requests' latency histogram (microseconds), HDR's V2 serialization in
    /// base64, as each operation's `hdr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdr: Option<String>,
    /// A merged report: the reports it adds up, in the order given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Merged>,
    /// `--scenario`: each group's steps by their name (the headline numbers are theirs, all together).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steps: BTreeMap<String, BTreeMap<String, OpReport>>,
    /// The load over time (`timeline`): a point a second, bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// `--watch-pid`: the watched processes and the leak check (`watch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchReport>,
}

/// What `merge` adds to the report it makes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Merged {
    /// The reports merged (their file names), one per generator.
    pub reports: Vec<String>,
    /// Each report's window, in the same order.
    pub windows: Vec<Window>,
    /// Whether every window overlaps every other: otherwise the generators did not load the target at the
    /// same time, and the merged throughput is not the rate the target sustained.
    pub windows_overlap: bool,
}

/// What the run knows besides its statistics.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub(crate) url: String,
    pub(crate) self_test: bool,
    pub(crate) era: Era,
    pub(crate) rate: Option<f64>,
    pub(crate) sessions: usize,
    pub(crate) mix: String,
    pub(crate) tool: Option<String>,
    pub(crate) uri: Option<String>,
    pub(crate) ask_tool: Option<String>,
    pub(crate) setup_s: f64,
    pub(crate) duration_s: f64,
    pub(crate) cpu: CpuUse,
    pub(crate) stopped: &'static str,
    pub(crate) abandoned: u64,
    pub(crate) resent: u64,
    pub(crate) window: Window,
    pub(crate) memory: Option<MemoryUse>,
    /// Whether to carry the histograms (`--hdr`).
    pub(crate) hdr: bool,
}

impl Report {
    pub(crate) fn new(c: Context, stats: &Stats) -> Report {
        let (hist, outcomes) = stats.measured();
        let requests = outcomes.total();
        let answered = requests - outcomes.overflow;
        let operations = Op::ALL
            .into_iter()
            .filter_map(|op| {
                let s = stats.op(op);
                (s.outcomes.total() > 0).then(|| {
                    let asks = (op == Op::Ask).then(|| AskReport::of(&stats.asks));
                    (
                        op.name().to_owned(),
                        OpReport::of(s, op.measured(), asks, c.hdr),
                    )
                })
            })
            .collect();
        Report {
            url: c.url,
            self_test: c.self_test,
            era: c.era,
            mode: if c.rate.is_some() { "open" } else { "closed" }.to_owned(),
            rate_rps: c.rate,
            sessions: c.sessions,
            mix: c.mix,
            tool: c.tool,
            uri: c.uri,
            ask_tool: c.ask_tool,
            setup_s: round(c.setup_s, 3),
            duration_s: round(c.duration_s, 3),
            requests,
            errors: outcomes.errors(),
            throughput_rps: round(answered as f64 / c.duration_s.max(1e-9), 1),
            latency_ms: Latency::of(&hist),
            outcomes,
            operations,
            cpu: c.cpu,
            stopped: c.stopped.to_owned(),
            abandoned: c.abandoned,
            resent: c.resent,
            window: c.window,
            memory: c.memory,
            hdr: c.hdr.then(|| hdr::encode(&hist)),
            merged: None,
            timeline: None,
            watch: None,
            steps: BTreeMap::new(),
        }
    }

    /// Writes the JSON report to `path` (`-`: standard output).
    pub fn write_json(&self, path: &Path) -> Result<(), LoadError> {
        let io = |e: std::io::Error| LoadError::Write {
            path: path.to_path_buf(),
            error: e,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| io(e.into()))?;
        text.push('\n');
        if path == Path::new("-") {
            use std::io::Write;
            std::io::stdout().write_all(text.as_bytes()).map_err(io)
        } else {
            std::fs::write(path, text).map_err(io)
        }
    }
}

pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests;

mod table;
