//! Issue 13 §4, circuit breakers: a backend whose calls keep timing out is no longer waited on call after
//! call; its circuit opens, its calls are answered at once, and a probe closes it again.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

fn call(url: &str, tool: &str, arguments: Value) -> Value {
    let r = modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        &[],
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.json()
}

fn circuit_of(base: &str) -> Value {
    let v = client()
        .get(format!("{base}/readyz"))
        .send()
        .expect("readyz answers")
        .json::<Value>()
        .unwrap();
    v["backends"][0]["circuit"].clone()
}

#[test]
fn a_backend_that_keeps_timing_out_is_no_longer_waited_on_call_after_call() {
    let dir = TempDir::new("circuit");
    let gw = gateway(
        &[
            "[[backend]]\nname = \"m\"\ntimeout_ms = 300\n\
             builtin = [\"mock-backend\"]\n\n[backend.circuit]\nfailures = 3\nopen_ms = 1500\n",
            ADMIN,
        ]
        .concat(),
        &dir,
    );
    // The circuit is the readiness detail's: the admin listener's.
    let base = admin_base(&gw);
    wait_ready(&base);

    // Answers never count: tool errors and the backend's own JSON-RPC errors leave it closed.
    for _ in 0..5 {
        assert_eq!(
            call(&gw.url, "m__fail", json!({}))["result"]["isError"],
            true
        );
        // The backend's JSON-RPC error, which a tool call's answer carries as a tool error.
        let e = call(&gw.url, "m__jsonrpc_error", json!({"code": -32602}));
        assert_eq!(
            e["result"]["_meta"]["io.mcpgw/error"]["kind"], "backend_error",
            "{e}"
        );
    }
    assert_eq!(circuit_of(&base), "closed");

    // Three timeouts in a row open it.
    for _ in 0..3 {
        let v = call(&gw.url, "m__sleep", json!({"ms": 2000}));
        assert_eq!(
            v["result"]["_meta"]["io.mcpgw/error"]["kind"], "timeout",
            "{v}"
        );
    }
    assert_eq!(circuit_of(&base), "open");
    // Now even a call that would succeed is refused at once, as a tool error naming the circuit.
    let v = call(&gw.url, "m__echo", json!({"text": "hi"}));
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        v["result"]["_meta"]["io.mcpgw/error"]["kind"],
        "circuit_open"
    );
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("circuit is open"), "{text}");
    // The catalog is kept meanwhile.
    let (tools, _) = listed_tools(&gw.url);
    assert!(tools.iter().any(|t| t == "m__echo"), "{tools:?}");

    // After open_ms a probe goes through; its success closes the circuit.
    let reopened = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        std::thread::sleep(Duration::from_millis(250));
        let v = call(&gw.url, "m__echo", json!({"text": "hi"}));
        if v["result"]["isError"].is_null() || Instant::now() > reopened {
            break v;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    assert_eq!(circuit_of(&base), "closed");
    let log = gw.log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("circuit open") && l.contains("3 consecutive")),
        "{log:?}"
    );
    assert!(log.iter().any(|l| l.contains("circuit closed")), "{log:?}");
}
