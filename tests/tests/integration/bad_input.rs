//! Bad input gets its exact answer, none panics or hangs, and the gateway keeps serving everyone else.

use serde_json::json;

use crate::support::*;

#[test]
fn every_kind_of_bad_input_gets_its_answer_and_the_gateway_keeps_serving() {
    let dir = TempDir::new("bad-input");
    let config = format!(
        "[server]\nmax_body_bytes = 65536\n\n{}",
        one_stdio_mock(&[])
    );
    let gw = gateway(&config, &dir);
    let json_headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    // (what, headers, body, status, JSON-RPC code or None)
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16, Option<i64>);
    let cases: Vec<Case> = vec![
        ("malformed JSON", json_headers.to_vec(), b"{\"jsonrpc\":".to_vec(), 200, Some(-32700)),
        ("wrong jsonrpc", json_headers.to_vec(), br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_vec(), 200, Some(-32600)),
        ("invalid UTF-8", json_headers.to_vec(), b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}".to_vec(), 200, Some(-32700)),
        ("deeply nested JSON", json_headers.to_vec(), deep.into_bytes(), 413, Some(-32600)),
        ("body over the limit", json_headers.to_vec(), vec![b' '; 70_000], 413, Some(-32600)),
        ("wrong Content-Type", vec![("Content-Type", "text/plain")], b"{}".to_vec(), 415, Some(-32600)),
        ("Accept neither JSON nor SSE", vec![("Content-Type", "application/json"), ("Accept", "text/html")], b"{}".to_vec(), 406, Some(-32600)),
        ("unknown session", [json_headers.to_vec(), vec![("Mcp-Session-Id", "feedface")]].concat(), br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec(), 404, Some(-32600)),
        ("missing headers", vec![("Content-Type", "application/json")], br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_vec(), 400, Some(-32020)),
        ("empty batch", json_headers.to_vec(), b"[]".to_vec(), 200, Some(-32600)),
    ];
    for (what, headers, body, status, code) in cases {
        let r = post_raw(&gw.url, &headers, body);
        assert_eq!(r.status, status, "{what}: {r:?}");
        if let Some(code) = code {
            assert_eq!(r.json()["error"]["code"], code, "{what}");
        }
    }
    let nested_small = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"a\":{}{}}}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let r = post_raw(&gw.url, &json_headers, nested_small);
    assert_eq!(r.json()["error"]["code"], -32700, "nesting deeper than 128");
    // still serving
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "alive"}}),
        &[],
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "alive");
}
