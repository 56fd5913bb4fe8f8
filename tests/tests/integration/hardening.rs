//! Bodies, connections and headers an attacker (or a bad day) sends (issue 11 §3), each on raw TCP against a
//! real gateway: a body that stalls is cut with 408 and its connection closed; a body framed two ways is
//! refused with 400 and its connection closed, plain and behind TLS; a host or origin named twice is refused
//! on every route; a session id never appears whole in the INFO logs. Every read is bounded.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::*;
use crate::tls::{Authority, toml_path};

/// The longest any exchange here may take before the test fails.
const BOUND: Duration = Duration::from_secs(15);

/// `host:port` of a gateway URL.
fn addr_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or_default().to_owned()
}

/// What came back on one connection, read until the server closed it (or `BOUND`).
struct Exchange {
    text: String,
    closed: bool,
    elapsed: Duration,
}

impl Exchange {
    fn status(&self) -> u16 {
        self.text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
    /// How many HTTP responses came back.
    fn responses(&self) -> usize {
        self.text.matches("HTTP/1.1 ").count()
    }
}

/// Reads until end of stream: `closed` only if the server closed the connection within `BOUND` (a reset
/// after the response counts: the client was still writing into a connection the server had closed).
fn read_to_close(stream: &mut impl Read, started: Instant) -> Exchange {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        if started.elapsed() > BOUND {
            break false;
        }
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => break true,
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !got.is_empty() => break true,
            Err(e) => panic!("read failed: {e} after {:?}", String::from_utf8_lossy(&got)),
        }
    };
    Exchange {
        text: String::from_utf8_lossy(&got).into_owned(),
        closed,
        elapsed: started.elapsed(),
    }
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.set_write_timeout(Some(BOUND)).unwrap();
    s
}

/// Sends `request` on a fresh connection, then (optionally) trickles `trickle` bytes one by one, `every` apart,
/// until the server closes; what came back.
fn exchange(addr: &str, request: &[u8], trickle: Option<Duration>) -> Exchange {
    let mut s = connect(addr);
    let started = Instant::now();
    s.write_all(request).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    if let Some(every) = trickle {
        let mut w = s.try_clone().unwrap();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && w.write_all(b" ").is_ok() {
                std::thread::sleep(every);
            }
        });
    }
    let got = read_to_close(&mut s, started);
    stop.store(true, Ordering::Relaxed);
    got
}

const STALL_CONFIG: &str = "[server]\nbody_idle_timeout_ms = 1000\nbody_timeout_ms = 3000\n\n\
                            [[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

/// Before: each of these kept its connection open for as long as the client liked (over 130 s). After: 408
/// and closed, the idle bound after a second of silence, the whole-body bound after three seconds of a
/// body trickled a byte every 300 ms — on both routes that read a body.
#[test]
fn a_body_that_stalls_is_cut_with_408_and_the_connection_closed() {
    let dir = TempDir::new("hardening-stall");
    let gw = gateway(STALL_CONFIG, &dir);
    let addr = addr_of(&gw.url);
    let head = |path: &str, framing: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{framing}\r\n"
        )
    };
    for path in ["/mcp", "/messages?sessionId=0123"] {
        // (what, request, trickled, which bound, shortest and longest time to the answer)
        let cases = [
            (
                "content-length promised and not sent",
                head(path, "Content-Length: 100\r\n") + "{\"jsonrpc\"",
                None,
                "body_idle_timeout_ms",
                0.9,
                2.9,
            ),
            (
                "a chunked body that never ends",
                head(path, "Transfer-Encoding: chunked\r\n") + "5\r\n{\"jso\r\n",
                None,
                "body_idle_timeout_ms",
                0.9,
                2.9,
            ),
            (
                "a body trickled a byte every 300 ms",
                head(path, "Content-Length: 100000\r\n"),
                Some(Duration::from_millis(300)),
                "body_timeout_ms",
                2.9,
                6.0,
            ),
        ];
        for (what, request, trickle, bound, shortest, longest) in cases {
            let got = exchange(&addr, request.as_bytes(), trickle);
            let secs = got.elapsed.as_secs_f64();
            assert_eq!(got.status(), 408, "{path} {what}: {:?}", got.text);
            assert!(got.text.contains(bound), "{path} {what}: {:?}", got.text);
            assert!(got.closed, "{path} {what}: still open after {secs:.1} s");
            assert!(
                (shortest..longest).contains(&secs),
                "{path} {what}: closed after {secs:.1} s"
            );
        }
    }
    // still serving
    let ok = exchange(
        &addr,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        None,
    );
    assert_eq!(ok.status(), 200, "{:?}", ok.text);
}

/// The ways of framing one body twice (RFC 9112 §6.1), each followed by a second request smuggled in the
/// body: 400, the smuggled request never served, and the connection closed. Before: served (200), the
/// connection kept, and the smuggled request answered too.
fn smuggling_cases() -> Vec<(&'static str, String)> {
    let smuggled = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let post = |framing: &str, body: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: ping\r\n{framing}\r\n{body}{smuggled}"
        )
    };
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"it","version":"1"}}}}"#;
    let chunked = format!("{:x}\r\n{ping}\r\n0\r\n\r\n", ping.len());
    let length = |extra: usize| format!("Content-Length: {}\r\n", ping.len() + extra);
    vec![
        (
            "content-length, then transfer-encoding: chunked",
            post(&(length(0) + "Transfer-Encoding: chunked\r\n"), &chunked),
        ),
        (
            "transfer-encoding: chunked, then content-length",
            post(
                &("Transfer-Encoding: chunked\r\n".to_owned() + &length(0)),
                &chunked,
            ),
        ),
        (
            "transfer-encoding: identity with content-length",
            post(
                &("Transfer-Encoding: identity\r\n".to_owned() + &length(0)),
                ping,
            ),
        ),
        (
            "transfer-encoding: identity alone",
            post("Transfer-Encoding: identity\r\n", ping),
        ),
        (
            "a bodiless GET with both",
            format!(
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\
                 Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}"
            ),
        ),
    ]
}

/// The first answer is 400, the smuggled request is never served (actix has already decoded it from the same
/// read: it gets a 400 of its own), and the connection is closed.
fn assert_refused_and_closed(what: &str, got: &Exchange) {
    assert_eq!(got.status(), 400, "{what}: {:?}", got.text);
    assert!(got.text.contains("rfc 9112"), "{what}: {:?}", got.text);
    let refused = got.text.matches("HTTP/1.1 400 ").count();
    assert_eq!(
        refused,
        got.responses(),
        "{what}: the smuggled request was served: {:?}",
        got.text
    );
    assert!(got.closed, "{what}: the connection stayed open");
}

#[test]
fn content_length_with_transfer_encoding_is_refused_and_the_connection_closed() {
    let dir = TempDir::new("hardening-smuggling");
    let gw = gateway(STALL_CONFIG, &dir);
    let addr = addr_of(&gw.url);
    for (what, request) in smuggling_cases() {
        assert_refused_and_closed(what, &exchange(&addr, request.as_bytes(), None));
    }
    // a request framed one way is served, and the connection kept for the next
    let mut s = connect(&addr);
    for _ in 0..2 {
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut buf = [0u8; 1024];
        let deadline = Instant::now() + BOUND;
        let n = loop {
            match s.read(&mut buf) {
                Ok(n) => break n,
                Err(_) if Instant::now() < deadline => {}
                Err(e) => panic!("{e}"),
            }
        };
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&buf[..n])
        );
    }
}

/// A TLS front door (HTTP/1.1 by ALPN): the same refusals, the TLS connection closed.
#[test]
fn content_length_with_transfer_encoding_is_refused_and_the_connection_closed_behind_tls() {
    let dir = TempDir::new("hardening-smuggling-tls");
    let ca = Authority::new(&dir, "ca");
    let (cert, key) = ca.issue(&dir, "front", &["127.0.0.1", "localhost"]);
    let config = format!(
        "[server]\ntls_cert_file = {}\ntls_key_file = {}\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        toml_path(&cert),
        toml_path(&key)
    );
    let gw = gateway(&config, &dir);
    assert!(gw.url.starts_with("https://"), "{}", gw.url);
    let addr = addr_of(&gw.url);
    tls_provider();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_file(&ca.ca).unwrap())
        .unwrap();
    let mut tls = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = Arc::new(tls);
    for (what, request) in smuggling_cases() {
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(tls.clone(), name).unwrap();
        let mut stream = rustls::StreamOwned::new(conn, connect(&addr));
        let started = Instant::now();
        stream.write_all(request.as_bytes()).unwrap();
        stream.flush().unwrap();
        assert_refused_and_closed(what, &read_to_close(&mut stream, started));
    }
}

/// Every route, the same two headers: each must be refused with 400 naming why.
fn refused_on_every_route(addr: &str, twice: &str, why: &str) {
    let routes = [
        "GET /healthz",
        "GET /readyz",
        "GET /sse",
        "POST /mcp",
        "POST /messages?sessionId=0123",
        "GET /nowhere",
    ];
    for route in routes {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let request = format!(
            "{route} HTTP/1.1\r\nHost: localhost\r\n{twice}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let got = exchange(addr, request.as_bytes(), None);
        assert_eq!(got.status(), 400, "{route} with {twice:?}: {:?}", got.text);
        assert!(got.text.contains(why), "{route}: {:?}", got.text);
    }
    // one of each passes
    let one = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\nConnection: close\r\n\r\n";
    assert_eq!(exchange(addr, one, None).status(), 200);
}

/// Before: a second `Host` (foreign) behind a local one passed on the first value, on every route.
#[test]
fn two_host_headers_are_refused() {
    let dir = TempDir::new("hardening-hosts");
    let gw = gateway(STALL_CONFIG, &dir);
    let addr = addr_of(&gw.url);
    refused_on_every_route(&addr, "Host: evil.example\r\n", "several host headers");
    // an absolute-form target naming another host than the Host header
    let got = exchange(
        &addr,
        b"GET http://evil.example/healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        None,
    );
    assert_eq!(got.status(), 400, "{:?}", got.text);
    assert!(got.text.contains("another host"), "{:?}", got.text);
}

/// Before: a second `Origin` (foreign) behind a local one passed on the first value.
#[test]
fn two_origin_headers_are_refused() {
    let dir = TempDir::new("hardening-origins");
    let gw = gateway(STALL_CONFIG, &dir);
    let addr = addr_of(&gw.url);
    refused_on_every_route(
        &addr,
        "Origin: http://localhost\r\nOrigin: http://evil.example\r\n",
        "several origin headers",
    );
}

/// HTTP/2 carries the host as `:authority`; a `Host` header beside it naming another host is refused.
/// Before: the `Host` header was read first, so `:authority: evil.example` with `Host: localhost` passed.
#[test]
fn an_http2_authority_unlike_its_host_header_is_refused() {
    let dir = TempDir::new("hardening-authority");
    let ca = Authority::new(&dir, "ca");
    let (cert, key) = ca.issue(&dir, "front", &["127.0.0.1", "localhost", "evil.example"]);
    let config = format!(
        "[server]\ntls_cert_file = {}\ntls_key_file = {}\n\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
        toml_path(&cert),
        toml_path(&key)
    );
    let gw = gateway(&config, &dir);
    let addr: std::net::SocketAddr = addr_of(&gw.url).parse().unwrap();
    tls_provider();
    let pem = std::fs::read(&ca.ca).unwrap();
    let client = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .resolve("evil.example", addr)
        .resolve("localhost", addr)
        .timeout(BOUND)
        .build()
        .unwrap();
    let port = addr.port();
    let ok = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .unwrap();
    assert_eq!(ok.version(), reqwest::Version::HTTP_2);
    assert_eq!(ok.status().as_u16(), 200);
    let refused = client
        .get(format!("https://evil.example:{port}/healthz"))
        .header("Host", format!("localhost:{port}"))
        .send()
        .unwrap();
    assert_eq!(refused.version(), reqwest::Version::HTTP_2);
    assert_eq!(refused.status().as_u16(), 400);
    assert!(refused.text().unwrap().contains("another host"));
}

/// A session id is a bearer credential. Before: "session started session=<the whole id>" at INFO. After:
/// only its short form, in every line of a real run (session start, a request's span; and the 2024-11-05
/// transport's). Its end is logged at debug only.
#[test]
fn a_session_id_never_appears_whole_in_the_info_logs() {
    let dir = TempDir::new("hardening-logs");
    let gw = gateway(STALL_CONFIG, &dir);
    let mut client = LegacyClient::connect(&gw.url, "2025-06-18");
    let id = client.session.clone();
    let r = client.request(
        "tools/call",
        serde_json::json!({"name": "m__echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let end = client_end(&gw.url, &id);
    assert_eq!(end, 204);
    let sse_id = sse_session(&gw.url);
    let mut lines = Vec::new();
    let deadline = Instant::now() + BOUND;
    while !lines
        .iter()
        .any(|l: &String| l.contains("session started") && l.contains("http_sse"))
        && Instant::now() < deadline
    {
        lines.extend(gw.log.recv_timeout(Duration::from_millis(200)).ok());
    }
    std::thread::sleep(Duration::from_millis(300));
    lines.extend(gw.log.try_iter());
    for full in [&id, &sse_id] {
        assert!(full.len() >= 32, "{full}");
        let short = format!("{}…", &full[..8]);
        let leaks: Vec<&String> = lines.iter().filter(|l| l.contains(full.as_str())).collect();
        assert!(leaks.is_empty(), "the full id {full} is logged: {leaks:#?}");
        assert!(
            lines.iter().any(|l| l.contains(&short)),
            "{short} is not in the log: {lines:#?}"
        );
    }
    for said in ["session started", "transport=http_sse"] {
        assert!(
            lines.iter().any(|l| l.contains(said)),
            "{said:?} not logged: {lines:#?}"
        );
    }
    // A session's end is a high-volume line: at debug, not at info (issue 17).
    assert!(
        !lines.iter().any(|l| l.contains("session ended")),
        "\"session ended\" is logged at info: {lines:#?}"
    );
}

/// DELETE /mcp for a session: its status.
fn client_end(url: &str, id: &str) -> u16 {
    client()
        .delete(url)
        .header("Mcp-Session-Id", id)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .unwrap()
        .status()
        .as_u16()
}

/// Opens a 2024-11-05 HTTP+SSE session (GET /sse, then `initialize` on its endpoint): its id.
fn sse_session(mcp_url: &str) -> String {
    let base = mcp_url.trim_end_matches("/mcp");
    let stream = client().get(format!("{base}/sse")).send().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stream)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let endpoint = loop {
        let line = rx.recv_timeout(BOUND).expect("the endpoint event");
        if let Some(path) = line.strip_prefix("data: /messages") {
            break path.to_owned();
        }
    };
    let id = endpoint.trim_start_matches("?sessionId=").to_owned();
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let r = post_raw(
        &format!("{base}/messages{endpoint}"),
        &[("Content-Type", "application/json")],
        init.to_string(),
    );
    assert_eq!(r.status, 202, "{r:?}");
    // keep the stream open until the session started
    let _ = rx.recv_timeout(Duration::from_secs(2));
    id
}
