//! `[[policy]]` through real clients: the Python and TypeScript SDK clients, authenticated by API keys, in
//! the legacy era and in 2026-07-28. bob may use `m__echo` and the mock's config resource only: his list
//! holds just that, and the tool, prompt and resource he may not use answer him exactly as names nobody serves
//! (the same error, the name aside); alice (group `ops`) sees and calls everything. The gateway logs each
//! denial at info with the principal and the rule, and never the arguments.

use serde_json::{Value, json};

use super::api_keys::digest_of;
use super::{BACKEND, Gw};
use crate::interop::peers::{self, ScriptClient};

const ALICE: &str = "policy-alice-key-5e1c7a9b3d2f4e6a8c0b";
const BOB: &str = "policy-bob-key-9a3c5e7b1d2f4a6c8e0b";
/// An argument value that must never reach the log.
const SECRET: &str = "argument-never-logged-4b7e";

const README: &str = "mock://mock-backend/readme";
const CONFIG: &str = "mock://mock-backend/config.json";
const NO_URI: &str = "mock://mock-backend/nobody-serves-this";

fn config() -> String {
    format!(
        r#"{BACKEND}
[[auth.api_key]]
principal = "alice"
digest = "{alice}"
groups = ["ops"]

[[auth.api_key]]
principal = "bob"
digest = "{bob}"

[[policy]]
group = "ops"
allow = ["*"]

[[policy]]
principal = "bob"
allow = ["m__echo", "resource:{CONFIG}"]
"#,
        alice = digest_of(ALICE),
        bob = digest_of(BOB),
    )
}

fn run(gw: &Gw, deps: &peers::Deps, client: ScriptClient, mode: &str, key: &str) -> Value {
    let args: Vec<String> = [
        "--header",
        &format!("Authorization: Bearer {key}"),
        "--call",
        "m__add",
        &json!({"a": 1, "b": 2, "note": SECRET}).to_string(),
        "--call",
        "m__nobody_serves",
        &json!({"a": 1, "b": 2, "note": SECRET}).to_string(),
        "--call",
        "m__echo",
        &json!({"text": "allowed"}).to_string(),
        "--read",
        README,
        "--read",
        NO_URI,
        "--read",
        CONFIG,
        "--prompt",
        "m__greet",
        &json!({"name": "Ada"}).to_string(),
        "--prompt",
        "m__nobody",
        &json!({"name": "Ada"}).to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    peers::script_client(deps, client, &gw.url(), mode, &args)
        .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}\n{}", gw.log()))
}

/// The error a failed entry reports, with `name` read as `as_name`.
fn error_of(entry: &Value, name: &str, as_name: &str) -> String {
    assert_eq!(entry["ok"], false, "{entry}");
    entry["error"]
        .as_str()
        .unwrap_or_default()
        .replace(name, as_name)
}

fn through(client: ScriptClient, mode: &str) {
    let Some(deps) = peers::deps(&format!("policy {client:?} {mode}")) else {
        return;
    };
    let gw = Gw::start(&format!("policy-{client:?}-{mode}"), |_| config());

    let bob = run(&gw, &deps, client, mode, BOB);
    assert_eq!(bob["tools"], json!(["m__echo"]), "{bob}");
    let calls = &bob["calls"];
    assert_eq!(
        error_of(&calls[0], "m__add", "NAME"),
        error_of(&calls[1], "m__nobody_serves", "NAME"),
        "{bob}"
    );
    assert_eq!(calls[2]["ok"], true, "{bob}");
    assert_eq!(calls[2]["text"], "allowed", "{bob}");
    let reads = &bob["reads"];
    assert_eq!(
        error_of(&reads[0], README, "URI"),
        error_of(&reads[1], NO_URI, "URI"),
        "{bob}"
    );
    assert_eq!(reads[2]["ok"], true, "{bob}");
    let prompts = &bob["prompts"];
    assert_eq!(
        error_of(&prompts[0], "m__greet", "NAME"),
        error_of(&prompts[1], "m__nobody", "NAME"),
        "{bob}"
    );

    let alice = run(&gw, &deps, client, mode, ALICE);
    let tools = alice["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.contains(&json!("m__add")) && tools.len() > 5,
        "{alice}"
    );
    assert_eq!(alice["calls"][0]["ok"], true, "{alice}");
    assert_eq!(alice["calls"][0]["isError"], false, "{alice}");
    assert_eq!(alice["reads"][0]["ok"], true, "{alice}");
    assert_eq!(alice["prompts"][0]["ok"], true, "{alice}");

    let log = gw.log();
    let denial = log
        .lines()
        .find(|l| l.contains("denied by policy") && l.contains("m__add"))
        .unwrap_or_else(|| panic!("no denial logged:\n{log}"));
    assert!(denial.contains("principal=bob"), "{denial}");
    assert!(denial.contains("no rule allows it"), "{denial}");
    assert!(!log.contains(SECRET), "an argument reached the log:\n{log}");
}

#[test]
fn python_sdk_legacy_sees_and_uses_only_what_the_policy_allows() {
    through(ScriptClient::Python, "legacy");
}

#[test]
fn python_sdk_2026_07_28_sees_and_uses_only_what_the_policy_allows() {
    through(ScriptClient::Python, "2026-07-28");
}

#[test]
fn typescript_sdk_legacy_sees_and_uses_only_what_the_policy_allows() {
    through(ScriptClient::TypeScript, "legacy");
}

#[test]
fn typescript_sdk_2026_07_28_sees_and_uses_only_what_the_policy_allows() {
    through(ScriptClient::TypeScript, "2026-07-28");
}
