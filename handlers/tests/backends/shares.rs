//! Each caller's share of a backend's permits, through `BackendHandle::call`, against an in-process server
//! that holds every `tools/call` until the test opens its gate: what is in flight at once is exact, and no
//! assertion depends on timing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::join_all;
use handlers::{BackendConfig, Caller, InProcess, InProcessAnswer, InProcessServer, Transport};
use protocol::shape::Failure;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::support::{call, eventually, kind, start};

/// A 2026-07-28 server whose `tools/call` answers wait until `open` is true.
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
        match v["method"].as_str() {
            Some("server/discover") => Box::pin(std::future::ready(answer(
                &id,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "gated", "version": "1"}}}),
            ))),
            Some("tools/call") => {
                self.arrived.fetch_add(1, Ordering::SeqCst);
                let mut open = self.open.clone();
                Box::pin(async move {
                    let _ = open.wait_for(|o| *o).await;
                    answer(&id, json!({"content": [{"type": "text", "text": "ok"}]}))
                })
            }
            _ if v.get("id").is_none() => Box::pin(std::future::ready(None)),
            _ => Box::pin(std::future::ready(answer(&id, json!({})))),
        }
    }
}

/// A gated backend with `max_in_flight` permits and the default share (a quarter); how many calls reached
/// it, and the gate.
async fn gated(
    max_in_flight: usize,
) -> (
    handlers::BackendHandle,
    Arc<AtomicUsize>,
    watch::Sender<bool>,
) {
    let arrived = Arc::new(AtomicUsize::new(0));
    let (gate, open) = watch::channel(false);
    let server = Gated {
        arrived: Arc::clone(&arrived),
        open,
    };
    let mut config = BackendConfig::new("g", Transport::InProcess(InProcess(Arc::new(server))));
    config.max_in_flight = max_in_flight;
    let (backend, mut events) = start(config);
    events.ready().await;
    (backend, arrived, gate)
}

/// What broke: one 2026-07-28 client (one caller) sending 40 concurrent calls to a backend with 64 permits
/// and no other client got 24 "overloaded" answers: over its share (16) it was refused though 48 permits
/// were free.
#[actix_rt::test]
async fn one_caller_under_no_contention_may_use_the_free_permits_beyond_its_share() {
    let (backend, arrived, gate) = gated(64).await;
    let caller = Caller::new("address", &[127, 0, 0, 1]);
    let refused = AtomicUsize::new(0);
    let calls = (0..40).map(|_| {
        let mut request = call("work", "{}");
        request.caller = Some(caller);
        let (backend, refused) = (&backend, &refused);
        async move {
            let outcome = backend.call(request).await;
            if outcome.is_err() {
                refused.fetch_add(1, Ordering::SeqCst);
            }
            outcome
        }
    });
    // Every call either reaches the backend (and waits there) or is refused; then the gate opens.
    let release = async {
        eventually("every call is in flight or refused", || {
            arrived.load(Ordering::SeqCst) + refused.load(Ordering::SeqCst) == 40
        })
        .await;
        gate.send_replace(true);
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), release);
    let failures: Vec<&Failure> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(failures.is_empty(), "refused: {failures:?}");
    assert!(outcomes.iter().all(|o| kind(o) == "ok"));
    assert_eq!(arrived.load(Ordering::SeqCst), 40);
    backend.shutdown();
}
