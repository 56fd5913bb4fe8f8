//! URL elicitation through the pipeline (issue 36): a backend's -32042 — the mock's `jsonrpc_error` tool
//! answering it with a `data.elicitations` list, the backend counted — shaped for each kind of client: kept
//! as that JSON-RPC error for a 2025-11-25 session that declared `elicitation.url` (its completion then
//! routed to that session only), an `input_required` result for a 2026-07-28 client that declared it (the
//! accepting retry sent to the backend again, a declining one not), the URL in words elsewhere; and not
//! relayed at all, without the URL, from a backend that cannot tell principals apart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use handlers::{BackendConfig, BackendEvent, BackendHandle, InProcess};
use protocol::Notification;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::fixtures::{Counting, principal};
use super::{Exchange, InProcessGateway, header_map};
use crate::config::Config;

const CONFIG: &str = r#"
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "shared"
builtin = ["mock-backend", "--name", "shared"]
url_elicitation = "shared"

[[backend]]
name = "one"
builtin = ["mock-backend", "--name", "one"]

[[backend]]
name = "off"
builtin = ["mock-backend", "--name", "off"]
url_elicitation = "off"
"#;

const URL: &str = "https://idp.example/consent/e1";

struct Setup {
    gw: InProcessGateway,
    calls: Arc<AtomicUsize>,
    events: mpsc::Sender<BackendEvent>,
}

async fn setup() -> Setup {
    let config = Config::from_toml_str(CONFIG, Path::new("url.toml")).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let (events, rx) = mpsc::channel(64);
    let mut backends = BTreeMap::new();
    for name in ["shared", "one", "off"] {
        let server = Counting {
            mock: mock::InProcessMock::from_words(&["--name".to_owned(), name.to_owned()]).unwrap(),
            calls: calls.clone(),
        };
        let mut bc = BackendConfig::new(
            name,
            handlers::Transport::InProcess(InProcess(Arc::new(server))),
        );
        bc.client_info = crate::state::server_info();
        backends.insert(name.to_owned(), BackendHandle::start(bc, events.clone()));
    }
    let gw =
        InProcessGateway::start_with_backends_and_events(config, backends, (events.clone(), rx))
            .await
            .unwrap();
    Setup { gw, calls, events }
}

/// The arguments of a `jsonrpc_error` call answering -32042 with one URL elicitation.
fn required() -> Value {
    json!({"code": -32042, "message": "authorization required", "data": {"elicitations": [
        {"mode": "url", "elicitationId": "e1", "url": URL, "message": "Sign in to the idp"}]}})
}

/// The JSON-RPC response of an answer, sent whole or as the last message of a stream.
fn response(e: &Exchange) -> Value {
    if !e.body.is_empty() {
        return serde_json::from_slice(&e.body).unwrap_or_else(|err| panic!("{err}: {e:?}"));
    }
    let last = e
        .streamed
        .last()
        .unwrap_or_else(|| panic!("no answer: {e:?}"));
    serde_json::from_slice(last).unwrap()
}

impl Setup {
    /// A legacy session of `who` at `version` declaring `capabilities`, that asked for every log message,
    /// and its GET stream.
    async fn session(
        &self,
        who: &str,
        version: &str,
        capabilities: Value,
    ) -> (String, mpsc::Receiver<Bytes>) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": who, "version": "1"}}});
        let answer = self.legacy(who, None, version, &init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let id = answer.header("mcp-session-id").unwrap().to_owned();
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            self.legacy(who, Some(&id), version, &done).await.status,
            202
        );
        let level = json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
            "params": {"level": "debug"}});
        let set = self.legacy(who, Some(&id), version, &level).await;
        assert_eq!(response(&set)["result"], json!({}), "{set:?}");
        let (tx, stream) = mpsc::channel(64);
        let session = self.gw.gateway().sessions.peek(&id).unwrap();
        session.handle.attach_stream(tx).unwrap();
        (id, stream)
    }

    async fn legacy(
        &self,
        who: &str,
        session: Option<&str>,
        version: &str,
        body: &Value,
    ) -> Exchange {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(id) = session {
            headers.push(("Mcp-Session-Id", id));
            headers.push(("MCP-Protocol-Version", version));
        }
        let headers = header_map(&headers).unwrap();
        self.gw
            .post_as(
                principal(who, &[], &[]),
                headers,
                Bytes::from(body.to_string()),
            )
            .await
    }

    /// A legacy `tools/call` of `tool` with `arguments` in `session`.
    async fn legacy_call(
        &self,
        who: &str,
        session: &str,
        version: &str,
        tool: &str,
        arguments: Value,
    ) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        response(&self.legacy(who, Some(session), version, &call).await)
    }

    /// A 2026-07-28 `tools/call` by `who` declaring `capabilities`, with `extra` params.
    async fn modern_call(&self, who: &str, capabilities: Value, tool: &str, extra: Value) -> Value {
        let mut params = json!({"name": tool, "arguments": required(), "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
        let headers = header_map(&[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ])
        .unwrap();
        response(
            &self
                .gw
                .post_as(
                    principal(who, &[], &[]),
                    headers,
                    Bytes::from(body.to_string()),
                )
                .await,
        )
    }

    async fn complete(&self, backend: &str, id: &str) {
        let params = json!({"elicitationId": id});
        let notification = Notification::new("notifications/elicitation/complete", Some(&params));
        self.events
            .send(BackendEvent::Notification {
                backend: backend.to_owned(),
                notification,
            })
            .await
            .unwrap();
    }
}

/// The text of a tool error (and that it is one).
fn tool_error_text(answer: &Value) -> String {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn next_message(rx: &mut mpsc::Receiver<Bytes>) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a message within 20 s")
            .expect("the stream is open");
        if !message.is_empty() {
            let text = String::from_utf8_lossy(&message);
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .map_or(text.to_string(), |d| d.trim().to_owned());
            return serde_json::from_str(&data).unwrap();
        }
    }
}

#[actix_rt::test]
async fn a_2025_11_25_client_that_declared_url_gets_the_minus_32042_and_only_its_completion() {
    let s = setup().await;
    let url_caps = json!({"elicitation": {"form": {}, "url": {}}});
    let (a, mut a_stream) = s.session("tester", "2025-11-25", url_caps.clone()).await;
    let (_b, mut b_stream) = s.session("tester", "2025-11-25", url_caps).await;

    let answer = s
        .legacy_call(
            "tester",
            &a,
            "2025-11-25",
            "shared__jsonrpc_error",
            required(),
        )
        .await;
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    assert_eq!(
        answer["error"]["data"],
        required()["data"],
        "unflattened: {answer}"
    );
    assert_eq!(s.gw.gateway().url_completions.len(), 1);

    // A completion for an id never relayed, and one from another backend, go nowhere; the relayed one
    // reaches session a only. A log message sent after them shows on b's stream that nothing came before.
    s.complete("shared", "never-relayed").await;
    s.complete("one", "e1").await;
    s.complete("shared", "e1").await;
    let got = next_message(&mut a_stream).await;
    assert_eq!(got["method"], "notifications/elicitation/complete", "{got}");
    assert_eq!(got["params"]["elicitationId"], "e1");
    assert!(s.gw.gateway().url_completions.is_empty(), "used up");
    s.complete("shared", "e1").await; // again: nowhere
    let marker = json!({"level": "error", "data": "after"});
    s.events
        .send(BackendEvent::Notification {
            backend: "shared".into(),
            notification: Notification::new("notifications/message", Some(&marker)),
        })
        .await
        .unwrap();
    for stream in [&mut a_stream, &mut b_stream] {
        let next = next_message(stream).await;
        assert_eq!(
            next["method"], "notifications/message",
            "only the marker: {next}"
        );
    }
}

#[actix_rt::test]
async fn clients_that_cannot_be_asked_read_the_url_in_a_tool_error() {
    let s = setup().await;
    // (version, capabilities, what the text says besides the URL)
    let table = [
        (
            "2025-11-25",
            json!({"elicitation": {}}),
            "did not declare elicitation.url",
        ),
        ("2025-11-25", json!({}), "did not declare elicitation.url"),
        (
            "2025-06-18",
            json!({"elicitation": {"url": {}}}),
            "speaks 2025-06-18",
        ),
    ];
    for (version, caps, says) in table {
        let (session, _stream) = s.session("tester", version, caps.clone()).await;
        let answer = s
            .legacy_call(
                "tester",
                &session,
                version,
                "shared__jsonrpc_error",
                required(),
            )
            .await;
        let text = tool_error_text(&answer);
        assert!(
            text.contains(URL) && text.contains(says),
            "{version} {caps}: {text}"
        );
    }
    let answer = s
        .modern_call(
            "tester",
            json!({"elicitation": {}}),
            "shared__jsonrpc_error",
            json!({}),
        )
        .await;
    let text = tool_error_text(&answer);
    assert!(
        text.contains(URL) && text.contains("elicitation.url"),
        "{text}"
    );
    let code = &answer["result"]["_meta"]["io.mcpgw/error"]["code"];
    assert_ne!(code, -32042, "reserved on 2026-07-28: {answer}");
    assert!(
        s.gw.gateway().url_completions.is_empty(),
        "nothing to route"
    );
}

#[actix_rt::test]
async fn a_2026_07_28_client_is_asked_through_input_required_and_its_retry_goes_to_the_backend() {
    let s = setup().await;
    let caps = json!({"elicitation": {"url": {}}});
    let first = s
        .modern_call("tester", caps.clone(), "shared__jsonrpc_error", json!({}))
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"],
        json!({"u0": {"method": "elicitation/create", "params": {
            "mode": "url", "url": URL, "message": "Sign in to the idp"}}}),
        "no elicitationId on 2026-07-28"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert_eq!(s.calls.load(Ordering::SeqCst), 1);

    // Declined: answered at once, the backend not called again.
    let declined = json!({"requestState": state, "inputResponses": {"u0": {"action": "decline"}}});
    let answer = s
        .modern_call(
            "tester",
            caps.clone(),
            "shared__jsonrpc_error",
            declined.clone(),
        )
        .await;
    assert!(tool_error_text(&answer).contains("declined"), "{answer}");
    assert_eq!(s.calls.load(Ordering::SeqCst), 1);

    // Another principal cannot use the state; its owner's accepting retry reaches the backend (which,
    // being the mock, asks again: a fresh input_required).
    let first = s
        .modern_call("tester", caps.clone(), "shared__jsonrpc_error", json!({}))
        .await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let accepted = json!({"requestState": state, "inputResponses": {"u0": {"action": "accept"}}});
    let theirs = s
        .modern_call(
            "mallory",
            caps.clone(),
            "shared__jsonrpc_error",
            accepted.clone(),
        )
        .await;
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    let calls = s.calls.load(Ordering::SeqCst);
    let again = s
        .modern_call("tester", caps, "shared__jsonrpc_error", accepted.clone())
        .await;
    assert_eq!(
        s.calls.load(Ordering::SeqCst),
        calls + 1,
        "the retry went to the backend"
    );
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    assert_ne!(again["result"]["requestState"], accepted["requestState"]);
}

#[actix_rt::test]
async fn a_backend_that_cannot_tell_principals_apart_has_its_url_elicitations_withheld() {
    let s = setup().await;
    let url_caps = json!({"elicitation": {"url": {}}});
    let (session, _stream) = s.session("tester", "2025-11-25", url_caps.clone()).await;
    for (backend, says) in [
        ("one", "one session and one credential"),
        ("off", "url_elicitation = \"off\""),
    ] {
        let tool = format!("{backend}__jsonrpc_error");
        let legacy = s
            .legacy_call("tester", &session, "2025-11-25", &tool, required())
            .await;
        let modern = s
            .modern_call("tester", url_caps.clone(), &tool, json!({}))
            .await;
        for answer in [legacy, modern] {
            let text = tool_error_text(&answer);
            assert!(
                text.contains(says) && text.contains("did not pass on"),
                "{backend}: {text}"
            );
            assert!(
                !text.contains("idp.example"),
                "the URL is not relayed: {text}"
            );
        }
    }
    assert!(s.gw.gateway().url_completions.is_empty());
}
