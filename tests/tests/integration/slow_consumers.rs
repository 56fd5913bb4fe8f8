//! Issue 13 §3, slow consumers: a burst reaches a client that reads promptly whole, and a stream whose
//! client stopped reading no longer holds its connection (and the kernel's send buffer) open.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

fn config(extra_server: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/burst_server.py");
    format!(
        "[server]\n{extra_server}\n\n[[backend]]\nname = \"b\"\ncommand = [\"python3\", \"-u\", {:?}]\n{ADMIN}",
        script.display().to_string()
    )
}

/// What the admin listener's `/readyz` (at `base`) counts as dropped.
fn messages_dropped(base: &str) -> Value {
    let v: Value = client()
        .get(format!("{base}/readyz"))
        .send()
        .expect("readyz answers")
        .json()
        .unwrap();
    v["messages_dropped"].clone()
}

/// A session that asked for every log message.
fn logging_session(url: &str) -> LegacyClient {
    let mut c = LegacyClient::connect(url, "2025-06-18");
    let r = c.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(r.status, 200, "{r:?}");
    c
}

#[test]
fn a_burst_of_1000_notifications_reaches_a_prompt_reader_whole() {
    let dir = TempDir::new("burst");
    let gw = gateway(&config(""), &dir);
    let base = gw.url.trim_end_matches("/mcp").to_owned();
    wait_ready(&base);
    let mut c = logging_session(&gw.url);

    // On the session's GET stream: 1,000 log messages sent outside any request.
    let mut req = client().get(&gw.url).header("Accept", "text/event-stream");
    req = req
        .header("Mcp-Session-Id", &c.session)
        .header("MCP-Protocol-Version", "2025-06-18");
    let stream = sse_messages(req.send().expect("GET stream opens"));
    let r = c.request(
        "tools/call",
        json!({"name": "b__burst_later", "arguments": {"n": 1000, "size": 200}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while seen < 1000 {
        let left = deadline.saturating_duration_since(Instant::now());
        match stream.recv_timeout(left) {
            Ok(v) if v["method"] == "notifications/message" => {
                assert_eq!(v["params"]["data"]["i"], seen, "in order, none missing");
                seen += 1;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    assert_eq!(seen, 1000, "every message of the burst on the GET stream");

    // On a request's own SSE response: 1,000 log messages sent during the call.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "b__burst", "arguments": {"n": 1000, "size": 200}}});
    let answer = sse_messages(c.post_streaming(&body));
    let mut logged = 0;
    let mut answered = false;
    while let Ok(v) = answer.recv_timeout(Duration::from_secs(30)) {
        if v["method"] == "notifications/message" {
            logged += 1;
        } else if v["id"] == 9 {
            answered = true;
            break;
        }
    }
    assert!(answered, "the call was answered");
    assert_eq!(logged, 1000, "every message of the burst before the answer");
    assert_eq!(messages_dropped(&admin_base(&gw)), 0, "nothing was dropped");
}

/// The state of the gateway's side of the connection from `client_port` to `gateway_port`, from the
/// kernel's table (`01` is ESTABLISHED); `None` when there is none.
fn server_side_state(gateway_port: u16, client_port: u16) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default()
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 3 && port(f[1]) == Some(gateway_port) && port(f[2]) == Some(client_port))
            .then(|| f[3].to_owned())
    })
}

#[test]
fn a_stream_whose_client_stopped_reading_no_longer_holds_its_connection() {
    let dir = TempDir::new("slow-reader");
    let gw = gateway(&config("stream_write_timeout_ms = 1000"), &dir);
    let base = gw.url.trim_end_matches("/mcp").to_owned();
    wait_ready(&base);
    let mut c = logging_session(&gw.url);
    let addr = base.trim_start_matches("http://").to_owned();
    let gateway_port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();

    // A GET stream its client never reads.
    let mut stream = TcpStream::connect(&addr).unwrap();
    let client_port = stream.local_addr().unwrap().port();
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        c.session
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server_side_state(gateway_port, client_port).as_deref(),
        Some("01"),
        "the stream is open"
    );
    // More than the kernel's buffers hold on both sides (12 MiB).
    let r = c.request(
        "tools/call",
        json!({"name": "b__burst_later", "arguments": {"n": 3000, "size": 4096}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline
        && server_side_state(gateway_port, client_port).as_deref() == Some("01")
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ne!(
        server_side_state(gateway_port, client_port).as_deref(),
        Some("01"),
        "the gateway closed the stream's connection"
    );
    // What the client reads ends (a reset, after what was delivered), never hangs.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut sink = vec![0u8; 1 << 16];
    let ended = loop {
        match stream.read(&mut sink) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                break false;
            }
            Err(_) => break true,
        }
    };
    assert!(ended, "the client's connection ended");
    // The session itself lives on: it can open a new stream and be answered.
    assert_eq!(c.request("ping", json!({})).status, 200);
    let log = gw.log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("client stopped reading") || l.contains("messages dropped")),
        "{log:?}"
    );
    assert!(messages_dropped(&admin_base(&gw)).as_u64().unwrap_or(0) > 0);
}
