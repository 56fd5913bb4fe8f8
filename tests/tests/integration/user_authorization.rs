//! Each user's own authorization to a backend (issue 37), with real peers: `oauth_server.py` (the Python
//! SDK's dual-era server behind an OAuth 2.1 authorization server of its own, written for these tests: it
//! publishes RFC 9728 and RFC 8414 metadata, registers clients dynamically, and its authorization endpoint
//! signs in whoever the browser says with `X-Fixture-User`) behind mcpgw twice — as a legacy backend
//! (`ln`) and a 2026-07-28 one (`mn`) with `grant = "authorization_code"`. Principals are API keys, so the
//! link is the proof (`link_proof = "link"`). The Python and TypeScript SDK clients, in legacy and
//! 2026-07-28 mode, are asked to open the consent link by their URL elicitation callbacks and "open" it as
//! a browser signed in at the authorization server as their user (`--browser-as`).

use serde_json::{Value, json};

use crate::interop::peers::{self, Deps, Proc, ScriptClient};
use crate::support::{Running, TempDir, free_port, mcpgw, start};

const ALICE: &str = "user-authorization-alice-0123456789abcdef";
const BOB: &str = "user-authorization-bob-0123456789abcdefghi";
const OPS: &str = "user-authorization-ops-0123456789abcdefghi";

struct Setup {
    deps: Deps,
    server: Proc,
    gw: Running,
    _dir: TempDir,
}

/// The worked example of docs/src/user-authorization.md (its `notes` backend is `mn` here, on
/// `oauth_server.py`), with a legacy twin `ln`, an operator's key and `extra` (before it).
fn config(server: &str, public: &str, extra: &str, ln_tail: &str) -> String {
    let digest = crate::auth::api_keys::digest_of;
    let example = crate::support::doc_block("user-authorization", "toml")
        .replace("sha256:ALICE_DIGEST", &digest(ALICE))
        .replace("sha256:BOB_DIGEST", &digest(BOB))
        .replace("https://mcpgw.example.com", public)
        .replace("name = \"notes\"", "name = \"mn\"\nera = \"modern\"")
        .replace("https://notes.example.com/mcp", server);
    assert!(
        example.contains(server) && example.contains(public),
        "{example}"
    );
    format!(
        "{extra}[[auth.api_key]]\nprincipal = \"ops\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\n{example}\n\
         [[backend]]\nname = \"ln\"\nurl = \"{server}\"\nera = \"legacy\"\n\
         [backend.auth]\ngrant = \"authorization_code\"\n{ln_tail}",
        digest(OPS)
    )
}

fn setup(test: &str, extra: &str) -> Option<Setup> {
    setup_with(test, extra, "")
}

/// [`setup`], with `ln_tail` after the `ln` backend's table.
fn setup_with(test: &str, extra: &str, ln_tail: &str) -> Option<Setup> {
    let deps = peers::deps(test)?;
    let server = peers::python_fixture(&deps, "oauth_server.py", &[], "oauth_server listening on ");
    let dir = TempDir::new(test);
    let addr = format!("127.0.0.1:{}", free_port());
    let path = dir.file(
        "mcpgw.toml",
        &config(&server.url, &format!("http://{addr}"), extra, ln_tail),
    );
    let mut cmd = std::process::Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", &addr])
        .env("RUST_LOG", "info");
    let gw = start(cmd, "mcpgw listening on ");
    Some(Setup {
        deps,
        server,
        gw,
        _dir: dir,
    })
}

impl Setup {
    /// `client` in `mode` as the API key `key`, its browser signed in as `user`, calling `calls` in order.
    fn run(
        &self,
        client: ScriptClient,
        mode: &str,
        key: &str,
        user: &str,
        calls: &[(&str, Value)],
    ) -> Value {
        self.run_at(&self.gw, client, mode, key, user, calls)
    }

    /// [`Setup::run`] against the gateway `gw`.
    fn run_at(
        &self,
        gw: &Running,
        client: ScriptClient,
        mode: &str,
        key: &str,
        user: &str,
        calls: &[(&str, Value)],
    ) -> Value {
        let mut args: Vec<String> = vec![
            "--url-elicit".into(),
            "--browser-as".into(),
            user.into(),
            "--header".into(),
            format!("Authorization: Bearer {key}"),
        ];
        for (tool, arguments) in calls {
            args.extend(["--call".into(), (*tool).into(), arguments.to_string()]);
        }
        peers::script_client(&self.deps, client, &gw.url, mode, &args)
            .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}"))
    }

    /// The fixture's record of what it was asked.
    fn log(&self) -> Vec<Value> {
        let base = self.server.url.trim_end_matches("/mcp");
        let body: Value = crate::support::client()
            .get(format!("{base}/fixture/log"))
            .send()
            .and_then(|r| r.json())
            .expect("oauth_server's /fixture/log");
        body["events"].as_array().cloned().unwrap_or_default()
    }

    fn revoke_user(&self, user: &str) {
        let base = self.server.url.trim_end_matches("/mcp");
        crate::support::client()
            .post(format!("{base}/fixture/revoke-user?user={user}"))
            .send()
            .expect("revoke-user");
    }

    /// Waits (bounded: 30 s) until `key` is listed every one of `tools`.
    fn wait_for_tools(&self, key: &str, tools: &[&str]) {
        wait_for_tools_at(&self.gw, key, tools);
    }
}

/// The tool names `gw` lists to `key` (2026-07-28 `tools/list`).
fn tools_at(gw: &Running, key: &str) -> Vec<String> {
    let reply = crate::support::modern_request(
        &gw.url,
        "tools/list",
        json!({}),
        &[("Authorization", &format!("Bearer {key}"))],
    );
    reply.json()["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Waits (bounded: 30 s) until `gw` lists every one of `tools` to `key`.
fn wait_for_tools_at(gw: &Running, key: &str, tools: &[&str]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let names = tools_at(gw, key);
        if tools.iter().all(|t| names.iter().any(|n| n == t)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!(
        "not listed within 30 s: {tools:?}; listed: {:?}",
        tools_at(gw, key)
    );
}

fn texts(report: &Value) -> Vec<String> {
    report["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

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

#[test]
fn a_revoked_token_leads_to_a_new_consent_and_disconnect_forgets_it() {
    let admin = "[admin]\nlisten = \"127.0.0.1:0\"\ngroups = [\"ops\"]\n\n";
    let Some(s) = setup("user-authorization-revoke", admin) else {
        return;
    };
    s.wait_for_tools(ALICE, &["mn__mcpgw_connect"]);
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__mcpgw_connect", json!({}))],
    );
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
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
    assert_eq!(
        report["urlElicitations"].as_array().map(Vec::len),
        Some(1),
        "asked again: {report}"
    );
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
    assert_eq!(
        report["urlElicitations"].as_array().map(Vec::len),
        Some(1),
        "asked again: {report}"
    );
    // Her own disconnect: forgotten, and the next call asks again (declined here: the call fails).
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__mcpgw_disconnect", json!({}))],
    );
    assert!(texts(&report)[0].contains("Disconnected"), "{report}");
    let report = peers::script_client(
        &s.deps,
        ScriptClient::Python,
        &s.gw.url,
        "legacy",
        &[
            "--url-decline".into(),
            "--header".into(),
            format!("Authorization: Bearer {ALICE}"),
            "--call".into(),
            "mn__whoami".into(),
            "{}".into(),
        ],
    )
    .unwrap();
    assert_eq!(
        report["urlElicitations"].as_array().map(Vec::len),
        Some(1),
        "asked again: {report}"
    );
    assert_ne!(
        texts(&report).first().map(String::as_str),
        Some("you are alice"),
        "{report}"
    );
}

/// With OAuth at the gateway (`[auth.oauth]`), a consent link signs the browser in at the gateway's own
/// identity provider (a second `oauth_server.py`, issuing the gateway's JWTs) and goes on only for the
/// principal the link was made for: alice's link opened by a browser signed in as bob stores nothing.
#[test]
fn a_consent_link_opened_by_another_user_than_its_principal_stores_nothing() {
    let Some(deps) = peers::deps("user-authorization-sign-in") else {
        return;
    };
    let dir = TempDir::new("user-authorization-sign-in");
    let addr = format!("127.0.0.1:{}", free_port());
    let public = format!("http://{addr}");
    let resource = format!("{public}/mcp");
    let secret = dir.file("hs256.secret", crate::token_exchange::SECRET);
    let backend =
        peers::python_fixture(&deps, "oauth_server.py", &[], "oauth_server listening on ");
    let callback = format!("{public}/oauth/callback");
    let secret_arg = secret.display().to_string();
    let idp = peers::python_fixture(
        &deps,
        "oauth_server.py",
        &[
            "--jwt-secret-file",
            &secret_arg,
            "--jwt-audience",
            &resource,
            "--client-id",
            "mcpgw-consent",
            "--redirect-uri",
            &callback,
        ],
        "oauth_server listening on ",
    );
    let issuer = format!("{}/as", idp.url.trim_end_matches("/mcp"));
    let toml = format!(
        "[auth.jwt]\nissuer = \"{issuer}\"\naudience = \"{resource}\"\nalgorithms = [\"HS256\"]\n\
         hs256_secret_file = {:?}\n\n\
         [auth.oauth]\nresource = \"{resource}\"\nauthorization_servers = [\"{issuer}\"]\n\n\
         [authorization]\npublic_url = \"{public}\"\nsign_in_client_id = \"mcpgw-consent\"\n\n\
         [egress]\nallow_networks = [\"127.0.0.0/8\"]\n\n\
         [[backend]]\nname = \"mn\"\nurl = \"{}\"\nera = \"modern\"\n[backend.auth]\ngrant = \"authorization_code\"\n",
        secret.display(),
        backend.url
    );
    let path = dir.file("mcpgw.toml", &toml);
    let mut cmd = std::process::Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", &addr])
        .env("RUST_LOG", "info");
    let gw = start(cmd, "mcpgw listening on ");
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let alice = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"iss": issuer, "aud": resource, "sub": "alice", "exp": exp}),
        &jsonwebtoken::EncodingKey::from_secret(crate::token_exchange::SECRET.as_bytes()),
    )
    .unwrap();
    let connect = |browser: &str| {
        let args: Vec<String> = vec![
            "--url-elicit".into(),
            "--browser-as".into(),
            browser.into(),
            "--header".into(),
            format!("Authorization: Bearer {alice}"),
            "--call".into(),
            "mn__mcpgw_connect".into(),
            "{}".into(),
        ];
        peers::script_client(&deps, ScriptClient::Python, &gw.url, "legacy", &args).unwrap()
    };
    // Opened by bob: the sign-in says bob, the link is alice's: 400, nothing stored, the call still asks.
    let report = connect("bob");
    assert_eq!(report["urlElicitations"][0]["status"], 400, "{report}");
    assert_ne!(report["calls"][0]["ok"], true, "{report}");
    let backend_log: Value = crate::support::client()
        .get(format!(
            "{}/fixture/log",
            backend.url.trim_end_matches("/mcp")
        ))
        .send()
        .and_then(|r| r.json())
        .unwrap();
    let authorized = |log: &Value, user: &str| {
        log["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "authorize" && e["user"] == user)
    };
    assert!(
        !authorized(&backend_log, "bob"),
        "bob never reached the backend's consent: {backend_log}"
    );
    // Opened by alice: signed in as alice, on to the backend's consent, stored.
    let report = connect("alice");
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    let idp_log: Value = crate::support::client()
        .get(format!("{}/fixture/log", idp.url.trim_end_matches("/mcp")))
        .send()
        .and_then(|r| r.json())
        .unwrap();
    assert!(
        authorized(&idp_log, "bob") && authorized(&idp_log, "alice"),
        "{idp_log}"
    );
    let sign_ins: Vec<&Value> = idp_log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "authorize")
        .collect();
    assert!(
        sign_ins.iter().all(|e| e["resource"] == resource.as_str()),
        "{sign_ins:?}"
    );
    let backend_log: Value = crate::support::client()
        .get(format!(
            "{}/fixture/log",
            backend.url.trim_end_matches("/mcp")
        ))
        .send()
        .and_then(|r| r.json())
        .unwrap();
    assert!(authorized(&backend_log, "alice"), "{backend_log}");
}

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
    let replica = |addr: &str| {
        let mut cmd = std::process::Command::new(mcpgw());
        cmd.args(["serve", "--config"])
            .arg(&path)
            .args(["--listen", addr])
            .env("RUST_LOG", "info");
        start(cmd, "mcpgw listening on ")
    };
    let a = replica(&a_addr);
    let s = Setup {
        deps,
        server,
        gw: a,
        _dir: dir,
    };
    s.wait_for_tools(ALICE, &["mn__mcpgw_connect"]);
    let report = s.run(
        ScriptClient::Python,
        "2026-07-28",
        ALICE,
        "alice",
        &[("mn__mcpgw_connect", json!({}))],
    );
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
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

/// Regression: a backend's 401 to one user's own token (revoked at the service) counted as an outage of the
/// backend, so one user could open its circuit for everyone. It is that user's failure alone: they are asked
/// again, and the other users' calls go on.
#[test]
fn one_users_refused_token_never_opens_the_backends_circuit() {
    let admin = "[admin]\nlisten = \"127.0.0.1:0\"\ngroups = [\"ops\"]\n\n";
    let circuit = "\n[backend.circuit]\nfailures = 1\nopen_ms = 60000\n";
    let Some(s) = setup_with("user-authorization-circuit", admin, circuit) else {
        return;
    };
    s.wait_for_tools(BOB, &["ln__mcpgw_connect"]);
    // Bob connects first (the backend is listed with his token), then alice.
    let report = s.run(
        ScriptClient::Python,
        "legacy",
        BOB,
        "bob",
        &[("ln__mcpgw_connect", json!({}))],
    );
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
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
        let report = peers::script_client(
            &s.deps,
            ScriptClient::Python,
            &s.gw.url,
            "legacy",
            &[
                "--url-decline".into(),
                "--header".into(),
                format!("Authorization: Bearer {ALICE}"),
                "--call".into(),
                "ln__whoami".into(),
                "{}".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            report["urlElicitations"].as_array().map(Vec::len),
            Some(1),
            "asked again: {report}"
        );
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
