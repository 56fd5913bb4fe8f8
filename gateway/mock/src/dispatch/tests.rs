//! Tests of the dispatcher: every method on every generation, the errors per generation, pagination and
//! fault injection, all without a transport.

use std::time::{Duration, Instant};

use protocol::validate::Catalog;
use protocol::{Generation, Request, RequestId};
use serde_json::{Value, json};

use super::Mock;
use crate::faults::Rng;
use crate::tests::parse;

fn mock(words: &[&str]) -> Mock {
    let mut all = vec!["--stdio"];
    all.extend_from_slice(words);
    Mock::with_rng(&parse(&all), Rng::with_seed(11))
}

fn request(method: &str, params: Value) -> Request {
    Request::new(RequestId::string("r-1"), method, Some(&params))
}

async fn ask(m: &Mock, g: Generation, method: &str, params: Value) -> (u16, Value) {
    let reply = m.answer(g, &request(method, params)).await;
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["id"], "r-1", "{body}");
    assert_eq!(body["jsonrpc"], "2.0");
    (reply.status, body)
}

/// Checks one answer; `None` means the method does not exist on that generation (-32601).
type Check = fn(&Value, Generation);

#[tokio::test]
async fn every_method_answers_on_every_generation() {
    let m = mock(&["--name", "mocky"]);
    let legacy_only: &[&str] = &["ping", "logging/setLevel", "initialize"];
    let modern_only: &[&str] = &["server/discover"];
    // (method, params, check of the result)
    let table: [(&str, Value, Check); 13] = [
        ("ping", json!({}), |r, _| assert_eq!(r, &json!({}))),
        ("logging/setLevel", json!({"level": "debug"}), |r, _| {
            assert_eq!(r, &json!({}))
        }),
        ("initialize", json!({}), |r, g| {
            assert_eq!(r["protocolVersion"], g.as_str());
            assert_eq!(r["serverInfo"]["name"], "mocky");
            assert_eq!(r["capabilities"]["tools"], json!({"listChanged": false}));
        }),
        ("server/discover", json!({}), |r, _| {
            assert_eq!(r["supportedVersions"][0], "2026-07-28");
            assert_eq!(r["capabilities"]["completions"], json!({}));
        }),
        ("tools/list", json!({}), |r, _| {
            assert_eq!(r["tools"].as_array().unwrap().len(), 12);
            assert!(r.get("nextCursor").is_none());
        }),
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hey"}}),
            |r, _| {
                assert_eq!(r["content"], json!([{"type": "text", "text": "hey"}]));
            },
        ),
        ("resources/list", json!({}), |r, _| {
            assert_eq!(r["resources"][0]["uri"], "mock://mocky/readme");
        }),
        ("resources/templates/list", json!({}), |r, _| {
            assert_eq!(
                r["resourceTemplates"][0]["uriTemplate"],
                "mock://mocky/items/{id}"
            );
        }),
        (
            "resources/read",
            json!({"uri": "mock://mocky/items/7"}),
            |r, _| {
                assert_eq!(r["contents"][0]["text"], "item 7");
            },
        ),
        ("prompts/list", json!({}), |r, _| {
            assert_eq!(r["prompts"][0]["name"], "greet")
        }),
        (
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
            |r, _| {
                assert_eq!(r["messages"][0]["content"]["text"], "Hello, Ada!");
                assert_eq!(r["messages"][0]["role"], "user");
            },
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "b"}}),
            |r, _| assert_eq!(r["completion"]["values"], json!(["Bob"])),
        ),
        (
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            |r, g| {
                assert_eq!(
                    r["structuredContent"].is_object(),
                    g >= Generation::V2025_06_18
                );
            },
        ),
    ];
    for g in Generation::ALL {
        for (method, params, check) in &table {
            let (status, body) = ask(&m, g, method, params.clone()).await;
            let exists = !(legacy_only.contains(method) && g.is_modern()
                || modern_only.contains(method) && !g.is_modern());
            if !exists {
                assert_eq!(body["error"]["code"], -32601, "{method} on {g}: {body}");
                assert_eq!(
                    status,
                    if g.is_modern() { 404 } else { 200 },
                    "{method} on {g}"
                );
                continue;
            }
            assert_eq!(status, 200, "{method} on {g}: {body}");
            let result = &body["result"];
            check(result, g);
            if g.is_modern() {
                assert_eq!(result["resultType"], "complete", "{method}");
                let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
                assert_eq!(info["name"], "mocky", "{method}");
                let cacheable = method.ends_with("/list")
                    || *method == "server/discover"
                    || *method == "resources/read";
                assert_eq!(result.get("ttlMs").is_some(), cacheable, "{method}");
                assert_eq!(result.get("cacheScope").is_some(), cacheable, "{method}");
            } else {
                for key in ["resultType", "ttlMs", "cacheScope"] {
                    assert!(result.get(key).is_none(), "{key} on {method} {g}");
                }
            }
        }
    }
}

#[tokio::test]
async fn errors_follow_the_generation() {
    let m = mock(&[]);
    use Generation::*;
    /// (generation, method, params, code, status, data checked as key = value)
    type Row = (
        Generation,
        &'static str,
        Value,
        i64,
        u16,
        Option<(&'static str, Value)>,
    );
    let table: [Row; 12] = [
        (
            V2025_06_18,
            "resources/read",
            json!({"uri": "mock://nope"}),
            -32002,
            200,
            Some(("uri", json!("mock://nope"))),
        ),
        (
            V2026_07_28,
            "resources/read",
            json!({"uri": "mock://nope"}),
            -32602,
            200,
            Some(("uri", json!("mock://nope"))),
        ),
        (
            V2025_11_25,
            "tools/call",
            json!({"name": "nope"}),
            -32602,
            200,
            Some(("name", json!("nope"))),
        ),
        (
            V2026_07_28,
            "tools/call",
            json!({"name": "nope"}),
            -32602,
            200,
            Some(("name", json!("nope"))),
        ),
        (
            V2024_11_05,
            "prompts/get",
            json!({"name": "greet"}),
            -32602,
            200,
            None,
        ),
        (
            V2026_07_28,
            "tools/list",
            json!({"cursor": "garbage"}),
            -32602,
            200,
            Some(("cursor", json!("garbage"))),
        ),
        (V2025_03_26, "foo/bar", json!({}), -32601, 200, None),
        (V2026_07_28, "foo/bar", json!({}), -32601, 404, None),
        (
            V2025_06_18,
            "resources/subscribe",
            json!({"uri": "mock://mock-backend/readme"}),
            -32601,
            200,
            None,
        ),
        (
            V2026_07_28,
            "subscriptions/listen",
            json!({"notifications": {}}),
            -32601,
            404,
            None,
        ),
        (
            V2026_07_28,
            "tools/call",
            json!({"name": "jsonrpc_error", "arguments": {"code": -32022, "message": "m"}}),
            -32022,
            400,
            None,
        ),
        (
            V2025_11_25,
            "logging/setLevel",
            json!({"level": "loud"}),
            -32602,
            200,
            None,
        ),
    ];
    for (g, method, params, code, status, data) in table {
        let (got_status, body) = ask(&m, g, method, params.clone()).await;
        assert_eq!(
            body["error"]["code"], code,
            "{method} {params} on {g}: {body}"
        );
        assert_eq!(got_status, status, "{method} on {g}");
        if let Some((key, value)) = data {
            assert_eq!(body["error"]["data"][key], value, "{method} on {g}");
        }
    }
}

#[tokio::test]
async fn tools_list_is_paginated_with_opaque_cursors() {
    let m = mock(&["--tools", "120"]);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, body) = ask(&m, Generation::V2026_07_28, "tools/list", params).await;
        let result = &body["result"];
        pages += 1;
        for t in result["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_owned());
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(c) => {
                assert!(!c.contains("50"), "cursor should be opaque: {c}");
                cursor = Some(c.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names.len(), 129);
    assert_eq!(names[0], "echo");
    assert_eq!(names.last().map(String::as_str), Some("tool_119"));
}

#[tokio::test]
async fn fault_injection_applies_to_every_tools_call() {
    let m = mock(&["--error-rate", "1"]);
    let (mut tool_errors, mut rpc_errors) = (0, 0);
    for _ in 0..60 {
        let (status, body) = ask(
            &m,
            Generation::V2025_11_25,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
        assert_eq!(status, 200);
        if body["result"]["isError"] == true {
            tool_errors += 1;
        } else {
            assert_eq!(body["error"]["code"], -32603, "{body}");
            rpc_errors += 1;
        }
    }
    assert!(
        tool_errors > 10 && rpc_errors > 10,
        "{tool_errors} / {rpc_errors}"
    );
    // other methods are never injected
    let (_, body) = ask(&m, Generation::V2025_11_25, "tools/list", json!({})).await;
    assert!(body.get("result").is_some());

    let slow = mock(&["--latency-ms", "40"]);
    let started = Instant::now();
    let (_, body) = ask(
        &slow,
        Generation::V2026_07_28,
        "tools/call",
        json!({"name": "tool_0", "arguments": {}}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(body["result"]["content"][0]["text"], "ok");
    assert!(took >= Duration::from_millis(40), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn sleep_tool_sleeps() {
    let m = mock(&[]);
    let started = Instant::now();
    let (_, body) = ask(
        &m,
        Generation::V2025_06_18,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30}}),
    )
    .await;
    assert_eq!(body["result"]["content"][0]["text"], "slept 30 ms");
    assert!(started.elapsed() >= Duration::from_millis(30));
}

#[test]
fn the_mock_is_its_own_validation_catalog() {
    let m = mock(&["--tools", "2"]);
    let regional = m.tool("regional").unwrap();
    assert_eq!(regional.header_params.len(), 1);
    assert!(regional.required_capabilities.is_none());
    assert!(m.tool("tool_1").is_some() && m.tool("tool_2").is_none());
    assert!(
        m.resource("mock://mock-backend/config.json").is_some()
            && m.resource("mock://mock-backend/items/x").is_some()
    );
    assert!(m.resource("mock://other").is_none());
    assert!(m.prompt("greet").is_some() && m.prompt("bye").is_none());
}

#[tokio::test]
async fn asks_is_asked_through_input_required_and_refused_to_legacy_clients_off_http() {
    let m = mock(&[]);
    let caps = json!({"elicitation": {}, "sampling": {}});
    let params = json!({"name": "asks", "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps}});
    let (status, body) = ask(&m, Generation::V2026_07_28, "tools/call", params).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["resultType"], "input_required", "{body}");
    assert_eq!(
        body["result"]["inputRequests"]["sampling"]["method"],
        "sampling/createMessage"
    );
    // No transport here to ask a legacy session on: a tool error that says so.
    let (_, body) = ask(
        &m,
        Generation::V2025_11_25,
        "tools/call",
        json!({"name": "asks"}),
    )
    .await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("only over HTTP"), "{text}");
}

#[tokio::test]
async fn unimplemented_and_failing_methods_are_refused_on_every_generation() {
    let m = mock(&[
        "--unimplemented",
        "resources/templates/list",
        "--failing",
        "prompts/list",
    ]);
    for g in Generation::ALL {
        let (status, body) = ask(&m, g, "resources/templates/list", json!({})).await;
        assert_eq!(body["error"]["code"], -32601, "{g}: {body}");
        assert_eq!(status, if g.is_modern() { 404 } else { 200 });
        let (_, body) = ask(&m, g, "prompts/list", json!({})).await;
        assert_eq!(body["error"]["code"], -32603, "{g}: {body}");
        let (_, body) = ask(&m, g, "resources/list", json!({})).await;
        assert!(body["result"]["resources"].is_array(), "{g}: {body}");
    }
    let bad = parse(&["--stdio", "--failing", "tools/lists"]);
    let refused = bad.check().unwrap_err().to_string();
    assert_eq!(refused, "--failing \"tools/lists\": not an MCP method");
}
