//! Principals are namespaced by how they authenticated, through the pipeline: an API key whose principal
//! is `ops-bot` and a JWT whose subject is `ops-bot` are two principals, so the token cannot use the key's
//! legacy session, its sealed `requestState` or its private cache entries (and the other way round).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::fixtures::json_of;
use super::{Exchange, InProcessGateway, header_map};
use crate::auth::{Principal, PrincipalSource};
use crate::config::Config;

const CONFIG: &str = r#"
[[backend]]
name = "m"
builtin = ["mock-backend", "--name", "m", "--ttl-ms", "60000", "--cache-scope", "private"]

[[auth.api_key]]
principal = "ops-bot"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
"#;

/// The URI of one of the mock's items (its template `mock://m/items/{id}`).
const ITEM: &str = "mock://m/items/readme";

fn key() -> Option<Arc<Principal>> {
    Some(Arc::new(Principal {
        name: "ops-bot".into(),
        source: PrincipalSource::ApiKey,
        groups: Vec::new(),
        scopes: Vec::new(),
        token: None,
    }))
}

fn token() -> Option<Arc<Principal>> {
    Some(Arc::new(Principal {
        name: "ops-bot".into(),
        source: PrincipalSource::Jwt {
            issuer: Some("https://idp.example".into()),
        },
        groups: Vec::new(),
        scopes: Vec::new(),
        token: None,
    }))
}

async fn gateway() -> InProcessGateway {
    let config = Config::from_toml_str(CONFIG, Path::new("principals.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

/// A 2026-07-28 request by `who` (declaring elicitation), with its routing headers.
async fn modern(
    gw: &InProcessGateway,
    who: Option<Arc<Principal>>,
    method: &str,
    name: &str,
    params: Value,
) -> Exchange {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = header_map(&[
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ])
    .unwrap();
    gw.post_as(who, headers, Bytes::from(body.to_string()))
        .await
}

/// A legacy request by `who`, in `session` when given.
async fn legacy(
    gw: &InProcessGateway,
    who: Option<Arc<Principal>>,
    session: Option<&str>,
    body: Value,
) -> Exchange {
    let mut pairs = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        pairs.push(("Mcp-Session-Id", id));
        pairs.push(("MCP-Protocol-Version", "2025-06-18"));
    }
    let headers = header_map(&pairs).unwrap();
    gw.post_as(who, headers, Bytes::from(body.to_string()))
        .await
}

#[actix_rt::test]
async fn an_api_key_and_a_jwt_with_the_same_name_are_two_principals() {
    let gw = gateway().await;

    // The key's legacy session: the token presenting its id is answered as for a session nobody has.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let started = legacy(&gw, key(), None, init).await;
    assert_eq!(started.status, 200, "{started:?}");
    let session = started
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let theirs = legacy(&gw, token(), Some(&session), list.clone()).await;
    assert_eq!(
        theirs.status, 404,
        "the token used the key's session: {theirs:?}"
    );
    let own = legacy(&gw, key(), Some(&session), list).await;
    assert_eq!(own.status, 200, "{own:?}");

    // The key's sealed requestState: refused to the token, still good for the key.
    let call = json!({"name": "m__asks", "arguments": {}});
    let asked = json_of(&modern(&gw, key(), "tools/call", "m__asks", call).await);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let answers: serde_json::Map<String, Value> = asked["result"]["inputRequests"]
        .as_object()
        .expect("input requests")
        .keys()
        .map(|k| {
            let answer = json!({"action": "accept", "content": {"name": "ada"}});
            (k.clone(), answer)
        })
        .collect();
    let retry = json!({"name": "m__asks", "arguments": {}, "inputResponses": answers,
                       "requestState": state});
    let by_token = json_of(&modern(&gw, token(), "tools/call", "m__asks", retry.clone()).await);
    assert_eq!(
        by_token["error"]["code"], -32602,
        "the token used the key's state: {by_token}"
    );
    assert!(
        by_token["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("other credentials")),
        "{by_token}"
    );
    let by_key = json_of(&modern(&gw, key(), "tools/call", "m__asks", retry).await);
    assert_eq!(by_key["result"]["resultType"], "complete", "{by_key}");

    // The key's private read is kept for the key alone.
    let read = json_of(&modern(&gw, key(), "resources/read", ITEM, json!({"uri": ITEM})).await);
    assert_eq!(read["result"]["cacheScope"], "private", "{read}");
    let cache = &gw.gateway().resource_cache;
    let context = |p: Option<Arc<Principal>>| gw.gateway().auth_context(p.as_deref(), None);
    assert!(
        cache.get("m", ITEM, &context(key())).is_some(),
        "the key's read is kept"
    );
    assert!(
        cache.get("m", ITEM, &context(token())).is_none(),
        "the token may reuse the key's private read"
    );
}
