//! `[[backend]]` catalog shaping through the pipeline, with the builtin mock as backend `m`: what a
//! selection leaves out is not listed and is answered exactly like a name nobody serves (tools, prompts,
//! resources and a resource template); a renamed tool or prompt is listed under its new prefixed name (with
//! its configured description), stays so when listed again (as after `list_changed`), and reaches the
//! backend under its own; a renamed name colliding with
//! another backend's is refused at start and in a reload (the old config stays).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request};
use super::{Exchange, InProcessGateway};
use crate::config::Config;
use crate::reload::config::apply;

const SHAPED: &str = r#"
[[backend]]
name = "m"
builtin = ["mock-backend"]
tools = { allow = ["e*", "add", "fail"], deny = ["fail"] }
prompts = { deny = ["greet"] }
resources = { deny = ["*/readme", "*/items/*"] }
"#;

const RENAMED: &str = r#"
[[backend]]
name = "m"
builtin = ["mock-backend"]

[backend.rename]
add = "plus"
greet = "hello"

[backend.describe]
add = "Adds two numbers, renamed."
"#;

/// `n` without a prefix exposes `echo`; `m` renames its `add` to `n`'s `echo` under no prefix.
const COLLIDING: &str = r#"
[[backend]]
name = "m"
prefix = ""
builtin = ["mock-backend"]
tools = { allow = ["add"] }
prompts = { allow = [] }
resources = { allow = [] }
[backend.rename]
add = "echo"

[[backend]]
name = "n"
prefix = ""
builtin = ["mock-backend", "--name", "n"]
"#;

fn config(toml: &str) -> Config {
    Config::from_toml_str(toml, Path::new("shaping.toml")).unwrap()
}

/// A 2026-07-28 request of `method` with `params`.
async fn modern(gw: &InProcessGateway, method: &str, params: Value) -> Exchange {
    let (headers, body) = modern_request(method, params, &[]);
    gw.post_as(None, headers, body).await
}

/// The `key` of every item of list `field` in a list result.
fn listed(e: &Exchange, field: &str, key: &str) -> Vec<String> {
    json_of(e)["result"][field]
        .as_array()
        .unwrap_or_else(|| panic!("{e:?}"))
        .iter()
        .map(|t| t[key].as_str().unwrap().to_owned())
        .collect()
}

/// `hidden` is answered exactly as `nobody`, with the one name read as the other.
fn assert_same_answer(hidden: &Exchange, nobody: &Exchange, name: &str, never: &str) {
    assert_eq!(hidden.status, nobody.status, "{hidden:?}\n{nobody:?}");
    assert_eq!(hidden.headers, nobody.headers);
    let expected = String::from_utf8_lossy(&nobody.body).replace(never, name);
    assert_eq!(String::from_utf8_lossy(&hidden.body), expected);
}

#[actix_rt::test]
async fn what_a_backend_does_not_select_is_unlisted_and_answered_as_unregistered() {
    let gw = InProcessGateway::start(config(SHAPED)).await.unwrap();
    let tools = listed(&modern(&gw, "tools/list", json!({})).await, "tools", "name");
    assert_eq!(tools, ["m__add", "m__echo"]);
    let call = |name: &str| json!({"name": name, "arguments": {"text": "hi"}});
    for hidden in ["m__fail", "m__sleep"] {
        let denied = modern(&gw, "tools/call", call(hidden)).await;
        let never = modern(&gw, "tools/call", call("m__never_was")).await;
        assert_same_answer(&denied, &never, hidden, "m__never_was");
    }
    let echo = modern(&gw, "tools/call", call("m__echo")).await;
    assert_eq!(json_of(&echo)["result"]["content"][0]["text"], "hi");

    let prompts = modern(&gw, "prompts/list", json!({})).await;
    assert_eq!(json_of(&prompts)["result"]["prompts"], json!([]));
    let get = |name: &str| json!({"name": name, "arguments": {"name": "Ada"}});
    let denied = modern(&gw, "prompts/get", get("m__greet")).await;
    let never = modern(&gw, "prompts/get", get("m__nobody")).await;
    assert_same_answer(&denied, &never, "m__greet", "m__nobody");

    let uris = listed(
        &modern(&gw, "resources/list", json!({})).await,
        "resources",
        "uri",
    );
    assert_eq!(uris, ["mock://mock-backend/config.json"]);
    let templates = modern(&gw, "resources/templates/list", json!({})).await;
    assert_eq!(
        json_of(&templates)["result"]["resourceTemplates"],
        json!([]),
        "{templates:?}"
    );
    let never = "mock://mock-backend/nobody";
    for hidden in ["mock://mock-backend/readme", "mock://mock-backend/items/7"] {
        let denied = modern(&gw, "resources/read", json!({"uri": hidden})).await;
        let unregistered = modern(&gw, "resources/read", json!({"uri": never})).await;
        assert_same_answer(&denied, &unregistered, hidden, never);
    }
    let config = modern(
        &gw,
        "resources/read",
        json!({"uri": "mock://mock-backend/config.json"}),
    )
    .await;
    assert_eq!(config.status, 200, "{config:?}");
}

#[actix_rt::test]
async fn a_renamed_tool_is_listed_prefixed_under_its_new_name_and_reaches_the_backends_own() {
    let gw = InProcessGateway::start(config(RENAMED)).await.unwrap();
    let list = json_of(&modern(&gw, "tools/list", json!({})).await);
    let tools = list["result"]["tools"].as_array().unwrap();
    let plus = tools
        .iter()
        .find(|t| t["name"] == "m__plus")
        .expect("m__plus listed");
    assert_eq!(plus["description"], "Adds two numbers, renamed.");
    assert!(!tools.iter().any(|t| t["name"] == "m__add"), "{list}");
    let sum = modern(
        &gw,
        "tools/call",
        json!({"name": "m__plus", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    let sum = json_of(&sum);
    assert_eq!(sum["result"]["isError"], Value::Null, "{sum}");
    assert_eq!(sum["result"]["structuredContent"]["sum"], 5, "{sum}");
    let old = modern(
        &gw,
        "tools/call",
        json!({"name": "m__add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    let never = modern(
        &gw,
        "tools/call",
        json!({"name": "m__nop", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_same_answer(&old, &never, "m__add", "m__nop");

    // Listed again, as after the backend's `list_changed`: still shaped.
    let before = gw.gateway().catalog.snapshot();
    crate::notify::listing::refresh(gw.gateway(), &crate::notify::listing::Scope::All).await;
    let after = gw.gateway().catalog.snapshot();
    assert!(!std::sync::Arc::ptr_eq(&before, &after), "listed again");
    let tools = listed(&modern(&gw, "tools/list", json!({})).await, "tools", "name");
    assert!(
        tools.contains(&"m__plus".to_owned()) && !tools.contains(&"m__add".to_owned()),
        "{tools:?}"
    );

    let prompts = listed(
        &modern(&gw, "prompts/list", json!({})).await,
        "prompts",
        "name",
    );
    assert_eq!(prompts, ["m__hello"]);
    let hello = modern(
        &gw,
        "prompts/get",
        json!({"name": "m__hello", "arguments": {"name": "Ada"}}),
    )
    .await;
    assert_eq!(
        json_of(&hello)["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!",
        "{hello:?}"
    );
}

#[actix_rt::test]
async fn a_rename_colliding_with_another_backend_is_refused_at_start_and_in_a_reload() {
    let Err(why) = InProcessGateway::start(config(COLLIDING)).await else {
        panic!("a colliding rename started");
    };
    let why = why.to_string();
    assert!(
        why.contains("tool name echo collides: backends m and n"),
        "{why}"
    );

    let gw = InProcessGateway::start(config(RENAMED)).await.unwrap();
    let before = gw.gateway().catalog.snapshot().version();
    let why = apply(gw.gateway(), config(COLLIDING)).await.unwrap_err();
    assert!(
        why.starts_with("catalog: ") && why.contains("tool name echo collides: backends m and n"),
        "{why}"
    );
    assert_eq!(gw.gateway().live().version, 0, "nothing was applied");
    assert_eq!(gw.gateway().catalog.snapshot().version(), before);
    let sum = modern(
        &gw,
        "tools/call",
        json!({"name": "m__plus", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(json_of(&sum)["result"]["structuredContent"]["sum"], 5);
}

/// The docs' `[[backend]]` shaping example (Shaping the catalog) starts and lists what the page says it does.
#[actix_rt::test]
async fn the_docs_shaping_example_lists_what_it_says() {
    let block = crate::docs_blocks::block("shaping-backend", "toml");
    let gw = InProcessGateway::start(config(&block)).await.unwrap();
    let list = json_of(&modern(&gw, "tools/list", json!({})).await);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["m__echo", "m__plus"]);
    assert_eq!(
        list["result"]["tools"][1]["description"],
        "Adds two integers a and b."
    );
    let prompts = modern(&gw, "prompts/list", json!({})).await;
    assert_eq!(json_of(&prompts)["result"]["prompts"], json!([]));
    let uris = listed(
        &modern(&gw, "resources/list", json!({})).await,
        "resources",
        "uri",
    );
    assert_eq!(uris.len(), 2, "{uris:?}");
    let templates = modern(&gw, "resources/templates/list", json!({})).await;
    assert_eq!(
        json_of(&templates)["result"]["resourceTemplates"],
        json!([])
    );
}
