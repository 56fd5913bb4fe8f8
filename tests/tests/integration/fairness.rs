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
