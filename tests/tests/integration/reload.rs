//! Reloading the config of a running `mcpgw serve` (issue 17): SIGHUP and `--watch`, under load. A backend
//! is added, one removed, one renamed (its prefix changed: restarted) while calls to an unchanged backend
//! keep coming — none of them fails —, calls in flight on the removed and the renamed one finish there, the
//! removed and old names are then answered as unregistered, a legacy session opened before keeps working and
//! hears `notifications/tools/list_changed` on its stream; a config that does not validate, or whose catalog
//! collides, is refused with the reason and the old one stays.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::changes::get_stream;
use crate::support::*;

const BOUND: Duration = Duration::from_secs(30);

fn mock(name: &str, prefix: &str) -> String {
    format!(
        "[[backend]]\nname = \"{name}\"\nprefix = \"{prefix}\"\ncommand = {}\n\n",
        stdio_mock_command(&["--name", name])
    )
}

fn before() -> String {
    mock("keep", "keep") + &mock("gone", "gone") + &mock("moved", "old")
}

fn after() -> String {
    mock("keep", "keep") + &mock("moved", "new") + &mock("added", "added")
}

fn call(url: &str, tool: &str, arguments: Value) -> Reply {
    modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        &[],
    )
}

fn echoes(url: &str, tool: &str) -> bool {
    let r = call(url, tool, json!({"text": "hi"}));
    r.status == 200 && r.json()["result"]["content"][0]["text"] == "hi"
}

fn unregistered(url: &str, tool: &str) -> bool {
    let v = call(url, tool, json!({"text": "hi"})).json();
    v["error"]["code"] == -32601 && v["error"]["data"]["name"] == tool
}

/// Log lines until one contains `needle` (bounded); panics with what was seen otherwise.
fn wait_for_line(gw: &Running, needle: &str) -> String {
    let deadline = Instant::now() + BOUND;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = gw.log.recv_timeout(Duration::from_millis(200)) {
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
    }
    panic!("no log line with {needle:?} within {BOUND:?}: {seen:#?}");
}

#[test]
fn a_sighup_reload_under_load_fails_no_call_to_an_unchanged_backend() {
    let dir = TempDir::new("reload-sighup");
    let gw = gateway(&before(), &dir);
    let path = dir.0.join("mcpgw.toml");
    let mut session = LegacyClient::connect(&gw.url, "2025-06-18");
    let stream = get_stream(&gw.url, &session.session);
    assert!(echoes(&gw.url, "gone__echo") && echoes(&gw.url, "old__echo"));

    // Load on the unchanged backend, bounded in count and time.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load: Vec<_> = (0..2)
        .map(|_| {
            let (url, stop, sent, failed) =
                (gw.url.clone(), stop.clone(), sent.clone(), failed.clone());
            std::thread::spawn(move || {
                let until = Instant::now() + BOUND;
                for _ in 0..5_000 {
                    if stop.load(Ordering::Relaxed) || Instant::now() > until {
                        break;
                    }
                    sent.fetch_add(1, Ordering::Relaxed);
                    if !echoes(&url, "keep__echo") {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    // Calls in flight on the backends the reload removes and restarts.
    let in_flight: Vec<_> = ["gone__sleep", "old__sleep"]
        .into_iter()
        .map(|tool| {
            let url = gw.url.clone();
            std::thread::spawn(move || call(&url, tool, json!({"ms": 2500})))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&path, after()).unwrap();
    gw.signal("HUP");
    let reloaded = wait_for_line(&gw, "config reloaded");
    assert!(
        reloaded.contains("added=[\"added\"]")
            && reloaded.contains("removed=[\"gone\"]")
            && reloaded.contains("restarted=[\"moved\"]"),
        "{reloaded}"
    );
    // New names at once, old ones unregistered.
    assert!(echoes(&gw.url, "added__echo"), "the added backend serves");
    assert!(echoes(&gw.url, "new__echo"), "the renamed backend serves");
    assert!(
        unregistered(&gw.url, "gone__echo"),
        "a removed backend's tool"
    );
    assert!(
        unregistered(&gw.url, "old__echo"),
        "a renamed tool's old name"
    );
    for (tool, handle) in ["gone__sleep", "old__sleep"].into_iter().zip(in_flight) {
        let r = handle.join().unwrap();
        let v = r.json();
        assert!(
            r.status == 200 && v["result"].is_object() && v["result"]["isError"] != true,
            "{tool}, in flight across the reload, finished on the old backend: {r:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert!(sent > 10, "the load ran: {sent}");
    assert_eq!(
        failed, 0,
        "{failed} of {sent} calls to the unchanged backend failed"
    );
    // The session opened before the reload goes on, and heard of the change on its stream.
    let listed = session.request("tools/list", json!({}));
    assert_eq!(listed.status, 200, "{listed:?}");
    let names = listed.json()["result"]["tools"].to_string();
    assert!(
        names.contains("new__echo") && !names.contains("gone__echo"),
        "{names}"
    );
    let deadline = Instant::now() + BOUND;
    let mut heard = false;
    while !heard && Instant::now() < deadline {
        match stream.recv_timeout(Duration::from_millis(200)) {
            Ok(m) => heard = m["method"] == "notifications/tools/list_changed",
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(e) => panic!("the session's stream ended: {e}"),
        }
    }
    assert!(
        heard,
        "no notifications/tools/list_changed on the session's stream"
    );
}

#[test]
fn a_config_that_does_not_validate_or_collides_is_refused_and_the_old_one_stays() {
    let dir = TempDir::new("reload-refused");
    let gw = gateway(&before(), &dir);
    let path = dir.0.join("mcpgw.toml");
    std::fs::write(&path, "[[backend]]\nname = \"x\"\nurl = \"ftp://x\"\n").unwrap();
    gw.signal("HUP");
    let refused = wait_for_line(&gw, "config reload refused");
    assert!(refused.contains("backend[0].url"), "{refused}");
    assert!(echoes(&gw.url, "gone__echo") && echoes(&gw.url, "old__echo"));
    // `dup` exposes its tools under `keep`'s prefix: the new catalog would collide.
    std::fs::write(&path, before() + &mock("dup", "keep")).unwrap();
    gw.signal("HUP");
    let refused = wait_for_line(&gw, "config reload refused");
    assert!(
        refused.contains("catalog") && refused.contains("keep") && refused.contains("dup"),
        "{refused}"
    );
    assert!(echoes(&gw.url, "keep__echo") && echoes(&gw.url, "gone__echo"));
    assert!(unregistered(&gw.url, "dup__echo"));
}

#[test]
fn watch_reloads_when_the_file_changes() {
    let dir = TempDir::new("reload-watch");
    let gw = gateway_with(&mock("keep", "keep"), &dir, |cmd| {
        cmd.arg("--watch");
    });
    let path = dir.0.join("mcpgw.toml");
    assert!(unregistered(&gw.url, "added__echo"));
    std::fs::write(&path, mock("keep", "keep") + &mock("added", "added")).unwrap();
    wait_for_line(&gw, "config reloaded");
    assert!(echoes(&gw.url, "added__echo") && echoes(&gw.url, "keep__echo"));
}
