//! The baseline of issue 34: the in-process mock answering the bench's `tools/call` with no gateway.
//!
//! What the mock is handed is what the gateway hands it for that request: the bytes the gateway's
//! in-process link writes for the backend (`handlers`' `InProcessLink::call`: `wire::request` with a
//! gateway-minted integer id, `"method":"tools/call"` and the params after the dispatch and the `_meta`
//! rewrite — the tool's name without its `m__` prefix, `_meta` stamped with the gateway's protocol version,
//! the client's capabilities and the gateway's `clientInfo`). They are not written by hand here: they are
//! recorded once, outside the measurement, from a gateway whose backend `m` is the same mock behind a
//! recorder ([`bytes_the_gateway_hands_the_mock`]), built as `state::start::start_backends` builds a
//! `builtin = ["mock-backend"]` backend (the one field that reaches the bytes, `client_info`, set the same).
//!
//! The mock's entry point is the one the gateway calls, `InProcessServer::handle(Vec<u8>)`, which takes the
//! bytes by value (the gateway writes a fresh `Vec` per call), so each iteration hands it its own copy of
//! the recorded bytes: one allocation and a copy of a few hundred bytes, measured apart
//! (`mock_alone_clone_of_the_bytes`) so that it can be subtracted. What is measured is then the mock's own
//! work as the gateway has it done: its `protocol::message::parse` of the request, the dispatch, the echo
//! tool's params read, the result shaped and written as the response's bytes.

use std::sync::{Arc, Mutex};

use handlers::{
    BackendConfig, BackendHandle, InProcess, InProcessAnswer, InProcessServer, Transport,
};
use mock::InProcessMock;
use serde_json::Value;
use tokio::sync::mpsc;

/// The mock as `builtin = ["mock-backend"]` configures it (no flags: zero latency, no errors).
pub fn the_builtin_mock() -> InProcessMock {
    InProcessMock::from_words(&[]).unwrap()
}

/// The mock, keeping the last `tools/call` it is handed.
struct Recording {
    mock: InProcessMock,
    seen: Arc<Mutex<Option<Vec<u8>>>>,
}

impl InProcessServer for Recording {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let v: Value = serde_json::from_slice(&message).unwrap();
        if v["method"] == "tools/call" {
            *self.seen.lock().unwrap() = Some(message.clone());
        }
        self.mock.handle(message)
    }
}

/// The bytes the gateway hands its builtin mock for one `post(headers, request)`: the request sent through
/// a gateway started from `config` (which must name the backend `m`, no middleware needed: none changes
/// the bytes), its backend recorded. The gateway is shut down before returning.
pub fn bytes_the_gateway_hands_the_mock(
    system: &actix_rt::SystemRunner,
    config: mcpgw::config::Config,
    headers: actix_web::http::header::HeaderMap,
    request: &'static [u8],
) -> Vec<u8> {
    let seen = Arc::new(Mutex::new(None));
    let server = Recording {
        mock: the_builtin_mock(),
        seen: seen.clone(),
    };
    let mut bc = BackendConfig::new("m", Transport::InProcess(InProcess(Arc::new(server))));
    bc.client_info = mcpgw::state::server_info();
    let (tx, rx) = mpsc::channel(16);
    let answer = system.block_on(async move {
        let backends = [("m".to_owned(), BackendHandle::start(bc, tx))].into();
        let gw =
            mcpgw::serve::in_process::InProcessGateway::start_with_backends(config, backends, rx)
                .await
                .unwrap();
        let answer = gw.post(headers, bytes::Bytes::from_static(request)).await;
        gw.shutdown();
        answer
    });
    assert_eq!(answer.status, 200, "{answer:?}");
    let handed = seen
        .lock()
        .unwrap()
        .take()
        .expect("the mock was handed the tools/call");
    let v: Value = serde_json::from_slice(&handed).unwrap();
    assert_eq!(v["params"]["name"], "echo", "{v}");
    handed
}

/// Checks once, outside the measurement, that the mock answers `handed` with the echo, complete.
pub fn assert_it_answers(system: &actix_rt::SystemRunner, mock: &InProcessMock, handed: &[u8]) {
    let answer = system
        .block_on(mock.handle(handed.to_vec()))
        .expect("a response");
    let v: Value = serde_json::from_slice(&answer).unwrap();
    let sent: Value = serde_json::from_slice(handed).unwrap();
    assert_eq!(v["id"], sent["id"], "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert!(v["result"]["content"][0]["text"].is_string(), "{v}");
}
