//! OpenAPI services as backends (issue 20) against a real one: a FastAPI app (`tests/fixtures/openapi/app.py`,
//! run by the interop venv's Python) whose own generated `/openapi.json` (OpenAPI 3.1: `$ref` to
//! `components/schemas`, `anyOf` with null for optionals) is the document of an `openapi` backend `shop`.
//!
//! - the Python SDK client (legacy) and the TypeScript SDK client (2026-07-28) list the operations as tools
//!   and call them: path, query (a repeated array, reserved characters) and header parameters, a path
//!   parameter with `/`, `..` and reserved characters (one encoded segment), a nested JSON body answered
//!   201, a JSON array answer (wrapped as `{"result": [...]}`), text/plain, a 404 and a 500 (tool errors
//!   `HTTP 404 Not Found: ...`), and arguments that try to set `Authorization`, `Cookie` or `Host`, or add a
//!   header line through a header parameter's value (the app records every request's headers: none of
//!   them ever reaches it);
//! - the translated `tools/list`: input schemas from the parameters and body, no `$ref` into the document
//!   left, object output schemas, a declared `Authorization` header parameter not offered as an argument;
//! - `operations = { allow, deny }`: a denied operation is no tool, called it answers as a name nobody
//!   serves.
//!
//! Loopback only, ports chosen at run time, every wait bounded, every process killed on drop.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::interop::peers::{self, Deps, Proc, ScriptClient};
use crate::support::{self, Running, TempDir};

/// The tools the shop's document yields, prefixed by the backend's name.
const TOOLS: [&str; 8] = [
    "shop__create_item",
    "shop__fail",
    "shop__get_item",
    "shop__get_note",
    "shop__hello",
    "shop__list_names",
    "shop__search_items",
    "shop__whoami",
];
/// A value that the calls try to smuggle into headers; the app must never see it.
const SMUGGLED: &str = "smuggled-7d1f3a";
/// A query value with characters that must be percent-encoded.
const ODD_QUERY: &str = "a&b=c d/ü?#%+";
/// A path parameter with characters that must be percent-encoded (a slash and `..` among them).
const ODD_TITLE: &str = "a/b c?d#e%f&ü/../x";

/// The FastAPI app, announced as `openapi_app listening on http://127.0.0.1:PORT`.
fn shop(deps: &Deps) -> Proc {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/openapi/app.py");
    let mut cmd = Command::new(&deps.python);
    cmd.arg(app)
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "600"])
        .env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    Proc::start(cmd, "openapi_app listening on ")
}

/// `mcpgw serve` with the backend `shop` on the app at `base` (`extra` lines added to it), once it lists
/// `expect`.
fn gateway(dir: &TempDir, base: &str, extra: &str, expect: &[&str]) -> Running {
    let config = format!(
        "[[backend]]\nname = \"shop\"\nopenapi = \"{base}/openapi.json\"\nbase_url = \"{base}\"\n{extra}"
    );
    let gw = support::gateway(&config, dir);
    peers::wait_for_tools(&gw, expect);
    gw
}

/// The requests the app received so far (its /debug/requests, which the document does not list).
fn seen_by(app: &Proc) -> Vec<Value> {
    let reply = support::into_reply(
        support::client()
            .get(format!("{}/debug/requests", app.url))
            .send()
            .expect("the app answers"),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json().as_array().cloned().unwrap_or_default()
}

/// The calls every client makes, in order (their indices are read by [`check`]).
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "shop__get_item",
            json!({"item_id": 1, "verbose": true, "x-request-id": "req-42"}),
        ),
        ("shop__get_item", json!({"item_id": 999})),
        (
            "shop__search_items",
            json!({"q": "kettle", "limit": 5, "tags": ["kitchen", "steel"]}),
        ),
        ("shop__search_items", json!({"q": ODD_QUERY, "limit": 1})),
        (
            "shop__create_item",
            json!({"body": {
                "name": "walnut desk",
                "price": 310.25,
                "tags": ["wood", "office"],
                "dimensions": {"width": 120, "height": 75.5, "unit": "in"},
                "supplier": {"name": "Nordwood", "country": "SE"},
            }}),
        ),
        ("shop__list_names", json!({})),
        ("shop__fail", json!({})),
        ("shop__hello", json!({"name": "Ada"})),
        (
            "shop__whoami",
            json!({
                "authorization": format!("Bearer {SMUGGLED}"),
                "Authorization": format!("Bearer {SMUGGLED}"),
                "Cookie": format!("session={SMUGGLED}"),
            }),
        ),
        (
            "shop__get_item",
            json!({
                "item_id": 2,
                "Authorization": format!("Bearer {SMUGGLED}"),
                "Cookie": format!("session={SMUGGLED}"),
                "Host": format!("{SMUGGLED}.example"),
                "Proxy-Authorization": format!("Basic {SMUGGLED}"),
            }),
        ),
        (
            "shop__get_item",
            json!({"item_id": 3, "x-request-id": format!("r\r\nAuthorization: Bearer {SMUGGLED}")}),
        ),
        ("shop__get_note", json!({"title": ODD_TITLE})),
    ]
}

/// A successful call's structured content, its text checked to be the same JSON.
fn structured(entry: &Value, report: &Value) -> Value {
    assert_eq!(entry["ok"], true, "{entry}\n{report}");
    assert_eq!(entry["isError"], false, "{entry}\n{report}");
    let content = entry["structuredContent"].clone();
    assert!(content.is_object(), "no structuredContent: {entry}");
    let text: Value = serde_json::from_str(entry["text"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the text is not the JSON answer ({e}): {entry}"));
    // the text is the service's JSON; a non-object answer is the structured content's "result"
    let expected = if text.is_object() {
        content.clone()
    } else {
        content["result"].clone()
    };
    assert_eq!(
        numbers_as_floats(&text),
        numbers_as_floats(&expected),
        "{entry}"
    );
    content
}

/// `v` with every number a float (JavaScript's JSON writes 120.0 as 120, Python's as 120.0).
fn numbers_as_floats(v: &Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        Value::Array(items) => items.iter().map(numbers_as_floats).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), numbers_as_floats(v)))
            .collect(),
        other => other.clone(),
    }
}

/// A tool error's text, checked to start with `prefix`.
fn tool_error(entry: &Value, prefix: &str) -> String {
    assert_eq!(entry["ok"], true, "not a tool result: {entry}");
    assert_eq!(entry["isError"], true, "{entry}");
    let text = entry["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.starts_with(prefix), "{prefix:?} expected: {entry}");
    text
}

/// Whether a smuggling call was refused, or else answered `check` on its structured content.
fn refused_or(entry: &Value, check: impl FnOnce(&Value)) {
    if entry["ok"] == false || entry["isError"] == true {
        return;
    }
    check(&entry["structuredContent"]);
}

fn check(report: &Value) {
    let c = &report["calls"];
    assert_eq!(report["tools"], json!(TOOLS), "{report}");

    let item = structured(&c[0], report);
    assert_eq!(item["id"], 1, "{item}");
    assert_eq!(item["name"], "steel kettle", "{item}");
    assert_eq!(item["verbose"], true, "{item}");
    assert_eq!(item["request_id"], "req-42", "the header parameter: {item}");
    assert_eq!(item["dimensions"]["height"], 22.5, "{item}");
    assert_eq!(item["supplier"]["country"], "NL", "{item}");
    assert_eq!(item["tags"], json!(["kitchen", "steel"]), "{item}");

    let missing = tool_error(&c[1], "HTTP 404 Not Found:");
    assert!(missing.contains("item 999 not found"), "{missing}");

    let search = structured(&c[2], report);
    assert_eq!(search["q"], "kettle", "{search}");
    assert_eq!(search["limit"], 5, "{search}");
    assert_eq!(
        search["tags"],
        json!(["kitchen", "steel"]),
        "an array as a repeated query parameter: {search}"
    );
    assert_eq!(search["matches"], json!([1]), "{search}");
    let odd = structured(&c[3], report);
    assert_eq!(odd["q"], ODD_QUERY, "percent-encoded: {odd}");
    assert_eq!(odd["limit"], 1, "{odd}");
    assert_eq!(odd["tags"], json!([]), "{odd}");

    let created = structured(&c[4], report);
    assert!(
        created["id"].as_i64().is_some_and(|id| id >= 100),
        "{created}"
    );
    assert_eq!(created["name"], "walnut desk", "{created}");
    assert_eq!(created["price"], 310.25, "{created}");
    assert_eq!(created["tags"], json!(["wood", "office"]), "{created}");
    assert_eq!(
        numbers_as_floats(&created["dimensions"]),
        json!({"width": 120.0, "height": 75.5, "unit": "in"}),
        "{created}"
    );
    assert_eq!(
        created["supplier"],
        json!({"name": "Nordwood", "country": "SE"}),
        "{created}"
    );

    let names = structured(&c[5], report);
    assert_eq!(
        names,
        json!({"result": ["copper kettle", "oak shelf", "steel kettle", "walnut desk"]}),
        "a JSON array answer, wrapped: {names}"
    );

    let failed = tool_error(&c[6], "HTTP 500 Internal Server Error:");
    assert!(
        failed.contains("the warehouse database is unreachable"),
        "{failed}"
    );

    assert_eq!(c[7]["ok"], true, "{}", c[7]);
    assert_eq!(c[7]["isError"], false, "{}", c[7]);
    assert_eq!(c[7]["text"], "hello, Ada", "{}", c[7]);
    assert_eq!(
        c[7]["structuredContent"],
        Value::Null,
        "text/plain: {}",
        c[7]
    );

    refused_or(&c[8], |whoami| {
        assert_eq!(whoami["authorization"], Value::Null, "{}", c[8]);
    });
    refused_or(&c[9], |item| assert_eq!(item["id"], 2, "{}", c[9]));
    // a header parameter whose value would add a header line
    refused_or(&c[10], |item| {
        assert_eq!(item["id"], 3, "{}", c[10]);
        assert!(!item.to_string().contains(SMUGGLED), "{}", c[10]);
    });

    let note = structured(&c[11], report);
    assert_eq!(note["title"], ODD_TITLE, "{note}");
    let raw = note["raw_path"].as_str().unwrap_or_default();
    let segment = raw.strip_prefix("/notes/").unwrap_or_default();
    assert!(
        !segment.is_empty() && !segment.contains('/'),
        "the path parameter is one percent-encoded segment: {note}"
    );
}

/// What the app received: never an `Authorization`, `Cookie` or other credential or hop header set by an
/// argument, never the smuggled value anywhere, always its own `Host`; and the calls did reach it.
fn check_seen(app: &Proc, report: &Value) {
    let seen = seen_by(app);
    let host = app.url.trim_start_matches("http://");
    for request in &seen {
        let headers = request["headers"].as_object().cloned().unwrap_or_default();
        for forbidden in ["authorization", "cookie", "proxy-authorization"] {
            assert!(
                !headers.contains_key(forbidden),
                "the app received {forbidden}: {request}\n{report}"
            );
        }
        assert_eq!(request["headers"]["host"], host, "{request}");
        assert!(
            !request.to_string().contains(SMUGGLED),
            "a smuggled argument reached the app: {request}\n{report}"
        );
    }
    let reached = |path: &str| seen.iter().filter(|r| r["path"] == path).count();
    assert!(reached("/openapi.json") >= 1, "{seen:?}");
    assert!(reached("/items/1") >= 1, "{seen:?}");
    assert!(reached("/fail") >= 1, "{seen:?}");
    let posted = seen
        .iter()
        .find(|r| r["method"] == "POST" && r["path"] == "/items")
        .unwrap_or_else(|| panic!("no POST /items: {seen:?}"));
    assert!(
        posted["headers"]["content-type"]
            .as_str()
            .is_some_and(|t| t.starts_with("application/json")),
        "{posted}"
    );
}

fn through(client: ScriptClient, mode: &str) {
    let Some(deps) = peers::deps(&format!("openapi {client:?} {mode}")) else {
        return;
    };
    let dir = TempDir::new(&format!("openapi-{client:?}-{mode}"));
    let app = shop(&deps);
    let gw = gateway(&dir, &app.url, "", &TOOLS);
    let mut args = Vec::new();
    for (name, arguments) in calls() {
        args.extend(["--call".to_owned(), name.to_owned(), arguments.to_string()]);
    }
    let report = peers::script_client(&deps, client, &gw.url, mode, &args).unwrap_or_else(|e| {
        panic!(
            "{client:?} {mode}: {e}\n{}\n{}",
            gw.log_lines().join("\n"),
            app.drain_log().join("\n")
        )
    });
    check(&report);
    check_seen(&app, &report);
}

#[test]
fn python_sdk_legacy_calls_a_fastapi_service_through_its_openapi_document() {
    through(ScriptClient::Python, "legacy");
}

#[test]
fn typescript_sdk_2026_07_28_calls_a_fastapi_service_through_its_openapi_document() {
    through(ScriptClient::TypeScript, "2026-07-28");
}

/// Every `$ref` in `schema` (none may point into the OpenAPI document's `components`).
fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn tools_list_translates_the_fastapi_document() {
    let Some(deps) = peers::deps("openapi tools/list") else {
        return;
    };
    let dir = TempDir::new("openapi-list");
    let app = shop(&deps);
    let gw = gateway(&dir, &app.url, "", &TOOLS);
    let (mut names, list) = support::listed_tools(&gw.url);
    names.sort();
    assert_eq!(names, TOOLS, "{list}");
    let tool = |name: &str| {
        list["result"]["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {list}"))
    };
    for name in TOOLS {
        let t = tool(name);
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        if !t["outputSchema"].is_null() {
            assert_eq!(
                t["outputSchema"]["type"], "object",
                "MCP wants objects: {t}"
            );
        }
        let mut found = Vec::new();
        refs(&t, &mut found);
        assert!(
            found.iter().all(|r| !r.starts_with("#/components/")),
            "a $ref into the OpenAPI document left in {name}: {found:?}\n{t}"
        );
    }

    let get = tool("shop__get_item");
    let input = &get["inputSchema"];
    assert_eq!(input["properties"]["item_id"]["type"], "integer", "{get}");
    assert!(input["properties"].get("verbose").is_some(), "{get}");
    assert!(input["properties"].get("x-request-id").is_some(), "{get}");
    assert_eq!(input["required"], json!(["item_id"]), "{get}");
    assert!(
        get["description"]
            .as_str()
            .is_some_and(|d| d.contains("Get an item by its id")),
        "the summary: {get}"
    );
    assert_eq!(get["outputSchema"]["type"], "object", "{get}");

    let search = tool("shop__search_items");
    assert_eq!(search["inputSchema"]["required"], json!(["q"]), "{search}");
    let tags = &search["inputSchema"]["properties"]["tags"];
    assert_eq!(tags["type"], "array", "{search}");
    assert_eq!(tags["items"]["type"], "string", "{search}");

    let create = tool("shop__create_item");
    assert_eq!(
        create["inputSchema"]["required"],
        json!(["body"]),
        "{create}"
    );
    assert!(
        create["inputSchema"]["properties"]["body"].is_object(),
        "{create}"
    );

    let list_names = tool("shop__list_names");
    let result = &list_names["outputSchema"]["properties"]["result"];
    assert_eq!(
        result["type"], "array",
        "the array answer's schema, wrapped: {list_names}"
    );

    let whoami = tool("shop__whoami");
    let offered: Vec<&String> = whoami["inputSchema"]["properties"]
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    assert!(
        offered
            .iter()
            .all(|k| !k.eq_ignore_ascii_case("authorization")),
        "a header parameter named Authorization offered as an argument: {whoami}"
    );
}

/// The error a failed call reports, with `name` read as `NAME`.
fn unknown_error(entry: &Value, name: &str) -> String {
    assert_eq!(entry["ok"], false, "{entry}");
    entry["error"]
        .as_str()
        .unwrap_or_default()
        .replace(name, "NAME")
}

#[test]
fn operations_allow_and_deny_select_the_tools() {
    let Some(deps) = peers::deps("openapi operations") else {
        return;
    };
    let app = shop(&deps);

    let dir = TempDir::new("openapi-deny");
    let gw = gateway(
        &dir,
        &app.url,
        "operations = { deny = [\"fail\"] }\n",
        &["shop__get_item"],
    );
    let calls = [
        ("shop__fail", json!({})),
        ("shop__nobody_serves", json!({})),
        ("shop__hello", json!({})),
    ];
    let report = peers::py_client(&deps, &gw.url, "legacy", &[], &calls)
        .unwrap_or_else(|e| panic!("{e}\n{}", gw.log_lines().join("\n")));
    let without_fail: Vec<&str> = TOOLS.into_iter().filter(|t| *t != "shop__fail").collect();
    assert_eq!(report["tools"], json!(without_fail), "{report}");
    let c = &report["calls"];
    assert_eq!(
        unknown_error(&c[0], "shop__fail"),
        unknown_error(&c[1], "shop__nobody_serves"),
        "{report}"
    );
    assert_eq!(c[2]["text"], "hello, world", "{report}");
    assert!(
        seen_by(&app).iter().all(|r| r["path"] != "/fail"),
        "a denied operation reached the app"
    );

    let dir = TempDir::new("openapi-allow");
    let gw = gateway(
        &dir,
        &app.url,
        "operations = { allow = [\"get_item\", \"hello\", \"fail\"], deny = [\"fail\"] }\n",
        &["shop__get_item"],
    );
    let (mut names, list) = support::listed_tools(&gw.url);
    names.sort();
    assert_eq!(names, ["shop__get_item", "shop__hello"], "{list}");
}
