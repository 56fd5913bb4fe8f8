//! `[[rate_limit]]` through the pipeline: a limited `tools/call` is a tool error with `retryAfterMs` on
//! every generation, a limited list is 429 with `Retry-After` and -32000, a batch keeps the entry's error
//! at 200, and buckets per tool and per principal are independent. Each limit refills one token in 1,000 s,
//! so no test depends on time; the mock counts the calls that reach it.

use super::*;

/// Two calls a principal, then none (a token every 1,000 s).
const TWO_CALLS: &str = "[[rate_limit]]\nname = \"calls\"\nper = [\"principal\"]\nrate = 0.001\nburst = 2\nmethods = [\"tools/call\"]\n";
/// Two lists, then none.
const TWO_LISTS: &str =
    "[[rate_limit]]\nname = \"lists\"\nrate = 0.001\nburst = 2\nmethods = [\"tools/list\"]\n";
/// One call per tool.
const ONE_PER_TOOL: &str = "[[rate_limit]]\nname = \"per-tool\"\nper = [\"tool\"]\nrate = 0.001\nburst = 1\ntool = \"m__*\"\n";

fn assert_rate_limited_tool_error(v: &Value, id: i64) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("rate limited: retry after "), "{v}");
    assert!(text.ends_with(" s"), "{v}");
    let ms = v["result"]["_meta"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert!(ms > 1000 && ms <= 1_000_000, "{v}");
    let secs: u64 = text
        .trim_start_matches("rate limited: retry after ")
        .trim_end_matches(" s")
        .parse()
        .unwrap();
    assert_eq!(secs, ms.div_ceil(1000), "{v}");
}

fn assert_rate_limited_error(v: &Value, id: i64) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32000, "{v}");
    assert_eq!(v["error"]["message"], "rate limited", "{v}");
    let ms = v["error"]["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert!(ms > 1000 && ms <= 1_000_000, "{v}");
}

#[actix_rt::test]
async fn a_tools_call_over_its_limit_is_a_tool_error_with_retry_after_ms_on_every_generation() {
    let (gw, calls) = counted(TWO_CALLS).await;
    assert_eq!(
        json_of(&modern(&gw, 1, "tools/call", echo("one")).await)["result"]["content"][0]["text"],
        "one"
    );
    assert_eq!(
        json_of(&modern(&gw, 2, "tools/call", echo("two")).await)["result"]["content"][0]["text"],
        "two"
    );
    let refused = modern(&gw, 3, "tools/call", echo("three")).await;
    assert_eq!(refused.status, 200, "{refused:?}");
    let v = json_of(&refused);
    assert_rate_limited_tool_error(&v, 3);
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let legacy = Legacy::connect(&gw, version).await;
        let answer = legacy
            .post(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": echo(version)}))
            .await;
        assert_eq!(answer.status, 200, "{version}: {answer:?}");
        let v = json_of(&answer);
        assert_rate_limited_tool_error(&v, 4);
        assert_eq!(v["result"]["resultType"], Value::Null, "{version}: {v}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a refused call reached the mock"
    );
    // Other methods are not counted by a tools/call limit.
    let listed = modern(&gw, 5, "tools/list", json!({})).await;
    assert!(json_of(&listed)["result"]["tools"].is_array(), "{listed:?}");
    gw.shutdown();
}

#[actix_rt::test]
async fn a_list_over_its_limit_is_429_with_retry_after_and_minus_32000() {
    let gw = gateway(TWO_LISTS).await;
    for id in 1..=2 {
        let listed = modern(&gw, id, "tools/list", json!({})).await;
        assert_eq!(listed.status, 200, "{listed:?}");
    }
    let refused = modern(&gw, 3, "tools/list", json!({})).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let retry: u64 = refused
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    let v = json_of(&refused);
    assert_rate_limited_error(&v, 3);
    assert_eq!(
        retry,
        v["error"]["data"]["retryAfterMs"]
            .as_u64()
            .unwrap()
            .div_ceil(1000)
    );
    // A legacy single request gets the same status and error.
    let legacy = Legacy::connect(&gw, "2025-06-18").await;
    let answer = legacy
        .post(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        .await;
    assert_eq!(answer.status, 429, "{answer:?}");
    assert_rate_limited_error(&json_of(&answer), 4);
    // Calls are not counted by a tools/list limit.
    let call = modern(&gw, 5, "tools/call", echo("free")).await;
    assert_eq!(json_of(&call)["result"]["content"][0]["text"], "free");
    gw.shutdown();
}

#[actix_rt::test]
async fn a_batch_over_the_limit_is_200_with_the_refused_entrys_error() {
    let (gw, calls) = counted(&format!("{TWO_CALLS}\n{TWO_LISTS}")).await;
    let batching = Legacy::connect(&gw, "2025-03-26").await;
    let batch = batching
        .post(&json!([
            {"jsonrpc": "2.0", "id": 10, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 11, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 12, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": echo("a")},
            {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": echo("b")},
            {"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": echo("c")},
        ]))
        .await;
    assert_eq!(batch.status, 200, "{batch:?}");
    assert_eq!(batch.header("retry-after"), None, "{batch:?}");
    let entries = json_of(&batch);
    let entries = entries.as_array().expect("a batch answer is an array");
    assert_eq!(entries.len(), 6, "{entries:?}");
    let listed = entries
        .iter()
        .filter(|e| e["result"]["tools"].is_array())
        .count();
    let list_refused: Vec<&Value> = entries
        .iter()
        .filter(|e| e["error"]["code"] == -32000)
        .collect();
    assert_eq!((listed, list_refused.len()), (2, 1), "{entries:?}");
    assert_rate_limited_error(list_refused[0], list_refused[0]["id"].as_i64().unwrap());
    let called = entries
        .iter()
        .filter(|e| e["result"]["content"][0]["text"].is_string() && e["result"]["isError"] != true)
        .count();
    let call_refused: Vec<&Value> = entries
        .iter()
        .filter(|e| e["result"]["isError"] == true)
        .collect();
    assert_eq!((called, call_refused.len()), (2, 1), "{entries:?}");
    assert_rate_limited_tool_error(call_refused[0], call_refused[0]["id"].as_i64().unwrap());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    gw.shutdown();
}

#[actix_rt::test]
async fn a_per_tool_bucket_does_not_count_another_tools_calls() {
    let gw = gateway(ONE_PER_TOOL).await;
    let add = || json!({"name": "m__add", "arguments": {"a": 1, "b": 2}});
    let first_echo = json_of(&modern(&gw, 1, "tools/call", echo("e")).await);
    assert_eq!(
        first_echo["result"]["content"][0]["text"], "e",
        "{first_echo}"
    );
    assert_rate_limited_tool_error(&json_of(&modern(&gw, 2, "tools/call", echo("e")).await), 2);
    let first_add = json_of(&modern(&gw, 3, "tools/call", add()).await);
    assert_eq!(
        first_add["result"]["structuredContent"]["sum"], 3,
        "{first_add}"
    );
    assert_rate_limited_tool_error(&json_of(&modern(&gw, 4, "tools/call", add()).await), 4);
    gw.shutdown();
}

#[actix_rt::test]
async fn per_principal_buckets_do_not_count_another_principals_calls() {
    let gw = gateway(TWO_CALLS).await;
    let principal = |name: &str| {
        Some(Arc::new(crate::auth::Principal {
            name: name.to_owned(),
            source: crate::auth::PrincipalSource::ApiKey,
            groups: Vec::new(),
            scopes: Vec::new(),
            token: None,
        }))
    };
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "m__echo"),
    ];
    let call_as = |who: &'static str, id: i64| {
        let gw = &gw;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "m__echo", "arguments": {"text": who},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
        }}});
        async move {
            let answer = gw
                .post_as(
                    principal(who),
                    header_map(&headers).unwrap(),
                    Bytes::from(body.to_string()),
                )
                .await;
            json_of(&answer)
        }
    };
    for id in 1..=2 {
        assert_eq!(
            call_as("alice", id).await["result"]["content"][0]["text"],
            "alice"
        );
    }
    assert_rate_limited_tool_error(&call_as("alice", 3).await, 3);
    for id in 4..=5 {
        let v = call_as("bob", id).await;
        assert_eq!(v["result"]["content"][0]["text"], "bob", "{v}");
    }
    assert_rate_limited_tool_error(&call_as("bob", 6).await, 6);
    // Without a principal the client's address is counted on its own.
    let anonymous = json_of(&modern(&gw, 7, "tools/call", echo("anonymous")).await);
    assert_eq!(
        anonymous["result"]["content"][0]["text"], "anonymous",
        "{anonymous}"
    );
    gw.shutdown();
}

#[actix_rt::test]
async fn without_a_rate_limit_table_nothing_is_limited() {
    let (gw, calls) = counted("").await;
    for id in 1..=20 {
        let v = json_of(&modern(&gw, id, "tools/call", echo("x")).await);
        assert_eq!(v["result"]["content"][0]["text"], "x", "{v}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 20);
    gw.shutdown();
}
