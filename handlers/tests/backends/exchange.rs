//! The data path's exchange with an HTTP backend (`handlers::http::exchange`): calls reuse this thread's
//! connection to the backend, a pooled connection the backend has closed is replaced without failing the
//! call (the request was never sent on it), and `http2 = true` speaks HTTP/2 with prior knowledge to an h2c
//! backend. Scripted actix-web servers on 127.0.0.1 that record which connection each request came on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::support::{call, http_config, start, text_of};

/// The connection a request came on (numbered by the server as it accepts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ConnectionId(u64);

/// One `tools/call` the server answered: its connection and its HTTP version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    connection: u64,
    version: String,
}

/// A 2026-07-28 backend answering `server/discover` and echoing `tools/call`; stopped on drop.
struct Backend {
    url: String,
    calls: Arc<Mutex<Vec<Seen>>>,
    handle: ServerHandle,
}

impl Drop for Backend {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

impl Backend {
    /// `keep_alive`: how long the server keeps an idle connection; `h2c`: also HTTP/2 with prior knowledge.
    fn start(keep_alive: Duration, h2c: bool) -> Backend {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let state = web::Data::new(Arc::clone(&calls));
        let accepted = Arc::new(AtomicU64::new(0));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .default_service(web::to(serve))
        })
        .on_connect(move |_, extensions| {
            extensions.insert(ConnectionId(accepted.fetch_add(1, Ordering::SeqCst)));
        })
        .keep_alive(keep_alive)
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0);
        let server = if h2c {
            server.bind_auto_h2c(("127.0.0.1", 0))
        } else {
            server.bind(("127.0.0.1", 0))
        }
        .expect("bind a loopback port");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Backend {
            url: format!("http://127.0.0.1:{port}/mcp"),
            calls,
            handle,
        }
    }

    fn calls(&self) -> Vec<Seen> {
        self.calls.lock().unwrap().clone()
    }
}

async fn serve(
    req: HttpRequest,
    body: Bytes,
    calls: web::Data<Arc<Mutex<Vec<Seen>>>>,
) -> HttpResponse {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let result = if message["method"] == "server/discover" {
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private"
        })
    } else {
        calls.lock().unwrap().push(Seen {
            connection: req.conn_data::<ConnectionId>().map_or(u64::MAX, |c| c.0),
            version: format!("{:?}", req.version()),
        });
        let text = message["params"]["arguments"]["text"].clone();
        json!({"content": [{"type": "text", "text": text}], "resultType": "complete"})
    };
    HttpResponse::Ok()
        .content_type("application/json")
        .body(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string())
}

#[actix_rt::test]
async fn calls_one_after_another_reuse_one_connection() {
    let backend = Backend::start(Duration::from_secs(30), false);
    let (handle, mut events) = start(http_config("pooled", &backend.url));
    events.ready().await;
    for i in 0..20 {
        let answer = handle
            .call(call("echo", &format!(r#"{{"text": "call {i}"}}"#)))
            .await
            .unwrap();
        assert_eq!(text_of(&answer), format!("call {i}"));
    }
    let calls = backend.calls();
    assert_eq!(calls.len(), 20);
    assert!(
        calls
            .iter()
            .all(|c| c.connection == calls[0].connection && c.version == "HTTP/1.1"),
        "{calls:?}"
    );
    handle.shutdown();
}

#[actix_rt::test]
async fn a_pooled_connection_the_backend_closed_is_replaced_and_the_call_answered() {
    // The server closes a connection idle for a second; the gateway keeps idle ones four seconds.
    let backend = Backend::start(Duration::from_secs(1), false);
    let (handle, mut events) = start(http_config("closing", &backend.url));
    events.ready().await;
    assert!(
        handle
            .call(call("echo", r#"{"text": "first"}"#))
            .await
            .is_ok()
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let answer = handle
        .call(call("echo", r#"{"text": "second"}"#))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "second");
    let calls = backend.calls();
    assert_eq!(
        calls.len(),
        2,
        "each call reached the backend once: {calls:?}"
    );
    assert_ne!(calls[0].connection, calls[1].connection, "{calls:?}");
    handle.shutdown();
}

#[actix_rt::test]
async fn http2_speaks_h2c_to_the_backend_on_one_connection() {
    let backend = Backend::start(Duration::from_secs(30), true);
    let mut config = http_config("h2c", &backend.url);
    config.http2 = true;
    let (handle, mut events) = start(config);
    events.ready().await;
    let answers = futures_util::future::join_all(
        (0..8).map(|i| handle.call(call("echo", &format!(r#"{{"text": "at once {i}"}}"#)))),
    )
    .await;
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(text_of(&answer.unwrap()), format!("at once {i}"));
    }
    let calls = backend.calls();
    assert_eq!(calls.len(), 8);
    assert!(
        calls
            .iter()
            .all(|c| c.version == "HTTP/2.0" && c.connection == calls[0].connection),
        "eight calls at once share one HTTP/2 connection: {calls:?}"
    );
    handle.shutdown();
}
