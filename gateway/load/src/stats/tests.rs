//! Histograms, outcome counts and shards.

use super::*;

fn ms(n: u64) -> Option<Duration> {
    Some(Duration::from_millis(n))
}

#[test]
fn percentiles_of_a_known_distribution() {
    let mut s = Stats::default();
    // 1..=1000 ms, once each: p50 = 500, p90 = 900, p99 = 990, p99.9 = 999, max = 1000.
    for i in 1..=1000 {
        s.record(Op::ToolsCall, Some(200), &Outcome::Ok, ms(i));
    }
    let l = Latency::of(s.op(Op::ToolsCall).latency.as_ref().unwrap());
    let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 1e-9;
    assert!(near(l.p50, 500.0), "{l:?}");
    assert!(near(l.p90, 900.0), "{l:?}");
    assert!(near(l.p99, 990.0), "{l:?}");
    assert!(near(l.p999, 999.0), "{l:?}");
    assert!(near(l.max, 1000.0), "{l:?}");
    assert!(near(l.min, 1.0), "{l:?}");
    assert!(near(l.mean, 500.5), "{l:?}");
}

#[test]
fn small_and_huge_latencies_are_kept() {
    let mut s = Stats::default();
    s.record(Op::ToolsCall, Some(200), &Outcome::Ok, Some(Duration::ZERO));
    s.record(
        Op::ToolsCall,
        Some(200),
        &Outcome::Ok,
        Some(Duration::from_micros(37)),
    );
    s.record(
        Op::ToolsCall,
        None,
        &Outcome::Timeout,
        Some(Duration::from_secs(10 * 3600)),
    );
    let h = s.op(Op::ToolsCall).latency.as_ref().unwrap();
    assert_eq!(h.len(), 3);
    assert_eq!(h.min(), 0);
    assert!(h.max() >= MAX_LATENCY_US);
    assert_eq!(h.value_at_quantile(0.5), 37);
}

#[test]
fn outcomes_are_counted_by_class_status_and_code() {
    let mut o = Outcomes::default();
    o.add(Some(200), &Outcome::Ok);
    o.add(Some(200), &Outcome::Ok);
    o.add(Some(200), &Outcome::ToolError);
    o.add(Some(200), &Outcome::RpcError(-32603));
    o.add(Some(400), &Outcome::RpcError(-32020));
    o.add(Some(404), &Outcome::HttpError);
    o.add(Some(200), &Outcome::Invalid("id mismatch"));
    o.add(None, &Outcome::Timeout);
    o.add(None, &Outcome::Transport("connection refused"));
    o.add(None, &Outcome::Overflow);
    o.add(Some(200), &Outcome::Incomplete);
    assert_eq!(
        (o.ok, o.tool_error, o.jsonrpc_error, o.http_error),
        (2, 1, 2, 1)
    );
    assert_eq!(
        (o.invalid_response, o.timeout, o.transport_error),
        (1, 1, 1)
    );
    assert_eq!((o.overflow, o.incomplete), (1, 1));
    assert_eq!(o.total(), 11);
    assert_eq!(o.errors(), 9);
    assert_eq!(o.by_http_status[&200], 6);
    assert_eq!(o.transport_reasons["connection refused"], 1);
    assert_eq!(o.by_http_status[&400], 1);
    assert_eq!(o.by_http_status[&404], 1);
    assert_eq!(o.by_http_status.values().sum::<u64>(), 8);
    assert_eq!(o.by_jsonrpc_code[&-32603], 1);
    assert_eq!(o.by_jsonrpc_code[&-32020], 1);
    assert_eq!(o.invalid_reasons["id mismatch"], 1);
    let json = serde_json::to_value(&o).unwrap();
    assert_eq!(json["by_http_status"]["200"], 6);
    assert_eq!(json["by_jsonrpc_code"]["-32603"], 1);
}

#[test]
fn shards_merge_exactly_and_setup_is_kept_apart() {
    let shards = Shards::new(4);
    for i in 0..100u64 {
        let outcome = if i % 10 == 0 {
            Outcome::ToolError
        } else {
            Outcome::Ok
        };
        shards.record(i as usize, Op::ToolsCall, Some(200), &outcome, ms(i + 1));
    }
    shards.record(0, Op::Initialize, Some(200), &Outcome::Ok, ms(5));
    shards.record(1, Op::ToolsList, Some(200), &Outcome::Ok, ms(1));
    shards.record(2, Op::ToolsCall, None, &Outcome::Overflow, None);
    let all = shards.merged();
    let call = all.op(Op::ToolsCall);
    assert_eq!(call.outcomes.total(), 101);
    assert_eq!(call.outcomes.tool_error, 10);
    assert_eq!(call.outcomes.overflow, 1);
    assert_eq!(
        call.latency.as_ref().unwrap().len(),
        100,
        "overflow has no latency"
    );
    let (h, o) = all.measured();
    assert_eq!(o.total(), 102, "initialize is not a measured request");
    assert_eq!(h.len(), 101);
    assert_eq!(all.op(Op::Initialize).outcomes.ok, 1);
}
