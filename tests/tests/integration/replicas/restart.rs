//! A gateway restarted (or replaced) in the middle of a client's session serves the client's next request as
//! if nothing happened, when both processes share a key ring: the Python and TypeScript SDK clients, each in
//! one session, call before the restart and after it. Without a ring, the same restart ends the session (404).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::interop::peers::{ScriptClient, deps, script_client};
use crate::support::{
    JSON_HEADERS, LegacyClient, Running, TempDir, admin_base, free_port, mcpgw, post_raw, start,
    wait_ready,
};

/// The mock, and the admin listener whose `/readyz` counts the sessions resumed.
const CONFIG: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n[admin]\nlisten = \"127.0.0.1:0\"\n";

/// `mcpgw serve` on `port` with `config`, the ring (if any) in `MCPGW_SESSION_KEYS`.
fn serve(config: &Path, port: u16, ring: Option<&str>) -> Running {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "info,mcpgw::session=debug")
        .env_remove("MCPGW_SESSION_KEYS");
    if let Some(ring) = ring {
        cmd.env("MCPGW_SESSION_KEYS", ring);
    }
    let gw = start(cmd, "mcpgw listening on ");
    wait_ready(&base(port));
    gw
}

fn base(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// A fresh ring line, from `mcpgw cluster new-key`.
fn new_key() -> String {
    let out = Command::new(mcpgw())
        .args(["cluster", "new-key"])
        .output()
        .expect("mcpgw cluster new-key runs");
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let (id, key) = line.split_once(':').expect("ID:BASE64");
    assert!(!id.is_empty() && key.len() == 44, "{line}");
    line
}

fn wait_for(path: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn call(session: &mut LegacyClient, text: &str) -> crate::support::Reply {
    session.request(
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": text}}),
    )
}

#[test]
fn a_restart_with_the_same_key_ring_loses_no_session_and_without_one_loses_it() {
    let dir = TempDir::new("restart-raw");
    let config = dir.file("mcpgw.toml", CONFIG);
    let port = free_port();
    let url = format!("{}/mcp", base(port));
    let ring = new_key();

    // With the ring: the session's next request after a kill -9 and a new process is answered.
    let gw = serve(&config, port, Some(&ring));
    // A ring without Redis: said at start, since DELETE and idle expiry then hold per replica only.
    assert!(
        gw.early
            .iter()
            .chain(&gw.log_lines())
            .any(|l| l.contains("a key ring without [cluster] redis")),
        "the start-up log says what a ring without redis cannot share"
    );
    let mut session = LegacyClient::connect(&url, "2025-06-18");
    assert!(
        session.session.len() < 300,
        "{} characters",
        session.session.len()
    );
    assert_eq!(
        call(&mut session, "before").json()["result"]["content"][0]["text"],
        "before"
    );
    drop(gw);
    let gw = serve(&config, port, Some(&ring));
    let after = call(&mut session, "after");
    assert_eq!(after.status, 200, "{after:?}");
    assert_eq!(
        after.json()["result"]["content"][0]["text"],
        "after",
        "{after:?}"
    );
    let ready = wait_ready(&admin_base(&gw));
    assert_eq!(ready["sessions_resumed"], 1, "{ready}");

    // A forged or altered id is 404 exactly like an unknown one.
    let mut altered = session.session.clone().into_bytes();
    let mid = altered.len() / 2;
    altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let unknown = "0".repeat(64);
    let refusals: Vec<(u16, Value)> = [altered.as_str(), unknown.as_str()]
        .into_iter()
        .map(|id| {
            let mut headers = JSON_HEADERS.to_vec();
            headers.push(("Mcp-Session-Id", id));
            headers.push(("MCP-Protocol-Version", "2025-06-18"));
            let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
            let r = post_raw(&url, &headers, body);
            (r.status, r.json())
        })
        .collect();
    assert_eq!(
        refusals[0], refusals[1],
        "no oracle between forged and unknown"
    );
    assert_eq!(refusals[0].0, 404);

    // DELETE ends it for good, here.
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", session.session.as_str()));
    let deleted = crate::support::client()
        .delete(&url)
        .header("Mcp-Session-Id", &session.session)
        .send()
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(call(&mut session, "gone").status, 404);
    drop(gw);

    // Without a ring: the same restart ends the session (each process seals with a key of its own).
    let gw = serve(&config, port, None);
    let mut session = LegacyClient::connect(&url, "2025-06-18");
    assert_eq!(call(&mut session, "before").status, 200);
    drop(gw);
    let _gw = serve(&config, port, None);
    assert_eq!(call(&mut session, "after").status, 404);
}

/// One SDK client in one session, paused between its calls while the gateway is replaced.
struct Paused {
    marker: PathBuf,
    go: PathBuf,
    thread: std::thread::JoinHandle<Result<Value, String>>,
}

fn paused_client(client: ScriptClient, url: &str, dir: &TempDir, mode: &str) -> Paused {
    let deps = deps("replicas::restart").expect("interop peers");
    let marker = dir.0.join(format!("{client:?}.paused"));
    let go = dir.0.join(format!("{client:?}.go"));
    let args: Vec<String> = [
        "--call",
        "m__echo",
        r#"{"text":"hello"}"#,
        "--call",
        "m__add",
        r#"{"a":2,"b":3}"#,
        "--pause",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([marker.display().to_string(), go.display().to_string()])
    .collect();
    let (url, mode) = (url.to_owned(), mode.to_owned());
    let thread = std::thread::spawn(move || script_client(&deps, client, &url, &mode, &args));
    Paused { marker, go, thread }
}

#[test]
fn python_and_typescript_clients_keep_their_sessions_across_a_restart() {
    if deps("replicas::restart").is_none() {
        return;
    }
    let dir = TempDir::new("restart-sdk");
    let ring = format!("{}\n", new_key());
    let keys = dir.file("keys", &ring);
    let config = dir.file(
        "mcpgw.toml",
        &format!(
            "{CONFIG}[cluster]\nkeys_file = {:?}\n",
            keys.display().to_string()
        ),
    );
    let port = free_port();
    let url = format!("{}/mcp", base(port));
    let gw = serve(&config, port, None);
    let clients = [
        paused_client(ScriptClient::Python, &url, &dir, "legacy"),
        paused_client(ScriptClient::TypeScript, &url, &dir, "legacy"),
    ];
    for c in &clients {
        wait_for(&c.marker, Duration::from_secs(60));
    }
    let started_before = gw
        .log_lines()
        .iter()
        .filter(|l| l.contains("session started"))
        .count();
    assert!(started_before >= 2, "each client initialized once");
    // Replaced: SIGTERM, drained, a new process on the same port with the same ring.
    gw.signal("TERM");
    let mut gw = gw;
    assert!(
        gw.wait_exit(Duration::from_secs(30)).is_some(),
        "the gateway stops"
    );
    let gw = serve(&config, port, None);
    for c in &clients {
        std::fs::write(&c.go, "").unwrap();
    }
    for c in clients {
        let report = c.thread.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
        for (phase, calls) in [
            ("before", &report["calls"]),
            ("after", &report["callsAfterPause"]),
        ] {
            let calls = calls
                .as_array()
                .unwrap_or_else(|| panic!("{phase}: {report}"));
            assert_eq!(calls.len(), 2, "{phase}: {report}");
            for call in calls {
                assert_eq!(call["ok"], true, "{phase}: {report}");
                assert_eq!(call["isError"], false, "{phase}: {report}");
            }
            assert_eq!(calls[0]["text"], "hello", "{phase}: {report}");
            assert!(
                calls[1]["text"].as_str().unwrap_or_default().contains('5'),
                "{phase}: {report}"
            );
        }
    }
    // The new process rebuilt both sessions from their ids; no client started a new one.
    let ready = wait_ready(&admin_base(&gw));
    assert_eq!(ready["sessions_resumed"], 2, "{ready}");
    let log = gw.log_lines();
    assert!(
        !log.iter().any(|l| l.contains("session started")),
        "a client initialized again:\n{}",
        log.join("\n")
    );
}
