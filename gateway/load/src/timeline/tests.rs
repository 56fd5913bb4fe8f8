use super::*;
use crate::watch::Rule;

fn soak(stream: Option<&Path>) -> Soak {
    let rule = Rule {
        slope_bytes_per_min: 1.0,
        warm_up: Duration::ZERO,
    };
    Soak::open(Watch::new(&[], rule).unwrap(), stream).unwrap()
}

/// A cumulative histogram of `n` requests of `ms` each added to `h`, and `n` more ok.
fn more(h: &mut Histogram<u64>, c: &mut Classes, n: u64, ms: u64) -> (Histogram<u64>, Classes) {
    h.record_n(ms * 1000, n).unwrap();
    c.ok += n;
    (h.clone(), *c)
}

#[test]
fn each_second_has_its_own_percentiles_from_the_cumulative_histograms() {
    let mut s = Sampler::new(soak(None), MAX_POINTS);
    let (mut h, mut c) = (new_histogram(), Classes::default());
    // Second 1: 100 requests of 2 ms; second 2: 50 of 40 ms and one transport error; second 3: none.
    s.tick(1.0, more(&mut h, &mut c, 100, 2), false);
    h.record(40_000).unwrap();
    c.transport_error += 1;
    s.tick(2.0, more(&mut h, &mut c, 49, 40), false);
    s.tick(3.0, (h.clone(), c), false);
    // The last, partial second: 10 requests in 0.5 s.
    s.tick(3.5, more(&mut h, &mut c, 10, 7), true);
    let p = &s.timeline.points;
    assert_eq!(p.len(), 4);
    assert_eq!((p[0].requests, p[0].p50_ms, p[0].p99_ms), (100, 2.0, 2.0));
    assert_eq!(p[0].throughput_rps, 100.0);
    assert_eq!((p[1].requests, p[1].outcomes.transport_error), (50, 1));
    // HDR's value at a quantile is the top of its bucket: 40 ms within 0.1 %.
    assert!(
        (p[1].p50_ms - 40.0).abs() < 0.05 && p[1].p999_ms == p[1].p50_ms,
        "{:?}",
        p[1]
    );
    assert_eq!(
        (p[2].requests, p[2].p99_ms, p[2].throughput_rps),
        (0, 0.0, 0.0)
    );
    assert_eq!((p[3].t, p[3].span_s, p[3].throughput_rps), (3.5, 0.5, 20.0));
    let total: u64 = p.iter().map(|p| p.requests).sum();
    assert_eq!(total, c.total());
}

/// Two hours at one point a second stay within the cap: the timeline is thinned (pairs merged, the
/// interval doubled) and keeps every request and the worst latency.
#[test]
fn the_timeline_stays_within_its_cap_over_two_hours() {
    let mut t = Timeline::new();
    for sec in 1..=7200u32 {
        // One slow interval in the middle.
        let ms = if sec == 3604 { 900.0 } else { 5.0 };
        let p = Point {
            t: f64::from(sec),
            span_s: 1.0,
            requests: 10,
            throughput_rps: 10.0,
            p99_ms: ms,
            max_ms: ms,
            ..Point::default()
        };
        // What the sampler does: a point per interval (1 s, then 2 s, then 4 s).
        if sec % (t.interval_s as u32) == 0 {
            let span = t.interval_s;
            t.push(
                Point {
                    span_s: span,
                    requests: 10 * span as u64,
                    ..p
                },
                MAX_POINTS,
            );
        }
        assert!(t.points.len() < MAX_POINTS);
    }
    assert_eq!((t.thinned, t.interval_s), (2, 4.0));
    assert_eq!(t.points.len(), 1800);
    assert!(
        t.points.iter().all(|p| p.span_s == 4.0),
        "{:?}",
        &t.points[..3]
    );
    assert_eq!(t.points.last().unwrap().t, 7200.0);
    assert_eq!(t.points.iter().map(|p| p.requests).sum::<u64>(), 72_000);
    let slow: Vec<&Point> = t.points.iter().filter(|p| p.max_ms >= 899.0).collect();
    assert_eq!(slow.len(), 1, "the slow interval is kept, in one point");
    assert_eq!(slow[0].t, 3604.0);
    assert!((t.points[10].throughput_rps - 10.0).abs() < 1e-9);
}

/// The sampler with a cap of 8: once thinned, its points cover the new interval exactly (their
/// percentiles are those of the interval, not merged), and the last partial interval is closed.
#[test]
fn the_sampler_covers_the_doubled_interval_after_thinning() {
    let mut s = Sampler::new(soak(None), 8);
    let (mut h, mut c) = (new_histogram(), Classes::default());
    for sec in 1..=12u32 {
        let ms = if sec == 11 { 300 } else { 1 };
        s.tick(f64::from(sec), more(&mut h, &mut c, 2, ms), false);
    }
    s.tick(12.5, more(&mut h, &mut c, 1, 1), true);
    let t = &s.timeline;
    assert_eq!((t.thinned, t.interval_s), (1, 2.0));
    let spans: Vec<(f64, f64)> = t.points.iter().map(|p| (p.t, p.span_s)).collect();
    assert_eq!(
        spans,
        [
            (2.0, 2.0),
            (4.0, 2.0),
            (6.0, 2.0),
            (8.0, 2.0),
            (10.0, 2.0),
            (12.0, 2.0),
            (12.5, 0.5)
        ]
    );
    // Seconds 11 and 12 in one point: 2 slow of 4, so its p50 is 1 ms and its p99 300 ms.
    let p = &t.points[5];
    assert_eq!(p.requests, 4);
    assert_eq!(p.p50_ms, 1.0);
    assert!((p.p99_ms - 300.0).abs() < 0.5, "{p:?}");
    assert_eq!(t.points.iter().map(|p| p.requests).sum::<u64>(), 25);
}

#[test]
fn a_small_cap_halves_and_keeps_odd_points() {
    let mut t = Timeline::new();
    for i in 1..=5 {
        t.push(
            Point {
                t: f64::from(i),
                span_s: 1.0,
                requests: 1,
                ..Point::default()
            },
            4,
        );
    }
    // 4 points became 2 (of 2 s), then the fifth was added.
    assert_eq!(t.points.len(), 3);
    assert_eq!(
        t.points.iter().map(|p| p.span_s).collect::<Vec<_>>(),
        [2.0, 2.0, 1.0]
    );
    assert_eq!(t.interval_s, 2.0);
}

#[test]
fn a_stream_file_gets_one_json_line_per_second_as_it_goes() {
    let path = std::env::temp_dir().join(format!("mcpgw-load-stream-{}.jsonl", std::process::id()));
    let mut s = Sampler::new(soak(Some(&path)), MAX_POINTS);
    let (mut h, mut c) = (new_histogram(), Classes::default());
    s.tick(1.0, more(&mut h, &mut c, 3, 1), false);
    s.tick(2.0, more(&mut h, &mut c, 4, 1), false);
    // Read while the sampler (and its file) is still open: the lines are there already.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Point> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0].requests, lines[1].requests), (3, 4));
    assert_eq!(lines[1].t, 2.0);
    drop(s);
    let _ = std::fs::remove_file(&path);
    let err = Soak::open(
        Watch::new(
            &[],
            Rule {
                slope_bytes_per_min: 0.0,
                warm_up: Duration::ZERO,
            },
        )
        .unwrap(),
        Some(Path::new("/nonexistent-dir/s.jsonl")),
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with("cannot write /nonexistent-dir"),
        "{err}"
    );
}

#[test]
fn a_point_survives_a_json_round_trip() {
    let p = Point {
        t: 3.0,
        span_s: 1.0,
        requests: 5,
        throughput_rps: 5.0,
        outcomes: Classes {
            ok: 4,
            timeout: 1,
            ..Classes::default()
        },
        p50_ms: 1.5,
        p99_ms: 2.5,
        p999_ms: 2.5,
        max_ms: 2.5,
        processes: vec![ProcSample {
            pid: 9,
            rss_bytes: 1 << 20,
            cpu_cores: 0.25,
            fds: 12,
            threads: 3,
        }],
    };
    let back: Point = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    let sparse: Point = serde_json::from_str(r#"{"t": 1}"#).unwrap();
    assert_eq!(sparse.t, 1.0);
}

/// Ticks come a little early or late (the sampler's work takes time): each still makes its own point.
#[test]
fn a_point_per_tick_whatever_the_drift() {
    let mut s = Sampler::new(soak(None), MAX_POINTS);
    let (mut h, mut c) = (new_histogram(), Classes::default());
    for t in [0.99, 1.97, 2.99, 4.02] {
        s.tick(t, more(&mut h, &mut c, 1, 1), false);
    }
    assert_eq!(s.timeline.points.len(), 4, "{:?}", s.timeline.points);
}
