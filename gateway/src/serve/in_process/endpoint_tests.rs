//! `[[endpoint]]` virtual servers through the pipeline, with two builtin mocks `m` and `n`: an endpoint lists
//! and serves only its selection (what it leaves out is answered exactly like a name nobody serves, and a
//! principal's policy narrows it further), has its own `serverInfo` and instructions, keeps its sessions
//! (an id it issued is unknown at `/mcp`, and the other way round), and admits only the principals its
//! `access` names; `/mcp` keeps everything.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request, principal, tool_names};
use super::{Exchange, InProcessGateway, header_map};
use crate::auth::Principal;
use crate::config::Config;

const ENDPOINTS: &str = r#"
[[backend]]
name = "m"
builtin = ["mock-backend"]

[[backend]]
name = "n"
builtin = ["mock-backend", "--name", "n"]

[[auth.api_key]]
principal = "ada"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[policy]]
principal = "bob"
allow = ["m__echo", "n__*"]

[[policy]]
principal = "ada"
allow = ["*"]

[[endpoint]]
path = "/mcp/ops"
name = "ops"
title = "Operations tools"
version = "7.1.0"
instructions = "Tools for the operations team."
backends = ["m"]
tools = { deny = ["m__fail", "m__sleep"] }
prompts = { allow = [] }

[[endpoint]]
path = "/team"
name = "team"
backends = ["n"]
[endpoint.access]
groups = ["team"]
scopes = ["mcp:use"]
"#;

async fn gateway() -> InProcessGateway {
    let config = Config::from_toml_str(ENDPOINTS, Path::new("endpoints.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

fn who(name: &str, groups: &[&str], scopes: &[&str]) -> Option<Arc<Principal>> {
    principal(name, groups, scopes)
}

/// A 2026-07-28 request of `method` at `path`.
async fn modern(
    gw: &InProcessGateway,
    path: &str,
    principal: Option<Arc<Principal>>,
    method: &str,
    params: Value,
) -> Exchange {
    let (headers, body) = modern_request(method, params, &[]);
    gw.post_at(path, principal, headers, body).await
}

/// A legacy request at `path`, in `session` when given.
async fn legacy(
    gw: &InProcessGateway,
    path: &str,
    principal: Option<Arc<Principal>>,
    session: Option<&str>,
    body: Value,
) -> Exchange {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
        headers.push(("MCP-Protocol-Version", "2025-06-18"));
    }
    gw.post_at(
        path,
        principal,
        header_map(&headers).unwrap(),
        Bytes::from(body.to_string()),
    )
    .await
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}})
}

fn ada() -> Option<Arc<Principal>> {
    who("ada", &[], &[])
}

#[actix_rt::test]
async fn an_endpoint_lists_and_serves_only_its_selection_and_answers_the_rest_as_unregistered() {
    let gw = gateway().await;
    let all = tool_names(&modern(&gw, "/mcp", ada(), "tools/list", json!({})).await);
    assert!(all.contains(&"n__echo".to_owned()) && all.contains(&"m__fail".to_owned()));
    let ops = tool_names(&modern(&gw, "/mcp/ops", ada(), "tools/list", json!({})).await);
    assert!(!ops.is_empty());
    assert!(ops.iter().all(|t| t.starts_with("m__")), "{ops:?}");
    assert!(!ops.contains(&"m__fail".to_owned()) && !ops.contains(&"m__sleep".to_owned()));
    assert_eq!(
        ops.len(),
        all.iter().filter(|t| t.starts_with("m__")).count() - 2
    );

    let call = |name: &str| json!({"name": name, "arguments": {"text": "hi"}});
    for hidden in ["n__echo", "m__fail"] {
        let left_out = modern(&gw, "/mcp/ops", ada(), "tools/call", call(hidden)).await;
        let nobody = modern(&gw, "/mcp/ops", ada(), "tools/call", call("m__never_was")).await;
        assert_eq!(left_out.status, nobody.status, "{left_out:?}");
        assert_eq!(
            String::from_utf8_lossy(&left_out.body),
            String::from_utf8_lossy(&nobody.body).replace("m__never_was", hidden)
        );
    }
    let echo = modern(&gw, "/mcp/ops", ada(), "tools/call", call("m__echo")).await;
    assert_eq!(json_of(&echo)["result"]["content"][0]["text"], "hi");
    let prompts = modern(&gw, "/mcp/ops", ada(), "prompts/list", json!({})).await;
    assert_eq!(json_of(&prompts)["result"]["prompts"], json!([]));

    // A principal's policy narrows the endpoint's selection further.
    let bob = who("bob", &[], &[]);
    let bobs = tool_names(&modern(&gw, "/mcp/ops", bob.clone(), "tools/list", json!({})).await);
    assert_eq!(bobs, ["m__echo"]);
    let at_mcp = tool_names(&modern(&gw, "/mcp", bob, "tools/list", json!({})).await);
    assert!(at_mcp.contains(&"n__echo".to_owned()) && at_mcp.contains(&"m__echo".to_owned()));
}

#[actix_rt::test]
async fn an_endpoint_answers_with_its_own_server_info_and_instructions() {
    let gw = gateway().await;
    let init = legacy(&gw, "/mcp/ops", ada(), None, initialize()).await;
    let result = &json_of(&init)["result"];
    assert_eq!(result["serverInfo"]["name"], "ops", "{result}");
    assert_eq!(result["serverInfo"]["title"], "Operations tools");
    assert_eq!(result["serverInfo"]["version"], "7.1.0");
    let instructions = result["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("Tools for the operations team."),
        "{instructions}"
    );
    let at_mcp = legacy(&gw, "/mcp", ada(), None, initialize()).await;
    assert_eq!(json_of(&at_mcp)["result"]["serverInfo"]["name"], "mcpgw");

    // 2026-07-28: the serverInfo every result carries, and server/discover's instructions.
    let discover = modern(&gw, "/mcp/ops", ada(), "server/discover", json!({})).await;
    let discovered = json_of(&discover);
    let info = discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].clone();
    assert_eq!(info["name"], "ops", "{discovered}");
    assert!(
        discovered["result"]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("Tools for the operations team."),
        "{discovered}"
    );
    let plain = json_of(&modern(&gw, "/mcp", ada(), "server/discover", json!({})).await);
    assert_eq!(
        plain["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpgw",
        "{plain}"
    );
}

#[actix_rt::test]
async fn a_session_belongs_to_the_endpoint_that_started_it() {
    let gw = gateway().await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    for (home, other) in [("/mcp/ops", "/mcp"), ("/mcp", "/mcp/ops")] {
        let init = legacy(&gw, home, ada(), None, initialize()).await;
        let session = init.header("mcp-session-id").expect("a session").to_owned();
        let there = legacy(&gw, home, ada(), Some(&session), list.clone()).await;
        assert_eq!(there.status, 200, "{there:?}");
        let elsewhere = legacy(&gw, other, ada(), Some(&session), list.clone()).await;
        assert_eq!(elsewhere.status, 404, "{home} -> {other}: {elsewhere:?}");
    }
}

#[actix_rt::test]
async fn an_endpoint_with_access_admits_only_the_principals_it_names() {
    let gw = gateway().await;
    let cases = [
        (who("carol", &["team"], &["mcp:use"]), 200),
        (who("carol", &["team"], &[]), 403),
        (who("dave", &["other"], &["mcp:use"]), 403),
        (None, 403),
    ];
    for (principal, status) in cases {
        let list = modern(&gw, "/team", principal.clone(), "tools/list", json!({})).await;
        assert_eq!(list.status, status, "{principal:?}: {list:?}");
        // `/mcp` has no access rules.
        let open = modern(&gw, "/mcp", principal, "tools/list", json!({})).await;
        assert_eq!(open.status, 200);
    }
}

/// The docs' `[[endpoint]]` example (Shaping the catalog) starts (beside backends `m`, `n` and an API key) and
/// serves what the page says it does.
#[actix_rt::test]
async fn the_docs_endpoint_example_serves_what_it_says() {
    let block = crate::docs_blocks::block("shaping-endpoint", "toml");
    let base = ENDPOINTS
        .split("[[policy]]")
        .next()
        .expect("the backends and the key");
    let config =
        Config::from_toml_str(&format!("{base}\n{block}"), Path::new("catalog.md")).unwrap();
    let gw = InProcessGateway::start(config).await.unwrap();
    let public = modern(&gw, "/mcp/public", None, "tools/list", json!({})).await;
    assert_eq!(tool_names(&public), ["n__add", "n__echo"]);
    let discover = json_of(&modern(&gw, "/mcp/public", None, "server/discover", json!({})).await);
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "public-tools"
    );
    let ops_member = who("alice", &["ops"], &[]);
    let ops =
        tool_names(&modern(&gw, "/mcp/ops", ops_member.clone(), "tools/list", json!({})).await);
    let all = tool_names(&modern(&gw, "/mcp", ops_member, "tools/list", json!({})).await);
    let expected: Vec<String> = all
        .into_iter()
        .filter(|t| t.starts_with("m__") && t != "m__fail")
        .collect();
    assert_eq!(ops, expected);
    let stranger = modern(
        &gw,
        "/mcp/ops",
        who("bob", &[], &[]),
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(stranger.status, 403);
}
