//! What reaches a backend: the gateway's own credential (`[backend.auth]`), and nothing of the client's.
//! Each backend sits behind a recording proxy made here, which keeps every byte the gateway sends it: the
//! client's `Authorization`, cookies and other headers never appear there, whatever transport the client
//! came in on (2026-07-28 requests, a legacy Streamable HTTP session, the 2024-11-05 HTTP+SSE transport)
//! and whatever era the backend speaks; the configured credential does, on every request. An OAuth
//! client-credentials token is fetched from a token endpoint made here and refreshed before it expires.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    JSON_HEADERS, LegacyClient, TempDir, client, gateway_with, http_mock, post_raw,
};

const CLIENT_TOKEN: &str = "client-secret-token-AAA";
const CLIENT_COOKIE: &str = "client-cookie-BBB";
const CLIENT_CUSTOM: &str = "client-custom-CCC";
const BACKEND_TOKEN: &str = "backend-token-XYZ";
const FILE_KEY: &str = "file-key-QQQ";

/// A TCP proxy on loopback that forwards to `upstream` and keeps every byte sent towards it.
pub(crate) struct Recorder {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl Recorder {
    pub(crate) fn start(upstream: &str) -> Recorder {
        let target = upstream
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let path = upstream
            .trim_start_matches("http://")
            .split_once('/')
            .map_or(String::new(), |(_, p)| format!("/{p}"));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}{path}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut down) = conn else { return };
                let Ok(mut up) = TcpStream::connect(&target) else {
                    continue;
                };
                let (mut down_r, mut up_r) = (down.try_clone().unwrap(), up.try_clone().unwrap());
                let keep = keep.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = down_r.read(&mut buf) {
                        if n == 0 || up.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        let mut k = keep.lock().unwrap();
                        if k.len() < 16 * 1024 * 1024 {
                            k.extend_from_slice(&buf[..n]);
                        }
                    }
                    let _ = up.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut up_r, &mut down);
                    let _ = down.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Recorder { url, seen }
    }

    /// Everything sent so far, as text with header names lower-cased line by line.
    pub(crate) fn text(&self) -> String {
        let bytes = self.seen.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|l| match l.split_once(':') {
                Some((name, value)) if !name.contains(' ') => {
                    format!("{}:{value}", name.to_ascii_lowercase())
                }
                _ => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// How many HTTP requests went through (request lines; on a kept-alive connection a request line
    /// follows the previous body on the same line).
    fn requests(&self) -> usize {
        self.text().matches(" HTTP/1.1\n").count()
    }

    /// How many header lines are exactly `line`.
    fn lines_equal(&self, line: &str) -> usize {
        self.text().lines().filter(|l| *l == line).count()
    }
}

/// The client's own headers, sent with every request of these tests.
const CLIENT_HEADERS: [(&str, &str); 4] = [
    ("Authorization", "Bearer client-secret-token-AAA"),
    ("Cookie", "sid=client-cookie-BBB"),
    ("X-Custom", "client-custom-CCC"),
    ("X-Forwarded-For", "203.0.113.9"),
];

fn with_client_headers() -> Vec<(&'static str, &'static str)> {
    JSON_HEADERS
        .iter()
        .chain(CLIENT_HEADERS.iter())
        .copied()
        .collect()
}

fn echo_call(id: u64, tool: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": text}}})
}

fn modern_call(url: &str, tool: &str, text: &str) -> Value {
    let mut call = echo_call(7, tool, text);
    call["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "headers-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut headers = with_client_headers();
    headers.extend([
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ]);
    let r = post_raw(url, &headers, call.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    r.json()
}

/// A 2024-11-05 HTTP+SSE client sending the client headers on its GET and POSTs; the tool's answer text.
fn http_sse_call(mcp_url: &str, tool: &str, text: &str) -> String {
    let base = mcp_url.trim_end_matches("/mcp");
    let mut get = client()
        .get(format!("{base}/sse"))
        .header("Accept", "text/event-stream");
    for (k, v) in CLIENT_HEADERS {
        get = get.header(k, v);
    }
    let stream = get.send().unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_data = || loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("an SSE line in time");
        if let Some(d) = line.strip_prefix("data: ") {
            return d.to_owned();
        }
    };
    let endpoint = format!("{base}{}", next_data());
    let mut headers: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
    headers.extend(CLIENT_HEADERS);
    let post = |v: Value| post_raw(&endpoint, &headers, v.to_string());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}});
    assert_eq!(post(init).status, 202);
    let _ = next_data();
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(post(echo_call(1, tool, text)).status, 202);
    let answer: Value = serde_json::from_str(&next_data()).unwrap();
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn assert_no_client_secret(what: &str, text: &str) {
    for secret in [CLIENT_TOKEN, CLIENT_COOKIE, CLIENT_CUSTOM, "203.0.113.9"] {
        assert!(
            !text.contains(secret),
            "{what} received the client's {secret:?}"
        );
    }
}

#[test]
fn no_client_header_reaches_a_backend_on_any_transport_and_the_configured_credential_does() {
    let dir = TempDir::new("backend-credentials");
    let dual = http_mock(&["--name", "dual"]);
    let legacy = http_mock(&["--name", "legacy", "--era", "legacy"]);
    let (to_dual, to_legacy) = (Recorder::start(&dual.url), Recorder::start(&legacy.url));
    let key_file = dir.file("backend.key", &format!("{FILE_KEY}\n"));
    let config = format!(
        "[[backend]]\nname = \"d\"\nurl = \"{}\"\n[backend.auth]\nvalue_env = \"MCPGW_TEST_BACKEND_TOKEN\"\n\n\
         [[backend]]\nname = \"l\"\nurl = \"{}\"\n[backend.auth]\nheader = \"X-Backend-Key\"\nvalue_file = {:?}\n",
        to_dual.url,
        to_legacy.url,
        key_file.display()
    );
    let gw = gateway_with(&config, &dir, |cmd| {
        cmd.env("MCPGW_TEST_BACKEND_TOKEN", BACKEND_TOKEN)
            .env("RUST_LOG", "debug");
    });

    // 2026-07-28 requests, to a backend of each era.
    for tool in ["d__echo", "l__echo"] {
        let r = modern_call(&gw.url, tool, "modern");
        assert_eq!(r["result"]["content"][0]["text"], "modern", "{tool}: {r}");
    }
    // A legacy session.
    let mut legacy_client = LegacyClient::connect(&gw.url, "2025-11-25");
    for tool in ["d__echo", "l__echo"] {
        let mut req = client().post(&legacy_client.url);
        for (k, v) in with_client_headers() {
            req = req.header(k, v);
        }
        let r = req
            .header("Mcp-Session-Id", &legacy_client.session)
            .header("MCP-Protocol-Version", "2025-11-25")
            .body(echo_call(3, tool, "legacy").to_string())
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{tool}");
        let _ = &mut legacy_client;
    }
    // The HTTP+SSE transport.
    for tool in ["d__echo", "l__echo"] {
        assert_eq!(http_sse_call(&gw.url, tool, "sse"), "sse", "{tool}");
    }

    let (dual_seen, legacy_seen) = (to_dual.text(), to_legacy.text());
    assert_no_client_secret("the dual backend", &dual_seen);
    assert_no_client_secret("the legacy backend", &legacy_seen);
    assert!(!dual_seen.contains("cookie:"), "no Cookie header at all");
    // Every request carried the gateway's own credential, and only its own.
    for (what, recorder, line) in [
        (
            "dual",
            &to_dual,
            format!("authorization: Bearer {BACKEND_TOKEN}"),
        ),
        ("legacy", &to_legacy, format!("x-backend-key: {FILE_KEY}")),
    ] {
        let requests = recorder.requests();
        assert!(requests >= 6, "{what}: {requests} requests recorded");
        assert_eq!(
            recorder.lines_equal(&line),
            requests,
            "{what}: every request carries the credential"
        );
    }
    assert!(
        !legacy_seen.contains("authorization:"),
        "the legacy backend's credential is in its own header"
    );
    // Nothing secret in the gateway's log, even at debug.
    let log = gw.log_lines().join("\n");
    for secret in [BACKEND_TOKEN, FILE_KEY, CLIENT_TOKEN, CLIENT_COOKIE] {
        assert!(!log.contains(secret), "the log shows {secret:?}");
    }
}

/// A token endpoint on loopback at `/token`: each request's head and form body are handed to `answer`,
/// which gives the status line and the JSON to send back (one request per connection).
pub(crate) fn token_server(
    answer: impl Fn(&str, &str) -> (&'static str, String) + Send + 'static,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let (mut head, mut length) = (String::new(), 0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, json) = answer(&head, &String::from_utf8_lossy(&body));
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
                json.len()
            );
        }
    });
    url
}

/// A client-credentials endpoint: checks HTTP Basic with the client's id and secret and the form, and
/// hands out `cc-token-1`, `cc-token-2`, … each valid for `lifetime` seconds.
fn token_endpoint(lifetime: u64) -> (String, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
    let issued = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (issued.clone(), requests.clone());
    let url = token_server(move |head, body| {
        seen.lock().unwrap().push(format!("{head}\n{body}"));
        // Basic base64("gw-client:gw-secret")
        let authorized = head.contains("Basic Z3ctY2xpZW50Omd3LXNlY3JldA==")
            && body.contains("grant_type=client_credentials")
            && body.contains("scope=tools.read");
        if authorized {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            ("200 OK", json!({"access_token": format!("cc-token-{n}"), "token_type": "Bearer", "expires_in": lifetime}).to_string())
        } else {
            (
                "401 Unauthorized",
                json!({"error": "invalid_client"}).to_string(),
            )
        }
    });
    (url, issued, requests)
}

#[test]
fn a_client_credentials_token_is_fetched_at_start_and_refreshed_before_it_expires() {
    let dir = TempDir::new("backend-client-credentials");
    let (token_url, issued, token_requests) = token_endpoint(8);
    let mock = http_mock(&["--name", "cc"]);
    let to_mock = Recorder::start(&mock.url);
    let secret = dir.file("client.secret", "gw-secret\n");
    let config = format!(
        "[[backend]]\nname = \"c\"\nurl = \"{}\"\n[backend.auth]\ntoken_url = \"{token_url}\"\nclient_id = \"gw-client\"\n\
         client_secret_file = {:?}\nscope = \"tools.read\"\n",
        to_mock.url,
        secret.display()
    );
    let gw = gateway_with(&config, &dir, |_| {});
    assert_eq!(
        issued.load(Ordering::SeqCst),
        1,
        "one token at start: {:?}",
        token_requests.lock().unwrap()
    );
    assert_eq!(
        modern_call(&gw.url, "c__echo", "one")["result"]["content"][0]["text"],
        "one"
    );
    assert!(to_mock.text().contains("authorization: Bearer cc-token-1"));
    // Refreshed at three quarters of its 8 s: a request after that carries the next token.
    let deadline = Instant::now() + Duration::from_secs(15);
    while issued.load(Ordering::SeqCst) < 2 {
        assert!(
            Instant::now() < deadline,
            "the token was not refreshed within 15 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = to_mock
        .text()
        .lines()
        .filter(|l| l.starts_with("authorization:"))
        .count();
    assert_eq!(
        modern_call(&gw.url, "c__echo", "two")["result"]["content"][0]["text"],
        "two"
    );
    let seen = to_mock.text();
    let after: Vec<&str> = seen
        .lines()
        .filter(|l| l.starts_with("authorization:"))
        .skip(before)
        .collect();
    assert!(
        after
            .iter()
            .all(|l| l.ends_with("cc-token-2") || l.ends_with("cc-token-3")),
        "requests after the refresh carry the new token: {after:?}"
    );
    assert_no_client_secret("the backend", &seen);
    let log = gw.log_lines().join("\n");
    assert!(
        !log.contains("gw-secret") && !log.contains("cc-token-"),
        "no secret in the log"
    );
}

#[test]
fn a_backend_credential_that_cannot_be_read_stops_the_start_naming_it() {
    let dir = TempDir::new("backend-credentials-missing");
    let config = "[[backend]]\nname = \"d\"\nurl = \"http://127.0.0.1:9/mcp\"\n[backend.auth]\nvalue_env = \"MCPGW_TEST_UNSET_VARIABLE\"\n";
    let path = dir.file("mcpgw.toml", config);
    let out = std::process::Command::new(crate::support::mcpgw())
        .args(["serve", "--config"])
        .arg(path)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("MCPGW_TEST_UNSET_VARIABLE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("backend d auth") && err.contains("MCPGW_TEST_UNSET_VARIABLE"),
        "{err}"
    );
    // A stdio backend takes its secrets from env, not [backend.auth].
    let config =
        "[[backend]]\nname = \"s\"\ncommand = [\"true\"]\n[backend.auth]\nvalue_env = \"X\"\n";
    let path = dir.file("stdio.toml", config);
    let out = std::process::Command::new(crate::support::mcpgw())
        .args(["check", "--config"])
        .arg(path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("backend[0].auth"),
        "{out:?}"
    );
}
