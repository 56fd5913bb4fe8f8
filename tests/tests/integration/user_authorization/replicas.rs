//! Replicas sharing Redis and a key ring.

use serde_json::json;

use super::*;

/// With `[cluster] redis`, the token a user's consent stored on one replica serves them on another that
/// never ran the flow (and started after it): sealed with the shared key ring, in Redis, never in clear.
#[test]
fn a_replica_that_did_not_run_the_flow_serves_the_user_after_it() {
    use crate::replicas::cluster::{Redis, have};
    assert!(
        have("redis-server"),
        "redis-server is needed (Debian's package; .ci/run installs it)"
    );
    let Some(deps) = peers::deps("user-authorization-replicas") else {
        return;
    };
    let dir = TempDir::new("user-authorization-replicas");
    let redis = Redis::start(&dir);
    let server = peers::python_fixture(&deps, "oauth_server.py", &[], "oauth_server listening on ");
    let (a_addr, b_addr) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let keys = dir.file("keys", &format!("{}\n", crate::replicas::three::new_key()));
    let cluster = format!(
        "[cluster]\nredis = \"{}\"\nkeys_file = {:?}\n\n",
        redis.url(),
        keys.display().to_string()
    );
    // Both replicas make links and callbacks on A's address (a load balancer's, in a deployment).
    let path = dir.file(
        "mcpgw.toml",
        &config(&server.url, &format!("http://{a_addr}"), &cluster, ""),
    );
    let replica = |addr: &str| serve_at(&path, addr);
    let a = replica(&a_addr);
    let s = Setup {
        deps,
        server,
        gw: a,
        _dir: dir,
    };
    s.connect(ScriptClient::Python, "2026-07-28", ALICE, "alice", "mn");
    // Redis holds it sealed: neither the token nor the principal's name in clear.
    let stored = redis.cli(&["--scan", "--pattern", "mcpgw:grant:*"]);
    let key = stored
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no grant in redis: {stored:?}"))
        .to_owned();
    let value = redis.cli(&["GET", &key]);
    assert!(
        !value.contains("alice") && !value.contains("Bearer"),
        "sealed: {value}"
    );
    // B started after the consent: it lists the backend with the stored token and answers alice as
    // herself without asking her again.
    let b = replica(&b_addr);
    wait_for_tools_at(&b, ALICE, &["mn__whoami"]);
    let report = s.run_at(
        &b,
        ScriptClient::TypeScript,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are alice"], "{report}");
    assert!(
        report["urlElicitations"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "not asked again: {report}"
    );
    // A flow begun on one replica completes on another: bob asks B, whose link (on A's address) A's
    // callback completes; B then serves him with the token A stored.
    let report = s.run_at(
        &b,
        ScriptClient::Python,
        "legacy",
        BOB,
        "bob",
        &[("ln__mcpgw_connect", json!({}))],
    );
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    let link = report["urlElicitations"][0]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(
        link.starts_with(&format!("http://{a_addr}/oauth/connect/")),
        "{report}"
    );
    wait_for_tools_at(&b, BOB, &["ln__whoami"]);
    let report = s.run_at(
        &b,
        ScriptClient::TypeScript,
        "legacy",
        BOB,
        "bob",
        &[("ln__whoami", json!({}))],
    );
    assert_eq!(texts(&report), ["you are bob"], "{report}");
}
