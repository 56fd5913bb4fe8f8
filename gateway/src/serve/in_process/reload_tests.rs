//! A config reload through the running pipeline (`reload::config::apply`), with builtin mocks as backends:
//! backends added and removed (a removed one's tools answered exactly as unregistered ones), the policy and
//! the rate limits applied to the very next request, and a config whose catalog collides refused whole —
//! the old config, backends and catalog stay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::{InProcessGateway, header_map};
use crate::auth::Principal;
use crate::config::Config;
use crate::reload::config::apply;

const ONE: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
/// `ONE` with `[auth]` on (an API key nobody holds: the tests give each request its principal).
const ONE_WITH_AUTH: &str = "[[auth.api_key]]\nprincipal = \"tester\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
const TWO: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n[[backend]]\nname = \"n\"\nbuiltin = [\"mock-backend\", \"--name\", \"n\"]\n";
const ONLY_N: &str = "[[backend]]\nname = \"n\"\nbuiltin = [\"mock-backend\", \"--name\", \"n\"]\n";
/// `m` and `n` both exposed without a prefix: every tool collides.
const COLLIDING: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n[[backend]]\nname = \"n\"\nprefix = \"\"\nbuiltin = [\"mock-backend\"]\n\n[[backend]]\nname = \"o\"\nprefix = \"\"\nbuiltin = [\"mock-backend\"]\n";
const GUARDED: &str = "[[auth.api_key]]\nprincipal = \"tester\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n[[policy]]\nprincipal = \"bob\"\nallow = [\"m__echo\"]\n\n[[rate_limit]]\nname = \"calls\"\nper = [\"principal\"]\nrate = 0.001\nburst = 2\nmethods = [\"tools/call\"]\n";

fn config(toml: &str) -> Config {
    Config::from_toml_str(toml, Path::new("reload.toml")).unwrap()
}

fn bob() -> Option<Arc<Principal>> {
    Some(Arc::new(Principal {
        name: "bob".to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: Vec::new(),
        scopes: Vec::new(),
        token: None,
    }))
}

/// A 2026-07-28 `tools/call` of `name`, from `principal`: the response's JSON.
async fn call(gw: &InProcessGateway, principal: Option<Arc<Principal>>, name: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": {"text": "hi"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
        }
    }});
    let headers = header_map(&[
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name),
    ])
    .unwrap();
    let exchange = gw
        .post_as(principal, headers, Bytes::from(body.to_string()))
        .await;
    serde_json::from_slice(&exchange.body).unwrap()
}

fn echoed(v: &Value) -> bool {
    v["result"]["content"][0]["text"] == "hi" && v["result"]["isError"] != true
}

fn unknown_tool(v: &Value, name: &str) -> bool {
    v["error"]["code"] == -32601 && v["error"]["data"]["name"] == name
}

#[actix_rt::test]
async fn a_reload_adds_a_backend_and_a_removed_backends_tools_are_answered_as_unregistered() {
    let gw = InProcessGateway::start(config(ONE)).await.unwrap();
    assert!(unknown_tool(&call(&gw, None, "n__echo").await, "n__echo"));
    let applied = apply(gw.gateway(), config(TWO)).await.unwrap();
    assert_eq!(
        (applied.version, applied.added.as_slice()),
        (1, ["n".to_owned()].as_slice())
    );
    assert_eq!(
        applied.lists_changed,
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed"
        ]
    );
    assert!(echoed(&call(&gw, None, "n__echo").await));
    assert!(echoed(&call(&gw, None, "m__echo").await));

    let applied = apply(gw.gateway(), config(ONLY_N)).await.unwrap();
    assert_eq!(applied.removed, ["m"]);
    let removed = call(&gw, None, "m__echo").await;
    let never = call(&gw, None, "x__echo").await;
    assert!(unknown_tool(&removed, "m__echo"), "{removed}");
    assert_eq!(
        removed["error"]["message"]
            .as_str()
            .map(|m| m.replace("m__echo", "?")),
        never["error"]["message"]
            .as_str()
            .map(|m| m.replace("x__echo", "?")),
        "a removed tool is answered as one nobody ever served"
    );
    assert!(echoed(&call(&gw, None, "n__echo").await));
    assert_eq!(gw.gateway().live().version, 2);
    assert!(gw.gateway().live().backend("m").is_none());
}

#[actix_rt::test]
async fn a_reload_applies_the_policy_and_the_rate_limits_to_the_next_request() {
    let gw = InProcessGateway::start(config(ONE_WITH_AUTH))
        .await
        .unwrap();
    assert!(
        !unknown_tool(&call(&gw, bob(), "m__add").await, "m__add"),
        "no policy yet"
    );
    let applied = apply(gw.gateway(), config(GUARDED)).await.unwrap();
    assert!(applied.policy && applied.rate_limits, "{applied:?}");
    assert!(
        applied.added.is_empty() && applied.restarted.is_empty(),
        "{applied:?}"
    );
    // The policy: bob may use only m__echo; m__add is now unregistered for him.
    assert!(unknown_tool(&call(&gw, bob(), "m__add").await, "m__add"));
    // The limit: two calls, then a rate-limited tool error.
    assert!(echoed(&call(&gw, bob(), "m__echo").await));
    assert!(echoed(&call(&gw, bob(), "m__echo").await));
    let third = call(&gw, bob(), "m__echo").await;
    assert_eq!(third["result"]["isError"], true, "{third}");
    assert!(
        third["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("rate limited"),
        "{third}"
    );
    // Reloading the same config keeps the buckets (no new burst) and changes nothing else.
    let again = apply(gw.gateway(), config(GUARDED)).await.unwrap();
    assert!(
        !again.policy && !again.rate_limits && again.lists_changed.is_empty(),
        "{again:?}"
    );
    assert_eq!(call(&gw, bob(), "m__echo").await["result"]["isError"], true);
}

#[actix_rt::test]
async fn a_config_whose_catalog_collides_is_refused_whole_and_the_old_one_stays() {
    let gw = InProcessGateway::start(config(ONE)).await.unwrap();
    let before = gw.gateway().catalog.snapshot().version();
    let why = apply(gw.gateway(), config(COLLIDING)).await.unwrap_err();
    assert!(
        why.starts_with("catalog: ") && why.contains("n") && why.contains("o"),
        "{why}"
    );
    assert_eq!(gw.gateway().live().version, 0, "nothing was applied");
    assert_eq!(gw.gateway().catalog.snapshot().version(), before);
    assert!(gw.gateway().live().backend("n").is_none());
    assert!(echoed(&call(&gw, None, "m__echo").await));
    assert!(unknown_tool(&call(&gw, None, "echo").await, "echo"));
}

/// Before: `[auth]` applies only at a restart, so a reload of a gateway started without it, to a file that
/// adds `[auth]` and a `[[policy]]` naming principals, applied the rules with no authentication: no request
/// had a principal and every tool vanished for every client. Now the reload is refused naming the rule, and
/// the old config stays.
#[actix_rt::test]
async fn a_reload_whose_policy_needs_the_auth_it_cannot_apply_is_refused_and_the_old_config_stays()
{
    let gw = InProcessGateway::start(config(ONE)).await.unwrap();
    let why = apply(gw.gateway(), config(GUARDED)).await.unwrap_err();
    assert!(
        why.contains("policy[0].principal") && why.contains("a reload keeps the [auth]"),
        "{why}"
    );
    assert_eq!(gw.gateway().live().version, 0, "nothing was applied");
    assert!(gw.gateway().live().policy.is_none());
    assert!(echoed(&call(&gw, None, "m__echo").await));
    assert!(!unknown_tool(&call(&gw, None, "m__add").await, "m__add"));
}
