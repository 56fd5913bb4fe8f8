//! `[catalog] search` through the pipeline, with the builtin mock as backend `m`: the list is `find_tools`
//! and `call_tool`; a word of a description finds its tool with its full definition; `call_tool` is the
//! direct call, byte for byte (also for a tool with an `Mcp-Param-*` header, and for a name nobody serves);
//! a tool the principal's policy hides is answered through `call_tool` as unregistered; search applies only
//! to the principals it names; the reserved names are a start-up error only with search on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request, principal, tool_names};
use super::{Exchange, InProcessGateway};
use crate::auth::Principal;
use crate::config::Config;

const SEARCH: &str = r#"
[[backend]]
name = "m"
builtin = ["mock-backend"]

[[auth.api_key]]
principal = "agent"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[policy]]
principal = "*"
allow = ["*"]
deny = ["m__fail"]

[catalog]
search = true
principals = ["agent*"]
"#;

async fn gateway(toml: &str) -> InProcessGateway {
    let config = Config::from_toml_str(toml, Path::new("search.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

fn who(name: &str) -> Option<Arc<Principal>> {
    principal(name, &[], &[])
}

/// A 2026-07-28 request, with `Mcp-Name` mirrored and `extra` headers.
async fn modern(
    gw: &InProcessGateway,
    principal: Option<Arc<Principal>>,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Exchange {
    let (headers, body) = modern_request(method, params, extra);
    gw.post_as(principal, headers, body).await
}

fn call_tool(name: &str, arguments: Value) -> Value {
    json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}})
}

#[actix_rt::test]
async fn with_search_a_client_lists_two_tools_and_finds_one_by_a_word_of_its_description() {
    let gw = gateway(SEARCH).await;
    let list = modern(&gw, who("agent-7"), "tools/list", json!({}), &[]).await;
    assert_eq!(tool_names(&list), ["find_tools", "call_tool"]);
    // Search applies to the principals it names only: ada lists the tools.
    let full = tool_names(&modern(&gw, who("ada"), "tools/list", json!({}), &[]).await);
    assert!(full.contains(&"m__add".to_owned()) && !full.contains(&"find_tools".to_owned()));

    let found = modern(
        &gw,
        who("agent-7"),
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "integers sum", "limit": 3}}),
        &[],
    )
    .await;
    let result = &json_of(&found)["result"];
    assert_eq!(result["isError"], Value::Null, "{result}");
    let tools = result["structuredContent"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "m__add", "{result}");
    assert!(
        tools[0]["inputSchema"]["properties"]["a"].is_object(),
        "full schema: {result}"
    );
    assert!(tools.len() <= 3);
    // What the policy hides is not found.
    let hidden = modern(
        &gw,
        who("agent-7"),
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "always fails"}}),
        &[],
    )
    .await;
    let hidden = json_of(&hidden);
    let found: Vec<&str> = hidden["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!found.contains(&"m__fail"), "{hidden}");

    // Bad arguments are a tool error.
    for arguments in [
        json!({}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "nope": 1}),
    ] {
        let bad = modern(
            &gw,
            who("agent-7"),
            "tools/call",
            json!({"name": "find_tools", "arguments": arguments}),
            &[],
        )
        .await;
        assert_eq!(json_of(&bad)["result"]["isError"], true, "{bad:?}");
    }
}

#[actix_rt::test]
async fn call_tool_is_answered_exactly_as_the_direct_call() {
    let gw = gateway(SEARCH).await;
    let agent = || who("agent-7");
    let cases = [
        ("m__add", json!({"a": 2, "b": 3}), vec![]),
        (
            "m__regional",
            json!({"region": "eu-west", "text": "hi"}),
            vec![("Mcp-Param-Region", "eu-west")],
        ),
        ("m__nobody_serves", json!({"text": "x"}), vec![]),
        // Hidden by the policy: answered as unregistered, through call_tool as directly.
        ("m__fail", json!({"message": "x"}), vec![]),
    ];
    for (name, arguments, headers) in cases {
        let direct = modern(
            &gw,
            agent(),
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            &headers,
        )
        .await;
        let through = modern(&gw, agent(), "tools/call", call_tool(name, arguments), &[]).await;
        assert_eq!(through.status, direct.status, "{name}: {through:?}");
        assert_eq!(
            String::from_utf8_lossy(&through.body),
            String::from_utf8_lossy(&direct.body),
            "{name}"
        );
    }
    let sum = modern(
        &gw,
        agent(),
        "tools/call",
        call_tool("m__add", json!({"a": 2, "b": 3})),
        &[],
    )
    .await;
    assert_eq!(json_of(&sum)["result"]["structuredContent"]["sum"], 5);
    // No name to call: a tool error from the gateway.
    let nameless = modern(
        &gw,
        agent(),
        "tools/call",
        json!({"name": "call_tool", "arguments": {"arguments": {}}}),
        &[],
    )
    .await;
    assert_eq!(
        json_of(&nameless)["result"]["isError"],
        true,
        "{nameless:?}"
    );
}

#[actix_rt::test]
async fn the_reserved_names_are_a_start_up_error_only_with_search_on() {
    let renamed = r#"
[[backend]]
name = "m"
prefix = ""
builtin = ["mock-backend"]
[backend.rename]
echo = "find_tools"
"#;
    let gw = gateway(renamed).await;
    let listed = tool_names(&modern(&gw, None, "tools/list", json!({}), &[]).await);
    assert!(listed.contains(&"find_tools".to_owned()), "{listed:?}");
    gw.shutdown();

    let config = Config::from_toml_str(
        &format!("{renamed}\n[catalog]\nsearch = true\n"),
        Path::new("search.toml"),
    )
    .unwrap();
    let Err(err) = InProcessGateway::start(config).await else {
        panic!("a backend exposing find_tools started with search on");
    };
    let err = err.to_string();
    assert!(
        err.contains("find_tools") && err.contains("reserved"),
        "{err}"
    );
}

/// The docs' `[catalog]` example (Shaping the catalog) starts (beside backend `m` and an API key) and does what
/// the page says.
#[actix_rt::test]
async fn the_docs_search_example_finds_and_calls_what_it_says() {
    let block = crate::docs_blocks::block("shaping-search", "toml");
    let base = SEARCH
        .split("[[policy]]")
        .next()
        .expect("the backend and the key");
    let gw = gateway(&format!("{base}\n{block}")).await;
    let agent = || who("agent-7");
    let found = modern(
        &gw,
        agent(),
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "add integers"}}),
        &[],
    )
    .await;
    assert_eq!(
        json_of(&found)["result"]["structuredContent"]["tools"][0]["name"],
        "m__add",
        "{found:?}"
    );
    let sum = modern(
        &gw,
        agent(),
        "tools/call",
        call_tool("m__add", json!({"a": 2, "b": 3})),
        &[],
    )
    .await;
    assert_eq!(
        json_of(&sum)["result"]["structuredContent"]["sum"],
        5,
        "{sum:?}"
    );
    let other = tool_names(&modern(&gw, who("ada"), "tools/list", json!({}), &[]).await);
    assert!(other.contains(&"m__add".to_owned()));
}

/// A reload turns search on (the next request lists the two tools) — and is refused whole when a backend
/// already exposes a reserved name.
#[actix_rt::test]
async fn a_reload_turns_search_on_unless_a_backend_exposes_a_reserved_name() {
    use crate::reload::config::apply;
    let plain = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
    let parse = |toml: &str| Config::from_toml_str(toml, Path::new("search.toml")).unwrap();
    let gw = gateway(plain).await;
    apply(
        gw.gateway(),
        parse(&format!("{plain}[catalog]\nsearch = true\n")),
    )
    .await
    .unwrap();
    let listed = tool_names(&modern(&gw, None, "tools/list", json!({}), &[]).await);
    assert_eq!(listed, ["find_tools", "call_tool"]);
    gw.shutdown();

    let renamed = format!("{plain}prefix = \"\"\n[backend.rename]\necho = \"call_tool\"\n");
    let gw = gateway(&renamed).await;
    let why = apply(
        gw.gateway(),
        parse(&format!("{renamed}[catalog]\nsearch = true\n")),
    )
    .await
    .unwrap_err();
    assert!(
        why.contains("call_tool") && why.contains("reserved"),
        "{why}"
    );
    let listed = tool_names(&modern(&gw, None, "tools/list", json!({}), &[]).await);
    assert!(listed.contains(&"call_tool".to_owned()) && listed.contains(&"add".to_owned()));
}

/// Search for some principals only makes their two-tool list private (a shared cache must not hand it to
/// another client); search for everyone leaves the list as reusable as the catalog's.
#[actix_rt::test]
async fn a_search_list_for_some_principals_only_is_private() {
    // A backend whose lists may be shared.
    let base = SEARCH
        .split("[[policy]]")
        .next()
        .expect("the backend and the key")
        .replace(
            r#"builtin = ["mock-backend"]"#,
            r#"builtin = ["mock-backend", "--ttl-ms", "60000"]"#,
        );
    let base = base.as_str();
    let scope = |e: &Exchange| json_of(e)["result"]["cacheScope"].clone();
    let gw = gateway(base).await;
    let catalog_scope = scope(&modern(&gw, who("agent-7"), "tools/list", json!({}), &[]).await);
    assert_eq!(
        catalog_scope, "public",
        "the check below must be able to fail"
    );
    gw.shutdown();
    let gw = gateway(&format!(
        "{base}[catalog]\nsearch = true\nprincipals = [\"agent*\"]\n"
    ))
    .await;
    let agents = modern(&gw, who("agent-7"), "tools/list", json!({}), &[]).await;
    assert_eq!(tool_names(&agents), ["find_tools", "call_tool"]);
    assert_eq!(scope(&agents), "private", "{agents:?}");
    let others = modern(&gw, who("ada"), "tools/list", json!({}), &[]).await;
    assert_eq!(scope(&others), catalog_scope);
    gw.shutdown();
    let gw = gateway(&format!("{base}[catalog]\nsearch = true\n")).await;
    let everyone = modern(&gw, who("agent-7"), "tools/list", json!({}), &[]).await;
    assert_eq!(scope(&everyone), catalog_scope);
}
