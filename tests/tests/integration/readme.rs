//! The README's commands work as pasted (issue 10 §4): its curl examples against the demo config, the
//! replicas example, the API-key example and the Security section's configs.

use std::process::Command;
use std::time::Duration;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// The fenced `sh` block that follows `<!-- test: NAME` in the README.
fn readme_block(name: &str) -> String {
    fenced(name, "sh")
}

/// The fenced block of `language` right after `<!-- test: NAME` in the README.
fn fenced(name: &str, language: &str) -> String {
    let readme = include_str!("../../../README.md");
    let after = readme
        .split(&format!("<!-- test: {name} "))
        .nth(1)
        .and_then(|rest| rest.split_once("-->"))
        .map(|(_, rest)| rest.trim_start())
        .unwrap_or_else(|| panic!("README has no block marked {name}"));
    let block = after
        .strip_prefix(&format!("```{language}\n"))
        .unwrap_or_else(|| panic!("a {language} block follows the marker {name}"));
    block.split("\n```").next().unwrap_or_default().to_owned()
}

#[test]
fn the_readme_curl_examples_work_against_the_demo_config() {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    let gw = start(cmd, "mcpgw listening on ");
    let addr = gw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let script = readme_block("demo-curl").replace("127.0.0.1:7800", &addr);
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script]);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "the README's curl examples failed:\n{stdout}\n{stderr}");
    let answers: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(answers.len(), 2, "two JSON-RPC answers: {stdout}");
    assert_eq!(
        answers[0]["result"]["content"][0]["text"], "hello from curl",
        "{stdout}"
    );
    assert_eq!(answers[1]["id"], 2, "{stdout}");
    assert_eq!(
        answers[1]["result"]["structuredContent"]["sum"], 42,
        "{stdout}"
    );
}

#[test]
fn the_readme_two_replicas_serve_one_session() {
    let bin_dir = mcpgw().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = readme_block("replicas")
        .replace("127.0.0.1:7801", &format!("127.0.0.1:{}", free_port()))
        .replace("127.0.0.1:7802", &format!("127.0.0.1:{}", free_port()));
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .env("PATH", path)
        .env_remove("MCPGW_SESSION_KEYS");
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(
        ok,
        "the README's replicas example failed:\n{stdout}\n{stderr}"
    );
    let answer: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {stdout}\n{stderr}"));
    assert_eq!(
        answer["result"]["structuredContent"]["sum"], 42,
        "the second replica served the first one's session: {stdout}"
    );
}

#[test]
fn the_readme_api_key_example_works() {
    let dir = TempDir::new("readme-api-key");
    let bin_dir = mcpgw().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = readme_block("security-api-key")
        .replace("127.0.0.1:7801", &format!("127.0.0.1:{}", free_port()));
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .current_dir(&dir.0)
        .env("PATH", path);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(
        ok,
        "the README's API-key example failed:\n{stdout}\n{stderr}"
    );
    let answer: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {stdout}\n{stderr}"));
    assert!(
        answer["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "the key was accepted and the tools listed: {answer}"
    );
    let config = std::fs::read_to_string(dir.0.join("secure.toml")).unwrap();
    let key = std::fs::read_to_string(dir.0.join("alice.key")).unwrap();
    assert!(
        !config.contains(key.trim()),
        "the config holds the digest, not the key"
    );
}

/// The README's JWT and OAuth configs start as they are (their JWK URL pointed at a closed loopback port:
/// tests reach no other host), refuse a request without a token with the challenge the README shows, and
/// serve the metadata document it describes.
#[test]
fn the_readme_jwt_and_oauth_configs_start_and_challenge_as_described() {
    for (block, resource_metadata) in [
        ("security-jwt", None),
        (
            "security-oauth",
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
        ),
    ] {
        let dir = TempDir::new(block);
        let config = fenced(block, "toml").replace(
            "https://login.example.com/.well-known/jwks.json",
            "http://127.0.0.1:9/jwks",
        );
        let gw = gateway(&config, &dir);
        let r = post_raw(&gw.url, &JSON_HEADERS, "{}");
        assert_eq!(r.status, 401, "{block}: {r:?}");
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer realm=\"mcpgw\""),
            "{block}: {challenge}"
        );
        assert!(
            !challenge.contains("error="),
            "{block}: no token, no error: {challenge}"
        );
        let base = gw.url.trim_end_matches("/mcp");
        let doc = client()
            .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .send()
            .unwrap();
        match resource_metadata {
            None => assert_eq!(doc.status().as_u16(), 404, "{block}: no OAuth, no document"),
            Some(url) => {
                assert!(
                    challenge.contains(&format!("resource_metadata=\"{url}\"")),
                    "{block}: {challenge}"
                );
                assert!(
                    challenge.contains("scope=\"mcp:tools demo\""),
                    "{challenge}"
                );
                assert_eq!(doc.status().as_u16(), 200);
                let doc: serde_json::Value = doc.json().unwrap();
                assert_eq!(doc["resource"], "https://mcp.example.com/mcp");
                assert_eq!(
                    doc["authorization_servers"],
                    serde_json::json!(["https://login.example.com/"])
                );
            }
        }
    }
}

/// The README's policy example, with API keys for alice (group ops) and bob: bob lists one tool, alice every
/// tool but those that may be destructive (the mock's `fail` says nothing, so it may be).
#[test]
fn the_readme_policy_example_filters_each_principals_list() {
    const ALICE: &str = "readme-alice-key-3f9a1c7e5b2d4a6c";
    const BOB: &str = "readme-bob-key-8e2c4a6f0b1d3e5a7c";
    let digest = crate::auth::api_keys::digest_of;
    let config = format!(
        "{}\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\n[[auth.api_key]]\nprincipal = \"bob\"\ndigest = \"{}\"\n",
        fenced("security-policy", "toml"),
        digest(ALICE),
        digest(BOB)
    );
    let dir = TempDir::new("readme-policy");
    let gw = gateway(&config, &dir);
    let tools = |key: &str| -> Vec<String> {
        let auth = format!("Bearer {key}");
        let r = modern_request(
            &gw.url,
            "tools/list",
            serde_json::json!({}),
            &[("Authorization", auth.as_str())],
        );
        assert_eq!(r.status, 200, "{r:?}");
        let v = r.json();
        assert_eq!(v["result"]["cacheScope"], "private", "{v}");
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(tools(BOB), ["demo__echo"]);
    let alice = tools(ALICE);
    assert!(
        alice.contains(&"demo__echo".to_owned()) && alice.contains(&"demo__add".to_owned()),
        "{alice:?}"
    );
    assert!(!alice.contains(&"demo__fail".to_owned()), "{alice:?}");
}

/// The README's rate-limit config starts as it is and refuses over its limits as described: calls beyond
/// the burst are tool errors with `retryAfterMs`, lists beyond theirs 429 with `Retry-After` and -32000.
#[test]
fn the_readme_rate_limit_config_starts_and_refuses_over_the_limit() {
    let dir = TempDir::new("readme-rate-limit");
    let gw = gateway(&fenced("security-rate-limit", "toml"), &dir);
    let started = std::time::Instant::now();
    let (mut admitted, mut refused) = (0, 0);
    for i in 0..10 {
        let reply = modern_request(
            &gw.url,
            "tools/call",
            serde_json::json!({"name": "demo__echo", "arguments": {"text": format!("c{i}")}}),
            &[],
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let v = reply.json();
        if v["result"]["isError"] == true {
            assert!(
                v["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("rate limited: retry after ")),
                "{v}"
            );
            assert!(v["result"]["_meta"]["retryAfterMs"].is_u64(), "{v}");
            refused += 1;
        } else {
            admitted += 1;
        }
    }
    // burst 5, 1 a second: at most the README's bound.
    let bound = 5.0 + started.elapsed().as_secs_f64() + 0.25;
    assert!(
        admitted >= 5 && f64::from(admitted) <= bound,
        "{admitted} admitted"
    );
    assert_eq!(admitted + refused, 10);
    let statuses: Vec<u16> = (0..5)
        .map(|_| modern_request(&gw.url, "tools/list", serde_json::json!({}), &[]))
        .map(|reply| {
            if reply.status == 429 {
                assert!(reply.header("retry-after").is_some(), "{reply:?}");
                assert_eq!(reply.json()["error"]["code"], -32000, "{reply:?}");
                assert!(
                    reply.json()["error"]["data"]["retryAfterMs"].is_u64(),
                    "{reply:?}"
                );
            }
            reply.status
        })
        .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses[0], 200, "{statuses:?}");
}
