//! The gateway's logs as an operator's collector reads them (issue 17): `[server] log_format = "json"` makes
//! every line on standard error one JSON object with the timestamp, level and target, and a request's lines
//! carry its span's fields (session, request id, method, backend, generation); `--log-format` overrides the
//! config; a tool's arguments never reach the log at info.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

const BOUND: Duration = Duration::from_secs(20);
/// An argument no log line may show.
const SECRET: &str = "an-argument-the-log-must-not-show";

fn config(format: &str) -> String {
    format!(
        "[server]\nlog_format = \"{format}\"\n\n[[middleware]]\nkind = \"access_log\"\n\n{}",
        one_stdio_mock(&[])
    )
}

/// Lines until one contains `needle` (bounded), then what follows within a moment.
fn lines_until(gw: &Running, needle: &str) -> Vec<String> {
    let mut lines = gw.early.clone();
    let deadline = Instant::now() + BOUND;
    while !lines.iter().any(|l| l.contains(needle)) && Instant::now() < deadline {
        lines.extend(gw.log.recv_timeout(Duration::from_millis(200)).ok());
    }
    std::thread::sleep(Duration::from_millis(200));
    lines.extend(gw.log.try_iter());
    lines
}

#[test]
fn json_logs_are_one_object_per_line_with_the_requests_span_fields() {
    let dir = TempDir::new("logs-json");
    let gw = gateway(&config("json"), &dir);
    let mut client = LegacyClient::connect(&gw.url, "2025-06-18");
    let r = client.request(
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": SECRET}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.text.contains(SECRET), "the call went through: {r:?}");
    let lines = lines_until(&gw, "\"mcpgw::access\"");
    // Every line is JSON, the start-up announcements included (issue 35 §2): the listening line is one
    // with its URL.
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(events.len() > 3, "{lines:#?}");
    let listening = events
        .iter()
        .find(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("mcpgw listening on "))
        })
        .unwrap_or_else(|| panic!("no listening line: {lines:#?}"));
    assert_eq!(listening["url"], gw.url.as_str(), "{listening}");
    // The framework's own start lines are not at info.
    assert!(
        !events.iter().any(|e| e["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("actix_server"))),
        "{lines:#?}"
    );
    for e in &events {
        for key in ["timestamp", "level", "target", "message"] {
            assert!(e.get(key).is_some_and(Value::is_string), "no {key}: {e}");
        }
    }
    let access = events
        .iter()
        .find(|e| e["target"] == "mcpgw::access" && e["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no access line for the call: {lines:#?}"));
    assert_eq!(access["level"], "INFO", "{access}");
    assert_eq!(access["outcome"], "ok", "{access}");
    assert_eq!(access["backend"], "mock", "{access}");
    let span = &access["span"];
    assert_eq!(span["name"], "request", "{access}");
    assert_eq!(span["method"], "tools/call", "{access}");
    assert_eq!(span["generation"], "2025-06-18", "{access}");
    assert_eq!(span["backend"], "mock", "{access}");
    assert_eq!(
        span["id"], "2",
        "the call was the client's second request: {access}"
    );
    let session = span["session"].as_str().unwrap_or_default();
    assert!(
        session.len() < client.session.len()
            && client.session.starts_with(session.trim_end_matches('…')),
        "the session's short form only: {access}"
    );
    let leaks: Vec<&String> = lines.iter().filter(|l| l.contains(SECRET)).collect();
    assert!(leaks.is_empty(), "an argument reached the log: {leaks:#?}");
}

#[test]
fn the_log_format_flag_overrides_the_config() {
    let dir = TempDir::new("logs-flag");
    let gw = gateway_with(&config("json"), &dir, |cmd| {
        cmd.args(["--log-format", "text"]);
    });
    let mut client = LegacyClient::connect(&gw.url, "2025-06-18");
    assert_eq!(client.request("tools/list", json!({})).status, 200);
    let lines = lines_until(&gw, "access");
    let access = lines
        .iter()
        .find(|l| l.contains("access") && l.contains("tools/list"))
        .unwrap_or_else(|| panic!("no access line: {lines:#?}"));
    assert!(
        serde_json::from_str::<Value>(access).is_err() && access.contains("INFO"),
        "a text line: {access}"
    );
}
