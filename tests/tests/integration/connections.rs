//! Client connections (issue 11 §3): many idle ones do not exhaust the gateway's open files, and beyond
//! `[server] max_connections` a new one is closed at once instead of waiting in the backlog.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// The built-in mock (no child process, so the gateway's descriptors are its own), tools `m__*`.
const BUILTIN_MOCK: &str =
    "[[backend]]\nname = \"mock\"\nprefix = \"m\"\nbuiltin = [\"mock-backend\"]\n";

fn socket_addr(url: &str) -> SocketAddr {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http:// URL");
    authority.parse().expect("a socket address")
}

/// Opens a connection, sends one `GET /healthz` and reads its answer; the connection stays open (keep-alive)
/// for the caller. Errors (or an answer that is not 200 within `wait`) are returned as text.
fn idle_connection(addr: SocketAddr, wait: Duration) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect_timeout(&addr, wait).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(wait)).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    // The answer is small and has a Content-Length: its end is the end of its body.
    while !complete(&got) {
        match s.read(&mut buf) {
            Ok(0) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&got))),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("no answer within {wait:?}: {e}")),
        }
    }
    if got.starts_with(b"HTTP/1.1 200") {
        Ok(s)
    } else {
        Err(format!("answered {:?}", String::from_utf8_lossy(&got)))
    }
}

fn complete(got: &[u8]) -> bool {
    let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    got.len() >= end + 4 + length
}

/// "Max open files" of a process: (soft, hard).
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut words = line.split_whitespace().skip(3);
    (
        words.next().unwrap().to_owned(),
        words.next().unwrap().to_owned(),
    )
}

#[test]
fn idle_connections_beyond_the_soft_open_files_limit_leave_the_gateway_serving() {
    // The gateway starts with a soft limit of 128 open files (hard 4096), as a system's default of 1024 but
    // smaller, and gets more idle connections than that.
    const SOFT: u32 = 128;
    const IDLE: usize = 300;
    let dir = TempDir::new("open-files");
    let config = dir.file(
        "mcpgw.toml",
        &format!("[server]\nworkers = 2\n\n{BUILTIN_MOCK}"),
    );
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--nofile={SOFT}:4096"))
        .arg("--")
        .arg(mcpgw())
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"]);
    let gw = start(cmd, "mcpgw listening on ");
    assert_eq!(
        open_files_limit(gw.pid()),
        ("4096".to_owned(), "4096".to_owned()),
        "the soft limit is raised to the hard one"
    );
    let addr = socket_addr(&gw.url);
    let started = Instant::now();
    let mut idle = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        // Each answered within 2 s: well before the gateway's 5 s keep-alive closes the first ones, which
        // would free descriptors and let a gateway at its limit accept again.
        match idle_connection(addr, Duration::from_secs(2)) {
            Ok(s) => idle.push(s),
            Err(e) => panic!("idle connection {i} (soft limit {SOFT}): {e}"),
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{IDLE} connections took {:?}",
        started.elapsed()
    );
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": "still serving"}}),
        &[],
    );
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "still serving",
        "{r:?}"
    );
    drop(idle);
}

/// Reads from a connection the gateway should close: `Ok(elapsed)` when it read end-of-file or a reset.
fn closed_within(s: &mut TcpStream, wait: Duration) -> Result<Duration, String> {
    let t0 = Instant::now();
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        Ok(0) => Ok(t0.elapsed()),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            ) =>
        {
            Ok(t0.elapsed())
        }
        Ok(n) => Err(format!("read {:?}", String::from_utf8_lossy(&buf[..n]))),
        Err(e) => Err(format!("still open after {:?}: {e}", t0.elapsed())),
    }
}

#[test]
fn connections_beyond_max_connections_are_closed_at_once() {
    const MAX: usize = 20;
    let dir = TempDir::new("max-connections");
    let gw = gateway(
        &format!("[server]\nworkers = 2\nmax_connections = {MAX}\n\n{BUILTIN_MOCK}"),
        &dir,
    );
    let addr = socket_addr(&gw.url);
    let wait = Duration::from_secs(2);
    let mut open: Vec<TcpStream> = (0..MAX)
        .map(|i| idle_connection(addr, wait).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    // One more, on either worker: closed at once, while it has sent nothing (not left in the backlog, nor
    // held until the gateway's 5 s request timeout).
    for attempt in 0..4 {
        let mut extra = TcpStream::connect_timeout(&addr, wait).unwrap();
        let took = closed_within(&mut extra, wait).unwrap_or_else(|e| {
            panic!(
                "connection {} beyond {MAX} (attempt {attempt}): {e}",
                MAX + 1
            )
        });
        assert!(took < Duration::from_secs(1), "closed after {took:?}");
    }
    // And one that sends a request is not answered either.
    assert!(idle_connection(addr, wait).is_err());
    // The ones open are still served.
    let mut first = open.remove(0);
    first
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 64];
    let n = first.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
    // Once some close, new connections are served again.
    drop(first);
    open.truncate(MAX - 5);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut again = Vec::new();
    while again.len() < 5 {
        match idle_connection(addr, wait) {
            Ok(s) => again.push(s),
            Err(e) if Instant::now() > deadline => panic!("after 5 closed: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // The bound holds again with those five.
    let mut extra = TcpStream::connect_timeout(&addr, wait).unwrap();
    closed_within(&mut extra, wait).unwrap();
}
