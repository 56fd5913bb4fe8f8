//! `[catalog] search` of a real `mcpgw serve`, through the Python and TypeScript SDK clients in both eras:
//! the agent (whom search applies to) lists `find_tools` and `call_tool`, finds the mock's `add` by a word
//! of its description (with its full definition), calls it through `call_tool` and gets its result; a tool
//! its policy hides is answered through `call_tool` as a name nobody serves. Another principal lists the
//! tools themselves.

use serde_json::{Value, json};

use super::Gw;
use super::api_keys::digest_of;
use crate::interop::peers::{self, ScriptClient};

const AGENT: &str = "search-agent-key-6d2b8f4a1c3e5b7d9f0a";
const ALICE: &str = "search-alice-key-2f8a6c4e0b1d3f5a7c9e";

fn config() -> String {
    format!(
        r#"
[[backend]]
name = "m"
builtin = ["mock-backend"]

[[backend]]
name = "n"
builtin = ["mock-backend", "--name", "n"]

[[auth.api_key]]
principal = "agent-1"
digest = "{agent}"

[[auth.api_key]]
principal = "alice"
digest = "{alice}"

[[policy]]
principal = "*"
allow = ["*"]
deny = ["m__fail"]

[catalog]
search = true
principals = ["agent-*"]
"#,
        agent = digest_of(AGENT),
        alice = digest_of(ALICE),
    )
}

fn run(gw: &Gw, deps: &peers::Deps, client: ScriptClient, mode: &str, key: &str) -> Value {
    let calls = [
        ("find_tools", json!({"query": "integers", "backend": "m"})),
        (
            "call_tool",
            json!({"name": "m__add", "arguments": {"a": 20, "b": 22}}),
        ),
        (
            "call_tool",
            json!({"name": "m__fail", "arguments": {"message": "x"}}),
        ),
        (
            "call_tool",
            json!({"name": "m__nobody_serves", "arguments": {"message": "x"}}),
        ),
    ];
    let mut args = vec![
        "--header".to_owned(),
        format!("Authorization: Bearer {key}"),
    ];
    for (name, arguments) in calls {
        args.extend(["--call".to_owned(), name.to_owned(), arguments.to_string()]);
    }
    peers::script_client(deps, client, &gw.url(), mode, &args)
        .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}\n{}", gw.log()))
}

fn through(client: ScriptClient, mode: &str) {
    let Some(deps) = peers::deps(&format!("search {client:?} {mode}")) else {
        return;
    };
    let gw = Gw::start(&format!("search-{client:?}-{mode}"), |_| config());
    let agent = run(&gw, &deps, client, mode, AGENT);
    let mut listed: Vec<&str> = agent["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{agent}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, ["call_tool", "find_tools"], "{agent}");
    let calls = &agent["calls"];
    let found = &calls[0];
    assert_eq!(found["ok"], true, "{agent}");
    assert_eq!(found["isError"], false, "{agent}");
    let tools = found["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{agent}"));
    assert_eq!(tools[0]["name"], "m__add", "{agent}");
    assert!(
        tools[0]["inputSchema"]["properties"]["b"].is_object(),
        "{agent}"
    );
    assert!(
        tools
            .iter()
            .all(|t| t["name"].as_str().is_some_and(|n| n.starts_with("m__"))),
        "{agent}"
    );
    let sum = &calls[1];
    assert_eq!(sum["ok"], true, "{agent}");
    assert_eq!(sum["structuredContent"]["sum"], 42, "{agent}");
    // A hidden tool and a name nobody serves: the same error, the name aside.
    let error = |entry: &Value, name: &str| {
        assert_eq!(entry["ok"], false, "{entry}");
        entry["error"]
            .as_str()
            .unwrap_or_default()
            .replace(name, "NAME")
    };
    assert_eq!(
        error(&calls[2], "m__fail"),
        error(&calls[3], "m__nobody_serves"),
        "{agent}"
    );

    // Search applies to the agents only: alice lists the tools themselves.
    let alice = run(&gw, &deps, client, mode, ALICE);
    let tools = alice["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.contains(&json!("m__add")) && tools.contains(&json!("n__add")),
        "{alice}"
    );
    assert!(!tools.contains(&json!("find_tools")), "{alice}");
}

#[test]
fn python_sdk_legacy_finds_a_tool_and_calls_it_through_search() {
    through(ScriptClient::Python, "legacy");
}

#[test]
fn typescript_sdk_2026_07_28_finds_a_tool_and_calls_it_through_search() {
    through(ScriptClient::TypeScript, "2026-07-28");
}

#[test]
fn typescript_sdk_legacy_finds_a_tool_and_calls_it_through_search() {
    through(ScriptClient::TypeScript, "legacy");
}

#[test]
fn python_sdk_2026_07_28_finds_a_tool_and_calls_it_through_search() {
    through(ScriptClient::Python, "2026-07-28");
}
