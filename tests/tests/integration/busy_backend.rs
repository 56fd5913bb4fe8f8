//! Issue 11 §1: a busy backend never vanishes from the catalog. Under an open-loop load far above a
//! backend's concurrency limit, the catalog is listed again and again (a short `ttlMs`; a backend that
//! restarts), and no call is ever answered "unknown tool" for a tool the backend has: listings run on the
//! backend's control bulkhead, a failed listing keeps the last good catalog (stale), and a backend that is
//! down keeps it for its grace period.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// Runs `mcpgw load` in open loop against `url` (bounded) and returns its JSON report.
fn open_loop(url: &str, rate: &str, duration: &str) -> Value {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["load", "--url", url, "--era", "mixed", "--sessions", "16"])
        .args([
            "--rate",
            rate,
            "--duration",
            duration,
            "--max-in-flight",
            "2000",
        ])
        .args(["--tool", "m__echo", "--timeout", "5s", "--json", "-"]);
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(90));
    assert!(ok, "mcpgw load failed:\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("report: {e}\n{stdout}"))
}

/// The count of JSON-RPC errors with `code` in a load report.
fn code_count(report: &Value, code: i64) -> u64 {
    report["outcomes"]["by_jsonrpc_code"][code.to_string()]
        .as_u64()
        .unwrap_or_default()
}

/// The gateway's log lines so far that contain `needle`.
fn log_lines(gw: &Running, needle: &str) -> Vec<String> {
    gw.log.try_iter().filter(|l| l.contains(needle)).collect()
}

#[test]
fn a_busy_backend_never_vanishes_from_the_catalog_when_its_lists_go_stale() {
    let dir = TempDir::new("busy-ttl");
    // 20 ms per call and 8 at once: at most ~400 calls/s get through; 1,000/s are offered. Its lists may be
    // reused for 200 ms only, so the gateway lists it again about once a second (its floor) throughout.
    let mock = http_mock(&["--latency-ms", "20", "--ttl-ms", "200"]);
    let config = format!(
        "[[backend]]\nname = \"mock\"\nprefix = \"m\"\nurl = \"{}\"\nmax_in_flight = 8\n",
        mock.url
    );
    let gw = gateway(&config, &dir);
    let report = open_loop(&gw.url, "1000/s", "4s");
    let refreshed = log_lines(&gw, "catalog refreshed");
    assert!(
        refreshed.len() >= 2,
        "the catalog was listed again under load: {refreshed:#?}"
    );
    let outcomes = &report["outcomes"];
    assert!(
        outcomes["tool_error"].as_u64().unwrap_or_default() > 0,
        "the load was above the bulkhead (calls were refused as overloaded): {outcomes}"
    );
    assert!(
        outcomes["ok"].as_u64().unwrap_or_default() > 0,
        "{outcomes}"
    );
    assert_eq!(
        code_count(&report, -32601),
        0,
        "a call was answered \"unknown tool\": {outcomes}"
    );
    // after the load, its tools are listed and nothing is degraded
    let (names, list) = listed_tools(&gw.url);
    assert!(names.iter().any(|n| n == "m__echo"), "{list}");
    assert!(
        list["result"]["_meta"].get("io.mcpgw/degraded").is_none(),
        "{list}"
    );
}

#[test]
fn a_busy_backend_never_vanishes_from_the_catalog_when_it_restarts() {
    let dir = TempDir::new("busy-restart");
    // The stdio mock exits after 100 answers and the gateway starts it again: several restarts
    // of the load, each one a `Down` and a `Ready` that make the gateway list it again while calls pour in.
    let config = format!(
        "[[backend]]\nname = \"mock\"\nprefix = \"m\"\nmax_in_flight = 8\ncommand = {}\n",
        stdio_mock_command(&["--latency-ms", "20", "--crash-after", "100"])
    );
    let gw = gateway(&config, &dir);
    let report = open_loop(&gw.url, "1000/s", "4s");
    let restarts = log_lines(&gw, "backend ready");
    assert!(
        restarts.len() >= 2,
        "the backend restarted during the load: {restarts:#?}"
    );
    let outcomes = &report["outcomes"];
    assert!(
        outcomes["ok"].as_u64().unwrap_or_default() > 0,
        "{outcomes}"
    );
    assert!(
        outcomes["tool_error"].as_u64().unwrap_or_default() > 0,
        "calls while it was down or full were tool errors: {outcomes}"
    );
    assert_eq!(
        code_count(&report, -32601),
        0,
        "a call was answered \"unknown tool\": {outcomes}"
    );
}
