//! A legacy backend asks while serving a legacy client's request: its `sampling/createMessage` goes out on
//! that request's SSE stream with the gateway's id, the client's answer (a separate POST) goes back to the
//! backend, and the tool result carries what the client's model said. A client that cannot be asked gets an
//! answer all the same, without hanging.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// The longest one message may take to arrive.
const WAIT: Duration = Duration::from_secs(15);

fn gateway_with_sampling_backend(dir: &TempDir) -> Running {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sampling_server.py");
    let config = format!(
        "[[backend]]\nname = \"sampler\"\nprefix = \"\"\ncommand = [\"python3\", {:?}]\n",
        script.to_string_lossy()
    );
    gateway(&config, dir)
}

/// The text of a tool result's first content block.
fn tool_text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool result with text: {response}"))
        .to_owned()
}

#[test]
fn a_legacy_backend_asks_the_legacy_client_for_sampling_on_the_request_stream() {
    let dir = TempDir::new("backend-asks");
    let gw = gateway_with_sampling_backend(&dir);
    let mut host = LegacyClient::connect_with(&gw.url, "2025-06-18", json!({"sampling": {}}));

    // mcpgw declared to the legacy backend what it can serve for clients that declare it in turn
    let declared = host.request(
        "tools/call",
        json!({"name": "capabilities", "arguments": {}}),
    );
    let declared: Value = serde_json::from_str(&tool_text(&declared.json())).unwrap();
    assert_eq!(
        declared,
        json!({"elicitation": {"form": {}, "url": {}}, "roots": {}, "sampling": {}})
    );

    let resp = host.post_streaming(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "summarize", "arguments": {"text": "a long story"}}}));
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let stream = sse_messages(resp);

    let ask = stream.recv_timeout(WAIT).expect("the backend's request");
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let ask_id = ask["id"].as_str().expect("a string id").to_owned();
    assert!(
        ask_id.starts_with("mcpgw-ask-"),
        "the gateway's own id: {ask_id}"
    );
    assert_eq!(
        ask["params"]["messages"][0]["content"]["text"],
        "Summarize: a long story"
    );
    let answered = host.post(&json!({"jsonrpc": "2.0", "id": ask_id, "result": {
        "role": "assistant", "content": {"type": "text", "text": "short"}, "model": "test-model"}}));
    assert_eq!(answered.status, 202, "{answered:?}");

    let done = stream.recv_timeout(WAIT).expect("the tool result");
    assert_eq!(done["id"], 10, "{done}");
    assert_eq!(tool_text(&done), "summary: short");

    // a client that declared roots only is streamed, and the backend hears that it lacks sampling
    let mut rooted = LegacyClient::connect_with(&gw.url, "2025-06-18", json!({"roots": {}}));
    let started = Instant::now();
    let r = rooted.request(
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "x"}}),
    );
    assert_eq!(
        tool_text(&r.json()),
        "refused -32021: the client did not declare the sampling capability"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // a client that declared nothing is answered plainly, and the backend is refused at once, naming what
    // the client lacks
    let mut plain = LegacyClient::connect(&gw.url, "2025-06-18");
    let started = Instant::now();
    let r = plain.request(
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "x"}}),
    );
    let text = tool_text(&r.json());
    assert!(
        text.starts_with(
            "refused -32021: mcpgw cannot relay sampling/createMessage: the client did not declare \
             the sampling capability"
        ),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A 2026-07-28 client's tools/call with these client capabilities and extra params.
fn modern_call(url: &str, capabilities: Value, extra: Value) -> Reply {
    let mut params = json!({"arguments": {"text": "a long text"}});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    modern_tools_call(url, "summarize", capabilities, params, &[])
}

#[test]
fn a_legacy_backend_asks_a_modern_client_through_input_required() {
    let dir = TempDir::new("asks-modern");
    let gw = gateway_with_sampling_backend(&dir);
    // a client without the capability is told exactly what is missing
    let r = modern_call(&gw.url, json!({}), json!({}));
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32021);
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // with it, the backend's question comes back as input_required with a sealed state
    let r = modern_call(&gw.url, json!({"sampling": {}}), json!({}));
    assert_eq!(r.status, 200, "{r:?}");
    let first = r.json();
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["r0"]["method"],
        "sampling/createMessage"
    );
    let state = result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    // the retry replays the request; the gateway answers the backend's question from the client's answer
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "test-model"});
    let retry = json!({"inputResponses": {"r0": answer}, "requestState": state});
    let r = modern_call(&gw.url, json!({"sampling": {}}), retry.clone());
    assert_eq!(r.status, 200, "{r:?}");
    let done = r.json();
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "summary: short");
    // a sealed state is single-use, and a tampered one is refused before the backend is asked
    let again = modern_call(&gw.url, json!({"sampling": {}}), retry);
    assert_eq!(again.json()["error"]["code"], -32602, "{again:?}");
    let tampered = json!({"inputResponses": {"r0": answer}, "requestState": format!("{state}x")});
    let r = modern_call(&gw.url, json!({"sampling": {}}), tampered);
    assert_eq!(r.json()["error"]["code"], -32602, "{r:?}");
}
