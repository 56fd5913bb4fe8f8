//! Operating the gateway: start-up from each kind of config (TOML, `mcpServers` JSON, errors naming the
//! field or both colliding backends), health and readiness probes, idle session expiry, SSE-only clients;
//! the admin view (`admin`).

mod admin;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::*;

mod metrics;

fn run_to_exit(args: &[&str], dir: &TempDir) -> (bool, String) {
    let out = Command::new(mcpgw())
        .args(args)
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .output()
        .expect("mcpgw runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_configs_stop_start_up_with_the_field_or_both_backends_named() {
    let dir = TempDir::new("ops-config");
    let bad = dir.file("bad.toml", "[[backend]]\nname = \"a\"\nurl = \"ftp://x\"\n");
    let (ok, err) = run_to_exit(
        &[
            "serve",
            "--config",
            bad.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &dir,
    );
    assert!(!ok);
    assert!(err.contains("backend[0].url"), "{err}");
    // two backends exposing the same tool name (empty prefixes): a start-up error naming both
    let collide = dir.file(
        "collide.toml",
        &format!(
            "[[backend]]\nname = \"one\"\nprefix = \"\"\ncommand = {}\n[[backend]]\nname = \"two\"\nprefix = \"\"\ncommand = {}\n",
            stdio_mock_command(&["--name", "one"]),
            stdio_mock_command(&["--name", "two"])
        ),
    );
    let (ok, err) = run_to_exit(
        &[
            "serve",
            "--config",
            collide.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &dir,
    );
    assert!(!ok, "a collision must stop start-up");
    assert!(
        err.contains("one") && err.contains("two") && err.contains("collides"),
        "{err}"
    );
}

#[test]
fn an_mcp_servers_json_file_loads_and_serves() {
    let dir = TempDir::new("ops-mcpjson");
    let mut command: Vec<String> = serde_json::from_str(&stdio_mock_command(&[])).unwrap();
    let program = command.remove(0);
    let file = dir.file(
        "mcp.json",
        &json!({"mcpServers": {"local": {"command": program, "args": command}}}).to_string(),
    );
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--mcp-json"])
        .arg(file)
        .args(["--listen", "127.0.0.1:0"]);
    let gw = start(cmd, "mcpgw listening on ");
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "local__echo", "arguments": {"text": "json"}}),
        &[],
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "json");
}

#[test]
fn health_and_readiness_probes() {
    let dir = TempDir::new("ops-health");
    let gw = gateway(&format!("{}{ADMIN}", one_stdio_mock(&[])), &dir);
    let base = gw.url.trim_end_matches("/mcp").to_owned();
    let health = client().get(format!("{base}/healthz")).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    // The front door's says the status alone, to anyone; the admin listener's names each backend.
    let ready = wait_ready(&base);
    assert_eq!(ready, json!({"ready": true, "status": "ready"}));
    let ready = wait_ready(&admin_base(&gw));
    assert_eq!(ready["ready"], true);
    assert_eq!(ready["backends"][0]["name"], "mock", "{ready}");
    assert_eq!(ready["backends"][0]["state"], "up", "{ready}");
    let metrics = client().get(format!("{base}/metrics")).send().unwrap();
    assert_eq!(
        metrics.status().as_u16(),
        404,
        "no /metrics on the front door"
    );
}

#[test]
fn idle_sessions_expire() {
    let dir = TempDir::new("ops-idle");
    let config = format!("[server]\nsession_idle_secs = 1\n\n{}", one_stdio_mock(&[]));
    let gw = gateway(&config, &dir);
    let mut c = LegacyClient::connect(&gw.url, "2025-11-25");
    assert_eq!(c.request("ping", json!({})).status, 200);
    std::thread::sleep(Duration::from_millis(2500));
    let r = c.request("ping", json!({}));
    assert_eq!(r.status, 404, "an expired session is unknown: {r:?}");
}

#[test]
fn a_client_that_accepts_only_sse_gets_an_event() {
    let dir = TempDir::new("ops-sse-only");
    let gw = gateway(&one_stdio_mock(&[]), &dir);
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = post_raw(
        &gw.url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        body.to_string(),
    );
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(r.text.starts_with("event: message\ndata: "), "{:?}", r.text);
    assert_eq!(r.json()["id"], 9);
}
