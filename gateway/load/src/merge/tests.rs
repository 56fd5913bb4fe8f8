//! Merging reports: exact histograms, summed counts, the union of the windows, refusals.

use std::time::Duration;

use super::*;
use crate::report::Context;
use crate::stats::{Op, Outcome, Stats};

/// A report of `calls` tool calls taking `ms(i)` milliseconds, over `[start, end]` (Unix ms).
fn report(calls: u64, ms: impl Fn(u64) -> u64, start: u64, end: u64, hdr: bool) -> Report {
    let mut s = Stats::default();
    for i in 0..calls {
        let outcome = if i % 10 == 0 {
            Outcome::ToolError
        } else {
            Outcome::Ok
        };
        s.record(
            Op::ToolsCall,
            Some(200),
            &outcome,
            Some(Duration::from_millis(ms(i))),
        );
    }
    s.record(
        Op::Initialize,
        Some(200),
        &Outcome::Ok,
        Some(Duration::from_millis(2)),
    );
    let c = Context {
        url: "http://127.0.0.1:1/mcp".into(),
        self_test: false,
        era: Era::Legacy,
        rate: None,
        sessions: 4,
        mix: "tools/call=1".into(),
        tool: Some("echo".into()),
        uri: None,
        ask_tool: None,
        setup_s: 0.01,
        duration_s: (end - start) as f64 / 1000.0,
        cpu: CpuUse::default(),
        stopped: "duration",
        abandoned: 0,
        resent: 1,
        window: Window {
            start_unix_ms: start,
            end_unix_ms: end,
            late_ms: 0,
        },
        memory: None,
        hdr,
    };
    Report::new(c, &s)
}

/// Through JSON and back, as `merge` reads a report.
fn reread(r: &Report) -> Report {
    serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap()
}

#[test]
fn merged_counts_are_summed_and_percentiles_are_those_of_the_added_histograms() {
    let a = reread(&report(1000, |i| 1 + i % 7, 10_000, 12_000, true));
    let b = reread(&report(500, |i| 40 + i % 50, 10_500, 13_000, true));
    let m = merge(vec![
        ("a.json".into(), a.clone()),
        ("b.json".into(), b.clone()),
    ])
    .unwrap();
    assert_eq!(m.requests, 1500);
    assert_eq!(m.errors, a.errors + b.errors);
    assert_eq!(m.outcomes.tool_error, 150);
    assert_eq!(m.outcomes.by_http_status[&200], 1500);
    assert_eq!(m.sessions, 8);
    assert_eq!(m.resent, 2);
    // Over the union of the windows: 10.0 s to 13.0 s.
    assert_eq!(
        (m.window.start_unix_ms, m.window.end_unix_ms),
        (10_000, 13_000)
    );
    assert_eq!(m.duration_s, 3.0);
    assert_eq!(m.throughput_rps, 500.0);
    let mut added = hdr::decode(a.hdr.as_ref().unwrap()).unwrap();
    added
        .add(hdr::decode(b.hdr.as_ref().unwrap()).unwrap())
        .unwrap();
    assert_eq!(m.latency_ms, Latency::of(&added));
    assert_eq!(hdr::decode(m.hdr.as_ref().unwrap()).unwrap(), added);
    // Not an average of the two p99s: the added histogram's.
    assert!(m.latency_ms.p99 > (a.latency_ms.p99 + b.latency_ms.p99) / 2.0);
    let call = &m.operations["tools/call"];
    assert_eq!((call.requests, call.errors), (1500, 150));
    assert_eq!(call.latency_ms, Latency::of(&added));
    assert_eq!(m.operations["initialize"].requests, 2);
    assert!(!m.operations["initialize"].measured);
    let merged = m.merged.as_ref().unwrap();
    assert_eq!(merged.reports, ["a.json", "b.json"]);
    assert!(merged.windows_overlap);
    let table = m.table();
    assert!(
        table.contains("merged from 2 reports: a.json, b.json"),
        "{table}"
    );
    assert!(
        table.contains("requests    1500 in 3.00 s (500.0/s)"),
        "{table}"
    );
    assert!(!table.contains("warning"), "{table}");
}

#[test]
fn a_merged_report_merges_again_as_one_generator() {
    let a = report(100, |i| 1 + i % 3, 0, 1_000, true);
    let b = report(100, |i| 5 + i % 3, 0, 1_000, true);
    let c = report(100, |i| 9 + i % 3, 0, 1_000, true);
    let ab = reread(&merge(vec![("a".into(), a.clone()), ("b".into(), b.clone())]).unwrap());
    let once = merge(vec![
        ("a".into(), a),
        ("b".into(), b),
        ("c".into(), c.clone()),
    ])
    .unwrap();
    let twice = merge(vec![("ab".into(), ab), ("c".into(), c)]).unwrap();
    assert_eq!(twice.latency_ms, once.latency_ms);
    assert_eq!(twice.outcomes, once.outcomes);
    assert_eq!(twice.hdr, once.hdr);
}

#[test]
fn windows_that_do_not_overlap_are_said_to() {
    let a = report(10, |_| 1, 0, 1_000, true);
    let b = report(10, |_| 1, 1_000, 2_000, true);
    let m = merge(vec![("a".into(), a), ("b".into(), b)]).unwrap();
    assert!(!m.merged.as_ref().unwrap().windows_overlap);
    assert!(
        m.table()
            .contains("warning     their windows do not all overlap"),
        "{}",
        m.table()
    );
}

#[test]
fn reports_without_histograms_or_with_broken_ones_are_refused_by_name() {
    let good = report(10, |_| 1, 0, 1_000, true);
    let plain = report(10, |_| 1, 0, 1_000, false);
    let err = merge(vec![
        ("a.json".into(), good.clone()),
        ("b.json".into(), plain),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge b.json: it has no histograms: make it with `mcpgw load --hdr --json FILE`"
    );
    let mut broken = good.clone();
    broken.operations.get_mut("tools/call").unwrap().hdr = Some("***".into());
    let err = merge(vec![("c.json".into(), broken)]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot merge c.json: tools/call's latency histogram: not base64"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("mcpgw-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("not-a-report.json");
    std::fs::write(&file, "{\"requests\": 3}").unwrap();
    let err = read(&file).unwrap_err();
    assert!(
        err.to_string().contains("not a report of mcpgw load"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenario_steps_are_merged_by_group_and_name_exactly() {
    let mut a = report(10, |_| 1, 0, 1_000, true);
    let mut b = report(10, |_| 1, 0, 1_000, true);
    let step = |ms: u64, n: u64| {
        let mut s = Stats::default();
        for _ in 0..n {
            s.record(
                Op::Step,
                Some(200),
                &Outcome::Ok,
                Some(Duration::from_millis(ms)),
            );
        }
        OpReport::of(s.op(Op::Step), true, None, true)
    };
    a.steps
        .entry("agents".into())
        .or_default()
        .insert("list".into(), step(3, 5));
    b.steps
        .entry("agents".into())
        .or_default()
        .insert("list".into(), step(30, 7));
    b.steps
        .entry("idle".into())
        .or_default()
        .insert("listen".into(), step(9, 2));
    let m = merge(vec![("a".into(), a.clone()), ("b".into(), b.clone())]).unwrap();
    let list = &m.steps["agents"]["list"];
    assert_eq!(list.requests, 12);
    let mut added = hdr::decode(a.steps["agents"]["list"].hdr.as_ref().unwrap()).unwrap();
    added
        .add(hdr::decode(b.steps["agents"]["list"].hdr.as_ref().unwrap()).unwrap())
        .unwrap();
    assert_eq!(list.latency_ms, Latency::of(&added));
    assert_eq!(m.steps["idle"]["listen"].requests, 2);
    b.steps
        .get_mut("idle")
        .unwrap()
        .get_mut("listen")
        .unwrap()
        .hdr = None;
    let err = merge(vec![("a".into(), a), ("b".into(), b)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge b: idle: listen has no latency histogram"
    );
}

#[test]
fn timelines_are_put_on_the_merged_windows_clock() {
    use crate::timeline::{Point, Timeline};
    let point = |t: f64, n: u64, p99: f64| Point {
        t,
        span_s: 1.0,
        requests: n,
        throughput_rps: n as f64,
        p99_ms: p99,
        ..Point::default()
    };
    let tl = |points: Vec<Point>| Timeline {
        interval_s: 1.0,
        thinned: 0,
        points,
        stream: None,
    };
    // b starts a second after a: its first second is a's second.
    let mut a = report(10, |_| 1, 10_000, 12_000, true);
    a.timeline = Some(tl(vec![point(1.0, 100, 2.0), point(2.0, 110, 3.0)]));
    let mut b = report(10, |_| 1, 11_000, 13_000, true);
    b.timeline = Some(tl(vec![point(1.0, 50, 9.0), point(2.0, 60, 1.0)]));
    let m = merge(vec![("a".into(), a), ("b".into(), b)]).unwrap();
    let points = &m.timeline.as_ref().unwrap().points;
    let got: Vec<(f64, u64, f64)> = points.iter().map(|p| (p.t, p.requests, p.p99_ms)).collect();
    assert_eq!(got, vec![(1.0, 100, 2.0), (2.0, 160, 9.0), (3.0, 60, 1.0)]);
    assert_eq!(points[1].throughput_rps, 160.0);
}
