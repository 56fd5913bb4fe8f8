//! `mcpgw load merge a.json b.json …`: the reports of several generators (runs made with `--hdr`) made one,
//! exactly: histograms added with HDR's own `add` (the merged percentiles are those of every request of every
//! generator, not an average of percentiles), counts summed, throughput over the union of the windows. The
//! windows are compared: generators that did not load the target at the same time are said to, since their
//! merged throughput is then not a rate the target sustained.
//!
//! It must not guess: a report without histograms, or with a histogram that does not decode, is refused with
//! its file name and the reason.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;

use super::LoadError;
use super::args::{Era, MergeArgs};
use super::hdr;
use super::report::{CpuUse, Merged, OpReport, Report, Window};
use super::stats::{Latency, Outcomes, new_histogram};
use super::timeline::{Point, Timeline};
use super::watch::WatchReport;

/// Runs `mcpgw load merge`: reads the reports, prints the merged table (on standard error with `--json
/// -`), writes the merged JSON with `--json FILE`.
pub(crate) fn run(args: &MergeArgs) -> Result<Report, LoadError> {
    let mut reports = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        reports.push((path.display().to_string(), read(path)?));
    }
    let merged = merge(reports)?;
    let table = merged.table();
    if args.json.as_deref() == Some(Path::new("-")) {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(path) = &args.json {
        merged.write_json(path)?;
    }
    if let Some(path) = &args.html {
        super::html::write(&merged, path)?;
    }
    Ok(merged)
}

/// The report in `path`.
fn read(path: &Path) -> Result<Report, LoadError> {
    let bad = |why: String| LoadError::Merge {
        report: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| bad(format!("not a report of mcpgw load: {e}")))
}

/// The reports, named, made one.
pub(crate) fn merge(reports: Vec<(String, Report)>) -> Result<Report, LoadError> {
    let Some(first) = reports.first().map(|(_, r)| r.clone()) else {
        return Err(LoadError::InvalidArgs(
            "merge needs at least one report".into(),
        ));
    };
    let mut headline = new_histogram();
    let mut ops: Sums = BTreeMap::new();
    let mut steps: BTreeMap<String, Sums> = BTreeMap::new();
    let mut outcomes = Outcomes::default();
    for (name, r) in &reports {
        let bad = |why: String| LoadError::Merge {
            report: name.clone(),
            why,
        };
        let Some(text) = &r.hdr else {
            return Err(bad(
                "it has no histograms: make it with `mcpgw load --hdr --json FILE`".into(),
            ));
        };
        add(&mut headline, text).map_err(|e| bad(format!("latency histogram: {e}")))?;
        outcomes.merge(&r.outcomes);
        fold(&mut ops, &r.operations, "").map_err(bad)?;
        for (group, by_name) in &r.steps {
            let into = steps.entry(group.clone()).or_default();
            fold(into, by_name, &format!("{group}: ")).map_err(bad)?;
        }
    }
    let windows: Vec<Window> = reports.iter().map(|(_, r)| r.window).collect();
    let window = Window {
        start_unix_ms: windows.iter().map(|w| w.start_unix_ms).min().unwrap_or(0),
        end_unix_ms: windows.iter().map(|w| w.end_unix_ms).max().unwrap_or(0),
        late_ms: windows.iter().map(|w| w.late_ms).max().unwrap_or(0),
    };
    let windows_overlap = windows
        .iter()
        .enumerate()
        .all(|(i, a)| windows[i + 1..].iter().all(|b| a.overlaps(b)));
    let duration_s = window.seconds();
    let requests = outcomes.total();
    let answered = requests - outcomes.overflow;
    // A value all reports share, else each different one once, in order, joined.
    let same_opt = |f: &dyn Fn(&Report) -> Option<String>| -> Option<String> {
        let mut all: Vec<String> = Vec::new();
        for v in reports.iter().filter_map(|(_, r)| f(r)) {
            if !all.contains(&v) {
                all.push(v);
            }
        }
        (!all.is_empty()).then(|| all.join(" | "))
    };
    let same = |f: &dyn Fn(&Report) -> String| same_opt(&|r| Some(f(r))).unwrap_or_default();
    let sum_f = |f: &dyn Fn(&Report) -> Option<f64>| -> Option<f64> {
        reports.iter().map(|(_, r)| f(r)).sum::<Option<f64>>()
    };
    let era = if reports.iter().all(|(_, r)| r.era == first.era) {
        first.era
    } else {
        Era::Mixed
    };
    let operations = finish(ops);
    let steps = steps
        .into_iter()
        .map(|(group, sums)| (group, finish(sums)))
        .collect();
    Ok(Report {
        url: same(&|r| r.url.clone()),
        self_test: reports.iter().all(|(_, r)| r.self_test),
        era,
        mode: same(&|r| r.mode.clone()),
        rate_rps: sum_f(&|r| r.rate_rps),
        sessions: reports.iter().map(|(_, r)| r.sessions).sum(),
        mix: same(&|r| r.mix.clone()),
        tool: same_opt(&|r| r.tool.clone()),
        uri: same_opt(&|r| r.uri.clone()),
        ask_tool: same_opt(&|r| r.ask_tool.clone()),
        setup_s: reports.iter().map(|(_, r)| r.setup_s).fold(0.0, f64::max),
        duration_s,
        requests,
        errors: outcomes.errors(),
        throughput_rps: (answered as f64 / duration_s.max(1e-9) * 10.0).round() / 10.0,
        latency_ms: Latency::of(&headline),
        outcomes,
        operations,
        cpu: CpuUse {
            generator_cores: sum_f(&|r| r.cpu.generator_cores),
            other_cores: sum_f(&|r| r.cpu.other_cores),
            available_cores: reports.iter().map(|(_, r)| r.cpu.available_cores).sum(),
            threads: reports.iter().map(|(_, r)| r.cpu.threads).sum(),
        },
        stopped: same(&|r| r.stopped.clone()),
        abandoned: reports.iter().map(|(_, r)| r.abandoned).sum(),
        resent: reports.iter().map(|(_, r)| r.resent).sum(),
        window,
        memory: None,
        timeline: timeline(&reports, window.start_unix_ms),
        watch: watch(&reports),
        hdr: Some(hdr::encode(&headline)),
        steps,
        merged: Some(Merged {
            reports: reports.iter().map(|(name, _)| name.clone()).collect(),
            windows,
            windows_overlap,
        }),
    })
}

/// The generators' timelines as one, on the merged window's clock: each point put in the interval of the
/// merged timeline its end falls in (by its generator's window start), counts and throughputs summed, the
/// watched processes side by side. A second's percentiles cannot be added without its histogram: the merged
/// point has the largest of the generators' (an upper bound, as a thinned timeline's). `None` unless every
/// report has a timeline, all with the same interval.
fn timeline(reports: &[(String, Report)], start_unix_ms: u64) -> Option<Timeline> {
    let all: Vec<(&Timeline, u64)> = reports
        .iter()
        .map(|(_, r)| r.timeline.as_ref().map(|t| (t, r.window.start_unix_ms)))
        .collect::<Option<_>>()?;
    let interval = all.first()?.0.interval_s;
    if interval <= 0.0 || all.iter().any(|(t, _)| t.interval_s != interval) {
        return None;
    }
    let mut slots: BTreeMap<u64, Point> = BTreeMap::new();
    for (t, start) in &all {
        let offset = start.saturating_sub(start_unix_ms) as f64 / 1000.0;
        for p in &t.points {
            let slot = ((p.t + offset) / interval).ceil().max(1.0) as u64;
            let m = slots.entry(slot).or_insert_with(|| Point {
                t: slot as f64 * interval,
                span_s: interval,
                ..Point::default()
            });
            m.requests += p.requests;
            m.throughput_rps += p.throughput_rps;
            m.outcomes = m.outcomes.plus(&p.outcomes);
            m.p50_ms = m.p50_ms.max(p.p50_ms);
            m.p99_ms = m.p99_ms.max(p.p99_ms);
            m.p999_ms = m.p999_ms.max(p.p999_ms);
            m.max_ms = m.max_ms.max(p.max_ms);
            m.processes.extend(p.processes.iter().cloned());
        }
    }
    Some(Timeline {
        interval_s: interval,
        thinned: all.iter().map(|(t, _)| t.thinned).max().unwrap_or(0),
        points: slots.into_values().collect(),
        stream: None,
    })
}

/// The generators' watched processes side by side; the verdict the worst of theirs.
fn watch(reports: &[(String, Report)]) -> Option<WatchReport> {
    let all: Vec<&WatchReport> = reports
        .iter()
        .filter_map(|(_, r)| r.watch.as_ref())
        .collect();
    let mut merged = (*all.first()?).clone();
    merged.processes = all
        .iter()
        .flat_map(|w| w.processes.iter().cloned())
        .collect();
    let any = |v: &str| all.iter().any(|w| w.verdict == v);
    merged.verdict = if any("leak") {
        "leak"
    } else if any("inconclusive") {
        "inconclusive"
    } else {
        "ok"
    }
    .to_owned();
    Some(merged)
}

/// Operations (or steps) by name, each with its summed histogram.
type Sums = BTreeMap<String, (OpReport, Histogram<u64>)>;

/// Adds one report's operations (or one group's steps) to `sums`; `what` prefixes a step's name in errors.
fn fold(sums: &mut Sums, ops: &BTreeMap<String, OpReport>, what: &str) -> Result<(), String> {
    for (op, o) in ops {
        let (sum, h) = sums.entry(op.clone()).or_insert_with(|| {
            let empty = OpReport {
                requests: 0,
                errors: 0,
                measured: o.measured,
                latency_ms: Latency::default(),
                outcomes: Outcomes::default(),
                asks: None,
                hdr: None,
            };
            (empty, new_histogram())
        });
        match &o.hdr {
            Some(text) => {
                add(h, text).map_err(|e| format!("{what}{op}'s latency histogram: {e}"))?
            }
            // An operation none of whose requests was sent (all overflowed) has no histogram.
            None if o.latency_ms == Latency::default() => {}
            None => return Err(format!("{what}{op} has no latency histogram")),
        }
        sum.requests += o.requests;
        sum.errors += o.errors;
        sum.outcomes.merge(&o.outcomes);
        if let Some(a) = &o.asks {
            sum.asks.get_or_insert_with(Default::default).add(a);
        }
    }
    Ok(())
}

/// The summed operations, each with the percentiles of its summed histogram.
fn finish(sums: Sums) -> BTreeMap<String, OpReport> {
    sums.into_iter()
        .map(|(name, (mut o, h))| {
            o.latency_ms = Latency::of(&h);
            o.hdr = (!h.is_empty()).then(|| hdr::encode(&h));
            (name, o)
        })
        .collect()
}

/// Adds the histogram `text` holds to `into`.
fn add(into: &mut Histogram<u64>, text: &str) -> Result<(), String> {
    let h = hdr::decode(text)?;
    into.add(&h)
        .map_err(|e| format!("a histogram beyond the generator's bounds: {e:?}"))
}

#[cfg(test)]
mod tests;
