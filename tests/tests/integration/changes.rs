//! What a backend announces reaches exactly the clients that asked: resource updates to their subscribers
//! (a legacy session's GET stream, a 2026-07-28 listen stream tagged with its subscription id), list changes
//! to every legacy session and to the listen streams that asked, after the catalog was refreshed.

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

fn gateway_with_subscribing_backend(dir: &TempDir) -> Running {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/subscribing_server.py");
    let config = format!(
        "[[backend]]\nname = \"memo\"\nprefix = \"\"\ncommand = [\"python3\", {:?}]\n",
        script.to_string_lossy()
    );
    gateway(&config, dir)
}

pub(crate) fn get_stream(url: &str, session: &str) -> Receiver<Value> {
    let resp = client()
        .get(url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    sse_messages(resp)
}

/// The next message with `method`, within a bounded wait.
fn next_with(rx: &Receiver<Value>, method: &str, within: Duration) -> Option<Value> {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(v) if v["method"] == method => return Some(v),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
    None
}

#[test]
fn resource_updates_reach_subscribers_only_and_list_changes_reach_everyone() {
    let dir = TempDir::new("changes");
    let gw = gateway_with_subscribing_backend(&dir);
    let mut subscriber = LegacyClient::connect(&gw.url, "2025-06-18");
    let mut bystander = LegacyClient::connect(&gw.url, "2025-11-25");
    let sub_stream = get_stream(&gw.url, &subscriber.session);
    let other_stream = get_stream(&gw.url, &bystander.session);

    let r = subscriber.request("resources/subscribe", json!({"uri": "memo://one"}));
    assert_eq!(r.json()["result"], json!({}), "{r:?}");
    // the backend learned of the subscription and announces an update
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let touched = bystander
            .request(
                "tools/call",
                json!({"name": "touch", "arguments": {"uri": "memo://one"}}),
            )
            .json();
        if touched["result"]["content"][0]["text"] == "subscribed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the backend never saw the subscription: {touched}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let update = next_with(
        &sub_stream,
        "notifications/resources/updated",
        Duration::from_secs(10),
    )
    .expect("the subscriber hears it");
    assert_eq!(update["params"]["uri"], "memo://one");
    assert!(
        next_with(
            &other_stream,
            "notifications/resources/updated",
            Duration::from_millis(500)
        )
        .is_none(),
        "the bystander does not"
    );

    // a 2026-07-28 listen stream for tool list changes
    let listen = client()
        .post(&gw.url)
        .header("Content-Type", "application/json")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .body(
            json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
                "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["memo://two", "nowhere://x"]}}})
            .to_string(),
        )
        .send()
        .unwrap();
    assert_eq!(listen.status().as_u16(), 200);
    let listen = sse_messages(listen);
    let ack = next_with(
        &listen,
        "notifications/subscriptions/acknowledged",
        Duration::from_secs(10),
    )
    .expect("acknowledged first");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["memo://two"]),
        "unserved URIs are left out"
    );

    // a list change: every legacy session hears it, and the listen stream that asked, tagged
    subscriber.request("tools/call", json!({"name": "grow", "arguments": {}}));
    for rx in [&sub_stream, &other_stream] {
        assert!(
            next_with(
                rx,
                "notifications/tools/list_changed",
                Duration::from_secs(10)
            )
            .is_some()
        );
    }
    let changed = next_with(
        &listen,
        "notifications/tools/list_changed",
        Duration::from_secs(10),
    )
    .expect("the listener hears it");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    let tools = bystander.request("tools/list", json!({})).json();
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"grown_0"),
        "the catalog was refreshed before the notification: {names:?}"
    );
}

/// The `notifications/message` in an answer's SSE body.
fn logs_in(reply: &Reply) -> Vec<Value> {
    reply
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|m| m["method"] == "notifications/message")
        .collect()
}

#[test]
fn log_messages_reach_only_the_clients_that_asked_at_their_level() {
    let dir = TempDir::new("changes-logs");
    let gw = gateway_with_subscribing_backend(&dir);
    let mut info = LegacyClient::connect(&gw.url, "2025-11-25");
    let mut errors_only = LegacyClient::connect(&gw.url, "2025-06-18");
    let mut silent = LegacyClient::connect(&gw.url, "2025-11-25");
    for (client, level) in [(&mut info, "info"), (&mut errors_only, "error")] {
        let r = client.request("logging/setLevel", json!({"level": level}));
        assert_eq!(r.json()["result"], json!({}), "{r:?}");
    }
    let info_stream = get_stream(&gw.url, &info.session);
    let errors_stream = get_stream(&gw.url, &errors_only.session);
    let silent_stream = get_stream(&gw.url, &silent.session);

    // a log sent while a request runs (the only one in flight on this stdio backend) is that request's:
    // on its own stream, if its client asked for that level
    let r = info.request(
        "tools/call",
        json!({"name": "log_inside", "arguments": {"tag": "a"}}),
    );
    let logs = logs_in(&r);
    assert_eq!(logs.len(), 1, "{r:?}");
    assert_eq!(logs[0]["params"]["data"], "inside a");
    assert_eq!(logs[0]["params"]["level"], "info");
    for client in [&mut errors_only, &mut silent] {
        let r = client.request(
            "tools/call",
            json!({"name": "log_inside", "arguments": {"tag": "b"}}),
        );
        assert_eq!(r.json()["result"]["content"][0]["text"], "logged", "{r:?}");
        assert!(logs_in(&r).is_empty(), "{r:?}");
    }

    // a log sent outside any request: to the sessions whose level admits it, on their GET stream
    let r = silent.request(
        "tools/call",
        json!({"name": "log_outside", "arguments": {}}),
    );
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "will log",
        "{r:?}"
    );
    let heard = next_with(
        &info_stream,
        "notifications/message",
        Duration::from_secs(10),
    )
    .expect("the info session hears the warning");
    assert_eq!(
        heard["params"]["data"], "outside",
        "request logs never go on GET streams"
    );
    assert_eq!(heard["params"]["level"], "warning");
    for (rx, who) in [
        (&errors_stream, "an error-level session"),
        (&silent_stream, "a session without a level"),
    ] {
        assert!(
            next_with(rx, "notifications/message", Duration::from_millis(700)).is_none(),
            "{who} heard it"
        );
    }
}
