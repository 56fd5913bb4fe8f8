//! Each user's own authorization to a backend (issue 37), with real peers: `oauth_server.py` (the Python
//! SDK's dual-era server behind an OAuth 2.1 authorization server of its own, written for these tests: it
//! publishes RFC 9728 and RFC 8414 metadata, registers clients dynamically, and its authorization endpoint
//! signs in whoever the browser says with `X-Fixture-User`) behind mcpgw twice — as a legacy backend
//! (`ln`) and a 2026-07-28 one (`mn`) with `grant = "authorization_code"`. Principals are API keys, so the
//! link is the proof (`link_proof = "link"`). The Python and TypeScript SDK clients, in legacy and
//! 2026-07-28 mode, are asked to open the consent link by their URL elicitation callbacks and "open" it as
//! a browser signed in at the authorization server as their user (`--browser-as`).

mod principals;
mod replicas;
mod revocation;
mod sign_in;

use serde_json::{Value, json};

use crate::interop::peers::{self, Deps, Proc, ScriptClient};
use crate::support::{Running, TempDir, free_port, mcpgw, start};

const ALICE: &str = "user-authorization-alice-0123456789abcdef";
const BOB: &str = "user-authorization-bob-0123456789abcdefghi";
const OPS: &str = "user-authorization-ops-0123456789abcdefghi";
/// `[admin]` on a loopback port, for the `ops` group (the API key `OPS`).
const OPS_ADMIN: &str = "[admin]\nlisten = \"127.0.0.1:0\"\ngroups = [\"ops\"]\n\n";

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
    let gw = serve_at(&path, &addr);
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
        fixture_log(&self.server)
    }

    fn revoke_user(&self, user: &str) {
        let base = self.server.url.trim_end_matches("/mcp");
        crate::support::client()
            .post(format!("{base}/fixture/revoke-user?user={user}"))
            .send()
            .expect("revoke-user");
    }

    /// A Python SDK client in legacy mode as `key`, declining every URL elicitation, calling `tool`.
    fn declining(&self, key: &str, tool: &str) -> Value {
        let args: Vec<String> = vec![
            "--url-decline".into(),
            "--header".into(),
            format!("Authorization: Bearer {key}"),
            "--call".into(),
            tool.into(),
            "{}".into(),
        ];
        peers::script_client(
            &self.deps,
            ScriptClient::Python,
            &self.gw.url,
            "legacy",
            &args,
        )
        .unwrap_or_else(|e| panic!("declining {tool}: {e}"))
    }

    /// `key` (its browser signed in as `user`) connects `backend` with `client` in `mode`, once its connect
    /// tool is listed; the call must succeed. The client's report.
    fn connect(
        &self,
        client: ScriptClient,
        mode: &str,
        key: &str,
        user: &str,
        backend: &str,
    ) -> Value {
        let tool = format!("{backend}__mcpgw_connect");
        self.wait_for_tools(key, &[&tool]);
        let report = self.run(client, mode, key, user, &[(&tool, json!({}))]);
        assert_eq!(report["calls"][0]["isError"], false, "{report}");
        report
    }

    /// Waits (bounded: 30 s) until `key` is listed every one of `tools`.
    fn wait_for_tools(&self, key: &str, tools: &[&str]) {
        wait_for_tools_at(&self.gw, key, tools);
    }
}

/// `mcpgw serve` with the config at `path`, listening on `addr` (known beforehand: the public URL names it).
fn serve_at(path: &std::path::Path, addr: &str) -> Running {
    let mut cmd = std::process::Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", addr])
        .env("RUST_LOG", "info");
    start(cmd, "mcpgw listening on ")
}

/// What an `oauth_server.py` was asked, oldest first (its `/fixture/log` events).
fn fixture_log(fixture: &Proc) -> Vec<Value> {
    let base = fixture.url.trim_end_matches("/mcp");
    let body: Value = crate::support::client()
        .get(format!("{base}/fixture/log"))
        .send()
        .and_then(|r| r.json())
        .expect("oauth_server's /fixture/log");
    body["events"].as_array().cloned().unwrap_or_default()
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

/// Asserts the run was asked to open exactly one link.
fn asked_once(report: &Value) {
    assert_eq!(
        report["urlElicitations"].as_array().map(Vec::len),
        Some(1),
        "asked once: {report}"
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
