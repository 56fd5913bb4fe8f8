use std::time::Duration;

use super::*;
use crate::args::Era;
use crate::report::{Context, CpuUse};
use crate::stats::{Op, Outcome, Stats};
use crate::timeline::{Classes, Point, Timeline};
use crate::watch::{ProcReport, ProcSample, WatchReport};

/// A report of 3 s with a timeline, a watched process and a URL that needs escaping.
pub(crate) fn sample_report() -> Report {
    let mut s = Stats::default();
    for i in 0..200u64 {
        s.record(
            Op::ToolsCall,
            Some(200),
            &Outcome::Ok,
            Some(Duration::from_micros(800 + i * 10)),
        );
    }
    s.record(
        Op::ToolsList,
        Some(200),
        &Outcome::Timeout,
        Some(Duration::from_millis(40)),
    );
    s.record(
        Op::Initialize,
        Some(200),
        &Outcome::Ok,
        Some(Duration::from_millis(2)),
    );
    let context = Context {
        url: "http://127.0.0.1:1/mcp?a=1&b=<2>".into(),
        self_test: false,
        era: Era::Mixed,
        rate: Some(100.0),
        sessions: 4,
        mix: "tools/call=8,tools/list=1".into(),
        tool: Some("echo".into()),
        uri: None,
        ask_tool: None,
        setup_s: 0.01,
        duration_s: 3.0,
        cpu: CpuUse {
            generator_cores: Some(0.2),
            other_cores: None,
            available_cores: 2,
            threads: 2,
        },
        stopped: "duration",
        abandoned: 0,
        resent: 0,
        window: crate::report::Window::default(),
        memory: None,
        hdr: true,
    };
    let mut r = Report::new(context, &s);
    let point = |t: f64, n: u64, p99: f64, rss: u64| Point {
        t,
        span_s: 1.0,
        requests: n,
        throughput_rps: n as f64,
        outcomes: Classes {
            ok: n.saturating_sub(1),
            timeout: u64::from(n > 0),
            ..Classes::default()
        },
        p50_ms: p99 / 2.0,
        p99_ms: p99,
        p999_ms: p99 * 1.5,
        max_ms: p99 * 2.0,
        processes: vec![ProcSample {
            pid: 42,
            rss_bytes: rss,
            cpu_cores: 0.125,
            fds: 17,
            threads: 3,
        }],
    };
    r.timeline = Some(Timeline {
        interval_s: 1.0,
        thinned: 0,
        points: vec![
            point(1.0, 70, 2.5, 10 << 20),
            point(2.0, 0, 0.0, 11 << 20),
            point(3.0, 131, 2.75, 12 << 20),
        ],
        stream: Some("run.jsonl".into()),
    });
    r.watch = Some(WatchReport {
        leak_slope_bytes_per_min: 1048576.0,
        warm_up_s: 1.0,
        min_samples: 5,
        processes: vec![ProcReport {
            pid: 42,
            name: "mock <b>".into(),
            samples: 3,
            samples_after_warm_up: 2,
            rss_first_bytes: 10 << 20,
            rss_last_bytes: 12 << 20,
            rss_max_bytes: 12 << 20,
            fds_max: 17,
            threads_max: 3,
            cpu_s: 0.375,
            exited: false,
            rss_slope_bytes_per_min: Some(62914560.0),
            verdict: "inconclusive".into(),
        }],
        verdict: "inconclusive".into(),
    });
    r
}

/// A strict well-formedness check: every tag closed in order (or self-closed), attributes quoted, no
/// stray `<` or `&`. Returns the element names in order.
fn check_well_formed(page: &str) -> Vec<String> {
    let body = page
        .strip_prefix("<!DOCTYPE html>\n")
        .expect("the page starts with its doctype");
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&ent),
                "stray & in {text:?}"
            );
        }
        assert!(!text.contains('>'), "stray > in {text:?}");
        let end = rest[lt..].find('>').expect("every tag ends") + lt;
        let tag = &rest[lt + 1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().expect("a closing tag closes an open one");
            assert_eq!(open, name, "</{name}> closes <{open}>");
            continue;
        }
        let self_closed = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name: String = tag.split_whitespace().next().unwrap().to_owned();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric()),
            "tag name {name:?}"
        );
        // Attributes: name="value" pairs, values without quotes or '<' inside.
        let mut attrs = tag[name.len()..].trim();
        while !attrs.is_empty() {
            let eq = attrs
                .find("=\"")
                .unwrap_or_else(|| panic!("unquoted attribute in <{tag}>"));
            let after = &attrs[eq + 2..];
            let close = after.find('"').expect("attribute value ends");
            assert!(
                !after[..close].contains('<'),
                "< in an attribute of <{tag}>"
            );
            attrs = after[close + 1..].trim_start();
        }
        seen.push(name.clone());
        if !self_closed {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "left open: {stack:?}");
    assert!(rest.trim().is_empty(), "text after </html>: {rest:?}");
    seen
}

/// `data-y` of the polyline of `series` in the svg of `chart`.
pub(crate) fn plotted(page: &str, chart: &str, series: &str) -> Vec<f64> {
    let svg = &page[page.find(&format!("id=\"{chart}\"")).expect(chart)..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    let at = svg
        .find(&format!("data-series=\"{series}\""))
        .unwrap_or_else(|| panic!("{series} in {chart}"));
    let y = &svg[at..];
    let y = &y[y.find("data-y=\"").unwrap() + 8..];
    y[..y.find('"').unwrap()]
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

#[test]
fn the_page_is_well_formed_self_contained_and_escaped() {
    let r = sample_report();
    let page = render(&r);
    let tags = check_well_formed(&page);
    assert_eq!(tags.first().map(String::as_str), Some("html"));
    for forbidden in [
        "<script", "src=", "href=", "@import", "url(", "<link", "<img",
    ] {
        assert!(!page.contains(forbidden), "{forbidden} in the page");
    }
    // The only URLs: the SVG namespace and the target, escaped.
    assert!(page.contains("http://127.0.0.1:1/mcp?a=1&amp;b=&lt;2&gt;"));
    assert!(!page.contains("<2>") && !page.contains("<b>"));
    for id in [
        "chart-throughput",
        "chart-latency",
        "chart-outcomes",
        "chart-distribution",
        "chart-rss",
        "chart-cpu",
        "summary",
        "operations",
        "outcomes",
        "watched",
        "parameters",
        "leak-check",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert_eq!(tags.iter().filter(|t| *t == "svg").count(), 7);
}

#[test]
fn the_charts_plot_the_reports_numbers() {
    let r = sample_report();
    let page = render(&r);
    let tl = r.timeline.as_ref().unwrap();
    let thr: Vec<f64> = tl.points.iter().map(|p| p.throughput_rps).collect();
    assert_eq!(plotted(&page, "chart-throughput", "throughput"), thr);
    // Seconds without requests have no latency to draw.
    assert_eq!(plotted(&page, "chart-latency", "p99"), [2.5, 2.75]);
    assert_eq!(plotted(&page, "chart-outcomes", "timeout"), [1.0, 0.0, 1.0]);
    assert_eq!(
        plotted(&page, "chart-rss", "42 mock &lt;b&gt;"),
        [10.0, 11.0, 12.0]
    );
    // With the histograms (--hdr): a point every tenth of a nine, the report's percentiles among them.
    let l = &r.latency_ms;
    let curve = plotted(&page, "chart-distribution", "all");
    assert_eq!(curve.len(), 41);
    assert_eq!((curve[10], curve[20], curve[40]), (l.p90, l.p99, l.max));
    assert!(curve.windows(2).all(|w| w[0] <= w[1]), "{curve:?}");
    // Without them: the report's six percentiles.
    let mut bare = r.clone();
    bare.hdr = None;
    let bare_page = render(&bare);
    assert_eq!(
        plotted(&bare_page, "chart-distribution", "all"),
        [l.min, l.p50, l.p90, l.p99, l.p999, l.max]
    );
    assert!(
        page.contains("data-key=\"requests\">201</td>"),
        "measured requests"
    );
    assert!(page.contains("data-verdict=\"inconclusive\""));
}

#[test]
fn a_report_without_a_timeline_still_renders() {
    let mut r = sample_report();
    r.timeline = None;
    r.watch = None;
    let page = render(&r);
    check_well_formed(&page);
    assert!(page.contains("No timeline in this report."));
    assert!(!page.contains("chart-rss"));
}

#[test]
fn ticks_are_round_and_labels_short() {
    assert_eq!(
        svg::linear_ticks(0.0, 10.0),
        [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    );
    assert_eq!(svg::linear_ticks(0.0, 0.3), [0.0, 0.1, 0.2, 0.3]);
    assert_eq!(svg::label(2.5), "2.5");
    assert_eq!(svg::label(1000.0), "1000");
    assert_eq!(svg::label(0.05), "0.05");
    assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}
