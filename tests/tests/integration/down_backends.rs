//! A tool of a backend that is down (issue 35 §2): a call of a name carrying a configured backend's prefix
//! while that backend failed to start is answered with a tool error naming the backend and why — to a
//! principal whose view shows the backend, in either era — and as an unknown tool to one whose view does
//! not, and for a name no prefix matches.

use serde_json::json;

use crate::support::*;

const ALICE: &str = "down-backends-alice-0123456789abcdef";
const BOB: &str = "down-backends-bob-0123456789abcdefgh";

fn config() -> String {
    let digest = crate::auth::api_keys::digest_of;
    format!(
        "{}\n[[backend]]\nname = \"crm\"\ncommand = [\"/nonexistent/crm-server\", \"--port\", \"10.9.8.7:5432\"]\n\n\
         [[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\n\n[[auth.api_key]]\nprincipal = \"bob\"\ndigest = \"{}\"\n\n\
         [[policy]]\nprincipal = \"alice\"\nallow = [\"*\"]\n\n[[policy]]\nprincipal = \"bob\"\nallow = [\"backend:mock\"]\n",
        one_stdio_mock(&[]),
        digest(ALICE),
        digest(BOB)
    )
}

#[test]
fn a_down_backends_tool_is_a_tool_error_to_whoever_may_see_the_backend() {
    let dir = TempDir::new("down-backends");
    let gw = gateway(&config(), &dir);
    let bearer = |key: &str| format!("Bearer {key}");
    let alice = bearer(ALICE);
    let bob = bearer(BOB);
    // 2026-07-28: a tool error naming the backend, the reason without the address it was given.
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "crm__create_lead", "arguments": {}}),
        &[("Authorization", &alice)],
    );
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r.json();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("backend crm is unavailable"), "{text}");
    assert!(text.contains("its tools are back when it is"), "{text}");
    assert!(!text.contains("10.9.8.7"), "{text}");
    // Legacy (an initialize session, through `mcpgw call`): the same tool error.
    let key = dir.file("alice.key", ALICE);
    let mut cmd = std::process::Command::new(mcpgw());
    cmd.args([
        "call",
        "crm__create_lead",
        "--era",
        "legacy",
        "--json",
        "--url",
        &gw.url,
    ])
    .arg("--bearer-file")
    .arg(&key)
    .env_remove("RUST_LOG");
    let (ok, out, err) =
        crate::interop::peers::run_bounded(cmd, std::time::Duration::from_secs(60));
    assert!(!ok, "a tool error exits 1: {out}{err}");
    let answer: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("backend crm is unavailable")
    );
    // Bob's view has no crm: as if it never existed.
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "crm__create_lead", "arguments": {}}),
        &[("Authorization", &bob)],
    );
    let answer = r.json();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // No prefix matches: unknown, for alice too; the backend that is up still answers.
    for name in ["crmx__a", "crm__", "nothing"] {
        let r = modern_request(
            &gw.url,
            "tools/call",
            json!({"name": name, "arguments": {}}),
            &[("Authorization", &alice)],
        );
        assert_eq!(r.json()["error"]["code"], -32601, "{name}: {r:?}");
    }
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "up"}}),
        &[("Authorization", &bob)],
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "up", "{r:?}");
}
