//! The pipeline in-process, with the builtin mock as the backend: 2026-07-28 calls and legacy sessions
//! answered through validation, the middleware chain, the dispatch and shaping; `allow_methods` refusing
//! before the backend is called (the mock behind a counter of the `tools/call` requests it receives, with a
//! control showing the counter counts); `access_log` and `allow_methods` chained; a batch with a refused
//! and an allowed entry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use handlers::{BackendConfig, BackendHandle, InProcess};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::fixtures::Counting;
use super::{Exchange, InProcessGateway, header_map};
use crate::config::Config;

const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
const LOG_THEN_ALLOW: &str = "[[middleware]]\nkind = \"access_log\"\n\n[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"initialize\", \"tools/list\", \"tools/call\"]\n";
const ALLOW_NO_CALLS: &str =
    "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"initialize\", \"tools/list\"]\n";
const ALLOW_CALLS: &str =
    "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"initialize\", \"tools/call\"]\n";

fn config(middlewares: &str) -> Config {
    Config::from_toml_str(&format!("{middlewares}\n{MOCK}"), Path::new("test.toml")).unwrap()
}

async fn gateway(middlewares: &str) -> InProcessGateway {
    InProcessGateway::start(config(middlewares)).await.unwrap()
}

/// A gateway whose backend `m` is the mock behind a counter of its `tools/call` requests.
async fn counted(middlewares: &str) -> (InProcessGateway, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Counting {
        mock: mock::InProcessMock::from_words(&[]).unwrap(),
        calls: calls.clone(),
    };
    let mut bc = BackendConfig::new(
        "m",
        handlers::Transport::InProcess(InProcess(Arc::new(server))),
    );
    bc.client_info = crate::state::server_info();
    let (tx, rx) = mpsc::channel(16);
    let backends = BTreeMap::from([("m".to_owned(), BackendHandle::start(bc, tx))]);
    let gw = InProcessGateway::start_with_backends(config(middlewares), backends, rx)
        .await
        .unwrap();
    (gw, calls)
}

/// A 2026-07-28 request with its `_meta` and mirrored headers, as `tests/…/support.rs` sends it.
async fn modern(gw: &InProcessGateway, id: i64, method: &str, mut params: Value) -> Exchange {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    let name = params["name"]
        .as_str()
        .map(|n| protocol::headers::encode_value(n).into_owned());
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    post(gw, &headers, &body).await
}

async fn post(gw: &InProcessGateway, headers: &[(&str, &str)], body: &Value) -> Exchange {
    gw.post(header_map(headers).unwrap(), Bytes::from(body.to_string()))
        .await
}

/// A legacy client's session: `initialize`, then `notifications/initialized`, through the pipeline.
struct Legacy<'a> {
    gw: &'a InProcessGateway,
    version: &'static str,
    session: String,
}

impl<'a> Legacy<'a> {
    async fn connect(gw: &'a InProcessGateway, version: &'static str) -> Legacy<'a> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        let answer = post(gw, &headers, &init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(json_of(&answer)["result"]["protocolVersion"], version);
        let session = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let legacy = Legacy {
            gw,
            version,
            session,
        };
        let initialized = legacy
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status, 202, "{initialized:?}");
        legacy
    }

    async fn post(&self, body: &Value) -> Exchange {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", self.session.as_str()),
        ];
        if protocol::Generation::parse(self.version)
            .is_ok_and(|g| g >= protocol::Generation::V2025_06_18)
        {
            headers.push(("MCP-Protocol-Version", self.version));
        }
        post(self.gw, &headers, body).await
    }
}

fn json_of(e: &Exchange) -> Value {
    serde_json::from_slice(&e.body).unwrap_or_else(|err| panic!("{err}: {e:?}"))
}

fn echo(text: &str) -> Value {
    json!({"name": "m__echo", "arguments": {"text": text}})
}

/// A refusal is exactly an unknown method's answer.
fn assert_unknown_method(v: &Value, id: i64, method: &str) {
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32601, "{v}");
    assert_eq!(
        v["error"]["message"],
        format!("method not found: {method}"),
        "{v}"
    );
}

/// A table row: the params, the status, the check of the body.
type Case = (Value, u16, fn(&Value));

#[actix_rt::test]
async fn a_2026_07_28_request_is_answered_through_the_pipeline() {
    let gw = gateway("").await;
    let cases: [Case; 3] = [
        (echo("hello"), 200, |v| {
            assert_eq!(v["result"]["content"][0]["text"], "hello", "{v}");
            assert_eq!(v["result"]["resultType"], "complete", "{v}");
            assert_eq!(v["result"]["isError"], Value::Null, "{v}");
        }),
        (
            json!({"name": "m__add", "arguments": {"a": 40, "b": 2}}),
            200,
            |v| {
                assert_eq!(v["result"]["structuredContent"]["sum"], 42, "{v}");
                assert_eq!(v["result"]["resultType"], "complete", "{v}");
            },
        ),
        (
            json!({"name": "m__no_such_tool", "arguments": {}}),
            200,
            |v| {
                assert_eq!(v["error"]["code"], -32601, "{v}");
                assert_eq!(v["error"]["data"]["name"], "m__no_such_tool", "{v}");
            },
        ),
    ];
    for (i, (params, status, check)) in cases.into_iter().enumerate() {
        let answer = modern(&gw, i as i64 + 1, "tools/call", params.clone()).await;
        assert_eq!(answer.status, status, "{params}: {answer:?}");
        let v = json_of(&answer);
        assert_eq!(v["id"], i as i64 + 1, "{v}");
        check(&v);
    }
    gw.shutdown();
}

#[actix_rt::test]
async fn a_legacy_session_of_every_generation_calls_through_the_pipeline() {
    let gw = gateway("").await;
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let legacy = Legacy::connect(&gw, version).await;
        let answer = legacy
            .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": echo(version)}))
            .await;
        assert_eq!(answer.status, 200, "{version}: {answer:?}");
        let v = json_of(&answer);
        assert_eq!(v["id"], 7, "{version}: {v}");
        assert_eq!(v["result"]["content"][0]["text"], version, "{version}: {v}");
        assert_eq!(v["result"]["resultType"], Value::Null, "{version}: {v}");

        let unknown = legacy
            .post(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                "params": {"name": "m__no_such_tool", "arguments": {}}}))
            .await;
        assert_eq!(unknown.status, 200, "{version}: {unknown:?}");
        assert_eq!(json_of(&unknown)["error"]["code"], -32601, "{version}");
        gw.end_session(&legacy.session);
    }
    // An ended session is unknown from then on.
    let gone = Legacy {
        gw: &gw,
        version: "2025-06-18",
        session: "no-such-session".into(),
    }
    .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
    .await;
    assert_eq!(gone.status, 404, "{gone:?}");
    gw.shutdown();
}

#[actix_rt::test]
async fn allow_methods_refuses_before_the_backend_is_called() {
    let (gw, calls) = counted(ALLOW_NO_CALLS).await;
    let modern_refused = modern(&gw, 1, "tools/call", echo("secret")).await;
    assert_eq!(modern_refused.status, 404, "{modern_refused:?}");
    assert_unknown_method(&json_of(&modern_refused), 1, "tools/call");

    let legacy = Legacy::connect(&gw, "2025-06-18").await;
    let legacy_refused = legacy
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("secret")}))
        .await;
    assert_eq!(legacy_refused.status, 200, "{legacy_refused:?}");
    assert_unknown_method(&json_of(&legacy_refused), 2, "tools/call");

    // An allowed method still reaches the backend's listing.
    let listed = modern(&gw, 3, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(json_of(&listed)["result"]["tools"].is_array(), "{listed:?}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a refused call reached the mock"
    );
    gw.shutdown();

    // The control: the same counter, the call allowed, counts it.
    let (gw, calls) = counted(ALLOW_CALLS).await;
    let allowed = modern(&gw, 4, "tools/call", echo("counted")).await;
    assert_eq!(json_of(&allowed)["result"]["content"][0]["text"], "counted");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    gw.shutdown();
}

#[actix_rt::test]
async fn access_log_then_allow_methods_answers_allowed_methods_normally() {
    let (gw, calls) = counted(LOG_THEN_ALLOW).await;
    assert_eq!(gw.gateway().config.middlewares.len(), 2);
    let answer = modern(&gw, 1, "tools/call", echo("through two")).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let v = json_of(&answer);
    assert_eq!(v["result"]["content"][0]["text"], "through two", "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");

    let legacy = Legacy::connect(&gw, "2025-11-25").await;
    let call = legacy
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo("legacy")}))
        .await;
    assert_eq!(json_of(&call)["result"]["content"][0]["text"], "legacy");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // A method the list leaves out is still refused behind the access log.
    let refused = modern(&gw, 3, "prompts/list", json!({})).await;
    assert_unknown_method(&json_of(&refused), 3, "prompts/list");
    gw.shutdown();
}

#[actix_rt::test]
async fn a_batch_answers_its_refused_and_its_allowed_entry() {
    let (gw, calls) = counted(ALLOW_NO_CALLS).await;
    let batching = Legacy::connect(&gw, "2025-03-26").await;
    let batch = batching
        .post(&json!([
            {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": echo("secret")},
            {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {}},
        ]))
        .await;
    assert_eq!(batch.status, 200, "{batch:?}");
    let entries = json_of(&batch);
    let entries = entries.as_array().expect("a batch answer is an array");
    assert_eq!(entries.len(), 2, "{entries:?}");
    let entry = |id: i64| entries.iter().find(|e| e["id"] == id).unwrap();
    assert_unknown_method(entry(10), 10, "tools/call");
    assert!(entry(11)["result"]["tools"].is_array(), "{entries:?}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a refused entry reached the mock"
    );
    gw.shutdown();
}

mod metrics;
mod rate_limits;
