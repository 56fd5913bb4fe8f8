//! Browsers: with `[server] cors_allowed_origins`, a listed origin's preflights are answered and its pages can
//! read the responses (the session id included); any other origin's preflight is refused with 403 and no
//! CORS header; without the key no response carries a CORS header.

use serde_json::{Value, json};

use crate::support::*;

const ALLOWED: &str = "https://app.example";
const REFUSED: &str = "https://evil.example";
/// Passes the DNS-rebinding check (a loopback origin, on a loopback listener) but is not listed for CORS.
const LOOPBACK_NOT_LISTED: &str = "http://localhost:5173";

fn cors_gateway(dir: &TempDir) -> Running {
    let config = format!(
        "[server]\ncors_allowed_origins = [\"{ALLOWED}\", \"http://localhost:6274\"]\n\n{}",
        one_stdio_mock(&[])
    );
    gateway(&config, dir)
}

/// An `OPTIONS` preflight from `origin` for a POST with these request headers.
fn preflight(url: &str, origin: &str, request_headers: &str) -> Reply {
    let resp = client()
        .request(reqwest::Method::OPTIONS, url)
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", request_headers)
        .send()
        .expect("preflight sent");
    into_reply(resp)
}

fn cors_headers(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

fn legacy_initialize(url: &str, origin: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "browser", "version": "1"}}});
    post_raw(
        url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Origin", origin),
        ],
        body.to_string(),
    )
}

fn modern_echo(url: &str, origin: &str) -> Reply {
    modern_request(
        url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "from a page"}}),
        &[("Origin", origin)],
    )
}

fn base(url: &str) -> &str {
    url.strip_suffix("/mcp").expect("an /mcp url")
}

#[test]
fn a_listed_origin_gets_its_preflights_answered_and_reads_session_id_and_results() {
    let dir = TempDir::new("cors-allowed");
    let gw = cors_gateway(&dir);
    let asked =
        "content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region";
    for path in ["/mcp", "/sse", "/messages"] {
        let url = format!("{}{path}", base(&gw.url));
        let r = preflight(&url, ALLOWED, asked);
        assert_eq!(r.status, 204, "{path}: {r:?}");
        assert_eq!(
            r.header("access-control-allow-origin").as_deref(),
            Some(ALLOWED)
        );
        assert_eq!(r.header("vary").as_deref(), Some("Origin"), "{path}");
        let methods = r.header("access-control-allow-methods").unwrap();
        for m in ["GET", "POST", "DELETE", "OPTIONS"] {
            assert!(methods.contains(m), "{path}: {methods}");
        }
        assert_eq!(
            r.header("access-control-allow-headers").as_deref(),
            Some(asked),
            "{path}"
        );
        assert!(r.header("access-control-max-age").is_some(), "{path}");
    }
    // Without Access-Control-Request-Headers: the headers an MCP client sends.
    let r = preflight(&gw.url, "http://localhost:6274", "");
    assert_eq!(r.status, 204, "{r:?}");
    let allowed = r.header("access-control-allow-headers").unwrap();
    for h in [
        "Content-Type",
        "Accept",
        "Authorization",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Last-Event-ID",
    ] {
        assert!(allowed.contains(h), "{h} in {allowed}");
    }

    // A legacy initialize: the page may read Mcp-Session-Id.
    let r = legacy_initialize(&gw.url, ALLOWED);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("mcp-session-id").is_some());
    assert_eq!(
        r.header("access-control-allow-origin").as_deref(),
        Some(ALLOWED)
    );
    let exposed = r.header("access-control-expose-headers").unwrap();
    for h in ["Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate"] {
        assert!(exposed.contains(h), "{h} in {exposed}");
    }
    assert!(r.header("access-control-allow-credentials").is_none());

    // A 2026-07-28 request.
    let r = modern_echo(&gw.url, ALLOWED);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.header("access-control-allow-origin").as_deref(),
        Some(ALLOWED)
    );
    let v: Value = r.json();
    assert_eq!(v["result"]["content"][0]["text"], "from a page");
}

#[test]
fn an_unlisted_origin_gets_403_preflights_and_no_cors_header() {
    let dir = TempDir::new("cors-refused");
    let gw = cors_gateway(&dir);
    for origin in [REFUSED, LOOPBACK_NOT_LISTED] {
        for path in ["/mcp", "/sse", "/messages"] {
            let url = format!("{}{path}", base(&gw.url));
            let r = preflight(&url, origin, "content-type");
            assert_eq!(r.status, 403, "{origin} {path}: {r:?}");
            assert!(cors_headers(&r).is_empty(), "{origin} {path}: {r:?}");
        }
    }
    // A foreign site fails the DNS-rebinding check as before, without CORS headers.
    let r = legacy_initialize(&gw.url, REFUSED);
    assert_eq!(r.status, 403, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
    let r = modern_echo(&gw.url, REFUSED);
    assert_eq!(r.status, 403, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
    // A loopback page not listed is served (the Origin check allows it) but gets no CORS header, so a
    // browser does not let it read the answer.
    let r = legacy_initialize(&gw.url, LOOPBACK_NOT_LISTED);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
    let r = modern_echo(&gw.url, LOOPBACK_NOT_LISTED);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
}

#[test]
fn without_cors_origins_no_response_carries_a_cors_header() {
    let dir = TempDir::new("cors-off");
    let gw = gateway(&one_stdio_mock(&[]), &dir);
    let r = preflight(&gw.url, "http://localhost:6274", "content-type");
    assert_ne!(r.status, 204, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
    let r = legacy_initialize(&gw.url, "http://localhost:6274");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
    let r = modern_echo(&gw.url, "http://localhost:6274");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(cors_headers(&r).is_empty(), "{r:?}");
}
