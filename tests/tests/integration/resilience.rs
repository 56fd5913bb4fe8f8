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

/// A gateway whose backend "late" is down at start, then a mock brought up on its address with `mock_args`;
/// returns once the admin listener's `/readyz` says "late" is no longer "down", or has been down for 30 s, with that body.
fn late_backend(name: &str, mock_args: &[&str]) -> (Running, Running, Value) {
    let dir = TempDir::new(name);
    let port = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().port()
    };
    let config = format!(
        "{}\n[[backend]]\nname = \"late\"\nprefix = \"late\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n{ADMIN}",
        one_stdio_mock(&[])
    );
    let gw = gateway(&config, &dir);
    // Each backend's standing is the admin listener's `/readyz`.
    let base = admin_base(&gw);
    let ready = wait_ready(&base);
    assert_eq!(late_state(&ready)["state"], "down", "{ready}");
    let mut cmd = std::process::Command::new(mcpgw());
    cmd.args(["mock-backend", "--listen", &format!("127.0.0.1:{port}")])
        .args(mock_args);
    let late = start(cmd, "mock-backend listening on ");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = wait_ready(&base);
        let listed = late_state(&ready)["state"] == "up";
        let reason = late_state(&ready)["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if listed || reason.contains("collides") || Instant::now() > deadline {
            return (gw, late, ready);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn late_state(ready: &Value) -> Value {
    ready["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "late")
        .cloned()
        .unwrap_or_default()
}

/// What broke: a backend that came up after the gateway started passed `/readyz` but stayed out of the
/// catalog. Its standing in `/readyz` is now the catalog's: "up" only once its tools are listed.
#[test]
fn a_backend_that_comes_up_after_the_gateway_joins_the_catalog() {
    // (its own name: its resources' URIs differ from the other mock's)
    let (gw, _late, ready) = late_backend("resilience-late", &["--name", "late"]);
    assert_eq!(late_state(&ready)["state"], "up", "{ready}");
    // "up" in /readyz means listed: its tools are routed at once
    let r = call(&gw.url, "late__echo", json!({"text": "late"}));
    assert_eq!(r["result"]["content"][0]["text"], "late", "{r}");
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    assert!(
        list["result"]["_meta"].get("io.mcpgw/degraded").is_none(),
        "{list}"
    );
}

/// What broke: a backend that joined with a catalog colliding with another's froze the whole catalog ("the
/// previous one stays") while `/readyz` called it up. Now it alone is left out, down with the collision.
#[test]
fn a_backend_that_joins_with_a_colliding_catalog_is_left_out_alone() {
    // the same --name as the other mock: the same resource URIs
    let (gw, _late, ready) = late_backend("resilience-collide", &["--name", "mock-backend"]);
    let late = late_state(&ready);
    assert_eq!(late["state"], "down", "{ready}");
    assert!(
        late["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("collides"),
        "{ready}"
    );
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    assert_eq!(
        list["result"]["_meta"]["io.mcpgw/degraded"]["missing"],
        json!(["late"]),
        "{list}"
    );
    let r = call(&gw.url, "m__echo", json!({"text": "still"}));
    assert_eq!(r["result"]["content"][0]["text"], "still", "{r}");
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
