//! The Python and TypeScript SDK clients (`py_client.py`, `ts_client.mjs`) sending a bearer token of the
//! test's issuer through `--header`, in the legacy era and in 2026-07-28: they list the tools and call
//! `m__echo` (which needs the token's `mcp:tools` scope); without the token they cannot connect (401).
//! Skipped with `MCPGW_SKIP_INTEROP=1`, like the other interop tests.

use std::time::Duration;

use serde_json::json;

use super::issuer::{Availability, Jwks, SigningKey, claims};
use super::{Gw, jwt_config};
use crate::interop::peers::{self, ScriptClient};

/// Runs `client` in `mode` through a gateway verifying the test issuer's tokens: with a token it lists
/// `m__echo` and calls it; without, it fails.
fn through_gateway(client: ScriptClient, mode: &str) {
    let name = format!("sdk {client:?} {mode}");
    let Some(deps) = peers::deps(&name) else {
        return;
    };
    let key = SigningKey::es256("sdk-1");
    let jwks = Jwks::start(&[&key], Availability::Up);
    let gw = Gw::start(&format!("sdk-{client:?}-{mode}"), |port| {
        jwt_config(&jwks.url(), port, 300, "")
    });
    assert!(jwks.wait_until(Jwks::served, 1, Duration::from_secs(15)));
    // Fetched is not yet held: the gateway says when it verifies with the set (a request for an unknown kid
    // does not wait for a fetch it did not start).
    assert!(
        gw.wait_log("JWK set fetched", Duration::from_secs(15)),
        "{}",
        gw.log()
    );
    let token = key.sign(&claims("alice", "mcp:tools"));
    let text = format!("{client:?} {mode} with a token");
    let args = [
        "--header".to_owned(),
        format!("Authorization: Bearer {token}"),
        "--call".to_owned(),
        "m__echo".to_owned(),
        json!({"text": text}).to_string(),
    ];
    let report = peers::script_client(&deps, client, &gw.url(), mode, &args)
        .unwrap_or_else(|e| panic!("{client:?} {mode} with a token: {e}\n{}", gw.log()));
    let tools = report["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.contains(&json!("m__echo")), "{report}");
    let call = &report["calls"][0];
    assert_eq!(call["ok"], true, "{report}");
    assert_eq!(call["isError"], false, "{report}");
    assert_eq!(call["text"], json!(text), "{report}");

    // Without it the client cannot connect, because the gateway refused it as unauthenticated.
    let _ = gw.log();
    let without = peers::script_client(&deps, client, &gw.url(), mode, &args[2..]);
    let failure = without.expect_err("the client connected without a token");
    assert!(failure.contains("\"fatal\""), "{failure}");
    assert!(
        gw.wait_log("refused: not authenticated", Duration::from_secs(5)),
        "the gateway logged no 401; the client said: {failure}"
    );
}

#[test]
fn python_sdk_legacy_sends_a_bearer_token_through_mcpgw() {
    through_gateway(ScriptClient::Python, "legacy");
}

#[test]
fn python_sdk_2026_07_28_sends_a_bearer_token_through_mcpgw() {
    through_gateway(ScriptClient::Python, "2026-07-28");
}

#[test]
fn typescript_sdk_legacy_sends_a_bearer_token_through_mcpgw() {
    through_gateway(ScriptClient::TypeScript, "legacy");
}

#[test]
fn typescript_sdk_2026_07_28_sends_a_bearer_token_through_mcpgw() {
    through_gateway(ScriptClient::TypeScript, "2026-07-28");
}
