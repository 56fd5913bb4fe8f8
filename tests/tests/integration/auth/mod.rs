//! Authentication (`[auth]`) of real `mcpgw serve` processes on loopback ports chosen at run time.
//!
//! - `tokens`: JWTs from the test's own issuer ([`issuer`]: keys made at run time, a JWKS endpoint on a
//!   thread) — accepted in both eras, and each way a token can be wrong refused with 401
//!   `invalid_token`; no token: 401 pointing to the RFC 9728 document; a missing scope: 403; the 401 the
//!   same whatever the request names; the token read from `Authorization` only (the scheme in any case).
//! - `jwks`: key rotation (a new `kid` fetched for, a removed one refused once the set is fetched again)
//!   and the JWKS endpoint down (at start, and after its keys were fetched).
//! - `metadata`: the RFC 9728 document and the probes, open without a token.
//! - `api_keys`: `mcpgw auth hash-key`, keys as bearer tokens or in their own header, sessions bound to
//!   their principal, `[server] strict`.
//! - `sdk`: the Python and TypeScript SDK clients sending a bearer token, in both eras.
//! - `endpoints`: `[[endpoint]]` virtual servers reached by the Python and TypeScript SDK clients.
//! - `search`: `[catalog] search` (`find_tools`, `call_tool`) through the Python and TypeScript SDK clients.
//! - `policy`: `[[policy]]` through the Python and TypeScript SDK clients: lists filtered per principal,
//!   denials answered as absence.

pub(crate) mod api_keys;
mod endpoints;
mod issuer;
mod jwks;
mod metadata;
mod policy;
mod sdk;
mod search;
mod tokens;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{
    JSON_HEADERS, Reply, Running, TempDir, free_port, mcpgw, modern_request, post_raw, start,
    wait_ready,
};

pub use issuer::{AUDIENCE, ISSUER};

/// The legacy version the tests' sessions speak.
pub const LEGACY: &str = "2025-11-25";

/// The mock backend, exposing `m__echo`.
pub const BACKEND: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

/// A gateway on a port known before it starts (the OAuth resource names it).
pub struct Gw {
    pub run: Running,
    pub port: u16,
    _dir: TempDir,
}

impl Gw {
    /// `mcpgw serve --config FILE --listen 127.0.0.1:PORT` with the config `make(port)` writes, waited
    /// for until `/readyz` answers 200.
    pub fn start(name: &str, make: impl FnOnce(u16) -> String) -> Gw {
        let dir = TempDir::new(&format!("auth-{name}"));
        let port = free_port();
        let path = dir.file("mcpgw.toml", &make(port));
        let mut cmd = Command::new(mcpgw());
        cmd.args(["serve", "--config"])
            .arg(path)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env(
                "RUST_LOG",
                "info,mcpgw::auth=debug,mcpgw::front::http::gate=debug",
            );
        let run = start(cmd, "mcpgw listening on ");
        let gw = Gw {
            run,
            port,
            _dir: dir,
        };
        wait_ready(&gw.base());
        gw
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base())
    }

    /// The OAuth resource of [`jwt_config`].
    pub fn resource(&self) -> String {
        self.url()
    }

    /// Where 401s must point: the path-suffixed RFC 9728 document.
    pub fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base())
    }

    /// Its log so far, for a failure's message.
    pub fn log(&self) -> String {
        self.run.log_lines().join("\n")
    }

    /// Reads its log (bounded by `within`) until a line contains `needle`; whether one did.
    pub fn wait_log(&self, needle: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.run.log.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }
}

/// A config verifying JWTs of [`ISSUER`] for [`AUDIENCE`] against `jwks_url` (fetched again every
/// `refresh_secs`), the OAuth resource `http://127.0.0.1:PORT/mcp`, `m__*` calls needing `mcp:tools`,
/// and `extra_jwt` lines added to `[auth.jwt]`.
pub fn jwt_config(jwks_url: &str, port: u16, refresh_secs: u64, extra_jwt: &str) -> String {
    format!(
        r#"{BACKEND}
[auth.jwt]
jwks_url = "{jwks_url}"
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
refresh_secs = {refresh_secs}
{extra_jwt}

[auth.oauth]
resource = "http://127.0.0.1:{port}/mcp"
authorization_servers = ["{ISSUER}"]

[[auth.scope]]
method = "tools/call"
tool = "m__*"
scopes = ["mcp:tools"]
"#
    )
}

/// `Authorization: Bearer TOKEN`.
pub fn bearer(token: &str) -> (String, String) {
    ("Authorization".to_owned(), format!("Bearer {token}"))
}

/// POSTs `body` (JSON text, or anything) to `url` with `headers`, the session's headers when `session` is
/// given.
pub fn post(url: &str, headers: &[(String, String)], session: Option<&str>, body: &str) -> Reply {
    let mut all: Vec<(&str, &str)> = JSON_HEADERS.to_vec();
    if let Some(s) = session {
        all.push(("Mcp-Session-Id", s));
        all.push(("MCP-Protocol-Version", LEGACY));
    }
    all.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    post_raw(url, &all, body.to_owned())
}

/// A legacy `initialize` with `headers` (nothing else sent).
pub fn initialize(url: &str, headers: &[(String, String)]) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    post(url, headers, None, &body.to_string())
}

/// A legacy session opened with `headers` (initialize, then initialized): its id.
pub fn open_session(url: &str, headers: &[(String, String)]) -> String {
    let r = initialize(url, headers);
    assert_eq!(r.status, 200, "initialize: {r:?}");
    assert_eq!(r.json()["result"]["protocolVersion"], LEGACY, "{r:?}");
    let session = r.header("mcp-session-id").expect("a session id");
    let r = post(
        url,
        headers,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(r.status, 202, "initialized: {r:?}");
    session
}

/// A `tools/call` of `m__echo` saying `text`, as a JSON-RPC request with `id`.
pub fn echo_call(id: u64, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "m__echo", "arguments": {"text": text}}})
    .to_string()
}

/// Asserts that a reply is the mock's echo of `text` (a tool result, not an error).
pub fn assert_echoed(reply: &Reply, text: &str) {
    assert_eq!(reply.status, 200, "{reply:?}");
    let v = reply.json();
    assert_ne!(v["result"]["isError"], json!(true), "{reply:?}");
    assert_eq!(v["result"]["content"][0]["text"], text, "{reply:?}");
}

/// The parameters of a `WWW-Authenticate: Bearer k="v", …` challenge (quoted values unescaped).
pub fn challenge(reply: &Reply) -> BTreeMap<String, String> {
    let value = reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate: {reply:?}"));
    let rest = value
        .strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("not a Bearer challenge: {value:?}"));
    let mut params = BTreeMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || *c == ' ') {
            chars.next();
        }
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if name.is_empty() {
            break;
        }
        assert_eq!(chars.next(), Some('"'), "unquoted value in {value:?}");
        let mut v = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => v.extend(chars.next()),
                '"' => break,
                c => v.push(c),
            }
        }
        params.insert(name, v);
    }
    params
}

/// Asserts a 401 whose challenge points to `metadata_url` and says `error` (`None`: no `error` at all).
pub fn assert_401(reply: &Reply, metadata_url: &str, error: Option<&str>) {
    assert_eq!(reply.status, 401, "{reply:?}");
    let c = challenge(reply);
    assert_eq!(
        c.get("resource_metadata").map(String::as_str),
        Some(metadata_url),
        "{reply:?}"
    );
    assert_eq!(c.get("error").map(String::as_str), error, "{reply:?}");
}

/// A 2026-07-28 `tools/call` of `m__echo` with `headers`.
pub fn modern_echo(gw: &Gw, text: &str, headers: &[(String, String)]) -> Reply {
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    modern_request(
        &gw.url(),
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": text}}),
        &headers,
    )
}
