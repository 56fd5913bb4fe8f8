//! Two principals, each with their own account and results; `mcpgw check` on the worked example.

use serde_json::{Value, json};

use super::*;

#[test]
fn two_principals_consent_each_with_their_own_account_and_get_their_own_results() {
    let Some(s) = setup("user-authorization-two", "") else {
        return;
    };
    // No one connected: each backend offers its connect tool alone.
    s.wait_for_tools(ALICE, &["ln__mcpgw_connect", "mn__mcpgw_connect"]);
    // Alice connects through the legacy backend (Python SDK, 2025-11-25: the -32042 with the link).
    let report = s.run(
        ScriptClient::Python,
        "legacy",
        ALICE,
        "alice",
        &[("ln__mcpgw_connect", json!({}))],
    );
    let call = &report["calls"][0];
    assert_eq!(call["isError"], false, "{report}");
    assert!(
        call["text"]
            .as_str()
            .unwrap_or_default()
            .contains("connected"),
        "{report}"
    );
    let opened = &report["urlElicitations"][0];
    assert_eq!(opened["via"], "error", "{report}");
    // The callback told her session: `notifications/elicitation/complete` for the id of mcpgw's -32042.
    let id = opened["elicitationId"].as_str().unwrap_or_default();
    assert!(id.starts_with("mcpgw-oauth-"), "{report}");
    assert_eq!(report["completions"], json!([id]), "{report}");
    assert_eq!(
        opened["status"], 200,
        "the consent page after the authorization server: {report}"
    );
    let link = opened["url"].as_str().unwrap_or_default();
    assert!(
        link.starts_with(&format!(
            "{}/oauth/connect/",
            s.gw.url.trim_end_matches("/mcp")
        )),
        "{link}"
    );
    // The link is used: opened again (as a browser signed in as alice would), its flow stores nothing.
    assert_eq!(browse(link, "alice"), 400, "a used link");
    // The backend is now listed with a connected principal's token: its tools appear, never its resources.
    s.wait_for_tools(
        ALICE,
        &["ln__whoami", "ln__write_note", "ln__mcpgw_disconnect"],
    );
    // Bob (TypeScript SDK, 2026-07-28 mode) is asked for his own consent: input_required with his own link.
    let report = s.run(
        ScriptClient::TypeScript,
        "2026-07-28",
        BOB,
        "bob",
        &[("ln__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are bob"], "{report}");
    assert_eq!(
        report["urlElicitations"][0]["via"], "input_required",
        "{report}"
    );
    // Alice's calls carry alice's token, bob's bob's: each gets their own answer and their own notes.
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        ALICE,
        "alice",
        &[("ln__whoami", json!({})), ("ln__read_notes", json!({}))],
    );
    assert_eq!(
        texts(&report),
        ["you are alice", "no notes for alice"],
        "{report}"
    );
    assert!(
        report["urlElicitations"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "no second consent: {report}"
    );
    // Writing needs notes.write: a step-up consent (the scopes held and the new one), then the note.
    let report = s.run(
        ScriptClient::Python,
        "legacy",
        ALICE,
        "alice",
        &[
            ("ln__write_note", json!({"text": "alice's"})),
            ("ln__read_notes", json!({})),
        ],
    );
    assert_eq!(texts(&report), ["noted for alice", "alice's"], "{report}");
    let log = s.log();
    let asked: Vec<&Value> = log.iter().filter(|e| e["kind"] == "authorize").collect();
    let scopes: Vec<&str> = asked.iter().filter_map(|e| e["scope"].as_str()).collect();
    assert!(
        scopes.contains(&"notes.read notes.write"),
        "the step-up asked the union: {scopes:?}"
    );
    for e in &asked {
        assert_eq!(e["code_challenge_method"], "S256", "{e}");
        assert_eq!(
            e["resource"],
            s.server.url.as_str(),
            "RFC 8707 resource: {e}"
        );
    }
    let users: Vec<&str> = asked.iter().filter_map(|e| e["user"].as_str()).collect();
    assert_eq!(
        users.iter().filter(|u| **u == "bob").count(),
        1,
        "{users:?}"
    );
    // Bob's view was never alice's: the backend saw each call with its own principal's token.
    let calls: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e["kind"] == "mcp" && e["method"] == "tools/call")
        .filter_map(|e| Some((e["user"].as_str()?, e["method"].as_str()?)))
        .collect();
    assert!(calls.iter().any(|(u, _)| *u == "bob"), "{calls:?}");
    // Bob's notes are his own, on either backend: the 2026-07-28 one lists its tools once he connected it
    // (TypeScript SDK, 2025-11-25: the -32042).
    let report = s.run(
        ScriptClient::TypeScript,
        "legacy",
        BOB,
        "bob",
        &[
            ("ln__read_notes", json!({})),
            ("mn__mcpgw_connect", json!({})),
        ],
    );
    assert_eq!(texts(&report)[0], "no notes for bob", "{report}");
    assert_eq!(report["urlElicitations"][0]["via"], "error", "{report}");
    s.wait_for_tools(BOB, &["mn__read_notes"]);
    let report = s.run(
        ScriptClient::TypeScript,
        "legacy",
        BOB,
        "bob",
        &[("mn__read_notes", json!({}))],
    );
    assert_eq!(texts(&report), ["no notes for bob"], "{report}");
}

/// `mcpgw check` on the worked example: the per-user backends refuse the gateway until a user connected,
/// which is said and is no problem (exit 0).
#[test]
fn check_says_a_per_user_backend_waits_for_its_first_consent() {
    let Some(deps) = peers::deps("user-authorization-check") else {
        return;
    };
    let server = peers::python_fixture(&deps, "oauth_server.py", &[], "oauth_server listening on ");
    let dir = TempDir::new("user-authorization-check");
    let path = dir.file(
        "mcpgw.toml",
        &config(&server.url, "http://127.0.0.1:1", "", ""),
    );
    let out = std::process::Command::new(mcpgw())
        .args(["check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.matches("waits for its first user's consent").count(),
        2,
        "{stdout}"
    );
}

/// Follows `url`'s redirects (at most 10) as a browser signed in at the authorization server as `user`;
/// the last page's status.
fn browse(url: &str, user: &str) -> u16 {
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let mut url = reqwest::Url::parse(url).unwrap();
    for _ in 0..10 {
        let response = client
            .get(url.clone())
            .header("X-Fixture-User", user)
            .send()
            .unwrap();
        let status = response.status();
        let next = response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .and_then(|l| url.join(l).ok());
        match next {
            Some(next) if status.is_redirection() => url = next,
            _ => return status.as_u16(),
        }
    }
    panic!("more than 10 redirects from {url}");
}
