//! What happened over time: a sampler task, once a second, merges the statistics' shards, subtracts the
//! previous merge (HDR histograms subtract exactly) and so gets that second's requests, outcomes by class and
//! p50/p99/p99.9 at no cost to the requests; it reads the watched processes (`watch`) at the same time,
//! appends the second to `--stream FILE` as one JSON line (written at once: a run killed at hour 2 keeps
//! what it measured) and to the report's [`Timeline`].
//!
//! It must stay bounded: the in-memory timeline holds at most [`MAX_POINTS`] points (when full, neighbours
//! are merged in pairs and new points cover twice as long; the stream file keeps every second), and the
//! sampler keeps two cumulative histograms, never the samples. It must not block the runtime's workers:
//! each tick's work (merging, `/proc`, the file) runs on the blocking pool.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio_util::sync::CancellationToken;

use super::LoadError;
use super::args::{Mode, Plan};
use super::session::Ctx;
use super::stats::{Outcomes, new_histogram};
use super::watch::{ProcSample, Watch, WatchReport};

/// Most points the report's timeline holds (2 h at 1 s is 7,200 seconds: 1,800 points of 4 s).
pub(crate) const MAX_POINTS: usize = 2048;

/// Requests by how they ended (the classes of [`Outcomes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Classes {
    pub ok: u64,
    pub tool_error: u64,
    pub jsonrpc_error: u64,
    pub http_error: u64,
    pub incomplete: u64,
    pub invalid_response: u64,
    pub timeout: u64,
    pub transport_error: u64,
    pub overflow: u64,
}

impl Classes {
    /// Every class with its name, in report order.
    pub fn named(&self) -> [(&'static str, u64); 9] {
        [
            ("ok", self.ok),
            ("tool_error", self.tool_error),
            ("jsonrpc_error", self.jsonrpc_error),
            ("http_error", self.http_error),
            ("incomplete", self.incomplete),
            ("invalid_response", self.invalid_response),
            ("timeout", self.timeout),
            ("transport_error", self.transport_error),
            ("overflow", self.overflow),
        ]
    }

    fn of(o: &Outcomes) -> Classes {
        Classes {
            ok: o.ok,
            tool_error: o.tool_error,
            jsonrpc_error: o.jsonrpc_error,
            http_error: o.http_error,
            incomplete: o.incomplete,
            invalid_response: o.invalid_response,
            timeout: o.timeout,
            transport_error: o.transport_error,
            overflow: o.overflow,
        }
    }

    /// `self` minus `earlier` (counts only grow; saturating in any case).
    fn since(&self, e: &Classes) -> Classes {
        Classes {
            ok: self.ok.saturating_sub(e.ok),
            tool_error: self.tool_error.saturating_sub(e.tool_error),
            jsonrpc_error: self.jsonrpc_error.saturating_sub(e.jsonrpc_error),
            http_error: self.http_error.saturating_sub(e.http_error),
            incomplete: self.incomplete.saturating_sub(e.incomplete),
            invalid_response: self.invalid_response.saturating_sub(e.invalid_response),
            timeout: self.timeout.saturating_sub(e.timeout),
            transport_error: self.transport_error.saturating_sub(e.transport_error),
            overflow: self.overflow.saturating_sub(e.overflow),
        }
    }

    pub(crate) fn plus(&self, o: &Classes) -> Classes {
        Classes {
            ok: self.ok + o.ok,
            tool_error: self.tool_error + o.tool_error,
            jsonrpc_error: self.jsonrpc_error + o.jsonrpc_error,
            http_error: self.http_error + o.http_error,
            incomplete: self.incomplete + o.incomplete,
            invalid_response: self.invalid_response + o.invalid_response,
            timeout: self.timeout + o.timeout,
            transport_error: self.transport_error + o.transport_error,
            overflow: self.overflow + o.overflow,
        }
    }

    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.named().iter().map(|(_, n)| n).sum()
    }
}

/// One interval of the load (one second, or more once the timeline was thinned).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Point {
    /// The end of the interval, seconds since the load started.
    pub t: f64,
    /// Its length in seconds.
    pub span_s: f64,
    /// Measured requests that ended in it (overflowed ones included).
    pub requests: u64,
    /// Requests answered (any outcome, overflow excepted) per second.
    pub throughput_rps: f64,
    /// The requests by outcome class.
    pub outcomes: Classes,
    /// Latency percentiles of the requests that ended in it (0 when none did); in a point merged from
    /// two, the larger of the two (an upper bound).
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// The watched processes at its end (`cpu_cores`: the mean over the interval).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcSample>,
}

impl Point {
    /// The requests of `h` and `outcomes` over `span_s` seconds ending at `t`.
    fn of(t: f64, span_s: f64, h: &Histogram<u64>, outcomes: Classes) -> Point {
        let ms = |q: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / 1000.0
            }
        };
        let requests = outcomes.total();
        Point {
            t: round(t, 3),
            span_s: round(span_s, 3),
            requests,
            throughput_rps: round((requests - outcomes.overflow) as f64 / span_s.max(1e-3), 1),
            outcomes,
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            max_ms: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1000.0
            },
            processes: Vec::new(),
        }
    }

    /// `self` followed by `later`, as one point.
    fn merged(&self, later: &Point) -> Point {
        let span_s = round(self.span_s + later.span_s, 3);
        let outcomes = self.outcomes.plus(&later.outcomes);
        let requests = self.requests + later.requests;
        let processes = later
            .processes
            .iter()
            .map(|p| {
                let before = self.processes.iter().find(|e| e.pid == p.pid);
                let cpu = match before {
                    Some(e) => (e.cpu_cores * self.span_s + p.cpu_cores * later.span_s) / span_s,
                    None => p.cpu_cores,
                };
                ProcSample {
                    cpu_cores: round(cpu, 3),
                    ..p.clone()
                }
            })
            .collect();
        Point {
            t: later.t,
            span_s,
            requests,
            throughput_rps: round((requests - outcomes.overflow) as f64 / span_s.max(1e-3), 1),
            outcomes,
            p50_ms: self.p50_ms.max(later.p50_ms),
            p99_ms: self.p99_ms.max(later.p99_ms),
            p999_ms: self.p999_ms.max(later.p999_ms),
            max_ms: self.max_ms.max(later.max_ms),
            processes,
        }
    }
}

/// The load over time, bounded.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Timeline {
    /// Seconds a new point covers: 1, doubled each time the timeline was full and thinned.
    pub interval_s: f64,
    /// Times it was thinned (neighbouring points merged in pairs).
    pub thinned: u32,
    /// The points, oldest first.
    pub points: Vec<Point>,
    /// `--stream FILE`, where every second was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
}

impl Timeline {
    fn new() -> Timeline {
        Timeline {
            interval_s: 1.0,
            ..Timeline::default()
        }
    }

    /// Appends a point; when that makes `cap` points, merges them in pairs and doubles the interval.
    pub(crate) fn push(&mut self, p: Point, cap: usize) {
        self.points.push(p);
        if self.points.len() >= cap.max(2) {
            let old = std::mem::take(&mut self.points);
            let mut pairs = old.chunks_exact(2);
            self.points = pairs
                .by_ref()
                .map(|pair| pair[0].merged(&pair[1]))
                .collect();
            self.points.extend(pairs.remainder().iter().cloned());
            self.interval_s *= 2.0;
            self.thinned += 1;
        }
    }
}

/// What the sampler needs besides the statistics.
#[derive(Debug)]
pub(crate) struct Soak {
    pub(crate) watch: Watch,
    pub(crate) stream: Option<(PathBuf, std::fs::File)>,
    /// The first line of the stream (the run's parameters).
    pub(crate) head: serde_json::Value,
}

impl Soak {
    /// Opens `--stream FILE` (created or truncated) and checks the watched processes.
    pub(crate) fn open(watch: Watch, stream: Option<&Path>) -> Result<Soak, LoadError> {
        let stream = match stream {
            None => None,
            Some(path) => Some((
                path.to_path_buf(),
                std::fs::File::create(path).map_err(|error| LoadError::Write {
                    path: path.to_path_buf(),
                    error,
                })?,
            )),
        };
        Ok(Soak {
            watch,
            stream,
            head: serde_json::Value::Null,
        })
    }
}

/// The stream's first line: what is run, against what, since when.
pub(crate) fn head(url: &str, plan: &Plan, pids: &[u32]) -> serde_json::Value {
    let rate = match plan.mode {
        Mode::Open { rate, .. } => Some(rate),
        Mode::Closed => None,
    };
    serde_json::json!({
        "url": url,
        "era": plan.era.as_str(),
        "mode": if rate.is_some() { "open" } else { "closed" },
        "rate_rps": rate,
        "sessions": plan.sessions,
        "mix": plan.mix.describe(),
        "threads": plan.threads,
        "duration_s": plan.limit.duration.as_secs_f64(),
        "watch_pids": pids,
    })
}

/// The sampler's state between ticks.
#[derive(Debug)]
struct Sampler {
    soak: Soak,
    /// The cumulative histogram and counts at the previous tick, and at the start of the open interval.
    prev: (Histogram<u64>, Classes, f64),
    open: (Histogram<u64>, Classes, f64),
    /// The open interval's CPU of each watched process, as core-seconds.
    open_cpu: Vec<(u32, f64)>,
    /// Ticks in the open interval (it closes at `interval_s` ticks: tick times drift a little).
    open_ticks: u32,
    timeline: Timeline,
    cap: usize,
    broken: Option<String>,
}

impl Sampler {
    fn new(soak: Soak, cap: usize) -> Sampler {
        let zero = (new_histogram(), Classes::default(), 0.0);
        Sampler {
            soak,
            prev: zero.clone(),
            open: zero,
            open_cpu: Vec::new(),
            open_ticks: 0,
            timeline: Timeline::new(),
            cap,
            broken: None,
        }
    }

    fn write_line(&mut self, value: &impl serde::Serialize) {
        let Some((path, file)) = &mut self.soak.stream else {
            return;
        };
        if self.broken.is_some() {
            return;
        }
        let mut line = serde_json::to_vec(value).unwrap_or_default();
        line.push(b'\n');
        if let Err(e) = file.write_all(&line) {
            let why = format!("cannot write {}: {e}; streaming stopped", path.display());
            eprintln!("mcpgw load: {why}");
            self.broken = Some(why);
        }
    }

    /// One tick at `t` seconds into the load, with the cumulative statistics; `last` closes the open
    /// interval whatever its length.
    fn tick(&mut self, t: f64, cum: (Histogram<u64>, Classes), last: bool) {
        let (hist, classes) = cum;
        if t - self.prev.2 < 0.001 {
            return; // the load ended just as a tick was taken
        }
        let processes = self.soak.watch.sample(t);
        let mut second = hist.clone();
        // The cumulative counts only grow, so this cannot fail; an empty second in the impossible case.
        if second.subtract(&self.prev.0).is_err() {
            second.reset();
        }
        let span = t - self.prev.2;
        let mut point = Point::of(t, span, &second, classes.since(&self.prev.1));
        point.processes = processes;
        self.write_line(&point);
        for p in &point.processes {
            match self.open_cpu.iter_mut().find(|(pid, _)| *pid == p.pid) {
                Some((_, c)) => *c += p.cpu_cores * span,
                None => self.open_cpu.push((p.pid, p.cpu_cores * span)),
            }
        }
        self.prev = (hist.clone(), classes, t);
        // The open interval ends when it covers the timeline's interval.
        let open_span = t - self.open.2;
        self.open_ticks += 1;
        if last || f64::from(self.open_ticks) >= self.timeline.interval_s {
            let mut covered = hist.clone();
            if covered.subtract(&self.open.0).is_err() {
                covered.reset();
            }
            let mut p = Point::of(t, open_span, &covered, classes.since(&self.open.1));
            p.processes = point
                .processes
                .iter()
                .map(|s| {
                    let cpu = self
                        .open_cpu
                        .iter()
                        .find(|(pid, _)| *pid == s.pid)
                        .map_or(0.0, |(_, c)| c / open_span.max(1e-3));
                    ProcSample {
                        cpu_cores: round(cpu, 3),
                        ..s.clone()
                    }
                })
                .collect();
            self.timeline.push(p, self.cap);
            self.open = (hist, classes, t);
            self.open_cpu.clear();
            self.open_ticks = 0;
        }
    }
}

/// The sampler's result.
#[derive(Debug)]
pub(crate) struct Sampled {
    pub(crate) timeline: Timeline,
    pub(crate) watch: Option<WatchReport>,
}

/// Samples once a second from `start` until `done`, then once more (the last, partial second).
pub(crate) async fn run(
    ctx: Arc<Ctx>,
    soak: Soak,
    start: Instant,
    done: CancellationToken,
) -> Sampled {
    let mut sampler = Sampler::new(soak, MAX_POINTS);
    sampler.soak.watch.prime();
    let mut head = std::mem::take(&mut sampler.soak.head);
    if let Some(h) = head.as_object_mut() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        h.insert("load_started_unix_ms".into(), now.into());
    }
    if !head.is_null() {
        sampler.write_line(&serde_json::json!({ "run": head }));
    }
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(start + Duration::from_secs(1)),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let last = tokio::select! {
            () = done.cancelled() => true,
            _ = tick.tick() => false,
        };
        let ctx = ctx.clone();
        let work = tokio::task::spawn_blocking(move || {
            let t = start.elapsed().as_secs_f64();
            let (h, o) = ctx.stats.merged().measured();
            sampler.tick(t, (h, Classes::of(&o)), last);
            sampler
        });
        sampler = match work.await {
            Ok(s) => s,
            // The tick panicked (a bug): the timeline so far is lost with it.
            Err(_) => {
                return Sampled {
                    timeline: Timeline::new(),
                    watch: None,
                };
            }
        };
        if last {
            break;
        }
    }
    let watch = (!sampler.soak.watch.is_empty()).then(|| sampler.soak.watch.report());
    let mut timeline = std::mem::take(&mut sampler.timeline);
    if let Some((path, _)) = &sampler.soak.stream {
        timeline.stream = Some(path.display().to_string());
        let end = serde_json::json!({ "end": {
            "t": round(start.elapsed().as_secs_f64(), 3),
            "leak_verdict": watch.as_ref().map(|w| w.verdict.clone()),
            "stream_error": sampler.broken,
        }});
        sampler.write_line(&end);
    }
    Sampled { timeline, watch }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests;
