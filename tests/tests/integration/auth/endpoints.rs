//! `[[endpoint]]` virtual servers of a real `mcpgw serve`, reached by different real clients: the Python
//! SDK client (legacy) as alice at `/mcp/ops` (mock `m`, open to group `ops`), the TypeScript SDK client
//! (2026-07-28) as bob at `/mcp/public` (two tools of mock `n`). Each sees its endpoint's `serverInfo` name
//! and only its endpoint's tools, calls one, and is answered for another endpoint's tool exactly as for a
//! name nobody serves; bob is refused `/mcp/ops` (403); a session started at `/mcp/ops` is unknown at `/mcp`.

use serde_json::{Value, json};

use super::api_keys::digest_of;
use super::{Gw, LEGACY};
use crate::interop::peers::{self, ScriptClient};
use crate::support::{JSON_HEADERS, post_raw};

const ALICE: &str = "endpoint-alice-key-3b9d1f7e5c2a4b6d8e0f";
const BOB: &str = "endpoint-bob-key-8c2e4a6b0d1f3e5a7c9b";

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
principal = "alice"
digest = "{alice}"
groups = ["ops"]

[[auth.api_key]]
principal = "bob"
digest = "{bob}"

[[endpoint]]
path = "/mcp/ops"
name = "ops-tools"
backends = ["m"]
tools = {{ deny = ["m__fail"] }}
[endpoint.access]
groups = ["ops"]

[[endpoint]]
path = "/mcp/public"
name = "public-tools"
title = "Public tools"
backends = ["n"]
tools = {{ allow = ["n__echo", "n__add"] }}
"#,
        alice = digest_of(ALICE),
        bob = digest_of(BOB),
    )
}

fn client(
    gw: &Gw,
    deps: &peers::Deps,
    client: ScriptClient,
    mode: &str,
    path: &str,
    key: &str,
    calls: &[(&str, Value)],
) -> Result<Value, String> {
    let mut args = vec![
        "--header".to_owned(),
        format!("Authorization: Bearer {key}"),
    ];
    for (name, arguments) in calls {
        args.extend([
            "--call".to_owned(),
            (*name).to_owned(),
            arguments.to_string(),
        ]);
    }
    let url = format!("{}{path}", gw.base());
    peers::script_client(deps, client, &url, mode, &args)
}

/// The error a failed call reports, with `name` read as `NAME`.
fn error_of(entry: &Value, name: &str) -> String {
    assert_eq!(entry["ok"], false, "{entry}");
    entry["error"]
        .as_str()
        .unwrap_or_default()
        .replace(name, "NAME")
}

fn names(report: &Value) -> Vec<String> {
    let mut names: Vec<String> = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|t| t.as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn two_endpoints_serve_two_clients_their_own_server_and_tools() {
    let Some(deps) = peers::deps("endpoints") else {
        return;
    };
    let gw = Gw::start("endpoints", |_| config());

    let echo = json!({"text": "from ops"});
    let alice = client(
        &gw,
        &deps,
        ScriptClient::Python,
        "legacy",
        "/mcp/ops",
        ALICE,
        &[
            ("m__echo", echo.clone()),
            ("n__echo", echo.clone()),
            ("m__nobody_serves", echo),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", gw.log()));
    assert_eq!(alice["serverName"], "ops-tools", "{alice}");
    let tools = names(&alice);
    assert!(tools.contains(&"m__echo".to_owned()), "{alice}");
    assert!(tools.iter().all(|t| t.starts_with("m__")), "{alice}");
    assert!(!tools.contains(&"m__fail".to_owned()), "{alice}");
    let calls = &alice["calls"];
    assert_eq!(calls[0]["text"], "from ops", "{alice}");
    assert_eq!(
        error_of(&calls[1], "n__echo"),
        error_of(&calls[2], "m__nobody_serves"),
        "{alice}"
    );

    let bob = client(
        &gw,
        &deps,
        ScriptClient::TypeScript,
        "2026-07-28",
        "/mcp/public",
        BOB,
        &[
            ("n__add", json!({"a": 2, "b": 40})),
            ("m__echo", json!({"text": "x"})),
            ("n__nobody_serves", json!({"text": "x"})),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", gw.log()));
    assert_eq!(bob["serverName"], "public-tools", "{bob}");
    assert_eq!(names(&bob), ["n__add", "n__echo"], "{bob}");
    let calls = &bob["calls"];
    assert_eq!(calls[0]["ok"], true, "{bob}");
    assert_eq!(calls[0]["structuredContent"]["sum"], 42, "{bob}");
    assert_eq!(
        error_of(&calls[1], "m__echo"),
        error_of(&calls[2], "n__nobody_serves"),
        "{bob}"
    );

    // bob is not in group ops: refused at the door, whatever the client.
    let refused = client(
        &gw,
        &deps,
        ScriptClient::TypeScript,
        "legacy",
        "/mcp/ops",
        BOB,
        &[],
    );
    assert!(refused.is_err(), "{refused:?}");
    let bearer = format!("Bearer {BOB}");
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Authorization", &bearer));
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let direct = post_raw(
        &format!("{}/mcp/ops", gw.base()),
        &headers,
        initialize.to_string(),
    );
    assert_eq!(direct.status, 403, "{}", direct.text);
    assert_eq!(direct.json()["error"], "forbidden", "{}", direct.text);

    // A session belongs to its endpoint: alice's /mcp/ops session is unknown at /mcp.
    let bearer = format!("Bearer {ALICE}");
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Authorization", &bearer));
    let started = post_raw(
        &format!("{}/mcp/ops", gw.base()),
        &headers,
        initialize.to_string(),
    );
    assert_eq!(started.status, 200, "{}", started.text);
    assert_eq!(started.json()["result"]["serverInfo"]["name"], "ops-tools");
    let session = started
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    headers.push(("Mcp-Session-Id", &session));
    headers.push(("MCP-Protocol-Version", LEGACY));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let home = post_raw(&format!("{}/mcp/ops", gw.base()), &headers, list.clone());
    assert_eq!(home.status, 200, "{}", home.text);
    let elsewhere = post_raw(&gw.url(), &headers, list);
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.text);
}
