//! The HTTP front door in-process (actix-web's test service, no socket): the routes `configure` mounts, with
//! the builtin mock as backend `m`, and the Host/Origin checks on them as a browser meets them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use actix_web::{App, test};
use serde_json::{Value, json};

use super::configure;

/// A 2026-07-28 `tools/call` of `m__echo` to `/mcp`, with these `Host` and `Origin` headers.
fn echo_call(host: &str, origin: Option<&str>) -> test::TestRequest {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "m__echo", "arguments": {"text": "rebound"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "page", "version": "1"}
    }}});
    let mut req = test::TestRequest::post()
        .uri("/mcp")
        .insert_header(("Host", host))
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("MCP-Protocol-Version", "2026-07-28"))
        .insert_header(("Mcp-Method", "tools/call"))
        .insert_header(("Mcp-Name", "m__echo"))
        .set_payload(body.to_string());
    if let Some(origin) = origin {
        req = req.insert_header(("Origin", origin));
    }
    req
}

/// Before: a gateway listening beyond loopback with no `allowed_origins` (as `deploy/` shipped it) served a
/// web page whose name was rebound to its address, Host and Origin that page's own: every tool was callable
/// from the browser. Now the page gets 403 naming its origin; an SDK client (no `Origin`) is served as
/// before, and so is the same page once its origin is listed.
#[actix_web::test]
async fn dns_rebinding_beyond_loopback_is_refused_at_the_front_door() {
    let rebound_host = "evil.example:7800";
    let rebound_origin = "http://evil.example:7800";
    // (the [server] table, Origin sent, status expected)
    let cases: [(&str, Option<&str>, u16); 4] = [
        ("listen = \"0.0.0.0:7800\"", Some(rebound_origin), 403),
        ("listen = \"0.0.0.0:7800\"", None, 200),
        (
            "listen = \"0.0.0.0:7800\"\nallowed_origins = [\"http://evil.example\"]",
            Some(rebound_origin),
            200,
        ),
        (
            "listen = \"0.0.0.0:7800\"\nallowed_origins = [\"*\"]",
            Some(rebound_origin),
            200,
        ),
    ];
    for (server, origin, status) in cases {
        let (gw, _events) = crate::front::fixtures::mocked(&format!("[server]\n{server}")).await;
        let app = test::init_service(App::new().configure({
            let gw = gw.clone();
            move |cfg| configure(cfg, gw, Default::default())
        }))
        .await;
        let resp = test::call_service(&app, echo_call(rebound_host, origin).to_request()).await;
        let got = resp.status().as_u16();
        let body = test::read_body(resp).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(got, status, "{server} origin {origin:?}: {text}");
        if status == 403 {
            assert!(
                text.contains("origin \\\"http://evil.example:7800\\\" is not allowed")
                    || text.contains("origin \"http://evil.example:7800\" is not allowed"),
                "{text}"
            );
            assert!(!text.contains("rebound"), "the call ran: {text}");
        } else {
            let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(v["result"]["isError"], Value::Null, "{v}");
            assert!(
                v["result"]["content"].to_string().contains("rebound"),
                "{v}"
            );
        }
        for b in gw.live().backends.values() {
            b.shutdown();
        }
    }
}
