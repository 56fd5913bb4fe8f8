//! Tokens that stop working: revoked at the service, disconnected by the user, revoked by an operator;
//! one user's refused token is theirs alone.

use serde_json::{Value, json};

use super::*;

#[test]
fn a_revoked_token_leads_to_a_new_consent_and_disconnect_forgets_it() {
    let Some(s) = setup("user-authorization-revoke", OPS_ADMIN) else {
        return;
    };
    s.connect(ScriptClient::Python, "2026-07-28", ALICE, "alice", "mn");
    s.wait_for_tools(ALICE, &["mn__whoami"]);
    // The authorization server revokes every token of alice's (refresh tokens too): her next call is
    // refused with 401, the refresh fails, and she is asked to consent again — then answered.
    s.revoke_user("alice");
    let report = s.run(
        ScriptClient::TypeScript,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are alice"], "{report}");
    asked_once(&report);
    // Bob connects too. The operators' view: who connected which backend, until when, whose token the
    // backend is listed with — never a token.
    let report = s.run(
        ScriptClient::TypeScript,
        "2026-07-28",
        BOB,
        "bob",
        &[("mn__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are bob"], "{report}");
    let base = crate::support::admin_base(&s.gw);
    let ops = format!("Bearer {OPS}");
    let view = crate::support::client()
        .get(format!("{base}/admin/authorizations"))
        .header("Authorization", &ops)
        .send()
        .unwrap();
    assert_eq!(view.status(), 200);
    let text = view.text().unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    let grants: Vec<(&str, &str)> = body["grants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["principal"].as_str().unwrap(),
                g["backend"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        grants,
        [("api_key:alice", "mn"), ("api_key:bob", "mn")],
        "{body}"
    );
    let listed_as = |name: &str| {
        body["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["backend"] == name)
            .map(|b| b["listed_as"].clone())
    };
    assert_eq!(listed_as("mn"), Some(json!("api_key:alice")), "{body}");
    assert_eq!(
        listed_as("ln"),
        Some(Value::Null),
        "no one connected ln: {body}"
    );
    assert!(
        !text.contains("Bearer") && !text.contains("access"),
        "no token shown: {text}"
    );
    // The operator revokes bob's: his next call asks him again.
    let revoked = crate::support::client()
        .post(format!("{base}/admin/authorizations/revoke"))
        .header("Authorization", &ops)
        .header("X-Mcpgw-Admin", "1")
        .json(&json!({"principal": "api_key:bob", "backend": "mn"}))
        .send()
        .unwrap();
    assert_eq!(revoked.status(), 200);
    assert_eq!(revoked.json::<Value>().unwrap()["revoked"], true);
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        BOB,
        "bob",
        &[("mn__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are bob"], "{report}");
    asked_once(&report);
    // Her own disconnect: forgotten, and the next call asks again (declined here: the call fails).
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__mcpgw_disconnect", json!({}))],
    );
    assert!(texts(&report)[0].contains("Disconnected"), "{report}");
    let report = s.declining(ALICE, "mn__whoami");
    asked_once(&report);
    assert_ne!(
        texts(&report).first().map(String::as_str),
        Some("you are alice"),
        "{report}"
    );
}

/// Regression: a backend's 401 to one user's own token (revoked at the service) counted as an outage of the
/// backend, so one user could open its circuit for everyone. It is that user's failure alone: they are asked
/// again, and the other users' calls go on.
#[test]
fn one_users_refused_token_never_opens_the_backends_circuit() {
    let circuit = "\n[backend.circuit]\nfailures = 1\nopen_ms = 60000\n";
    let Some(s) = setup_with("user-authorization-circuit", OPS_ADMIN, circuit) else {
        return;
    };
    // Bob connects first (the backend is listed with his token), then alice.
    s.connect(ScriptClient::Python, "legacy", BOB, "bob", "ln");
    s.wait_for_tools(BOB, &["ln__whoami"]);
    let report = s.run(
        ScriptClient::TypeScript,
        "2026-07-28",
        ALICE,
        "alice",
        &[("ln__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are alice"], "{report}");
    // The service revokes alice's tokens: her calls get 401 (she declines the new consent), twice.
    s.revoke_user("alice");
    for _ in 0..2 {
        asked_once(&s.declining(ALICE, "ln__whoami"));
    }
    // Bob is served; the circuit (one failure opens it) stayed closed.
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        BOB,
        "bob",
        &[("ln__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are bob"], "{report}");
    let ready: Value = crate::support::client()
        .get(format!("{}/readyz", crate::support::admin_base(&s.gw)))
        .header("Authorization", format!("Bearer {OPS}"))
        .send()
        .and_then(|r| r.json())
        .unwrap();
    let ln = ready["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "ln")
        .cloned()
        .unwrap_or_else(|| panic!("{ready}"));
    assert_eq!(ln["circuit"], "closed", "{ready}");
}
