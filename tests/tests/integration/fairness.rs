//! Issue 13 §2, fairness: one client's batch no longer takes every permit of a backend.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::*;

fn config() -> String {
    // 16 permits on a backend whose calls take 100 ms.
    "[server]\nmax_batch = 100\n\n[[backend]]\nname = \"m\"\nmax_in_flight = 16\n\
     builtin = [\"mock-backend\", \"--latency-ms\", \"100\"]\n"
        .to_owned()
}

fn call(id: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "m__echo", "arguments": {"text": format!("n{id}")}}})
}

#[test]
fn a_batch_no_longer_takes_every_permit_of_its_backend() {
    let dir = TempDir::new("fair-batch");
    let gw = gateway(&config(), &dir);
    wait_ready(gw.url.trim_end_matches("/mcp"));
    let url = gw.url.clone();
    // Another client calls the same backend while the batch runs.
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        (0..5)
            .map(|_| {
                let r = modern_request(
                    &url,
                    "tools/call",
                    json!({"name": "m__echo", "arguments": {"text": "other"}}),
                    &[],
                );
                r.json()["result"]["isError"].is_null()
            })
            .filter(|ok| *ok)
            .count()
    });
    let mut batching = LegacyClient::connect(&gw.url, "2025-03-26");
    let batch: Vec<Value> = (1..=100).map(call).collect();
    let reply = batching.post(&Value::Array(batch));
    assert_eq!(reply.status, 200, "{reply:?}");
    let answers = reply.json();
    let answers = answers.as_array().expect("an array of answers");
    assert_eq!(answers.len(), 100);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], i + 1, "in order");
        assert!(
            a["result"]["isError"].is_null(),
            "entry {} failed: {a}",
            i + 1
        );
        assert_eq!(a["result"]["content"][0]["text"], format!("n{}", i + 1));
    }
    assert_eq!(
        other.join().unwrap(),
        5,
        "the other client was never refused"
    );

    // Over the limit: refused, naming it.
    let batch: Vec<Value> = (1..=101).map(call).collect();
    let refused = batching.post(&Value::Array(batch)).json();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("limit of 100"), "{message}");
}

/// A `tools/call` of `m__echo` from `source` (a loopback address the client binds): in the legacy session
/// `session`, or as a 2026-07-28 request without one. Its JSON-RPC response.
fn call_from(url: &str, source: &str, session: Option<&str>) -> Value {
    tls_provider();
    let client = reqwest::blocking::Client::builder()
        .local_address(source.parse::<std::net::IpAddr>().ok())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut params = json!({"name": "m__echo", "arguments": {"text": "share"}});
    let mut req = client.post(url);
    for (k, v) in JSON_HEADERS {
        req = req.header(k, v);
    }
    req = match session {
        Some(id) => req
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-06-18"),
        None => {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
            });
            req.header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "m__echo")
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let reply = into_reply(req.body(body.to_string()).send().expect("request sent"));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

/// Fires `counts[i]` calls for each caller `callers[i]` (source address, session) at once; per caller, how
/// many were answered and the texts of the tool errors.
fn at_once(url: &str, callers: &[(&str, Option<&str>, usize)]) -> Vec<(usize, Vec<String>)> {
    let total: usize = callers.iter().map(|c| c.2).sum();
    let start = std::sync::Arc::new(std::sync::Barrier::new(total));
    let threads: Vec<Vec<_>> = callers
        .iter()
        .map(|(source, session, n)| {
            (0..*n)
                .map(|_| {
                    let (url, source) = (url.to_owned(), source.to_string());
                    let session = session.map(str::to_owned);
                    let start = start.clone();
                    std::thread::spawn(move || {
                        start.wait();
                        call_from(&url, &source, session.as_deref())
                    })
                })
                .collect()
        })
        .collect();
    threads
        .into_iter()
        .map(|calls| {
            let answers: Vec<Value> = calls.into_iter().map(|t| t.join().unwrap()).collect();
            let ok = answers
                .iter()
                .filter(|a| a["result"]["content"][0]["text"] == "share")
                .count();
            let refused = answers
                .iter()
                .filter(|a| a["result"]["isError"] == true)
                .map(|a| {
                    a["result"]["content"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned()
                })
                .collect();
            (ok, refused)
        })
        .collect()
}

/// The share rule (`handlers::share`): beyond its share a caller takes a permit only while a share's worth
/// stays free, so a busy caller gets more than its share while permits are free, is refused once they are
/// scarce, and never keeps another caller from its share.
#[test]
fn a_caller_over_its_share_is_refused_only_when_permits_are_scarce_while_another_goes_through() {
    let dir = TempDir::new("fair-share");
    // 8 permits, so a share of 2 per caller (the default quarter); each call holds its permit for 1.5 s.
    let gw = gateway(
        "[[backend]]\nname = \"m\"\nmax_in_flight = 8\n\
         builtin = [\"mock-backend\", \"--latency-ms\", \"1500\"]\n",
        &dir,
    );
    wait_ready(gw.url.trim_end_matches("/mcp"));
    let (a, b) = (
        LegacyClient::connect(&gw.url, "2025-06-18"),
        LegacyClient::connect(&gw.url, "2025-06-18"),
    );
    // 10 calls for 8 permits: the busy session may hold up to 6 (8 less a share), fewer when the other's
    // calls come first; the other's 2 always go through.
    let check = |outcome: &[(usize, Vec<String>)], who: &str| {
        let (busy_ok, busy_refused) = &outcome[0];
        assert!(
            (4..=6).contains(busy_ok),
            "{who}: beyond its share while permits were free, never into the last share: {busy_ok} \
             served, refused {busy_refused:?}"
        );
        assert_eq!(busy_ok + busy_refused.len(), 8, "{who}: {busy_refused:?}");
        for text in busy_refused {
            assert!(
                text.starts_with("overloaded") && text.contains("max_in_flight_per_caller"),
                "{text}"
            );
        }
        assert_eq!(
            outcome[1],
            (2, Vec::new()),
            "{who}: the other caller was never refused"
        );
    };
    let outcome = at_once(
        &gw.url,
        &[
            ("127.0.0.1", Some(&a.session), 8),
            ("127.0.0.1", Some(&b.session), 2),
        ],
    );
    check(&outcome, "sessions");

    // 2026-07-28 requests have no session (and no principal here): the share is per client address.
    let outcome = at_once(&gw.url, &[("127.0.0.1", None, 8), ("127.0.0.2", None, 2)]);
    check(&outcome, "addresses");
}
