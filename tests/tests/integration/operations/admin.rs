//! The admin view of a real gateway (issue 17 §4): `mcpgw serve` with `[admin] listen` on a loopback port
//! chosen at run time and the stdio mock as its backend; its JSON endpoints and their refusals over real
//! sockets; and its page in Debian's headless chromium, driven by playwright-core
//! (`tests/fixtures/admin/drive_page.mjs`): the page loads and shows the gateway's backend and its legacy
//! session, shows a session created after it loaded (bounded wait), and a screenshot of it is saved as
//! `<target>/test-artifacts/admin.png`.
//!
//! The browser test needs `tests/fixtures/admin/setup.sh` (Node 22, playwright-core) and `chromium`
//! (`.ci/run` installs both); skipped with `MCPGW_SKIP_INTEROP=1`, like the other tests of installed peers.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// The admin view's base URL, as the gateway printed it at start (`mcpgw admin view on URL/admin/`).
fn admin_url(gw: &Running) -> String {
    let line = gw
        .early
        .iter()
        .find_map(|l| l.split("mcpgw admin view on ").nth(1))
        .unwrap_or_else(|| panic!("no admin line in {:?}", gw.early));
    line.trim().trim_end_matches("/admin/").to_owned()
}

fn start_with_admin(dir: &TempDir) -> (Running, String) {
    let config = format!("[admin]\nlisten = \"127.0.0.1:0\"\n{}", one_stdio_mock(&[]));
    let gw = gateway(&config, dir);
    wait_ready(&gw.url.replace("/mcp", ""));
    let admin = admin_url(&gw);
    (gw, admin)
}

/// A legacy session with this client name; its id.
fn session(mcp: &str, client: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": client, "version": "7.1"}}});
    let reply = post_raw(mcp, &JSON_HEADERS, body.to_string());
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.header("mcp-session-id").expect("a session id")
}

#[test]
fn the_admin_endpoints_answer_on_their_own_listener_and_refuse_other_sites() {
    let dir = TempDir::new("admin-json");
    let (gw, admin) = start_with_admin(&dir);
    let id = session(&gw.url, "json-client");
    let http = client();
    let get = |path: &str| {
        let r = http.get(format!("{admin}{path}")).send().expect("GET");
        (
            r.status().as_u16(),
            r.json::<Value>().unwrap_or(Value::Null),
        )
    };
    let (status, sessions) = get("/admin/sessions");
    assert_eq!(status, 200, "{sessions}");
    assert_eq!(sessions["total"], 1);
    assert_eq!(sessions["sessions"][0]["client"]["name"], "json-client");
    assert!(
        !sessions.to_string().contains(&id),
        "only a prefix of the id"
    );
    let (status, backends) = get("/admin/backends");
    assert_eq!(status, 200);
    assert_eq!(backends["backends"][0]["name"], "mock");
    assert_eq!(backends["backends"][0]["transport"], "stdio");
    assert_eq!(backends["backends"][0]["state"], "ready");
    let (_, catalog) = get("/admin/catalog");
    assert!(
        !catalog["tools"].as_array().unwrap().is_empty(),
        "{catalog}"
    );
    let (_, config) = get("/admin/config");
    assert_eq!(config["backend"][0]["name"], "mock");
    // The MCP listener does not serve the admin view.
    let main = gw.url.replace("/mcp", "");
    let r = http.get(format!("{main}/admin/sessions")).send().unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // Refusals: a cross-site read, a POST from another origin, a POST without the admin header.
    let r = http
        .get(format!("{admin}/admin/sessions"))
        .header("Origin", "http://evil.example")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = http
        .post(format!("{admin}/admin/reload"))
        .header("X-Mcpgw-Admin", "1")
        .header("Origin", "http://evil.example")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = http
        .post(format!("{admin}/admin/reload"))
        .header("Content-Type", "text/plain")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = http
        .post(format!("{admin}/admin/reload"))
        .header("X-Mcpgw-Admin", "1")
        .header("Origin", admin.as_str())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let reloaded: Value = r.json().unwrap();
    assert!(
        reloaded["reloaded"].is_array() && reloaded["failed"] == json!([]),
        "{reloaded}"
    );
}

#[test]
fn without_auth_an_admin_listener_beyond_loopback_stops_start_up_naming_the_field() {
    let dir = TempDir::new("admin-beyond");
    let path = dir.file(
        "mcpgw.toml",
        &format!("[admin]\nlisten = \"0.0.0.0:0\"\n{}", one_stdio_mock(&[])),
    );
    let out = Command::new(mcpgw())
        .args(["serve", "--config"])
        .arg(path)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .expect("mcpgw runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("admin.listen") && err.contains("loopback"),
        "{err}"
    );
}

/// `tests/fixtures/admin`: Node 22 and playwright-core, or `None` when skipped.
fn browser_fixture() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("MCPGW_SKIP_INTEROP").is_ok_and(|v| v == "1") {
        println!("operations::admin: the browser test is skipped (MCPGW_SKIP_INTEROP=1)");
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/admin");
    let node = dir.join(".bin/node");
    let playwright = dir.join("node_modules/playwright-core/package.json");
    assert!(
        node.exists() && playwright.exists(),
        "run tests/fixtures/admin/setup.sh first (Node 22 and playwright-core), and apt-get install chromium"
    );
    Some((node, dir.join("drive_page.mjs")))
}

/// Where test artifacts go: `<target>/test-artifacts/`.
fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("the artifacts directory");
    dir
}

/// The driver's next line starting with `word`, within `within`; panics with what it said otherwise.
fn expect_line(rx: &mpsc::Receiver<String>, word: &str, within: Duration) -> String {
    let deadline = std::time::Instant::now() + within;
    let mut said = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => match line.strip_prefix(word) {
                Some(rest) => return rest.trim().to_owned(),
                None if line.starts_with("ERROR") => {
                    panic!("the page driver: {line} (after {said:?})")
                }
                None => said.push(line),
            },
            Err(_) => break,
        }
    }
    panic!("the page driver said no {word} within {within:?}: {said:?}");
}

#[test]
fn the_admin_page_shows_the_gateway_live_in_headless_chromium() {
    let Some((node, driver)) = browser_fixture() else {
        return;
    };
    let dir = TempDir::new("admin-page");
    let (gw, admin) = start_with_admin(&dir);
    let first = session(&gw.url, "first-client");
    let screenshot = artifacts().join("admin.png");
    let _ = std::fs::remove_file(&screenshot);
    let mut child = Command::new(&node)
        .arg(&driver)
        .arg(format!("{admin}/admin/"))
        .arg(&screenshot)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs the page driver");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Killed(child);

    // Loaded: the backend and the first session, as the running gateway has them.
    let loaded: Value =
        serde_json::from_str(&expect_line(&rx, "LOADED", Duration::from_secs(90))).unwrap();
    assert!(
        loaded.get("problems").is_none(),
        "the page's console: {loaded}"
    );
    assert_eq!(loaded["status"], "ready", "{loaded}");
    assert!(
        loaded["version"]
            .as_str()
            .unwrap()
            .starts_with(|c: char| c.is_ascii_digit()),
        "{loaded}"
    );
    // Without [auth], no token is asked for; nothing went wrong.
    assert_eq!(
        (&loaded["login_shown"], &loaded["message_shown"]),
        (&json!(false), &json!(false)),
        "{loaded}"
    );
    let backend = &loaded["backends"][0];
    assert_eq!(backend["key"], "mock", "{loaded}");
    let cells: Vec<&str> = backend["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        (cells[0], cells[1], cells[3]),
        ("mock", "stdio", "ready"),
        "{loaded}"
    );
    let sessions = loaded["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{loaded}");
    assert!(
        sessions[0]["key"]
            .as_str()
            .unwrap()
            .starts_with(&first[..8]),
        "{loaded}"
    );
    assert!(
        sessions[0]["cells"][1]
            .as_str()
            .unwrap()
            .starts_with("first-client 7.1")
    );

    // A session created now appears on the page (it polls every second; the wait is bounded).
    let later = session(&gw.url, "later-client");
    writeln!(stdin, "SESSION later-client {}", &later[..8]).unwrap();
    stdin.flush().unwrap();
    let seen: Value =
        serde_json::from_str(&expect_line(&rx, "SEEN", Duration::from_secs(60))).unwrap();
    assert_eq!(seen["sessions"].as_array().unwrap().len(), 2, "{seen}");
    assert_eq!(seen["sessions_count"], "2", "{seen}");
    assert!(seen.get("problems").is_none(), "the page's console: {seen}");

    // The playground: a person picks a tool, fills its argument and calls it (issue 35 §1).
    writeln!(stdin, "CALL m__echo text hello from the playground").unwrap();
    stdin.flush().unwrap();
    let called: Value =
        serde_json::from_str(&expect_line(&rx, "CALLED", Duration::from_secs(60))).unwrap();
    assert!(
        called.get("problems").is_none(),
        "the page's console: {called}"
    );
    assert_eq!(
        called["fields"],
        json!(["text (string, required)"]),
        "{called}"
    );
    let result: Value = serde_json::from_str(called["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        result["result"]["content"][0]["text"], "hello from the playground",
        "{called}"
    );
    assert_eq!(called["result_class"], "result ok", "{called}");

    let saved = expect_line(&rx, "SCREENSHOT", Duration::from_secs(60));
    let status = child.0.wait().expect("the driver ends");
    assert!(status.success(), "the page driver failed");
    let png = std::fs::read(&saved).expect("the screenshot was saved");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot: {} bytes",
        png.len()
    );
    println!("operations::admin: screenshot of the admin page: {saved}");
    drop(gw);
}
