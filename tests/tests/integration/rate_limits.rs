//! `[[rate_limit]]` through real clients: the Python and TypeScript SDK clients, in the legacy era and in
//! 2026-07-28, calling a tool over its limit get the tool error with `retryAfterMs` in `_meta` (the model's
//! cue to wait), and getting a prompt over its limit the JSON-RPC error "rate limited". Each limit refills a
//! token in 1,000 s, so nothing depends on time. Skipped with `MCPGW_SKIP_INTEROP=1`, like the other
//! interop tests.

use serde_json::{Value, json};

use crate::interop::peers::{self, ScriptClient};
use crate::support::{TempDir, gateway};

const CONFIG: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n\
    [[rate_limit]]\nname = \"calls\"\nrate = 0.001\nburst = 1\nmethods = [\"tools/call\"]\n\n\
    [[rate_limit]]\nname = \"prompts\"\nrate = 0.001\nburst = 1\nmethods = [\"prompts/get\"]\n";

fn told_to_wait(client: ScriptClient, mode: &str) {
    let name = format!("rate limits {client:?} {mode}");
    let Some(deps) = peers::deps(&name) else {
        return;
    };
    let dir = TempDir::new(&format!("rate-limits-{client:?}-{mode}"));
    let gw = gateway(CONFIG, &dir);
    let arg = |s: &str| s.to_owned();
    let args = [
        arg("--call"),
        arg("m__echo"),
        json!({"text": "first"}).to_string(),
        arg("--call"),
        arg("m__echo"),
        json!({"text": "second"}).to_string(),
        arg("--prompt"),
        arg("m__greet"),
        json!({"name": "first"}).to_string(),
        arg("--prompt"),
        arg("m__greet"),
        json!({"name": "second"}).to_string(),
    ];
    let report = peers::script_client(&deps, client, &gw.url, mode, &args)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let calls = &report["calls"];
    assert_eq!(calls[0]["ok"], true, "{report}");
    assert_eq!(calls[0]["isError"], false, "{report}");
    assert_eq!(calls[0]["text"], "first", "{report}");
    // Over the limit: a tool error the model reads, with the wait in _meta.
    assert_eq!(calls[1]["ok"], true, "{report}");
    assert_eq!(calls[1]["isError"], true, "{report}");
    let text = calls[1]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("rate limited: retry after "), "{report}");
    let ms = calls[1]["meta"]["retryAfterMs"].as_u64();
    assert!(ms.is_some_and(|ms| ms > 1000), "{report}");
    let prompts = &report["prompts"];
    assert_eq!(prompts[0]["ok"], true, "{report}");
    // Other methods: the JSON-RPC error.
    assert_eq!(prompts[1]["ok"], false, "{report}");
    let error = prompts[1]["error"].as_str().unwrap_or_default();
    assert!(error.contains("rate limited"), "{report}");
    assert_eq!(report.get("fatal"), None::<&Value>, "{report}");
}

#[test]
fn python_sdk_legacy_is_told_to_wait_by_a_rate_limit() {
    told_to_wait(ScriptClient::Python, "legacy");
}

#[test]
fn python_sdk_2026_07_28_is_told_to_wait_by_a_rate_limit() {
    told_to_wait(ScriptClient::Python, "2026-07-28");
}

#[test]
fn typescript_sdk_legacy_is_told_to_wait_by_a_rate_limit() {
    told_to_wait(ScriptClient::TypeScript, "legacy");
}

#[test]
fn typescript_sdk_2026_07_28_is_told_to_wait_by_a_rate_limit() {
    told_to_wait(ScriptClient::TypeScript, "2026-07-28");
}
