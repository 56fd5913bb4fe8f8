//! URL elicitation end to end (issue 36), with real peers: `url_server.py` (the Python SDK's dual-era server,
//! written for these tests: its tools need the user to open a consent link, and it binds each consent to
//! the caller's bearer token) behind mcpgw twice — as a legacy backend (`lu`, `era = "legacy"`) and as a
//! 2026-07-28 one (`mu`, `era = "modern"`) — each principal's token exchanged for one the backend sees
//! (`exchanged:<subject>`), so the backend tells principals apart and mcpgw relays its URLs. The Python and
//! TypeScript SDK clients, in legacy and 2026-07-28 mode, "open" each link with an HTTP GET from their URL
//! elicitation callbacks (`--url-elicit`).
//!
//! - `clients`: every direction — a legacy backend's -32042 and mid-call `elicitation/create`, a modern
//!   backend's URL input request — to each client in each mode; a declining client; a client that cannot be
//!   asked; a backend that cannot tell principals apart (the same server without token exchange).
//! - `principals`: principal B never rides on A's consent.
//! - `wire`: what mcpgw sends, validated against the official schemas of the generation it speaks.
//!
//! - `replicas`: the 2026-07-28 retry answered by another replica behind nginx.
//!
//! Needs the interop peers (`tests/fixtures/interop/setup.sh`); skipped with `MCPGW_SKIP_INTEROP=1`.

mod clients;
mod principals;
mod replicas;
mod wire;

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::backend_credentials::token_server;
use crate::interop::peers::{self, Deps, Proc};
use crate::support::{Running, TempDir, gateway};
pub(crate) use crate::token_exchange::{SECRET, token_of};

/// The peers, the backend and the gateway in front of it.
pub struct Setup {
    pub deps: Deps,
    pub server: Proc,
    pub gw: Running,
    /// The subject tokens exchanged so far (`subject → exchanged`).
    pub exchanged: Exchanged,
    _dir: TempDir,
}

/// The (subject, exchanged token) pairs a token endpoint issued, in order.
pub type Exchanged = Arc<Mutex<Vec<(String, String)>>>;

/// A token endpoint exchanging a JWT for `exchanged:<its subject>` (the backend's label of the user).
fn exchange_endpoint() -> (String, Exchanged) {
    let issued = Arc::new(Mutex::new(Vec::new()));
    let record = issued.clone();
    let url = token_server(move |_head, body| {
        let subject = body
            .split('&')
            .find_map(|kv| kv.strip_prefix("subject_token="))
            .unwrap_or("");
        let Some(sub) = subject_of(subject) else {
            return (
                "400 Bad Request",
                json!({"error": "invalid_request"}).to_string(),
            );
        };
        let token = format!("exchanged:{sub}");
        record.lock().unwrap().push((sub, token.clone()));
        (
            "200 OK",
            json!({"access_token": token, "issued_token_type":
            "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer",
            "expires_in": 600})
            .to_string(),
        )
    });
    (url, issued)
}

/// The `sub` of a JWT (its signature is the gateway's to check, not this endpoint's).
fn subject_of(jwt: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["sub"].as_str().map(str::to_owned)
}

/// The config of a gateway in front of `server`: `lu` (legacy) and `mu` (2026-07-28) with token exchange,
/// and `one` (legacy) and `mone` (2026-07-28) on the gateway's one session and credential: their URL
/// elicitations are not relayed.
pub fn config(dir: &TempDir, server: &str, token_url: &str, extra: &str) -> String {
    let secret = dir.file("hs256.secret", SECRET);
    let client_secret = dir.file("client.secret", "gw-secret");
    let exchange = format!(
        "[backend.auth]\ntoken_url = \"{token_url}\"\ngrant = \"token_exchange\"\nclient_id = \"gw-client\"\n\
         client_secret_file = {:?}\naudience = \"url-server\"\n",
        client_secret.display()
    );
    format!(
        "{extra}[auth.jwt]\nissuer = \"https://issuer.test\"\naudience = \"mcpgw-test\"\nalgorithms = [\"HS256\"]\n\
         hs256_secret_file = {:?}\n\n\
         [[backend]]\nname = \"lu\"\nurl = \"{server}\"\nera = \"legacy\"\n{exchange}\n\
         [[backend]]\nname = \"mu\"\nurl = \"{server}\"\nera = \"modern\"\n{exchange}\n\
         [[backend]]\nname = \"one\"\nurl = \"{server}\"\nera = \"legacy\"\n\n\
         [[backend]]\nname = \"mone\"\nurl = \"{server}\"\nera = \"modern\"\n",
        secret.display()
    )
}

/// The peers, `url_server.py` and a gateway in front of it; `None` when the interop tests are skipped.
pub fn setup(test: &str) -> Option<Setup> {
    let deps = peers::deps(test)?;
    let server = peers::python_fixture(&deps, "url_server.py", &[], "url_server listening on ");
    let dir = TempDir::new(test);
    let (token_url, exchanged) = exchange_endpoint();
    let gw = gateway(&config(&dir, &server.url, &token_url, ""), &dir);
    wait_for_tools(
        &gw,
        &[
            "lu__url_required",
            "mu__url_required",
            "one__url_required",
            "mone__url_required",
        ],
    );
    Some(Setup {
        deps,
        server,
        gw,
        exchanged,
        _dir: dir,
    })
}

impl Setup {
    /// `url_server`'s record of the consents: (label, completed) by elicitation id.
    pub fn consents(&self) -> Vec<(String, bool)> {
        let base = self.server.url.trim_end_matches("/mcp");
        let body: Value = crate::support::client()
            .get(format!("{base}/consents"))
            .send()
            .and_then(|r| r.json())
            .expect("url_server's /consents");
        body["consents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["identity"].as_str().unwrap().to_owned(),
                    c["completed"] == true,
                )
            })
            .collect()
    }

    /// A script client's report: `client` in `mode` as `sub`, with `extra` options, calling `tool` once.
    pub fn run(
        &self,
        client: peers::ScriptClient,
        mode: &str,
        sub: &str,
        extra: &[&str],
        tool: &str,
    ) -> Value {
        let mut args: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
        args.extend([
            "--header".to_owned(),
            format!("Authorization: Bearer {}", token_of(sub)),
            "--call".to_owned(),
            tool.to_owned(),
            "{}".to_owned(),
        ]);
        peers::script_client(&self.deps, client, &self.gw.url, mode, &args)
            .unwrap_or_else(|e| panic!("{client:?} {mode} {tool}: {e}"))
    }
}

/// Waits (bounded: 60 s) until the gateway lists every one of `tools` to a principal.
pub fn wait_for_tools(gw: &Running, tools: &[&str]) {
    let bearer = format!("Bearer {}", token_of("lister"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        let reply = crate::support::modern_request(
            &gw.url,
            "tools/list",
            json!({}),
            &[("Authorization", &bearer)],
        );
        let names: Vec<String> = reply.json()["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        if tools.iter().all(|t| names.iter().any(|n| n == t)) {
            return;
        }
        last = reply.text;
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("the gateway did not list {tools:?} within 60 s; last answer: {last}");
}

/// The one call of a report.
pub fn the_call(report: &Value) -> &Value {
    &report["calls"][0]
}
