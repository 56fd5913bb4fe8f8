//! A backend's per-caller share through the pipeline: the caller is the principal when one is known (with
//! `[auth]`), so two legacy sessions of one principal count against one share. The backend is an
//! in-process server that holds every `tools/call` until the test opens its gate, so what is in flight at
//! once is exact and nothing depends on timing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use handlers::{BackendConfig, BackendHandle, InProcess, InProcessAnswer, InProcessServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::fixtures::{json_of, modern_request, principal};
use super::{Exchange, InProcessGateway, header_map};
use crate::config::Config;

/// A 2026-07-28 server with one tool, `work`, whose calls are answered once `open` is true.
struct Gated {
    arrived: Arc<AtomicUsize>,
    open: watch::Receiver<bool>,
}

fn answer(id: &Value, result: Value) -> Option<Vec<u8>> {
    Some(
        json!({"jsonrpc": "2.0", "id": id, "result": result})
            .to_string()
            .into_bytes(),
    )
}

impl InProcessServer for Gated {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let v: Value = serde_json::from_slice(&message).unwrap();
        let id = v["id"].clone();
        let result = match v["method"].as_str() {
            _ if v.get("id").is_none() => return Box::pin(std::future::ready(None)),
            Some("server/discover") => json!({
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "gated", "version": "1"}}}),
            Some("tools/list") => json!({"tools": [
                {"name": "work", "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => {
                self.arrived.fetch_add(1, Ordering::SeqCst);
                let mut open = self.open.clone();
                return Box::pin(async move {
                    let _ = open.wait_for(|o| *o).await;
                    answer(&id, json!({"content": [{"type": "text", "text": "done"}]}))
                });
            }
            _ => json!({}),
        };
        Box::pin(std::future::ready(answer(&id, result)))
    }
}

/// A gateway whose backend `m` has `max_in_flight` permits and a share of `share` per caller, behind a
/// gate; the calls that reached it, and the gate.
async fn gated(
    max_in_flight: usize,
    share: usize,
) -> (InProcessGateway, Arc<AtomicUsize>, watch::Sender<bool>) {
    let arrived = Arc::new(AtomicUsize::new(0));
    let (gate, open) = watch::channel(false);
    let server = Gated {
        arrived: Arc::clone(&arrived),
        open,
    };
    let mut bc = BackendConfig::new(
        "m",
        handlers::Transport::InProcess(InProcess(Arc::new(server))),
    );
    bc.client_info = crate::state::server_info();
    bc.max_in_flight = max_in_flight;
    bc.max_in_flight_per_caller = Some(share);
    let config = Config::from_toml_str(
        &format!(
            "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\nmax_in_flight = {max_in_flight}\n\
             max_in_flight_per_caller = {share}\n"
        ),
        Path::new("share.toml"),
    )
    .unwrap();
    let (tx, rx) = mpsc::channel(16);
    let backends = BTreeMap::from([("m".to_owned(), BackendHandle::start(bc, tx))]);
    let gw = InProcessGateway::start_with_backends(config, backends, rx)
        .await
        .unwrap();
    (gw, arrived, gate)
}

/// A legacy (2025-06-18) session of `who`; its id.
async fn session_of(gw: &InProcessGateway, who: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}});
    let headers = header_map(&[
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ])
    .unwrap();
    let answer = gw
        .post_as(
            principal(who, &[], &[]),
            headers,
            Bytes::from(init.to_string()),
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    answer
        .header("mcp-session-id")
        .expect("a session")
        .to_owned()
}

/// `m__work` called by `who` in its legacy session `session`.
async fn call_in(gw: &InProcessGateway, who: &str, session: &str) -> Exchange {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "m__work", "arguments": {}}});
    let headers = header_map(&[
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
    ])
    .unwrap();
    // Boxed: several of these futures are joined on one test thread's stack.
    Box::pin(gw.post_as(
        principal(who, &[], &[]),
        headers,
        Bytes::from(body.to_string()),
    ))
    .await
}

/// The text of a tool result, and whether it is a tool error.
fn outcome(e: &Exchange) -> (String, bool) {
    let v = json_of(e);
    let text = v["result"]["content"][0]["text"].as_str();
    (
        text.unwrap_or_else(|| panic!("{v}")).to_owned(),
        v["result"]["isError"] == true,
    )
}

/// Polls until `f` holds, failing after 10 s.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What broke: the share was counted per legacy session, so a principal opening N sessions got N shares of
/// a backend while other principals were refused.
#[actix_rt::test]
async fn a_principal_with_many_sessions_gets_one_share_not_one_per_session() {
    // 4 permits, a share of 2: scarce as soon as 3 are taken.
    let (gw, arrived, gate) = gated(4, 2).await;
    let (first, second) = (
        session_of(&gw, "alice").await,
        session_of(&gw, "alice").await,
    );
    let returned = AtomicUsize::new(0);
    let counted = |e: Exchange| {
        returned.fetch_add(1, Ordering::SeqCst);
        e
    };
    // alice holds her share in her first session.
    let held = async {
        tokio::join!(
            async { counted(call_in(&gw, "alice", &first).await) },
            async { counted(call_in(&gw, "alice", &first).await) }
        )
    };
    let then = async {
        eventually("alice's two calls are in flight", || {
            arrived.load(Ordering::SeqCst) == 2
        })
        .await;
        // Her second session and bob (2026-07-28, no session) ask while two permits are free.
        let (headers, body) = modern_request(
            "tools/call",
            json!({"name": "m__work", "arguments": {}}),
            &[],
        );
        let (in_second, bob, ()) = tokio::join!(
            async { counted(call_in(&gw, "alice", &second).await) },
            async {
                counted(Box::pin(gw.post_as(principal("bob", &[], &[]), headers, body)).await)
            },
            async {
                eventually("every call is in flight or answered", || {
                    arrived.load(Ordering::SeqCst) + returned.load(Ordering::SeqCst) == 4
                })
                .await;
                gate.send_replace(true);
            }
        );
        (in_second, bob)
    };
    let ((a, b), (in_second, bob)) = tokio::join!(held, then);
    assert_eq!(outcome(&a), ("done".to_owned(), false));
    assert_eq!(outcome(&b), ("done".to_owned(), false));
    let (text, is_error) = outcome(&in_second);
    assert!(
        is_error && text.starts_with("overloaded") && text.contains("max_in_flight_per_caller"),
        "alice's second session counts against her one share: {text}"
    );
    assert_eq!(
        outcome(&bob),
        ("done".to_owned(), false),
        "another principal is served"
    );
    assert_eq!(arrived.load(Ordering::SeqCst), 3);
    gw.shutdown();
}
