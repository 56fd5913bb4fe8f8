//! Stdio backends: era detection, `_meta` per era, id rewriting, garbage, timeouts, crashes, overload,
//! backend requests and notifications, shutdown.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use handlers::{BackendRequest, BackendState, Generation, TransportKind};
use protocol::ErrorCode;
use protocol::method::Method;
use protocol::shape::Failure;
use serde_json::{Value, json};

use crate::support::{TempLog, call, kind, raw, start, stdio_config, text_of, tool_call};

/// Params with a client `_meta` (modern keys, a progress token, a custom key) and values that reformatting
/// would change.
const PARAMS: &str = r#"{"name":"echo","arguments":{"big":123456789012345678901234567890,"price":1.50,"e":1E+2},"_meta":{"progressToken":"p-1","io.modelcontextprotocol/protocolVersion":"1999-01-01","com.example/trace":"t-1"}}"#;
const ARGS: &str = r#"{"big":123456789012345678901234567890,"price":1.50,"e":1E+2}"#;

#[actix_rt::test]
async fn modern_backend_is_detected_and_gets_the_2026_meta() {
    let log = TempLog::new("modern");
    let mut config = stdio_config("modern", &["--era", "modern"], Some(&log));
    config.client_info.name = "gateway-under-test".into();
    let (backend, mut events) = start(config);
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2026_07_28);
    assert_eq!(description.transport, TransportKind::Stdio);
    assert_eq!(
        description.server_info.as_ref().unwrap().name,
        "fake-modern"
    );
    assert_eq!(
        description.instructions.as_deref(),
        Some("a fake modern server")
    );
    assert!(description.capabilities.tools.is_some());
    assert_eq!(backend.description().unwrap(), description);

    let list = backend
        .call(BackendRequest::new(Method::ToolsList, None))
        .await
        .unwrap();
    assert!(list.get().contains("\"echo\""));

    let mut request = tool_call("echo", PARAMS);
    request.client_capabilities = Some(json!({"elicitation": {}}));
    let result = backend.call(request).await.unwrap();
    let line = text_of(&result);
    assert!(line.contains(ARGS), "arguments reformatted: {line}");
    let sent: Value = serde_json::from_str(&line).unwrap();
    assert!(
        sent["id"].is_i64(),
        "the backend gets mcpgw's own integer ids"
    );
    let meta = &sent["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {}})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "gateway-under-test"
    );
    assert_eq!(meta["com.example/trace"], "t-1");
    assert!(meta.get("progressToken").is_none());

    // no client capabilities: {} is declared; the probe itself carried the full _meta
    let result = backend.call(call("echo", "{}")).await.unwrap();
    let sent: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    let first = &log.messages()[0];
    assert_eq!(first["method"], "server/discover");
    assert_eq!(
        first["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn legacy_backend_refusing_the_probe_is_initialized_and_loses_the_modern_meta() {
    let log = TempLog::new("legacy");
    let config = stdio_config(
        "legacy",
        &["--era", "legacy", "--version", "2025-06-18"],
        Some(&log),
    );
    let (backend, mut events) = start(config);
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2025_06_18);
    assert_eq!(
        description.server_info.as_ref().unwrap().name,
        "fake-legacy"
    );

    let result = backend.call(tool_call("echo", PARAMS)).await.unwrap();
    let line = text_of(&result);
    assert!(line.contains(ARGS), "arguments reformatted: {line}");
    let sent: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(sent["params"]["_meta"], json!({"com.example/trace": "t-1"}));

    let methods: Vec<String> = log
        .messages()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
    let init = &log.messages()[1];
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    backend.shutdown();
}

#[actix_rt::test]
async fn strict_legacy_backend_dying_on_the_probe_is_restarted_and_initialized() {
    let log = TempLog::new("strict");
    let config = stdio_config("strict", &["--era", "legacy-strict"], Some(&log));
    let (backend, mut events) = start(config);
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2025_11_25);
    let result = backend.call(call("echo", r#"{"x":1}"#)).await.unwrap();
    assert!(text_of(&result).contains(r#""arguments":{"x":1}"#));
    let lines = log.lines();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("START"))
        .collect();
    assert_eq!(starts.len(), 2, "{lines:#?}");
    assert!(
        lines[starts[1] + 1].contains("\"initialize\""),
        "{lines:#?}"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn garbage_on_stdout_is_skipped() {
    let config = stdio_config("garbage", &["--era", "modern", "--garbage"], None);
    let (backend, mut events) = start(config);
    events.ready().await;
    for i in 0..5 {
        let result = backend.call(call("echo", &format!(r#"{{"i":{i}}}"#))).await;
        assert_eq!(kind(&result), "ok", "{result:?}");
    }
    backend.shutdown();
}

#[actix_rt::test]
async fn ids_are_rewritten_without_collisions_under_200_concurrent_calls() {
    let mut config = stdio_config("busy", &["--era", "modern"], None);
    config.max_in_flight = 256;
    let (backend, mut events) = start(config);
    events.ready().await;
    let calls = (0..200).map(|i| {
        let backend = backend.clone();
        async move {
            let args = format!(r#"{{"n":{i},"delay_ms":{}}}"#, (i * 7) % 23);
            (i, backend.call(call("echo", &args)).await)
        }
    });
    let results = futures_util::future::join_all(calls).await;
    let mut ids = HashSet::new();
    for (i, result) in results {
        let sent: Value = serde_json::from_str(&text_of(&result.unwrap())).unwrap();
        assert_eq!(
            sent["params"]["arguments"]["n"], i,
            "answer routed to the wrong caller"
        );
        assert!(ids.insert(sent["id"].as_i64().unwrap()), "id reused");
    }
    assert_eq!(ids.len(), 200);
    backend.shutdown();
}

#[actix_rt::test]
async fn a_timeout_answers_timeout_and_cancels_the_request() {
    let log = TempLog::new("timeout");
    let mut config = stdio_config("slow", &["--era", "legacy"], Some(&log));
    config.request_timeout = Duration::from_millis(300);
    let (backend, mut events) = start(config);
    events.ready().await;
    let started = Instant::now();
    let result = backend.call(call("sleep", r#"{"ms":3000}"#)).await;
    assert_eq!(
        result.unwrap_err(),
        Failure::Timeout {
            backend: "slow".into(),
            after_ms: 300
        }
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let sleep_id = log
        .messages()
        .iter()
        .find(|m| m["params"]["name"] == "sleep")
        .map(|m| m["id"].clone())
        .unwrap();
    let cancel = log
        .wait_for(|l| l.contains("notifications/cancelled"))
        .await;
    let cancel: Value = serde_json::from_str(&cancel).unwrap();
    assert_eq!(cancel["params"]["requestId"], sleep_id);
    assert_eq!(cancel["params"]["reason"], "request timed out");
    log.wait_for(|l| l.starts_with("DROPPED")).await;
    // the backend still serves
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    backend.shutdown();
}

#[actix_rt::test]
async fn an_abandoned_call_is_cancelled() {
    let log = TempLog::new("abandon");
    let config = stdio_config("abandon", &["--era", "modern"], Some(&log));
    let (backend, mut events) = start(config);
    events.ready().await;
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        backend.call(call("sleep", r#"{"ms":3000}"#)),
    )
    .await;
    assert!(abandoned.is_err());
    let cancel = log
        .wait_for(|l| l.contains("notifications/cancelled"))
        .await;
    assert!(
        cancel.contains("request cancelled by the gateway"),
        "{cancel}"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn a_crash_answers_in_flight_requests_and_the_backend_restarts() {
    let log = TempLog::new("crash");
    let config = stdio_config(
        "crashy",
        &["--era", "legacy-strict", "--crash-after", "2"],
        Some(&log),
    );
    let (backend, mut events) = start(config);
    events.ready().await;
    let first = backend.status();
    assert_eq!((first.state, first.restarts), (BackendState::Ready, 0));
    assert_eq!(first.last_error, None);
    assert_eq!(first.transport, TransportKind::Stdio);
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    let started = Instant::now();
    let in_flight = backend.call(call("sleep", r#"{"ms":5000}"#));
    let crashing = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        backend.call(call("echo", "{}")).await
    };
    let watched = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        backend.status().in_flight
    };
    let (a, b, in_flight_then) = tokio::join!(in_flight, crashing, watched);
    assert_eq!(in_flight_then, 1, "the sleeping call holds one data permit");
    assert!(matches!(a, Err(Failure::Crashed { .. })), "{a:?}");
    assert!(matches!(b, Err(Failure::Crashed { .. })), "{b:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let reason = events.down().await;
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "unavailable");
    let description = events.ready().await;
    assert_eq!(description.generation, Generation::V2025_11_25);
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    let after = backend.status();
    assert_eq!(
        (after.state, after.restarts, after.in_flight),
        (BackendState::Ready, 1, 0)
    );
    assert!(
        after
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("exit status: 3")),
        "{after:?}"
    );
    // the remembered legacy era: the restarted process got initialize first, no probe
    let lines = log.lines();
    let last_start = lines.iter().rposition(|l| l.starts_with("START")).unwrap();
    assert!(
        lines[last_start + 1].contains("\"initialize\""),
        "{lines:#?}"
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with("START")).count(), 3);
    backend.shutdown();
}

#[actix_rt::test]
async fn overloaded_when_every_permit_is_taken() {
    let mut config = stdio_config("narrow", &["--era", "modern"], None);
    config.max_in_flight = 2;
    let (backend, mut events) = start(config);
    events.ready().await;
    let (a, b, c) = tokio::join!(
        backend.call(call("sleep", r#"{"ms":300}"#)),
        backend.call(call("sleep", r#"{"ms":300}"#)),
        backend.call(call("echo", "{}")),
    );
    assert_eq!((kind(&a), kind(&b)), ("ok", "ok"));
    assert_eq!(
        c.unwrap_err(),
        Failure::Overloaded {
            backend: "narrow".into()
        }
    );
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    backend.shutdown();
}

/// What broke: under load, listing the catalog again competed for the data path's permits, found them all
/// taken, and the backend was left out of the catalog ("unknown tool" for every call).
#[actix_rt::test]
async fn a_listing_is_not_refused_when_every_call_permit_is_taken() {
    let mut config = stdio_config("busy", &["--era", "modern"], None);
    config.max_in_flight = 2;
    let (backend, mut events) = start(config);
    events.ready().await;
    let list = || BackendRequest::new(Method::ToolsList, None);
    let (a, b, c, listed) = tokio::join!(
        backend.call(call("sleep", r#"{"ms":300}"#)),
        backend.call(call("sleep", r#"{"ms":300}"#)),
        async {
            // both call permits are taken by now
            tokio::time::sleep(Duration::from_millis(50)).await;
            backend.call(call("echo", "{}")).await
        },
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            backend.call(list()).await
        },
    );
    assert_eq!((kind(&a), kind(&b)), ("ok", "ok"));
    assert_eq!(
        c.unwrap_err(),
        Failure::Overloaded {
            backend: "busy".into()
        },
        "the data path is full"
    );
    let listed: Value =
        serde_json::from_str(listed.expect("the listing went through").get()).unwrap();
    assert!(listed["tools"].is_array(), "{listed}");
    backend.shutdown();
}

#[actix_rt::test]
async fn control_traffic_has_a_bound_of_its_own() {
    let (backend, mut events) = start(stdio_config(
        "lists",
        &["--era", "modern", "--list-delay-ms", "300"],
        None,
    ));
    events.ready().await;
    let lists = (0..=handlers::CONTROL_PERMITS)
        .map(|_| backend.call(BackendRequest::new(Method::ToolsList, None)));
    let (outcomes, call) = tokio::join!(futures_util::future::join_all(lists), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        backend.call(call("echo", "{}")).await
    });
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(Failure::Overloaded { .. })))
        .count();
    assert_eq!(refused, 1, "{outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        handlers::CONTROL_PERMITS
    );
    assert_eq!(kind(&call), "ok", "slow lists never hold up the data path");
    backend.shutdown();
}

#[actix_rt::test]
async fn backend_requests_are_answered_and_notifications_forwarded() {
    let (backend, mut events) = start(stdio_config("chatty", &["--era", "legacy"], None));
    events.ready().await;
    let answers: Value = serde_json::from_str(&text_of(
        &backend.call(call("ask_client", "{}")).await.unwrap(),
    ))
    .unwrap();
    assert_eq!(answers["srv-ping"], json!({}));
    assert_eq!(answers["srv-sampling"]["code"], -32021);
    assert_eq!(
        answers["srv-sampling"]["message"],
        "mcpgw cannot relay sampling/createMessage: the client did not declare the sampling \
         capability"
    );
    // a log message sent while the call is the only request in flight is the call's: on its sink
    let (sink, mut related) = tokio::sync::mpsc::channel(8);
    let mut notify = call("notify", "{}");
    notify.related = Some(sink);
    assert_eq!(kind(&backend.call(notify).await), "ok");
    events
        .notification("notifications/tools/list_changed")
        .await;
    let message = match related.try_recv() {
        Ok(handlers::Related::Notification(n)) => n,
        other => panic!("no log message on the call's sink: {other:?}"),
    };
    assert_eq!(message.method, "notifications/message");
    assert!(
        message
            .params
            .unwrap()
            .get()
            .contains("hello from the fake server")
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn backend_errors_keep_their_code_message_and_data() {
    let (backend, mut events) = start(stdio_config("errors", &["--era", "modern"], None));
    events.ready().await;
    match backend.call(call("fail", "{}")).await {
        Err(Failure::Backend { backend, error }) => {
            assert_eq!(backend, "errors");
            assert_eq!(error.code(), ErrorCode::Other(-32000));
            assert_eq!(error.message(), "the tool failed on purpose");
            assert_eq!(error.data(), Some(&json!({"why": "testing"})));
        }
        other => panic!("{other:?}"),
    }
    match backend.call(call("nope", "{}")).await {
        Err(Failure::Backend { error, .. }) => assert_eq!(error.code(), ErrorCode::InvalidParams),
        other => panic!("{other:?}"),
    }
    backend.shutdown();
}

#[actix_rt::test]
async fn shutdown_answers_in_flight_requests_and_closes_stdin() {
    let log = TempLog::new("shutdown");
    let (backend, mut events) = start(stdio_config("stopping", &["--era", "modern"], Some(&log)));
    events.ready().await;
    let started = Instant::now();
    let in_flight = backend.call(call("sleep", r#"{"ms":5000}"#));
    let stop = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        backend.shutdown();
    };
    let (result, ()) = tokio::join!(in_flight, stop);
    assert_eq!(kind(&result), "unavailable", "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    log.wait_for(|l| l == "EOF").await;
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "unavailable");
    assert!(backend.description().is_none());
    assert!(
        backend
            .wait_ready(Duration::from_millis(50))
            .await
            .is_none()
    );
    events.down().await;
}

#[actix_rt::test]
async fn a_command_that_cannot_start_is_down_and_unavailable() {
    let mut config = stdio_config("missing", &[], None);
    config.transport = handlers::Transport::stdio(["/nonexistent/mcp-server-binary"]);
    let (backend, mut events) = start(config);
    let reason = events.down().await;
    assert!(
        reason.contains("/nonexistent/mcp-server-binary"),
        "{reason}"
    );
    let started = Instant::now();
    let result = backend
        .call(BackendRequest::new(Method::ToolsList, Some(raw("{}"))))
        .await;
    assert_eq!(kind(&result), "unavailable");
    assert!(started.elapsed() < Duration::from_millis(100));
    assert!(
        backend
            .wait_ready(Duration::from_millis(300))
            .await
            .is_none()
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn a_child_ignoring_stdin_and_sigterm_is_killed() {
    let log = TempLog::new("stubborn");
    let args = ["--era", "modern", "--linger", "--ignore-term"];
    let (backend, mut events) = start(stdio_config("stubborn", &args, Some(&log)));
    events.ready().await;
    let start_line = log.wait_for(|l| l.starts_with("START")).await;
    let pid = start_line.trim_start_matches("START ").to_owned();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists());
    let started = Instant::now();
    backend.shutdown();
    log.wait_for(|l| l == "EOF").await;
    log.wait_for(|l| l == "TERM").await;
    // stdin closed, 2 s grace, SIGTERM, 2 s grace, SIGKILL (and reaped)
    while proc_dir.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "the child outlived SIGKILL"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_millis(3500),
        "{:?}",
        started.elapsed()
    );
}
