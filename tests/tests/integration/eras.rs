//! Both eras through the gateway, on every transport: legacy sessions of each generation (Streamable HTTP,
//! 2024-11-05 HTTP+SSE, stdio), modern stateless requests, batches, the GET stream and DELETE.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

fn two_backends(dir: &TempDir) -> (Running, Running) {
    let http = http_mock(&["--name", "remote"]);
    let config = format!(
        "{}\n[[backend]]\nname = \"remote\"\nprefix = \"h\"\nurl = \"{}\"\n",
        one_stdio_mock(&["--name", "local"]),
        http.url
    );
    (gateway(&config, dir), http)
}

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn legacy_sessions_of_every_generation_list_and_call_both_backends() {
    let dir = TempDir::new("eras-legacy");
    let (gw, _http) = two_backends(&dir);
    for version in LEGACY {
        let mut c = LegacyClient::connect(&gw.url, version);
        let list = c.request("tools/list", json!({})).json();
        let names = tool_names(&list["result"]);
        assert!(
            names.contains(&"m__echo".to_owned()) && names.contains(&"h__echo".to_owned()),
            "{version}: {names:?}"
        );
        assert!(
            list["result"].get("resultType").is_none(),
            "{version}: no 2026 fields for legacy clients"
        );
        for tool in ["m__echo", "h__echo"] {
            let r = c
                .request(
                    "tools/call",
                    json!({"name": tool, "arguments": {"text": "hi"}}),
                )
                .json();
            assert_eq!(
                r["result"]["content"][0]["text"], "hi",
                "{version} {tool}: {r}"
            );
            assert_ne!(r["result"]["isError"], true);
        }
        let r = c.request("ping", json!({})).json();
        assert_eq!(r["result"], json!({}));
    }
}

#[test]
fn modern_requests_are_stateless_and_stamped() {
    let dir = TempDir::new("eras-modern");
    let (gw, _http) = two_backends(&dir);
    let d = modern_request(&gw.url, "server/discover", json!({}), &[]);
    assert_eq!(d.status, 200, "{d:?}");
    let d = d.json();
    let versions = d["result"]["supportedVersions"].as_array().unwrap();
    assert_eq!(versions.len(), 5);
    assert_eq!(d["result"]["resultType"], "complete");
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcpgw"
    );
    assert!(d["result"]["ttlMs"].is_u64() && d["result"]["cacheScope"].is_string());
    for tool in ["m__echo", "h__echo"] {
        let r = modern_request(
            &gw.url,
            "tools/call",
            json!({"name": tool, "arguments": {"text": "é ok"}}),
            &[],
        );
        assert_eq!(r.status, 200, "{r:?}");
        let r = r.json();
        assert_eq!(r["result"]["content"][0]["text"], "é ok");
        assert_eq!(r["result"]["resultType"], "complete");
        assert!(r.get("id").is_some());
    }
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    assert!(tool_names(&list["result"]).contains(&"h__regional".to_owned()));
    // no session was minted for modern requests
    let r = modern_request(&gw.url, "tools/list", json!({}), &[]);
    assert!(r.header("mcp-session-id").is_none());
}

#[test]
fn x_mcp_header_arguments_are_mirrored_both_hops() {
    let dir = TempDir::new("eras-headers");
    let (gw, _http) = two_backends(&dir);
    // the client must send Mcp-Param-Region for the gateway's copy of the annotation...
    let missing = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "h__regional", "arguments": {"region": "eu", "text": "x"}}),
        &[],
    );
    assert_eq!(missing.status, 400, "{missing:?}");
    assert_eq!(missing.json()["error"]["code"], -32020);
    // ...and the gateway sends the backend its own header (the HTTP mock validates it, so success proves it)
    let ok = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "h__regional", "arguments": {"region": "eu", "text": "x"}}),
        &[("Mcp-Param-Region", "eu")],
    );
    assert_eq!(ok.status, 200, "{ok:?}");
    let text = ok.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("region=eu"), "{text}");
}

#[test]
fn batches_on_2025_03_26() {
    let dir = TempDir::new("eras-batch");
    let (gw, _http) = two_backends(&dir);
    let mut c = LegacyClient::connect(&gw.url, "2025-03-26");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "m__echo", "arguments": {"text": "a"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ]);
    let r = c.post(&batch).json();
    let items = r.as_array().expect("a JSON array of responses");
    assert_eq!(items.len(), 2);
    let one = items.iter().find(|i| i["id"] == 1).unwrap();
    assert_eq!(one["result"]["content"][0]["text"], "a");
    let two = items.iter().find(|i| i["id"] == 2).unwrap();
    assert_eq!(two["error"]["code"], -32601);
}

#[test]
fn get_stream_and_delete_end_the_session() {
    let dir = TempDir::new("eras-delete");
    let (gw, _http) = two_backends(&dir);
    let c = LegacyClient::connect(&gw.url, "2025-06-18");
    let stream = client()
        .get(&gw.url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &c.session)
        .send()
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    drop(stream);
    let del = client()
        .delete(&gw.url)
        .header("Mcp-Session-Id", &c.session)
        .send()
        .unwrap();
    assert_eq!(del.status().as_u16(), 204);
    let mut c = c;
    let after = c.request("tools/list", json!({}));
    assert_eq!(after.status, 404, "{after:?}");
    // modern GET and DELETE are 405
    let get = client()
        .get(&gw.url)
        .header("Accept", "text/event-stream")
        .send()
        .unwrap();
    assert_eq!(get.status().as_u16(), 405);
}

#[test]
fn http_sse_transport_of_2024_11_05() {
    let dir = TempDir::new("eras-sse");
    let (gw, _http) = two_backends(&dir);
    let base = gw.url.trim_end_matches("/mcp").to_owned();
    let stream = client()
        .get(format!("{base}/sse"))
        .header("Accept", "text/event-stream")
        .send()
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_data = |rx: &std::sync::mpsc::Receiver<String>| -> String {
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("an SSE line in time");
            if let Some(d) = line.strip_prefix("data: ") {
                return d.to_owned();
            }
        }
    };
    let endpoint = next_data(&rx);
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");
    let post = |body: Value| {
        post_raw(
            &format!("{base}{endpoint}"),
            &[("Content-Type", "application/json")],
            body.to_string(),
        )
    };
    let r = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}}),
    );
    assert_eq!(r.status, 202);
    let init: Value = serde_json::from_str(&next_data(&rx)).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).status,
        202
    );
    post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "m__echo", "arguments": {"text": "via sse"}}}),
    );
    let call: Value = serde_json::from_str(&next_data(&rx)).unwrap();
    assert_eq!(call["id"], 2);
    assert_eq!(call["result"]["content"][0]["text"], "via sse");
}

#[test]
fn stdio_mode_serves_both_eras() {
    let dir = TempDir::new("eras-stdio");
    let config = dir.file("mcpgw.toml", &one_stdio_mock(&[]));
    let mut gw = StdioGateway::start(&config);
    let mut ask = |v: Value| gw.ask(&v);
    let modern = ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "m__echo", "arguments": {"text": "stdio modern"}}}),
    );
    assert_eq!(
        modern["result"]["content"][0]["text"], "stdio modern",
        "{modern}"
    );
    assert_eq!(modern["result"]["resultType"], "complete");
    let init = ask(
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let legacy = ask(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "m__echo", "arguments": {"text": "stdio legacy"}}}),
    );
    assert_eq!(legacy["result"]["content"][0]["text"], "stdio legacy");
    assert!(legacy["result"].get("resultType").is_none());
    let garbage = ask(json!("not a request"));
    assert_eq!(garbage["error"]["code"], -32600);
    let status = gw.close_and_wait(Duration::from_secs(20));
    assert!(status.is_some(), "mcpgw --stdio exits when stdin closes");
}

#[test]
fn a_builtin_backend_serves_both_eras_from_inside_the_gateway() {
    let dir = TempDir::new("eras-builtin");
    let config = "[[backend]]\nname = \"inside\"\nprefix = \"in\"\nbuiltin = [\"mock-backend\", \"--name\", \"inside\", \"--tools\", \"2\"]\n";
    let gw = gateway(config, &dir);
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    let names = tool_names(&list["result"]);
    assert!(
        names.contains(&"in__echo".to_owned()) && names.contains(&"in__tool_1".to_owned()),
        "{names:?}"
    );
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "in__echo", "arguments": {"text": "from inside"}}),
        &[],
    )
    .json();
    assert_eq!(r["result"]["content"][0]["text"], "from inside", "{r}");
    // a tool failure is still a tool error, a resource failure a JSON-RPC error
    let r = modern_request(
        &gw.url,
        "tools/call",
        json!({"name": "in__fail", "arguments": {}}),
        &[],
    )
    .json();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = modern_request(
        &gw.url,
        "resources/read",
        json!({"uri": "mock://inside/items/nope/more"}),
        &[],
    );
    assert!(r.json().get("error").is_some(), "{r:?}");
    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let r = legacy
        .request("resources/read", json!({"uri": "mock://inside/readme"}))
        .json();
    assert!(r["result"]["contents"][0]["text"].is_string(), "{r}");
    let r = legacy
        .request(
            "tools/call",
            json!({"name": "in__echo", "arguments": {"text": "legacy"}}),
        )
        .json();
    assert_eq!(r["result"]["content"][0]["text"], "legacy", "{r}");
}

#[test]
fn a_builtin_backend_with_flags_that_cannot_apply_is_a_config_error() {
    let dir = TempDir::new("eras-builtin-bad");
    for (builtin, why) in [
        (
            "[\"mock-backend\", \"--crash-after\", \"1\"]",
            "--crash-after",
        ),
        (
            "[\"nope\"]",
            "builtin names \"nope\", which is not built into this binary",
        ),
    ] {
        let path = dir.file(
            "bad.toml",
            &format!("[[backend]]\nname = \"b\"\nbuiltin = {builtin}\n"),
        );
        let out = Command::new(mcpgw())
            .args(["serve", "--config"])
            .arg(&path)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{builtin}");
        assert!(
            stderr.contains("builtin") && stderr.contains(why),
            "{builtin}: {stderr}"
        );
    }
}
