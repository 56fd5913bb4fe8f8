//! HTTP backends: era detection per transport, routing headers, `_meta` per era, SSE responses, legacy
//! sessions (renewal on 404, cancellation, DELETE), the 2024-11-05 HTTP+SSE fallback, and outages.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use handlers::{Generation, TransportKind};
use protocol::ErrorCode;
use protocol::shape::Failure;
use serde_json::{Value, json};

use crate::fake_http::{self, Kind};
use crate::support::{call, http_config, kind, start, text_of, tool_call};

#[actix_rt::test]
async fn modern_http_backend_is_detected_and_gets_routing_headers_and_meta() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("web", &server.url));
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2026_07_28);
    assert_eq!(description.transport, TransportKind::StreamableHttp);
    assert_eq!(
        description.server_info.as_ref().unwrap().name,
        "fake-http-modern"
    );

    // a name that needs encoding, a parameter header, a client _meta to rewrite, a big integer
    let mut request = tool_call(
        "météo",
        r#"{"name":"météo","arguments":{"big":123456789012345678901234567890},"_meta":{"progressToken":5,"k":"v"}}"#,
    );
    request.client_capabilities = Some(json!({"sampling": {}}));
    let result = backend.call(request).await.unwrap();
    let body = text_of(&result);
    assert!(
        body.contains(r#""arguments":{"big":123456789012345678901234567890}"#),
        "{body}"
    );
    let sent: Value = serde_json::from_str(&body).unwrap();
    let meta = &sent["params"]["_meta"];
    assert_eq!(meta["k"], "v");
    assert!(meta.get("progressToken").is_none());
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"sampling": {}})
    );
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "mcpgw");
    let headers = &server.fake.with_method("tools/call")[0].headers;
    assert_eq!(headers["mcp-name"], "=?base64?bcOpdMOpbw==?=");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    assert!(!headers.contains_key("mcp-session-id"));

    let mut regional = call("regional", r#"{"region":"eu-west"}"#);
    regional.param_headers = vec![("Region".into(), "eu-west".into())];
    assert_eq!(kind(&backend.call(regional).await), "ok");
    backend.shutdown();
}

#[actix_rt::test]
async fn a_modern_header_mismatch_is_the_backends_error() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("web", &server.url));
    events.ready().await;
    let mut regional = call("regional", r#"{"region":"eu-west"}"#);
    regional.param_headers = vec![("Region".into(), "us-east".into())];
    match backend.call(regional).await {
        Err(Failure::Backend { error, .. }) => {
            assert_eq!(error.code(), ErrorCode::HeaderMismatch);
            assert!(error.message().contains("Mcp-Param-Region"));
        }
        other => panic!("{other:?}"),
    }
    backend.shutdown();
}

#[actix_rt::test]
async fn sse_responses_pass_notifications_on_then_answer() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("web", &server.url));
    events.ready().await;
    let result = backend.call(call("stream", "{}")).await.unwrap();
    assert_eq!(text_of(&result), "streamed");
    let progress = events.notification("notifications/progress").await;
    assert!(progress.params.unwrap().get().contains("0.5"));
    backend.shutdown();
}

#[actix_rt::test]
async fn a_modern_timeout_answers_timeout() {
    let server = fake_http::start(Kind::Modern);
    let mut config = http_config("web", &server.url);
    config.request_timeout = Duration::from_millis(300);
    let (backend, mut events) = start(config);
    events.ready().await;
    let started = Instant::now();
    let result = backend.call(call("sleep", r#"{"ms":3000}"#)).await;
    assert_eq!(
        result.unwrap_err(),
        Failure::Timeout {
            backend: "web".into(),
            after_ms: 300
        }
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        server
            .fake
            .with_method("notifications/cancelled")
            .is_empty()
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn legacy_streamable_backend_keeps_a_session() {
    let server = fake_http::start(Kind::Legacy);
    let (backend, mut events) = start(http_config("old", &server.url));
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2025_06_18);
    assert_eq!(description.transport, TransportKind::StreamableHttp);
    // the GET stream delivers unsolicited notifications
    events
        .notification("notifications/tools/list_changed")
        .await;

    let result = backend
        .call(tool_call(
            "echo",
            r#"{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":1,"k":2}}"#,
        ))
        .await
        .unwrap();
    let sent: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(sent["params"]["_meta"], json!({"k": 2}));
    let call = &server.fake.with_method("tools/call")[0];
    assert_eq!(call.headers["mcp-session-id"], "session-1");
    assert_eq!(call.headers["mcp-protocol-version"], "2025-06-18");
    assert!(!call.headers.contains_key("mcp-name"));
    assert_eq!(
        server.fake.with_method("notifications/initialized").len(),
        1
    );

    // a backend request on a response stream is answered through the session
    assert_eq!(text_of(&backend.call(call_ask()).await.unwrap()), "asked");
    let answer = server.fake.wait_for(|r| r.json()["id"] == "srv-ping").await;
    assert_eq!(answer.json()["result"], json!({}));
    assert_eq!(answer.headers["mcp-session-id"], "session-1");

    backend.shutdown();
    let delete = server.fake.wait_for(|r| r.http_method == "DELETE").await;
    assert_eq!(delete.headers["mcp-session-id"], "session-1");
}

#[actix_rt::test]
async fn a_response_stream_closed_early_is_resumed_with_last_event_id_after_its_retry() {
    let server = fake_http::start(Kind::Legacy);
    let (backend, mut events) = start(http_config("old", &server.url));
    events.ready().await;
    let started = std::time::Instant::now();
    let result = backend.call(call("resumable", "{}")).await.unwrap();
    assert_eq!(text_of(&result), "resumed");
    // the stream said `retry: 300`: the GET that resumed it waited at least that long
    assert!(started.elapsed() >= Duration::from_millis(300));
    let resumed = server
        .fake
        .wait_for(|r| r.http_method == "GET" && r.headers.contains_key("last-event-id"))
        .await;
    assert_eq!(resumed.headers["last-event-id"], "ev-1");
    assert_eq!(resumed.headers["mcp-session-id"], "session-1");
    assert_eq!(resumed.headers["accept"], "text/event-stream");
    backend.shutdown();
}

fn call_ask() -> handlers::BackendRequest {
    call("ask_client", "{}")
}

#[actix_rt::test]
async fn an_expired_legacy_session_is_renewed_once_and_the_request_retried() {
    let server = fake_http::start_expiring(2);
    let (backend, mut events) = start(http_config("old", &server.url));
    events.ready().await;
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    let result = backend.call(call("echo", r#"{"second":true}"#)).await;
    assert!(text_of(&result.unwrap()).contains("second"));
    assert_eq!(server.fake.initializes.load(Ordering::SeqCst), 2);
    let retried = server.fake.with_method("tools/call");
    assert_eq!(
        retried.last().unwrap().headers["mcp-session-id"],
        "session-2"
    );
    // the renewal is a reconnect: Ready again, and the GET stream follows the new session
    events.ready().await;
    let on_session_2 = |r: &fake_http::Received| {
        r.http_method == "GET"
            && r.headers.get("mcp-session-id").map(String::as_str) == Some("session-2")
    };
    server.fake.wait_for(on_session_2).await;
    backend.shutdown();
}

#[actix_rt::test]
async fn a_legacy_http_timeout_sends_cancelled() {
    let server = fake_http::start(Kind::Legacy);
    let mut config = http_config("old", &server.url);
    config.request_timeout = Duration::from_millis(300);
    let (backend, mut events) = start(config);
    events.ready().await;
    let result = backend.call(call("sleep", r#"{"ms":2000}"#)).await;
    assert_eq!(kind(&result), "timeout");
    let sleep_id = server.fake.with_method("tools/call")[0].json()["id"].clone();
    let cancel = server
        .fake
        .wait_for(|r| r.json()["method"] == "notifications/cancelled")
        .await;
    assert_eq!(cancel.json()["params"]["requestId"], sleep_id);
    assert_eq!(cancel.headers["mcp-session-id"], "session-1");
    backend.shutdown();
}

#[actix_rt::test]
async fn a_2024_11_05_http_sse_backend_is_found_by_the_fallback() {
    let server = fake_http::start(Kind::HttpSse);
    let (backend, mut events) = start(http_config("older", &server.url));
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2024_11_05);
    assert_eq!(description.transport, TransportKind::HttpSse);
    // the probe and initialize were POSTed to the URL first, then the stream was opened
    let methods: Vec<String> = server
        .fake
        .received()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.http_method,
                r.json()["method"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        methods[..3],
        ["POST server/discover", "POST initialize", "GET "]
    );

    let result = backend.call(call("echo", r#"{"n":1}"#)).await.unwrap();
    assert!(text_of(&result).contains(r#""arguments":{"n":1}"#));
    let result = backend.call(call_ask()).await;
    assert_eq!(kind(&result), "ok");
    let answer = server.fake.wait_for(|r| r.json()["id"] == "srv-ping").await;
    assert_eq!(answer.json()["result"], json!({}));
    events
        .notification("notifications/tools/list_changed")
        .await;

    // the end of the stream is the end of the session: down, then a new session
    drop(server);
    events.down().await;
    backend.shutdown();
}

#[actix_rt::test]
async fn an_unreachable_backend_is_down_until_it_comes_up() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (backend, mut events) = start(http_config("late", &url));
    // its first attempt is refused: settled (down), not ready, and nobody waits out the deadline for it
    let waited = Instant::now();
    assert!(
        backend
            .wait_settled(Duration::from_secs(30))
            .await
            .is_none()
    );
    assert!(
        waited.elapsed() < Duration::from_secs(10),
        "{:?}",
        waited.elapsed()
    );
    let reason = events.down().await;
    assert!(reason.contains("server/discover"), "{reason}");
    let started = Instant::now();
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "unavailable");
    assert!(started.elapsed() < Duration::from_millis(100));
    let _server = fake_http::start_on(Kind::Modern, port, None);
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2026_07_28);
    assert!(backend.wait_settled(Duration::from_secs(1)).await.is_some());
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    backend.shutdown();
}

#[actix_rt::test]
async fn a_modern_backend_that_turns_legacy_is_probed_again() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("web", &server.url));
    assert_eq!(events.ready().await.generation, Generation::V2026_07_28);
    server.fake.become_kind(Kind::Legacy);
    // the request that meets the legacy server fails; the era assumption is dropped and probed again
    assert!(
        backend
            .call(tool_call("echo", r#"{"name":"echo","arguments":{}}"#))
            .await
            .is_err()
    );
    let again = events.ready().await;
    assert_eq!(again.generation, Generation::V2025_06_18);
    assert_eq!(again.transport, TransportKind::StreamableHttp);
    assert_eq!(
        kind(&backend.call(call("echo", r#"{"text":"hi"}"#)).await),
        "ok"
    );
    backend.shutdown();
}
