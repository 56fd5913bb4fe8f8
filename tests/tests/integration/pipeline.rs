//! Issue 12: the request pipeline through real processes — the `[[middleware]]` chain answers at once on
//! every generation and transport (Streamable HTTP legacy and 2026-07-28, a batch entry, HTTP+SSE, stdio),
//! its order is kept, the access log never carries arguments, and the in-flight bound refuses one more
//! request with 503 and `Retry-After` instead of letting it through.

use std::io::{BufRead, BufReader};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

const BOUND: Duration = Duration::from_secs(20);
/// An argument the access log must never show.
const SECRET: &str = "do-not-log-this-argument";

/// A backend whose calls take 25 s: a call that reached it would not be answered -32601 (nor soon).
fn slow_backend(middlewares: &str) -> String {
    format!(
        "{middlewares}\n{}",
        one_stdio_mock(&["--latency-ms", "25000"])
    )
}

const LOG_THEN_ALLOW: &str = "[[middleware]]\nkind = \"access_log\"\n\n[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"initialize\", \"tools/list\"]\n";
const ALLOW_THEN_LOG: &str = "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"tools/list\"]\n\n[[middleware]]\nkind = \"access_log\"\n";

fn echo_args() -> Value {
    json!({"name": "m__echo", "arguments": {"text": SECRET}})
}

/// A refusal is exactly an unknown method's answer for the generation.
fn assert_unknown_method(v: &Value, id: i64, what: &str) {
    assert_eq!(v["id"], id, "{what}: {v}");
    assert_eq!(v["error"]["code"], -32601, "{what}: {v}");
    assert_eq!(
        v["error"]["message"], "method not found: tools/call",
        "{what}: {v}"
    );
}

fn access_lines(gw: &Running) -> Vec<String> {
    gw.log
        .try_iter()
        .filter(|l| l.contains(": access "))
        .collect()
}

#[test]
fn a_refusing_middleware_answers_at_once_on_every_generation_and_transport() {
    let dir = TempDir::new("pipeline-refuse");
    let gw = gateway(&slow_backend(LOG_THEN_ALLOW), &dir);
    wait_ready(gw.url.trim_end_matches("/mcp"));

    // 2026-07-28: 404, as an unknown method.
    let modern = modern_request(&gw.url, "tools/call", echo_args(), &[]);
    assert_eq!(modern.status, 404, "{modern:?}");
    assert_unknown_method(&modern.json(), 1, "2026-07-28");

    // A legacy session (2025-06-18): 200 with the error; an allowed method still works.
    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let r = legacy.request("tools/call", echo_args());
    assert_eq!(r.status, 200, "{r:?}");
    assert_unknown_method(&r.json(), 2, "2025-06-18");
    let listed = legacy.request("tools/list", json!({}));
    assert_eq!(
        listed.json()["result"]["tools"][0]["name"],
        "m__add",
        "{listed:?}"
    );

    // A 2025-03-26 batch: the refused entry and the allowed one, each answered.
    let mut batching = LegacyClient::connect(&gw.url, "2025-03-26");
    let batch = batching.post(&json!([
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": echo_args()},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {}},
    ]));
    assert_eq!(batch.status, 200, "{batch:?}");
    let entries = batch.json();
    let entry = |id: i64| {
        entries
            .as_array()
            .and_then(|a| a.iter().find(|e| e["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("entry {id} in {entries}"))
    };
    assert_unknown_method(&entry(10), 10, "batch entry");
    assert!(entry(11)["result"]["tools"].is_array(), "{entries}");

    // 2024-11-05 HTTP+SSE: the answer travels on the session's stream.
    let (post, rx) = sse_session(&gw.url);
    post(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": echo_args()}));
    assert_unknown_method(&next_message(&rx), 3, "HTTP+SSE");

    // The access log came first: it saw every refusal, with its code, and never the arguments.
    std::thread::sleep(Duration::from_millis(200));
    let lines = access_lines(&gw);
    let refused: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("method=tools/call") && l.contains("outcome=\"refused\""))
        .collect();
    assert_eq!(refused.len(), 4, "one line per refused call: {lines:#?}");
    assert!(
        refused.iter().all(|l| l.contains("code=-32601")),
        "{refused:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("method=tools/list") && l.contains("outcome=\"ok\"")),
        "{lines:#?}"
    );
    let all: Vec<String> = gw.log.try_iter().collect();
    assert!(
        !lines.iter().chain(all.iter()).any(|l| l.contains(SECRET)),
        "an argument reached the log"
    );
}

#[test]
fn middlewares_run_in_the_configured_order() {
    // allow_methods first: the refused call never reaches the access log after it; the allowed list does.
    let dir = TempDir::new("pipeline-order");
    let gw = gateway(&slow_backend(ALLOW_THEN_LOG), &dir);
    wait_ready(gw.url.trim_end_matches("/mcp"));
    let refused = modern_request(&gw.url, "tools/call", echo_args(), &[]);
    assert_unknown_method(&refused.json(), 1, "refused");
    let listed = modern_request(&gw.url, "tools/list", json!({}), &[]);
    assert_eq!(listed.status, 200, "{listed:?}");
    // `initialize` goes through the chain too: refused, it creates no session.
    let init = json!({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let refused_init = post_raw(&gw.url, &JSON_HEADERS, init.to_string());
    assert_eq!(refused_init.status, 200, "{refused_init:?}");
    assert_eq!(
        refused_init.json()["error"]["code"],
        -32601,
        "{refused_init:?}"
    );
    assert_eq!(
        refused_init.header("mcp-session-id"),
        None,
        "{refused_init:?}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let lines = access_lines(&gw);
    assert!(
        lines.iter().any(|l| l.contains("method=tools/list")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("method=tools/call")),
        "the access log after allow_methods saw a refused call: {lines:#?}"
    );
}

#[test]
fn a_refusing_middleware_answers_stdio_clients_of_both_eras() {
    let dir = TempDir::new("pipeline-stdio");
    let config = dir.file("mcpgw.toml", &slow_backend(LOG_THEN_ALLOW));
    let mut gw = StdioGateway::start(&config);
    let mut ask = |v: Value| gw.ask(&v);
    let mut modern_params = echo_args();
    modern_params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let modern =
        ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": modern_params}));
    assert_unknown_method(&modern, 1, "stdio 2026-07-28");
    let init = ask(
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let legacy =
        ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": echo_args()}));
    assert_unknown_method(&legacy, 3, "stdio 2025-06-18");
}

#[test]
fn the_in_flight_bound_refuses_one_more_request_with_503_and_retry_after() {
    // One worker, two requests in flight at most, calls that take 5 s: of six sent at once, never more than
    // two are served and the others are answered 503 at once (before, the bound was released when
    // validation returned: five or six passed).
    let dir = TempDir::new("pipeline-bound");
    let config = format!(
        "[server]\nworkers = 1\nmax_in_flight_per_worker = 2\n\n{}",
        one_stdio_mock(&["--latency-ms", "5000"])
    );
    let gw = gateway(&config, &dir);
    wait_ready(gw.url.trim_end_matches("/mcp"));
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let url = gw.url.clone();
            std::thread::spawn(move || {
                modern_request(
                    &url,
                    "tools/call",
                    json!({"name": "m__echo", "arguments": {"text": format!("call {i}")}}),
                    &[],
                )
            })
        })
        .collect();
    let replies: Vec<Reply> = calls.into_iter().map(|t| t.join().unwrap()).collect();
    let refused: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    let served = replies.iter().filter(|r| r.status == 200).count();
    assert!(
        !refused.is_empty(),
        "the bound refused nothing: {replies:#?}"
    );
    assert!(served <= 2, "more than two were in flight: {replies:#?}");
    assert_eq!(served + refused.len(), 6, "{replies:#?}");
    for r in &refused {
        assert_eq!(r.header("retry-after").as_deref(), Some("1"), "{r:?}");
        let v = r.json();
        assert_eq!(v["error"]["code"], -32603, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("service unavailable")),
            "{v}"
        );
    }
    // The permits come back with the answers.
    let after = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "after"}}),
        &[],
    );
    assert_eq!(after.status, 200, "{after:?}");
    assert_eq!(after.json()["result"]["content"][0]["text"], "after");
}

/// Opens a 2024-11-05 HTTP+SSE session: a function that POSTs to its endpoint, and its stream's messages.
fn sse_session(mcp_url: &str) -> (impl Fn(Value) -> Reply, Receiver<String>) {
    let base = mcp_url.trim_end_matches("/mcp").to_owned();
    let stream = client()
        .get(format!("{base}/sse"))
        .header("Accept", "text/event-stream")
        .send()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let endpoint = next_data(&rx);
    let url = format!("{base}{endpoint}");
    let post = move |body: Value| {
        post_raw(
            &url,
            &[("Content-Type", "application/json")],
            body.to_string(),
        )
    };
    let r = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}}),
    );
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(next_message(&rx)["id"], 0);
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    (post, rx)
}

fn next_data(rx: &Receiver<String>) -> String {
    loop {
        let line = rx.recv_timeout(BOUND).expect("an SSE line in time");
        if let Some(d) = line.strip_prefix("data: ") {
            return d.to_owned();
        }
    }
}

fn next_message(rx: &Receiver<String>) -> Value {
    serde_json::from_str(&next_data(rx)).unwrap()
}
