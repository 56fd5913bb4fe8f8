//! Whole runs against the mock backend started in this process on a loopback port (known latency, error
//! injection): exact counts, percentiles, outcomes by kind, both eras and the mix, the open loop, the JSON
//! report, `--self-test`, and the refusals. Each run is short and bounded by its own deadlines.

use std::time::Duration;

use serde_json::Value;

use super::args::tests::parse;
use super::*;

/// `MockArgs` from `mcpgw mock-backend` words (without the subcommand), as the CLI parses them.
fn mock_args(words: &[&str]) -> mock::MockArgs {
    use clap::Parser;
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: mock::MockArgs,
    }
    Cli::parse_from(std::iter::once("mock-backend").chain(words.iter().copied())).args
}

/// A mock backend with these flags; its URL.
fn mock_url(flags: &[&str]) -> String {
    let mut words = vec!["--listen", "127.0.0.1:0"];
    words.extend_from_slice(flags);
    selftest::start_mock(mock_args(&words)).expect("the mock starts")
}

/// `execute` with these flags (and no progress line, 2 threads).
fn load(url: &str, flags: &[&str]) -> Result<Report, LoadError> {
    let mut words = vec![
        "--url",
        url,
        "--no-progress",
        "--threads",
        "2",
        "--timeout",
        "5s",
    ];
    words.extend_from_slice(flags);
    execute(&parse(&words), url, false)
}

#[test]
fn modern_counts_are_exact_and_percentiles_match_a_fixed_latency() {
    let url = mock_url(&["--latency-ms", "20"]);
    let r = load(
        &url,
        &["--era", "modern", "--sessions", "4", "--requests", "100"],
    )
    .unwrap();
    assert_eq!(r.requests, 100, "{}", r.table());
    assert_eq!(r.outcomes.ok, 100, "{}", r.table());
    assert_eq!(r.errors, 0);
    assert_eq!(r.outcomes.by_http_status.get(&200), Some(&100));
    assert_eq!(r.stopped, "requests");
    assert_eq!(r.tool.as_deref(), Some("echo"));
    let l = r.latency_ms;
    assert!((20.0..=40.0).contains(&l.p50), "p50 {l:?}");
    assert!(l.min >= 20.0 && l.p99 >= l.p50 && l.max >= l.p999, "{l:?}");
    let discover = &r.operations["server/discover"];
    assert_eq!(
        (discover.requests, discover.errors, discover.measured),
        (4, 0, false)
    );
    assert_eq!(r.operations["tools/call"].requests, 100);
    // Four sessions, 20 ms each: about 200 requests per second at most.
    assert!(
        r.throughput_rps > 50.0 && r.throughput_rps <= 210.0,
        "{}",
        r.table()
    );
}

#[test]
fn legacy_errors_are_counted_by_kind_and_the_json_report_has_its_keys() {
    let url = mock_url(&["--error-rate", "0.5"]);
    let file = std::env::temp_dir().join(format!("mcpgw-load-test-{}.json", std::process::id()));
    let file_arg = file.to_string_lossy().into_owned();
    let args = parse(&[
        "--url",
        &url,
        "--no-progress",
        "--threads",
        "2",
        "--era",
        "legacy",
        "--sessions",
        "8",
        "--requests",
        "400",
        "--json",
        &file_arg,
    ]);
    let r = execute(&args, &url, false).unwrap();
    r.write_json(&file).unwrap();
    let o = &r.outcomes;
    assert_eq!(r.requests, 400, "{}", r.table());
    assert_eq!(o.ok + o.tool_error + o.jsonrpc_error, 400, "{}", r.table());
    // Half of the calls fail, half of those as isError results, half as JSON-RPC -32603 (σ ≈ 10).
    assert!((140..=260).contains(&r.errors), "{}", r.table());
    assert!(o.tool_error >= 60 && o.jsonrpc_error >= 60, "{}", r.table());
    assert_eq!(o.by_jsonrpc_code.get(&-32603), Some(&o.jsonrpc_error));
    assert_eq!(o.by_http_status.get(&200), Some(&400));
    let init = &r.operations["initialize"];
    let delete = &r.operations["delete"];
    assert_eq!((init.requests, init.errors), (8, 0), "{}", r.table());
    assert_eq!(
        (delete.requests, delete.errors),
        (8, 0),
        "every session is deleted"
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(json["throughput_rps"].as_f64().unwrap() > 0.0);
    for key in ["p50", "p90", "p99", "p999", "max"] {
        assert!(
            json["latency_ms"][key].is_number(),
            "latency_ms.{key}: {json}"
        );
    }
    assert_eq!(json["outcomes"]["tool_error"], o.tool_error);
    assert_eq!(json["outcomes"]["jsonrpc_error"], o.jsonrpc_error);
    assert_eq!(
        json["outcomes"]["by_jsonrpc_code"]["-32603"],
        o.jsonrpc_error
    );
    assert_eq!(
        (json["requests"].as_u64(), json["errors"].as_u64()),
        (Some(400), Some(r.errors))
    );
    assert_eq!(
        (json["era"].as_str(), json["sessions"].as_u64()),
        (Some("legacy"), Some(8))
    );
    assert!(json["duration_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn mixed_eras_run_the_whole_mix_with_churn() {
    let url = mock_url(&[]);
    let r = load(
        &url,
        &[
            "--era",
            "mixed",
            "--sessions",
            "4",
            "--requests",
            "200",
            "--mix",
            "tools/list=1,tools/call=2,resources/read=1,churn=1",
            "--tool",
            "regional",
            "--args",
            r#"{"region":"eu-west-1","text":"hi"}"#,
        ],
    )
    .unwrap();
    assert_eq!(r.errors, 0, "{}", r.table());
    let count = |op: &str| r.operations.get(op).map_or(0, |o| o.requests);
    assert_eq!(count("tools/call"), 80);
    assert_eq!(count("tools/list"), 40);
    assert_eq!(count("resources/read"), 40);
    assert_eq!(count("churn"), 40);
    assert_eq!(r.uri.as_deref(), Some("mock://mock-backend/readme"));
    // Two legacy and two modern sessions; every legacy session (old ones included) is deleted.
    assert_eq!(count("server/discover"), 2);
    assert!(
        count("initialize") == 2 && count("delete") >= 2,
        "{}",
        r.table()
    );
    assert_eq!(r.operations["delete"].errors, 0);
}

#[test]
fn open_loop_keeps_its_rate_against_a_slow_target() {
    let url = mock_url(&["--latency-ms", "100"]);
    let r = load(
        &url,
        &["--rate", "200/s", "--duration", "1s", "--sessions", "2"],
    )
    .unwrap();
    // Two sessions of a closed loop would send about 20 requests; the open loop sends all 200 on time.
    assert_eq!(r.requests, 200, "{}", r.table());
    assert_eq!(r.outcomes.ok, 200, "{}", r.table());
    assert_eq!(r.outcomes.overflow, 0);
    assert_eq!(r.mode, "open");
    assert!(
        r.latency_ms.p50 >= 100.0 && r.latency_ms.p50 < 200.0,
        "{:?}",
        r.latency_ms
    );
    assert!(r.duration_s < 1.6, "{}", r.table());
}

#[test]
fn self_test_reports_the_generator_ceiling() {
    // A count, not a duration: the generator's thread has work to show (CPU is read in 10 ms ticks, and a
    // half-second run on a busy machine may get less than one).
    let r = run(parse(&[
        "--self-test",
        "--requests",
        "2000",
        "--sessions",
        "2",
        "--no-progress",
        "--threads",
        "1",
    ]))
    .unwrap();
    assert!(r.self_test && r.requests == 2000, "{}", r.table());
    assert_eq!(r.errors, 0, "{}", r.table());
    assert_eq!(r.stopped, "requests");
    assert!(r.table().contains("self-test"));
    if cfg!(target_os = "linux") {
        assert!(
            r.cpu.generator_cores.is_some_and(|c| c > 0.0),
            "{:?}",
            r.cpu
        );
    }
}

#[test]
fn refusals_come_before_any_load() {
    let err = load("http://10.0.0.1:7800/mcp", &[]).unwrap_err();
    assert!(matches!(err, LoadError::RemoteTarget { .. }), "{err}");
    // A port nobody listens on: the probe says so plainly, with the URL, at once, in every era (no hint at
    // another era: nothing answered).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/mcp");
    for era in ["modern", "legacy", "mixed"] {
        let started = std::time::Instant::now();
        let err = load(&url, &["--era", era]).unwrap_err();
        assert!(matches!(err, LoadError::NoAnswer { .. }), "{era}: {err}");
        let said = err.to_string();
        assert!(
            said.starts_with(&format!("no answer from {url}: ")),
            "{said}"
        );
        assert!(said.ends_with(": connection refused"), "{era}: {said}");
        assert!(!said.contains("--era"), "{era}: {said}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    // A legacy-only server is not loaded with modern sessions, and the reason names the way out.
    let legacy_only = mock_url(&["--era", "legacy"]);
    let err = load(&legacy_only, &["--era", "modern", "--requests", "5"]).unwrap_err();
    assert!(err.to_string().contains("--era legacy"), "{err}");
    let err = load(
        &legacy_only,
        &["--era", "legacy", "--tool", "nope", "--requests", "5"],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"nope\" is not in the server's tools/list"),
        "{err}"
    );
}
