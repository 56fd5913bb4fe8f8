//! A failing backend affects only the requests routed to it: crashes are answered and the backend restarted,
//! timeouts answered as tool errors, garbage on a backend's stdout skipped, a backend that is down left out of
//! the lists while the others serve.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

fn call(url: &str, tool: &str, args: Value) -> Value {
    modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        &[],
    )
    .json()
}

#[test]
fn a_crashing_backend_is_answered_restarted_and_serves_again() {
    let dir = TempDir::new("resilience-crash");
    let config = format!(
        "{}\n[[backend]]\nname = \"steady\"\nprefix = \"s\"\ncommand = {}\n",
        one_stdio_mock(&["--crash-after", "12"]),
        stdio_mock_command(&["--name", "steady"])
    );
    let gw = gateway(&config, &dir);
    let mut saw_error = false;
    let mut recovered = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = 0;
    while Instant::now() < deadline && n < 200 {
        n += 1;
        let r = call(&gw.url, "m__echo", json!({"text": "x"}));
        if r["result"]["isError"] == true {
            saw_error = true;
        } else if r["result"]["content"][0]["text"] == "x" {
            if saw_error {
                recovered = true;
                break;
            }
        } else if r["error"]["code"] == -32601 {
            // The backend crashed while the catalog was being rebuilt: left out of the catalog until it
            // lists again. A transient answer, not a hang.
            saw_error = true;
        } else {
            panic!("neither a result nor a tool error: {r}");
        }
        // the other backend is never affected
        let s = call(&gw.url, "s__echo", json!({"text": "steady"}));
        assert_eq!(s["result"]["content"][0]["text"], "steady", "{s}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        saw_error,
        "calls to the crashed backend are answered as tool errors"
    );
    assert!(recovered, "the backend was restarted and serves again");
}

#[test]
fn a_timeout_is_a_tool_error_within_the_deadline() {
    let dir = TempDir::new("resilience-timeout");
    let config = format!("{}timeout_ms = 500\n", one_stdio_mock(&[]));
    let gw = gateway(&config, &dir);
    let started = Instant::now();
    let r = call(&gw.url, "m__sleep", json!({"ms": 10_000}));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "answered near the 500 ms deadline"
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["_meta"]["io.mcpgw/error"]["kind"], "timeout");
    let r = call(&gw.url, "m__echo", json!({"text": "after"}));
    assert_eq!(r["result"]["content"][0]["text"], "after");
}

#[test]
fn garbage_on_a_backends_stdout_is_skipped() {
    let dir = TempDir::new("resilience-garbage");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/garbage_server.py");
    let config = format!(
        "[[backend]]\nname = \"noisy\"\nprefix = \"\"\ncommand = [\"python3\", {:?}]\n",
        script.to_string_lossy()
    );
    let gw = gateway(&config, &dir);
    for i in 0..5 {
        let r = call(&gw.url, "shout", json!({"text": format!("t{i}")}));
        assert_eq!(r["result"]["content"][0]["text"], format!("T{i}"), "{r}");
    }
}

#[test]
fn a_backend_that_is_down_is_left_out_while_the_others_serve() {
    let dir = TempDir::new("resilience-down");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let config = format!(
        "{}\n[[backend]]\nname = \"dead\"\nurl = \"{dead_url}\"\n",
        one_stdio_mock(&[])
    );
    let gw = gateway(&config, &dir);
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"m__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("dead__")));
    let r = call(&gw.url, "m__echo", json!({"text": "fine"}));
    assert_eq!(r["result"]["content"][0]["text"], "fine");
}

#[test]
fn a_cancelled_call_releases_the_backends_work() {
    let dir = TempDir::new("resilience-cancel");
    let gw = gateway(&one_stdio_mock(&[]), &dir);
    let mut c = LegacyClient::connect(&gw.url, "2025-06-18");
    let sleeping = |c: &mut LegacyClient| -> String {
        let r = c
            .request(
                "tools/call",
                json!({"name": "m__sleeping", "arguments": {}}),
            )
            .json();
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(sleeping(&mut c), "0");
    let (url, session) = (c.url.clone(), c.session.clone());
    let call = std::thread::spawn(move || {
        let started = Instant::now();
        let r = post_raw(
            &url,
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            json!({"jsonrpc": "2.0", "id": "long-1", "method": "tools/call", "params": {"name": "m__sleep", "arguments": {"ms": 30000}}})
                .to_string(),
        );
        (r, started.elapsed())
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while sleeping(&mut c) != "1" {
        assert!(
            Instant::now() < deadline,
            "the backend never started sleeping"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long-1", "reason": "user"}}));
    assert_eq!(r.status, 202);
    let (answer, took) = call.join().unwrap();
    assert!(
        took < Duration::from_secs(10),
        "the cancelled call ended at once ({took:?})"
    );
    assert_eq!(
        answer.status, 202,
        "no response for a cancelled request: {answer:?}"
    );
    // the backend really stopped: its sleep is no longer running
    let deadline = Instant::now() + Duration::from_secs(10);
    while sleeping(&mut c) != "0" {
        assert!(
            Instant::now() < deadline,
            "the backend's work was not released"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
