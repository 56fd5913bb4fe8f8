//! The report's JSON keys and table lines.

use std::time::Duration;

use super::*;
use crate::stats::Outcome;

fn context() -> Context {
    Context {
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
        duration_s: 2.0,
        cpu: CpuUse {
            generator_cores: Some(0.5),
            other_cores: Some(0.1),
            available_cores: 2,
            threads: 2,
        },
        stopped: "requests",
        abandoned: 0,
        resent: 0,
        window: Window {
            start_unix_ms: 1_000,
            end_unix_ms: 3_000,
            late_ms: 0,
        },
        memory: None,
        hdr: false,
    }
}

#[test]
fn json_has_the_required_keys_and_table_the_numbers() {
    let mut s = Stats::default();
    for i in 0..90 {
        s.record(
            Op::ToolsCall,
            Some(200),
            &Outcome::Ok,
            Some(Duration::from_millis(10 + i % 3)),
        );
    }
    for _ in 0..10 {
        s.record(
            Op::ToolsCall,
            Some(200),
            &Outcome::RpcError(-32603),
            Some(Duration::from_millis(12)),
        );
    }
    s.record(
        Op::Initialize,
        Some(200),
        &Outcome::Ok,
        Some(Duration::from_millis(3)),
    );
    let r = Report::new(context(), &s);
    assert_eq!((r.requests, r.errors), (100, 10));
    assert_eq!(r.throughput_rps, 50.0);
    let v = serde_json::to_value(&r).unwrap();
    for key in [
        "throughput_rps",
        "latency_ms",
        "outcomes",
        "requests",
        "errors",
        "duration_s",
        "sessions",
        "era",
    ] {
        assert!(v.get(key).is_some(), "{key} missing: {v}");
    }
    for key in ["p50", "p90", "p99", "p999", "max"] {
        assert!(v["latency_ms"][key].as_f64().unwrap() >= 10.0, "{key}");
    }
    assert_eq!(v["era"], "legacy");
    assert_eq!(v["outcomes"]["ok"], 90);
    assert_eq!(v["outcomes"]["by_jsonrpc_code"]["-32603"], 10);
    assert_eq!(v["operations"]["initialize"]["measured"], false);
    let table = r.table();
    assert!(
        table.contains("requests    100 in 2.00 s (50.0/s); errors 10 (10.00%)"),
        "{table}"
    );
    assert!(
        table.contains("ok 90, jsonrpc-error 10; HTTP 200: 100; JSON-RPC -32603: 10"),
        "{table}"
    );
    assert!(table.contains("initialize (set-up)"), "{table}");
    assert!(!table.contains("warning"), "{table}");
    let dir = std::env::temp_dir().join(format!("mcpgw-load-report-{}.json", std::process::id()));
    r.write_json(&dir).unwrap();
    let back: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&dir).unwrap()).unwrap();
    assert_eq!(back, v);
    let _ = std::fs::remove_file(&dir);
    let err = r
        .write_json(Path::new("/nonexistent-dir/x.json"))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot write /nonexistent-dir/x.json"),
        "{err}"
    );
}
