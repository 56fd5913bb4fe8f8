//! The DESIGN §1 error model end to end over HTTP: infrastructure errors with their codes and statuses per
//! generation, tool failures as `isError` results, resource and prompt failures as JSON-RPC errors with the
//! backend's code passed through (resource-not-found following the client's generation).

use serde_json::json;

use crate::support::*;

fn gateway_with_mock(dir: &TempDir) -> Running {
    gateway(&one_stdio_mock(&[]), dir)
}

#[test]
fn infrastructure_errors_per_generation() {
    let dir = TempDir::new("errors-infra");
    let gw = gateway_with_mock(&dir);
    // legacy
    let mut c = LegacyClient::connect(&gw.url, "2025-06-18");
    let r = c.request("tools/call", json!({"name": "nope"}));
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (200, json!(-32601))
    );
    let r = c.request("resources/read", json!({"uri": "mock://nowhere/x"}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["error"]["code"], -32002);
    assert_eq!(r.json()["error"]["data"]["uri"], "mock://nowhere/x");
    let r = c.request("tools/dance", json!({}));
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (200, json!(-32601))
    );
    // modern
    let r = modern_request(&gw.url, "tools/call", json!({"name": "nope"}), &[]);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (200, json!(-32601))
    );
    let r = modern_request(
        &gw.url,
        "resources/read",
        json!({"uri": "mock://nowhere/x"}),
        &[],
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (200, json!(-32602))
    );
    let r = modern_request(&gw.url, "tools/dance", json!({}), &[]);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, json!(-32601))
    );
    let r = modern_request(
        &gw.url,
        "tools/list",
        json!({}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    );
    assert_eq!(r.status, 400, "a repeated, conflicting version header");
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = post_raw(
        &gw.url,
        &[
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        body.to_string(),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32022);
    assert_eq!(r.json()["error"]["data"]["requested"], "2099-01-01");
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let r = post_raw(
        &gw.url,
        &[
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        body.to_string(),
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32602))
    );
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "x"}}),
        &[("Mcp-Name", "m__other")],
    );
    assert_eq!(r.status, 400);
}

#[test]
fn tool_failures_are_tool_errors_and_resource_failures_json_rpc_errors() {
    let dir = TempDir::new("errors-handlers");
    let gw = gateway_with_mock(&dir);
    for version in ["2024-11-05", "2025-11-25"] {
        let mut c = LegacyClient::connect(&gw.url, version);
        let r = c
            .request(
                "tools/call",
                json!({"name": "m__fail", "arguments": {"message": "boom"}}),
            )
            .json();
        assert_eq!(r["result"]["isError"], true, "{r}");
        let r = c.request("tools/call", json!({"name": "m__jsonrpc_error", "arguments": {"code": -32001, "message": "gone"}})).json();
        assert_eq!(
            r["result"]["isError"], true,
            "a backend JSON-RPC error on tools/call is a tool error: {r}"
        );
        assert_eq!(r["result"]["_meta"]["io.mcpgw/error"]["code"], -32001);
        assert_eq!(r["result"]["_meta"]["io.mcpgw/error"]["backend"], "mock");
        let r = c
            .request("prompts/get", json!({"name": "m__greet", "arguments": {}}))
            .json();
        assert_eq!(
            r["error"]["code"], -32602,
            "a prompt failure is a JSON-RPC error with the backend's code: {r}"
        );
    }
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__jsonrpc_error", "arguments": {"code": -32603, "message": "x"}}),
        &[],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], true);
    assert_eq!(r.json()["result"]["resultType"], "complete");
}
