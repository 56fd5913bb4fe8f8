//! Issue 13 §4: a tool's own deadline (`[backend.tool_timeouts_ms]`) instead of its backend's.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

#[test]
fn a_tool_with_its_own_deadline_no_longer_gets_its_backends() {
    let dir = TempDir::new("tool-deadlines");
    // Every call takes 400 ms more than its tool's work; the backend's deadline is 1 s, `sleep` gets 5 s
    // and `add` 100 ms.
    let config = "[[backend]]\nname = \"m\"\ntimeout_ms = 1000\n\
                  builtin = [\"mock-backend\", \"--latency-ms\", \"400\"]\n\
                  [backend.tool_timeouts_ms]\nsleep = 5000\nadd = 100\n";
    let gw = gateway(config, &dir);
    wait_ready(gw.url.trim_end_matches("/mcp"));
    let call = |tool: &str, arguments: Value| {
        let started = Instant::now();
        let r = modern_request(
            &gw.url,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            &[],
        );
        (r.json(), started.elapsed())
    };
    // Longer than the backend's 1 s: answered within its own 5 s.
    let (v, _) = call("m__sleep", json!({"ms": 1000}));
    assert!(v["result"]["isError"].is_null(), "{v}");
    // No deadline of its own: the backend's, which it meets.
    let (v, _) = call("m__echo", json!({"text": "t"}));
    assert!(v["result"]["isError"].is_null(), "{v}");
    // Shorter than the call takes: a tool error naming the tool's deadline, cut at it.
    let (v, took) = call("m__add", json!({"a": 1, "b": 2}));
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("within 100 ms"), "{text}");
    assert!(
        took < Duration::from_millis(390),
        "cut at its deadline: {took:?}"
    );
}
