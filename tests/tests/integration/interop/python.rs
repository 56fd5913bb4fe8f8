//! The Python SDK (`mcp`) as the client, in its three connect modes (`mcp.Client(mode=...)`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::peers::{self, CallOutcome, Deps, Stack};

/// `mode=` values of `mcp.Client` and the protocol version each must end up with against the dual-era gateway:
/// "legacy" runs `initialize` (the client offers 2025-11-25), "auto" probes `server/discover` and must stay
/// modern, "2026-07-28" adopts the version without a probe.
const MODES: [(&str, &str); 3] = [
    ("legacy", "2025-11-25"),
    ("auto", "2026-07-28"),
    ("2026-07-28", "2026-07-28"),
];

/// Runs `py_client.py` once with the standard calls; the parsed JSON report, or what went wrong.
fn run_client(deps: &Deps, url: &str, mode: &str) -> Result<Value, String> {
    peers::py_client(deps, url, mode, &[], &peers::calls())
}

fn check_report(report: &Value, expected_version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if report["protocolVersion"] != expected_version {
        problems.push(format!(
            "negotiated {} (expected {expected_version})",
            report["protocolVersion"]
        ));
    }
    let tools: Vec<String> = report["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    problems.extend(peers::check_tools(&tools));
    let outcomes: Vec<Result<CallOutcome, String>> = report["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            if c["ok"] == true {
                Ok(CallOutcome {
                    name: name.to_owned(),
                    is_error: c["isError"] == true,
                    text: c["text"].as_str().unwrap_or_default().to_owned(),
                    structured: c.get("structuredContent").filter(|v| !v.is_null()).cloned(),
                })
            } else {
                Err(c["error"].as_str().unwrap_or("?").to_owned())
            }
        })
        .collect();
    problems.extend(peers::check_calls(&outcomes));
    problems
}

#[test]
fn python_sdk_client_in_every_mode() {
    let Some(deps) = peers::deps("python_sdk_client_in_every_mode") else {
        return;
    };
    let stack = Stack::start(&deps, "py-client");
    let mut failures = Vec::new();
    for (mode, version) in MODES {
        let started = Instant::now();
        match run_client(&deps, stack.url(), mode) {
            Ok(report) => {
                let problems = check_report(&report, version);
                eprintln!(
                    "python mode={mode}: {} problem(s) in {:?}",
                    problems.len(),
                    started.elapsed()
                );
                failures.extend(problems.into_iter().map(|p| format!("mode={mode}: {p}")));
            }
            Err(e) => failures.push(format!("mode={mode}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "Python SDK client through mcpgw:\n  {}\n{}",
        failures.join("\n  "),
        stack.logs()
    );
}

#[test]
fn python_sdk_client_reaches_the_python_backend_directly() {
    let Some(deps) = peers::deps("python_sdk_client_reaches_the_python_backend_directly") else {
        return;
    };
    let py = peers::py_server(&deps);
    let mut failures = Vec::new();
    for (mode, version) in MODES {
        let mut cmd = Command::new(&deps.python);
        cmd.arg(deps.dir.join("py_client.py")).args([
            "--url",
            &py.url,
            "--mode",
            mode,
            "--timeout",
            "60",
        ]);
        cmd.args(["--call", "py_add", r#"{"a": 2, "b": 40}"#])
            .env("NO_PROXY", "127.0.0.1,localhost");
        let (ok, stdout, stderr) = peers::run_bounded(cmd, Duration::from_secs(90));
        let report: Value = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_default();
        if !ok || report["protocolVersion"] != version || report["calls"][0]["text"] != "42" {
            failures.push(format!(
                "mode={mode} (expected {version}): {stdout}\n{stderr}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "Python SDK client, no gateway:\n  {}\n{:?}",
        failures.join("\n  "),
        py.drain_log()
    );
}
