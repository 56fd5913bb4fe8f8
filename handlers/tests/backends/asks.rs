//! A backend's requests while it serves a caller's request (sampling, elicitation, roots): relayed to the
//! request's sink when they can be attributed (its own response stream, legacy or 2026-07-28; on stdio or a
//! legacy session's GET stream, the only request in flight), refused when they cannot (-32021 naming the
//! capability the client did not declare, else -32601), answered with an error when the caller does not
//! reply in time or goes away, and `roots/list` answered from the configured roots or, outside any request,
//! with none. The answer reaches the backend under its own id.

use std::time::{Duration, Instant};

use handlers::{BackendRequest, Related};
use protocol::Request;
use protocol::method::Method;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::fake_http::{self, Kind};
use crate::support::{TempLog, WAIT, call, http_config, kind, raw, start, stdio_config, text_of};

type Reply = oneshot::Sender<Result<Box<serde_json::value::RawValue>, protocol::Error>>;

/// A `sample` call whose related messages go to the returned receiver.
fn sample_with_sink(arguments: &str) -> (BackendRequest, mpsc::Receiver<Related>) {
    let (sink, rx) = mpsc::channel(8);
    let mut request = call("sample", arguments);
    request.related = Some(sink);
    (request, rx)
}

/// The next backend request on a sink (skipping notifications), within [`WAIT`].
async fn next_request(rx: &mut mpsc::Receiver<Related>) -> (Request, Reply) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Related::InputRequest { request, reply })) => return (request, reply),
            Ok(Some(Related::Notification(_))) => {}
            other => panic!("no backend request on the sink: {other:?}"),
        }
    }
}

fn sampled(text: &str) -> Box<serde_json::value::RawValue> {
    raw(
        &json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"})
            .to_string(),
    )
}

#[actix_rt::test]
async fn a_stdio_backend_request_reaches_the_only_caller_and_its_answer_the_backend() {
    let log = TempLog::new("sample");
    let (backend, mut events) = start(stdio_config("asker", &["--era", "legacy"], Some(&log)));
    events.ready().await;
    // the gateway declared what it can now serve
    let init = log.wait_for(|l| l.contains(r#""initialize""#)).await;
    let init: Value = serde_json::from_str(&init).unwrap();
    assert_eq!(
        init["params"]["capabilities"],
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
    );

    let (request, mut rx) = sample_with_sink(r#"{"prompt":"say hi"}"#);
    let answering = async {
        let (asked, reply) = next_request(&mut rx).await;
        reply.send(Ok(sampled("hello"))).unwrap();
        asked
    };
    let (result, asked) = tokio::join!(backend.call(request), answering);
    assert_eq!(text_of(&result.unwrap()), "sampled: hello");
    assert_eq!(asked.method, "sampling/createMessage");
    assert!(asked.params.unwrap().get().contains("say hi"));
    let backend_id = asked.id.as_string().unwrap();
    assert!(backend_id.starts_with("sample-"), "{backend_id}");
    // the backend got the answer under its own id
    let answer = log
        .messages()
        .into_iter()
        .find(|m| m["id"] == backend_id.as_str() && m.get("method").is_none())
        .unwrap();
    assert_eq!(answer["result"]["content"]["text"], "hello");
    backend.shutdown();
}

#[actix_rt::test]
async fn with_two_requests_in_flight_a_stdio_backend_request_is_method_not_found() {
    let (backend, mut events) = start(stdio_config("busy", &["--era", "legacy"], None));
    events.ready().await;
    let other = backend.clone();
    let slow = actix_rt::spawn(async move { other.call(call("sleep", r#"{"ms":1500}"#)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (request, mut rx) = sample_with_sink("{}");
    let result = backend.call(request).await.unwrap();
    assert_eq!(
        text_of(&result),
        "refused -32601: mcpgw cannot relay sampling/createMessage: 2 client requests are in \
         flight on this backend and nothing says which one it belongs to"
    );
    assert!(rx.try_recv().is_err(), "nothing was relayed");
    assert_eq!(kind(&slow.await.unwrap()), "ok");

    // alone again, and without a sink: the caller cannot be asked; its client declared no sampling
    let result = backend.call(call("sample", "{}")).await.unwrap();
    assert_eq!(
        text_of(&result),
        "refused -32021: mcpgw cannot relay sampling/createMessage: the client did not declare \
         the sampling capability"
    );
    // one whose client declared sampling but cannot be asked on this request
    let mut declared = call("sample", "{}");
    declared.client_capabilities = Some(json!({"sampling": {}}));
    assert_eq!(
        text_of(&backend.call(declared).await.unwrap()),
        "refused -32601: mcpgw cannot relay sampling/createMessage: the client request it \
         belongs to cannot receive server requests"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn an_unanswered_backend_request_times_out_with_the_call_and_a_gone_caller_ends_it() {
    let log = TempLog::new("sample-timeout");
    let mut config = stdio_config("slowpoke", &["--era", "legacy"], Some(&log));
    config.request_timeout = Duration::from_millis(800);
    let (backend, mut events) = start(config);
    events.ready().await;

    // nobody answers: the backend hears -32001 when the call's deadline passes
    let (request, mut rx) = sample_with_sink("{}");
    let started = Instant::now();
    let holding = async {
        let (asked, reply) = next_request(&mut rx).await;
        (asked, reply)
    };
    let (result, (asked, _reply_held)) = tokio::join!(backend.call(request), holding);
    assert_eq!(kind(&result), "timeout");
    let backend_id = asked.id.as_string().unwrap();
    let line = log
        .wait_for(|l| l.contains(&format!(r#""id":"{backend_id}""#)) && l.contains("-32001"))
        .await;
    assert!(
        line.contains("did not answer sampling/createMessage"),
        "{line}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // the caller goes away without answering: the backend hears so at once
    let (request, mut rx) = sample_with_sink("{}");
    let dropping = async {
        let (_, reply) = next_request(&mut rx).await;
        drop(reply);
    };
    let (result, ()) = tokio::join!(backend.call(request), dropping);
    assert_eq!(
        text_of(&result.unwrap()),
        "refused -32603: the client request ended before the client answered sampling/createMessage"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn a_legacy_http_backend_request_on_a_response_stream_reaches_its_caller() {
    let server = fake_http::start(Kind::Legacy);
    let (backend, mut events) = start(http_config("old", &server.url));
    events.ready().await;
    let init = &server.fake.with_method("initialize")[0];
    assert_eq!(
        init.json()["params"]["capabilities"],
        json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}})
    );

    let (request, mut rx) = sample_with_sink("{}");
    let answering = async {
        let (asked, reply) = next_request(&mut rx).await;
        reply.send(Ok(sampled("hi from http"))).unwrap();
        asked
    };
    let (result, asked) = tokio::join!(backend.call(request), answering);
    assert_eq!(text_of(&result.unwrap()), "sampled: hi from http");
    assert_eq!(asked.id.as_string().as_deref(), Some("srv-sample-1"));
    let answer = server
        .fake
        .wait_for(|r| r.json()["id"] == "srv-sample-1")
        .await;
    assert_eq!(answer.headers["mcp-session-id"], "session-1");

    // without a sink the request on the stream is refused (its client declared no sampling: -32021), and
    // the call still completes
    let result = backend.call(call("sample", "{}")).await.unwrap();
    let text = text_of(&result);
    assert!(
        text.starts_with("refused:") && text.contains("-32021"),
        "{text}"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn a_legacy_http_backend_request_on_the_get_stream_reaches_the_only_caller() {
    let server = fake_http::start(Kind::Legacy);
    let (backend, mut events) = start(http_config("old", &server.url));
    events.ready().await;
    server.fake.wait_for(|r| r.http_method == "GET").await;

    let (sink, mut rx) = mpsc::channel(8);
    let mut request = call("ask_on_get", "{}");
    request.related = Some(sink);
    let answering = async {
        let (asked, reply) = next_request(&mut rx).await;
        reply.send(Ok(sampled("hi from the get stream"))).unwrap();
        asked
    };
    let (result, asked) = tokio::join!(backend.call(request), answering);
    assert_eq!(
        text_of(&result.unwrap()),
        "sampled on get: hi from the get stream"
    );
    assert_eq!(asked.id.as_string().as_deref(), Some("srv-get-1"));

    // the only request in flight cannot be asked anything: refused, and the call still completes
    let result = backend.call(call("ask_on_get", "{}")).await.unwrap();
    let text = text_of(&result);
    assert!(
        text.starts_with("refused:") && text.contains("-32021"),
        "{text}"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn a_modern_http_backend_request_on_a_response_stream_reaches_its_caller() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("stateless", &server.url));
    events.ready().await;

    let (request, mut rx) = sample_with_sink("{}");
    let answering = async {
        let (asked, reply) = next_request(&mut rx).await;
        reply
            .send(Ok(sampled("hi from a stateless server")))
            .unwrap();
        asked
    };
    let (result, asked) = tokio::join!(backend.call(request), answering);
    assert_eq!(
        text_of(&result.unwrap()),
        "sampled: hi from a stateless server"
    );
    assert_eq!(asked.method, "sampling/createMessage");
    let id = asked.id.as_string().unwrap();
    // the answer went back to the endpoint as a JSON-RPC response, under the backend's id
    let answer = server
        .fake
        .wait_for(|r| r.json()["id"] == id.as_str())
        .await;
    assert_eq!(answer.headers["mcp-protocol-version"], "2026-07-28");
    assert!(!answer.headers.contains_key("mcp-method"));
    assert_eq!(
        answer.json()["result"]["content"]["text"],
        "hi from a stateless server"
    );

    // without a sink, a client that declared no sampling: -32021 naming it; the call still completes
    let result = backend.call(call("sample", "{}")).await.unwrap();
    let text = text_of(&result);
    assert!(
        text.contains("-32021") && text.contains("sampling capability"),
        "{text}"
    );
    // one that declared it but cannot be asked on this request: -32601
    let mut declared = call("sample", "{}");
    declared.client_capabilities = Some(json!({"sampling": {}}));
    let text = text_of(&backend.call(declared).await.unwrap());
    assert!(text.contains("-32601"), "{text}");
    backend.shutdown();
}

#[actix_rt::test]
async fn several_json_rpc_messages_in_one_json_body_are_read_one_by_one() {
    let server = fake_http::start(Kind::Modern);
    let (backend, mut events) = start(http_config("chatty", &server.url));
    events.ready().await;
    let (sink, mut rx) = mpsc::channel(8);
    let mut request = crate::support::tool_call(
        "chatty",
        r#"{"name":"chatty","arguments":{},"_meta":{"progressToken":"client-token"}}"#,
    );
    request.related = Some(sink);
    let result = backend.call(request).await.unwrap();
    assert_eq!(text_of(&result), "chatted");
    let mut seen = Vec::new();
    while let Ok(Related::Notification(n)) = rx.try_recv() {
        seen.push((n.method.clone(), n.params.map(|p| p.get().to_owned())));
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "notifications/message");
    assert_eq!(seen[1].0, "notifications/progress");
    assert!(
        seen[1]
            .1
            .as_deref()
            .unwrap()
            .contains(r#""progressToken":"client-token""#),
        "the client's token is restored: {seen:?}"
    );
    backend.shutdown();
}

#[actix_rt::test]
async fn roots_list_outside_any_request_is_answered_with_no_roots_or_the_configured_ones() {
    // (configured roots, what the backend reads back)
    let cases: [(&[&str], &str); 2] = [
        (&[], r#"{"roots":[]}"#),
        (
            &["file:///srv/data"],
            r#"{"roots":[{"name":"data","uri":"file:///srv/data"}]}"#,
        ),
    ];
    for (roots, expected) in cases {
        let log = TempLog::new("roots");
        let mut config = stdio_config("rooted", &["--era", "legacy", "--ask-roots"], Some(&log));
        config.roots = roots.iter().map(|r| (*r).to_owned()).collect();
        let (backend, mut events) = start(config);
        events.ready().await;
        let line = log.wait_for(|l| l.starts_with("ROOTS ")).await;
        assert_eq!(line, format!("ROOTS {expected}"), "roots {roots:?}");
        backend.shutdown();
    }
}

/// What broke: a backend that asked `roots/list` while the gateway's own listing was its one request in
/// flight got -32021 ("the client did not declare the roots capability"), as if a client stood behind the
/// listing. Control traffic has no caller: the question is unattributed, answered with the configured
/// roots or none.
#[actix_rt::test]
async fn roots_list_during_the_gateways_own_listing_is_unattributed() {
    let log = TempLog::new("roots-list");
    let config = stdio_config(
        "lister",
        &[
            "--era",
            "legacy",
            "--ask-roots-on-list",
            "--list-delay-ms",
            "300",
        ],
        Some(&log),
    );
    let (backend, mut events) = start(config);
    events.ready().await;
    let listed = backend
        .call(BackendRequest::new(Method::ToolsList, None))
        .await;
    assert!(listed.is_ok(), "{listed:?}");
    let line = log.wait_for(|l| l.starts_with("ROOTS ")).await;
    assert_eq!(line, r#"ROOTS {"roots":[]}"#);
    backend.shutdown();
}
