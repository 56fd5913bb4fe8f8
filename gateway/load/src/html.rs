//! `--html FILE`: a [`Report`] as one self-contained page — the run's parameters and headline numbers,
//! throughput and p50/p99/p99.9 per second, outcomes over time, the latency distribution (a percentile
//! curve on a log axis), per-operation and outcome tables, and the watched processes' RSS and CPU over time
//! with the leak check. Charts are inline SVG (`svg`); every plotted value is also in the chart's
//! `data-x`/`data-y` and every table cell has a `data-key`, so what the page shows can be checked.
//!
//! It is built from the `Report` value alone (so a merged report renders the same way), and must not
//! reference anything outside the page: no scripts, no style sheets, fonts or images to fetch. The markup is
//! well-formed XML (every element closed, every attribute quoted) as well as HTML.

mod svg;
mod tables;

use std::fmt::Write as _;
use std::path::Path;

use super::LoadError;
use super::report::Report;
use super::stats::Latency;
use svg::{Axis, Chart, Series};

/// Writes the page of `report` to `path`.
pub fn write(report: &Report, path: &Path) -> Result<(), LoadError> {
    std::fs::write(path, render(report)).map_err(|error| LoadError::Write {
        path: path.to_path_buf(),
        error,
    })
}

/// Text escaped for HTML and XML, in content and in quoted attributes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1600px}\
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:13px;margin:4px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}\
td.l,th.l{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:12px}\
svg.chart{border:1px solid #eee;background:#fff}.verdict-ok{color:#1a7f37}\
.verdict-leak,.verdict-inconclusive{color:#c62828;font-weight:bold}.muted{color:#777}";

/// The page.
pub fn render(r: &Report) -> String {
    let mut p = String::new();
    p.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>");
    let _ = write!(
        p,
        "<title>mcpgw load: {}</title><style>{STYLE}</style></head><body>",
        esc(&r.url)
    );
    let _ = write!(p, "<h1>mcpgw load: {}</h1>", esc(&r.url));
    let _ = write!(
        p,
        "<p class=\"muted\">{} sessions, era {}, {}, mix {}</p>",
        r.sessions,
        r.era.as_str(),
        mode(r),
        esc(&r.mix)
    );
    summary(&mut p, r);
    p.push_str("<h2>Over time</h2><div class=\"charts\">");
    over_time(&mut p, r);
    p.push_str("</div><h2>Latency distribution</h2><div class=\"charts\">");
    p.push_str(&svg::render(&distribution(r)));
    p.push_str("</div>");
    tables::operations(&mut p, r);
    tables::outcomes(&mut p, r);
    watched(&mut p, r);
    tables::parameters(&mut p, r);
    p.push_str("</body></html>\n");
    p
}

fn mode(r: &Report) -> String {
    match r.rate_rps {
        Some(rate) => format!("open loop at {rate}/s"),
        None => "closed loop".to_owned(),
    }
}

/// `<tr>` of cells: (key, text); the first is a left-aligned header cell.
fn row(p: &mut String, key: &str, cells: &[(&str, String)]) {
    let _ = write!(p, "<tr data-key=\"{}\">", esc(key));
    for (i, (k, text)) in cells.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(p, "<td{class} data-key=\"{}\">{}</td>", esc(k), esc(text));
    }
    p.push_str("</tr>");
}

fn head(p: &mut String, names: &[&str]) {
    p.push_str("<thead><tr>");
    for (i, n) in names.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(p, "<th{class}>{}</th>", esc(n));
    }
    p.push_str("</tr></thead>");
}

fn summary(p: &mut String, r: &Report) {
    let l = &r.latency_ms;
    p.push_str("<table id=\"summary\">");
    head(
        p,
        &[
            "requests",
            "errors",
            "throughput /s",
            "duration s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
        ],
    );
    p.push_str("<tbody>");
    row(
        p,
        "all",
        &[
            ("requests", r.requests.to_string()),
            ("errors", r.errors.to_string()),
            ("throughput_rps", r.throughput_rps.to_string()),
            ("duration_s", r.duration_s.to_string()),
            ("p50", l.p50.to_string()),
            ("p90", l.p90.to_string()),
            ("p99", l.p99.to_string()),
            ("p999", l.p999.to_string()),
            ("max", l.max.to_string()),
        ],
    );
    p.push_str("</tbody></table>");
}

fn over_time(p: &mut String, r: &Report) {
    let Some(tl) = r.timeline.as_ref().filter(|t| !t.points.is_empty()) else {
        p.push_str("<p class=\"muted\">No timeline in this report.</p>");
        return;
    };
    let pts = &tl.points;
    let series = |name: &str, f: &dyn Fn(&crate::Point) -> f64, skip_idle: bool| Series {
        name: name.to_owned(),
        points: pts
            .iter()
            .filter(|q| !skip_idle || q.requests > 0)
            .map(|q| (q.t, f(q)))
            .collect(),
    };
    let x = || Axis::linear("seconds since the load started");
    p.push_str(&svg::render(&Chart {
        id: "chart-throughput".into(),
        title: "Throughput (requests answered per second)".into(),
        x: x(),
        y: Axis::linear("requests/s"),
        series: vec![series("throughput", &|q| q.throughput_rps, false)],
        dots: false,
    }));
    p.push_str(&svg::render(&Chart {
        id: "chart-latency".into(),
        title: "Latency per second".into(),
        x: x(),
        y: Axis::log("ms (log)"),
        series: vec![
            series("p50", &|q| q.p50_ms, true),
            series("p99", &|q| q.p99_ms, true),
            series("p99.9", &|q| q.p999_ms, true),
        ],
        dots: false,
    }));
    let classes: Vec<Series> = crate::Classes::default()
        .named()
        .iter()
        .enumerate()
        .filter(|(i, (name, _))| *name == "ok" || pts.iter().any(|q| q.outcomes.named()[*i].1 > 0))
        .map(|(i, (name, _))| Series {
            name: (*name).to_owned(),
            points: pts
                .iter()
                .map(|q| (q.t, q.outcomes.named()[i].1 as f64 / q.span_s.max(1e-3)))
                .collect(),
        })
        .collect();
    p.push_str(&svg::render(&Chart {
        id: "chart-outcomes".into(),
        title: "Outcomes per second".into(),
        x: x(),
        y: Axis::linear("requests/s"),
        series: classes,
        dots: false,
    }));
}

/// `x` of quantile `q` on the percentile axis: the nines of `1/(1-q)` (90 % → 1, 99 % → 2, …).
fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-9).log10()
}

/// The percentile points a [`Latency`] gives: min, p50, p90, p99, p99.9, and max one decade further.
fn latency_curve(l: &Latency) -> Vec<(f64, f64)> {
    vec![
        (nines(0.0), l.min),
        (nines(0.5), l.p50),
        (nines(0.9), l.p90),
        (nines(0.99), l.p99),
        (nines(0.999), l.p999),
        (4.0, l.max),
    ]
}

/// The percentile curve of a histogram (`--hdr`): a point every tenth of a nine from 0 % to 99.99 %, and
/// the max; `None` when there is none or it does not decode.
fn histogram_curve(hdr: Option<&str>) -> Option<Vec<(f64, f64)>> {
    let h = crate::hdr::decode(hdr?).ok().filter(|h| !h.is_empty())?;
    let ms = |us: u64| us as f64 / 1000.0;
    let mut points: Vec<(f64, f64)> = (0..40)
        .map(|tenth| {
            let x = f64::from(tenth) / 10.0;
            (x, ms(h.value_at_quantile(1.0 - 10f64.powf(-x))))
        })
        .collect();
    points.push((4.0, ms(h.max())));
    Some(points)
}

/// The latency distribution: a percentile curve per measured operation and for all of them, from the
/// histograms when the report has them (`--hdr`, or merged), else from its six percentiles.
fn distribution(r: &Report) -> Chart {
    let curve = |l: &Latency, hdr: Option<&String>| {
        histogram_curve(hdr.map(String::as_str)).unwrap_or_else(|| latency_curve(l))
    };
    let mut series = vec![Series {
        name: "all".into(),
        points: curve(&r.latency_ms, r.hdr.as_ref()),
    }];
    for (name, op) in &r.operations {
        if op.measured && op.requests > 0 {
            series.push(Series {
                name: name.to_string(),
                points: curve(&op.latency_ms, op.hdr.as_ref()),
            });
        }
    }
    let ticks = [
        (0.0, "0%"),
        (1.0, "90%"),
        (2.0, "99%"),
        (3.0, "99.9%"),
        (4.0, "max"),
    ];
    Chart {
        id: "chart-distribution".into(),
        title: "Latency by percentile".into(),
        x: Axis {
            label: "percentile (log scale of 1/(1-q))".into(),
            log: false,
            ticks: Some(ticks.iter().map(|(v, l)| (*v, (*l).to_owned())).collect()),
        },
        y: Axis::linear("ms"),
        series,
        dots: true,
    }
}

fn watched(p: &mut String, r: &Report) {
    let Some(w) = &r.watch else {
        return;
    };
    p.push_str("<h2>Watched processes</h2>");
    let _ = write!(
        p,
        "<p id=\"leak-check\" data-verdict=\"{0}\">Leak check: <span class=\"verdict-{0}\">{0}</span> \
         (RSS slope limit {1:.3} MiB/min after {2} s of warm-up, at least {3} samples)</p>",
        esc(&w.verdict),
        w.leak_slope_bytes_per_min / 1048576.0,
        w.warm_up_s,
        w.min_samples
    );
    p.push_str("<table id=\"watched\">");
    head(
        p,
        &[
            "process",
            "samples",
            "RSS first MiB",
            "RSS last MiB",
            "RSS max MiB",
            "slope MiB/min",
            "CPU s",
            "fds max",
            "threads max",
            "verdict",
        ],
    );
    p.push_str("<tbody>");
    let mib = |b: u64| format!("{:.1}", b as f64 / 1048576.0);
    for proc in &w.processes {
        row(
            p,
            &proc.pid.to_string(),
            &[
                ("name", format!("{} {}", proc.pid, proc.name)),
                ("samples", proc.samples.to_string()),
                ("rss_first", mib(proc.rss_first_bytes)),
                ("rss_last", mib(proc.rss_last_bytes)),
                ("rss_max", mib(proc.rss_max_bytes)),
                (
                    "slope",
                    proc.rss_slope_bytes_per_min
                        .map_or("-".to_owned(), |s| format!("{:+.3}", s / 1048576.0)),
                ),
                ("cpu_s", format!("{:.2}", proc.cpu_s)),
                ("fds_max", proc.fds_max.to_string()),
                ("threads_max", proc.threads_max.to_string()),
                ("verdict", proc.verdict.clone()),
            ],
        );
    }
    p.push_str("</tbody></table>");
    let Some(tl) = &r.timeline else {
        return;
    };
    let per_process = |f: &dyn Fn(&crate::ProcSample) -> f64| -> Vec<Series> {
        w.processes
            .iter()
            .map(|proc| Series {
                name: format!("{} {}", proc.pid, proc.name),
                points: tl
                    .points
                    .iter()
                    .filter_map(|q| {
                        let s = q.processes.iter().find(|s| s.pid == proc.pid)?;
                        Some((q.t, f(s)))
                    })
                    .collect(),
            })
            .collect()
    };
    let x = || Axis::linear("seconds since the load started");
    p.push_str("<div class=\"charts\">");
    for (id, title, y, f) in [
        (
            "chart-rss",
            "Resident memory",
            "MiB",
            &(|s: &crate::ProcSample| s.rss_bytes as f64 / 1048576.0)
                as &dyn Fn(&crate::ProcSample) -> f64,
        ),
        ("chart-cpu", "CPU", "cores", &|s: &crate::ProcSample| {
            s.cpu_cores
        }),
        (
            "chart-fds",
            "Open file descriptors",
            "fds",
            &|s: &crate::ProcSample| s.fds as f64,
        ),
    ] {
        p.push_str(&svg::render(&Chart {
            id: id.into(),
            title: title.into(),
            x: x(),
            y: Axis::linear(y),
            series: per_process(f),
            dots: false,
        }));
    }
    p.push_str("</div>");
}

#[cfg(test)]
mod tests;
