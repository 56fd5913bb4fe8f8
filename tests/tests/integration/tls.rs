//! TLS on both sides (issue 10 §1), with a throw-away PKI made at run time (rcgen): `mcpgw mock-backend`
//! behind TLS as an https backend (its CA trusted through `tls_ca_file`, a wrong CA refused with the reason,
//! a name override, client certificates), and the front door over TLS to curl (HTTP/1.1 and HTTP/2 by ALPN)
//! and the Python SDK client, its certificate swapped on disk and reloaded on SIGHUP without dropping the
//! connections open.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::json;

use crate::interop::peers;
use crate::support::*;

/// One certificate authority and the files of what it issued.
pub(crate) struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pub(crate) ca: PathBuf,
}

impl Authority {
    pub(crate) fn new(dir: &TempDir, name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("mcpgw test {name}"));
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let ca = dir.file(&format!("{name}.pem"), &issuer.pem());
        Authority { issuer, ca }
    }

    /// A leaf certificate for `names`, written as `{file}.pem` and `{file}.key`: (cert, key).
    pub(crate) fn issue(&self, dir: &TempDir, file: &str, names: &[&str]) -> (PathBuf, PathBuf) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, file);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            dir.file(&format!("{file}.pem"), &cert.pem()),
            dir.file(&format!("{file}.key"), &key.serialize_pem()),
        )
    }
}

/// `mcpgw mock-backend` serving HTTPS with `cert` and `key` (and requiring client certificates of
/// `client_ca`).
fn tls_mock(cert: &PathBuf, key: &PathBuf, client_ca: Option<&PathBuf>) -> Running {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["mock-backend", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(cert)
        .arg("--tls-key")
        .arg(key);
    if let Some(ca) = client_ca {
        cmd.arg("--tls-client-ca").arg(ca);
    }
    start(cmd, "mock-backend listening on ")
}

pub(crate) fn toml_path(p: &Path) -> String {
    serde_json::to_string(&p.display().to_string()).unwrap()
}

/// The "backend down" reasons the gateway logged for `backend` so far (bounded wait for at least one).
fn down_reasons(gw: &Running, seen: &mut Vec<String>, backend: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        seen.extend(gw.log.try_iter());
        let reasons: Vec<String> = seen
            .iter()
            .filter(|l| {
                l.contains(&format!("backend{{backend={backend}}}")) && l.contains("backend down")
            })
            .cloned()
            .collect();
        if !reasons.is_empty() || Instant::now() > deadline {
            return reasons;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tool_text(url: &str, tool: &str) -> String {
    let reply = modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": {"text": "over tls"}}),
        &[],
    );
    reply.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An https backend: trusted through its CA and reached under the name its certificate has (the URL says
/// 127.0.0.1); another CA, or no name override, is refused with the reason, and retried no more than once a
/// second.
#[test]
fn an_https_backend_is_verified_against_its_ca_and_name() {
    let dir = TempDir::new("tls-backend");
    let ca = Authority::new(&dir, "ca");
    let other = Authority::new(&dir, "other-ca");
    let (cert, key) = ca.issue(&dir, "mock", &["mock.internal"]);
    let mock = tls_mock(&cert, &key, None);
    assert!(mock.url.starts_with("https://127.0.0.1:"), "{}", mock.url);
    let backend = |name: &str, ca_file: &PathBuf, server_name: Option<&str>| {
        format!(
            "[[backend]]\nname = \"{name}\"\nurl = {url}\ntls_ca_file = {ca}\n{sni}\n",
            url = serde_json::to_string(&mock.url).unwrap(),
            ca = toml_path(ca_file),
            sni = server_name
                .map(|n| format!("tls_server_name = \"{n}\""))
                .unwrap_or_default(),
        )
    };
    let config = [
        backend("named", &ca.ca, Some("mock.internal")),
        backend("untrusted", &other.ca, Some("mock.internal")),
        backend("unnamed", &ca.ca, None),
    ]
    .concat();
    let gw = gateway(&config, &dir);
    peers::wait_for_tools(&gw, &["named__echo"]);
    assert_eq!(tool_text(&gw.url, "named__echo"), "over tls");

    let mut log = Vec::new();
    let untrusted = down_reasons(&gw, &mut log, "untrusted");
    assert!(
        untrusted
            .iter()
            .any(|l| l.contains("invalid peer certificate") && l.contains("UnknownIssuer")),
        "{untrusted:#?}"
    );
    let unnamed = down_reasons(&gw, &mut log, "unnamed");
    assert!(
        unnamed
            .iter()
            .any(|l| l.contains("invalid peer certificate") && l.contains("not valid for name")),
        "{unnamed:#?}"
    );
    // never a tight loop: attempts at least a second apart
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(3500));
    let attempts = down_reasons(&gw, &mut log, "untrusted").len();
    assert!(
        attempts <= 5,
        "{attempts} failed attempts within {:?} of start-up",
        started.elapsed() + Duration::from_secs(1)
    );
    // the catalog has the healthy backend only; the others are named as missing, not fatal
    let names = peers::modern_tool_names(&gw.url).unwrap();
    assert!(names.iter().all(|n| n.starts_with("named__")), "{names:?}");
}

/// A backend that requires client certificates: reached with the gateway's, refused without one.
#[test]
fn an_mtls_backend_takes_the_gateway_client_certificate() {
    let dir = TempDir::new("tls-mtls");
    let ca = Authority::new(&dir, "ca");
    let (cert, key) = ca.issue(&dir, "mock", &["127.0.0.1", "localhost"]);
    let (client_cert, client_key) = ca.issue(&dir, "gateway-client", &["mcpgw.client"]);
    let mock = tls_mock(&cert, &key, Some(&ca.ca));
    let url = serde_json::to_string(&mock.url).unwrap();
    let config = format!(
        "[[backend]]\nname = \"with\"\nurl = {url}\ntls_ca_file = {ca}\ntls_client_cert_file = {c}\ntls_client_key_file = {k}\n\n\
         [[backend]]\nname = \"without\"\nurl = {url}\ntls_ca_file = {ca}\n",
        ca = toml_path(&ca.ca),
        c = toml_path(&client_cert),
        k = toml_path(&client_key),
    );
    let gw = gateway(&config, &dir);
    peers::wait_for_tools(&gw, &["with__echo"]);
    assert_eq!(tool_text(&gw.url, "with__echo"), "over tls");
    let mut log = Vec::new();
    let refused = down_reasons(&gw, &mut log, "without");
    assert!(
        !refused.is_empty(),
        "the backend without a client certificate was not refused"
    );
}

/// `curl --cacert` against the front door; the HTTP version it ended up speaking.
fn curl(url: &str, ca: &PathBuf, http2: bool) -> Result<String, String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .arg(if http2 { "--http2" } else { "--http1.1" })
        .arg("--cacert")
        .arg(ca)
        .args([
            "-H",
            "Content-Type: application/json",
            "-H",
            "Accept: application/json",
            "-d",
            body,
        ])
        .arg(url)
        .output()
        .expect("curl runs");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() && said.starts_with("200 ") {
        Ok(said.split(' ').nth(1).unwrap_or_default().to_owned())
    } else {
        Err(format!("{said} {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// A blocking client trusting only `ca` (it keeps its connections: what a reload must not drop).
fn trusting(ca: &PathBuf) -> reqwest::blocking::Client {
    tls_provider();
    let pem = std::fs::read(ca).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn ping_modern(client: &reqwest::blocking::Client, url: &str) -> Result<u16, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "server/discover")
        .body(body.to_string())
        .send()
        .map(|r| r.status().as_u16())
        .map_err(|e| format!("{e:?}"))
}

/// The front door over TLS: HTTP/1.1 and HTTP/2 (ALPN) to curl, the Python SDK client; then a certificate
/// from another CA written over the files and SIGHUP: the next connection gets it, the open one stays.
#[test]
fn the_front_door_serves_tls_and_reloads_its_certificate_on_sighup() {
    let dir = TempDir::new("tls-front");
    let first = Authority::new(&dir, "first-ca");
    let second = Authority::new(&dir, "second-ca");
    let (cert, key) = first.issue(&dir, "front", &["127.0.0.1", "localhost"]);
    let config = format!(
        "[server]\ntls_cert_file = {}\ntls_key_file = {}\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        toml_path(&cert),
        toml_path(&key)
    );
    let gw = gateway(&config, &dir);
    assert!(gw.url.starts_with("https://127.0.0.1:"), "{}", gw.url);
    assert_eq!(curl(&gw.url, &first.ca, false), Ok("1.1".to_owned()));
    assert_eq!(curl(&gw.url, &first.ca, true), Ok("2".to_owned()));
    assert!(
        curl(&gw.url, &second.ca, false).is_err(),
        "a client trusting another CA is refused"
    );

    // the Python SDK client over TLS, trusting the CA through the standard variable
    if let Some(deps) =
        peers::deps("the_front_door_serves_tls_and_reloads_its_certificate_on_sighup")
    {
        let mut cmd = Command::new(&deps.python);
        cmd.arg(deps.dir.join("py_client.py"))
            .args(["--url", &gw.url, "--mode", "2026-07-28", "--timeout", "30"])
            .args(["--call", "m__echo", r#"{"text": "python over tls"}"#])
            .env("SSL_CERT_FILE", &first.ca)
            .env("NO_PROXY", "127.0.0.1,localhost");
        let (ok, stdout, stderr) = peers::run_bounded(cmd, Duration::from_secs(60));
        assert!(
            ok && stdout.contains(r#""text": "python over tls""#),
            "{stdout}\n{stderr}"
        );
    }

    let kept = trusting(&first.ca);
    assert_eq!(ping_modern(&kept, &gw.url), Ok(200));
    // swap the certificate on disk for one of the second CA, then SIGHUP
    let (new_cert, new_key) = second.issue(&dir, "front-2", &["127.0.0.1", "localhost"]);
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    let hup = Command::new("kill")
        .args(["-HUP", &gw.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while curl(&gw.url, &second.ca, false).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        curl(&gw.url, &second.ca, false),
        Ok("1.1".to_owned()),
        "the new certificate after SIGHUP"
    );
    assert!(
        curl(&gw.url, &first.ca, false).is_err(),
        "the old certificate is no longer served"
    );
    // the connection opened before the reload was not dropped: it still answers, with no new handshake
    assert_eq!(ping_modern(&kept, &gw.url), Ok(200));
    let log: Vec<String> = gw.log.try_iter().collect();
    assert!(
        log.iter()
            .any(|l| l.contains("reloaded") && l.contains("tls certificate")),
        "{log:#?}"
    );
}

/// `[server] max_connections` over TLS (HTTP/2 or HTTP/1.1 by ALPN): a connection beyond it is closed right
/// after its handshake, and served again once others close.
#[test]
fn tls_connections_beyond_max_connections_are_closed_after_the_handshake() {
    let dir = TempDir::new("tls-max-connections");
    let ca = Authority::new(&dir, "ca");
    let (cert, key) = ca.issue(&dir, "front", &["127.0.0.1", "localhost"]);
    let config = format!(
        "[server]\nmax_connections = 2\ntls_cert_file = {}\ntls_key_file = {}\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        toml_path(&cert),
        toml_path(&key)
    );
    let gw = gateway(&config, &dir);
    // Each client keeps its one connection open (pooled) after its request.
    let held: Vec<_> = (0..2).map(|_| trusting(&ca.ca)).collect();
    for client in &held {
        assert_eq!(ping_modern(client, &gw.url), Ok(200));
    }
    let t0 = Instant::now();
    let refused = ping_modern(&trusting(&ca.ca), &gw.url);
    assert!(
        refused.is_err(),
        "a third connection is served: {refused:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match ping_modern(&trusting(&ca.ca), &gw.url) {
            Ok(200) => break,
            other if Instant::now() > deadline => panic!("after the two closed: {other:?}"),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
