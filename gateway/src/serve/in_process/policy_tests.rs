//! `[[policy]]` through the pipeline, with the builtin mock as backend `m`: the lists filtered per principal
//! and private; a request for what the principal may not use answered exactly as one for a name nobody
//! serves — whatever else is wrong with it — on 2026-07-28 and in a legacy session, while a principal allowed
//! it gets the real answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request};
use super::{Exchange, InProcessGateway, header_map};
use crate::auth::Principal;
use crate::config::Config;

const POLICY: &str = r#"
# The rules name principals: they apply only with [auth] (the tests give each request its principal).
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "m"
builtin = ["mock-backend"]

[[policy]]
principal = "alice"
allow = ["*"]

[[policy]]
principal = "bob"
allow = ["m__echo", "resource:mock://*/config.json"]
"#;

async fn gateway() -> InProcessGateway {
    let config = Config::from_toml_str(POLICY, Path::new("policy.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

fn who(name: &str) -> Option<Arc<Principal>> {
    Some(Arc::new(Principal {
        name: name.to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: Vec::new(),
        scopes: Vec::new(),
        token: None,
    }))
}

/// A 2026-07-28 request, with `extra` headers after the mirrored ones.
async fn modern(
    gw: &InProcessGateway,
    as_who: &str,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Exchange {
    let (headers, body) = modern_request(method, params, extra);
    gw.post_as(who(as_who), headers, body).await
}

/// `denied` is exactly `unregistered` with the unregistered name read as the denied one.
fn assert_same_answer(denied: &Exchange, unregistered: &Exchange, name: &str, nobody: &str) {
    assert_eq!(
        denied.status, unregistered.status,
        "{denied:?}\n{unregistered:?}"
    );
    assert_eq!(denied.headers, unregistered.headers);
    let expected = String::from_utf8_lossy(&unregistered.body).replace(nobody, name);
    assert_eq!(String::from_utf8_lossy(&denied.body), expected);
}

#[actix_rt::test]
async fn lists_are_filtered_per_principal_and_marked_private() {
    let gw = gateway().await;
    let tools = |e: &Exchange| -> Vec<String> {
        json_of(e)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let bob = modern(&gw, "bob", "tools/list", json!({}), &[]).await;
    assert_eq!(tools(&bob), ["m__echo"]);
    assert_eq!(json_of(&bob)["result"]["cacheScope"], "private");
    let alice = modern(&gw, "alice", "tools/list", json!({}), &[]).await;
    assert!(tools(&alice).len() > 5, "{alice:?}");
    assert!(tools(&alice).contains(&"m__regional".to_owned()));
    assert_eq!(json_of(&alice)["result"]["cacheScope"], "private");
    // Nobody named: no rule applies, nothing listed.
    let anonymous = gw
        .post_as(
            None,
            header_map(&[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "prompts/list"),
            ])
            .unwrap(),
            Bytes::from(
                json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}}}})
                .to_string(),
            ),
        )
        .await;
    assert_eq!(
        json_of(&anonymous)["result"]["prompts"],
        json!([]),
        "{anonymous:?}"
    );
    let resources = modern(&gw, "bob", "resources/list", json!({}), &[]).await;
    let listed = json_of(&resources);
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .map(|s| {
            if s.ends_with("/config.json") {
                "config"
            } else {
                s
            }
        })
        .collect();
    assert_eq!(uris, ["config"]);
    let discover = modern(&gw, "bob", "server/discover", json!({}), &[]).await;
    assert_eq!(
        json_of(&discover)["result"]["cacheScope"],
        "private",
        "{discover:?}"
    );
}

#[actix_rt::test]
async fn a_denied_tool_is_answered_as_an_unregistered_one_whatever_else_is_wrong() {
    let gw = gateway().await;
    const NOBODY: &str = "m__nobody_serves";
    // Right, then with the tool's `Mcp-Param-Region` header missing, then contradicting the argument.
    let cases: [&[(&str, &str)]; 3] = [
        &[("Mcp-Param-Region", "eu")],
        &[],
        &[("Mcp-Param-Region", "us")],
    ];
    for extra in cases {
        let call = |name: &str| json!({"name": name, "arguments": {"region": "eu", "text": "x"}});
        let allowed = modern(&gw, "alice", "tools/call", call("m__regional"), extra).await;
        let denied = modern(&gw, "bob", "tools/call", call("m__regional"), extra).await;
        let unregistered = modern(&gw, "bob", "tools/call", call(NOBODY), extra).await;
        assert_same_answer(&denied, &unregistered, "m__regional", NOBODY);
        if extra.first() == Some(&("Mcp-Param-Region", "eu")) {
            assert_eq!(allowed.status, 200, "{allowed:?}");
            assert!(
                json_of(&allowed)["result"]["content"].is_array(),
                "{allowed:?}"
            );
        } else {
            // The tool exists: alice is told what is wrong with her request, not that it is unknown.
            assert_ne!(allowed.body, unregistered.body.clone(), "{allowed:?}");
        }
    }
    // Prompts and resources likewise.
    let get = |name: &str| json!({"name": name, "arguments": {"name": "Ada"}});
    let denied = modern(&gw, "bob", "prompts/get", get("m__greet"), &[]).await;
    let unregistered = modern(&gw, "bob", "prompts/get", get("m__nobody"), &[]).await;
    assert_same_answer(&denied, &unregistered, "m__greet", "m__nobody");
    assert_eq!(
        modern(&gw, "alice", "prompts/get", get("m__greet"), &[])
            .await
            .status,
        200
    );
    let list = modern(&gw, "alice", "resources/list", json!({}), &[]).await;
    let readme = json_of(&list)["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .find(|u| u.ends_with("/readme"))
        .unwrap();
    let nobody = readme.replace("/readme", "/nobody");
    let denied = modern(&gw, "bob", "resources/read", json!({"uri": readme}), &[]).await;
    let unregistered = modern(&gw, "bob", "resources/read", json!({"uri": nobody}), &[]).await;
    assert_same_answer(&denied, &unregistered, &readme, &nobody);
    let item = readme.replace("/readme", "/items/7");
    let through_template = modern(&gw, "bob", "resources/read", json!({"uri": item}), &[]).await;
    let unregistered = modern(&gw, "bob", "resources/read", json!({"uri": nobody}), &[]).await;
    assert_same_answer(&through_template, &unregistered, &item, &nobody);
    let alice = modern(&gw, "alice", "resources/read", json!({"uri": item}), &[]).await;
    assert_eq!(alice.status, 200, "{alice:?}");
}

#[actix_rt::test]
async fn a_legacy_session_is_denied_as_if_the_tool_were_unregistered() {
    let gw = gateway().await;
    let post = |body: Value, session: Option<String>| {
        let gw = &gw;
        async move {
            let mut headers = vec![
                ("Content-Type".to_owned(), "application/json".to_owned()),
                (
                    "Accept".to_owned(),
                    "application/json, text/event-stream".to_owned(),
                ),
            ];
            if let Some(s) = session {
                headers.push(("Mcp-Session-Id".to_owned(), s));
                headers.push(("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned()));
            }
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            gw.post_as(
                who("bob"),
                header_map(&headers).unwrap(),
                Bytes::from(body.to_string()),
            )
            .await
        }
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}}),
        None,
    )
    .await;
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let call = |name: &str| json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": {"a": 1, "b": 2}}});
    let denied = post(call("m__add"), Some(session.clone())).await;
    let unregistered = post(call("m__nope"), Some(session.clone())).await;
    assert_same_answer(&denied, &unregistered, "m__add", "m__nope");
    let allowed = post(
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "m__echo", "arguments": {"text": "hi"}}}),
        Some(session),
    )
    .await;
    assert_eq!(
        json_of(&allowed)["result"]["content"][0]["text"],
        "hi",
        "{allowed:?}"
    );
}
