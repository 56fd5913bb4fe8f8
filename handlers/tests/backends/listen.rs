//! Subscriptions ([`handlers::BackendHandle::listen`]): a modern HTTP backend (a `subscriptions/listen` SSE
//! stream), a modern stdio backend (a listen request in flight, matched by subscription id) and a legacy
//! stdio backend (`resources/subscribe`; also over legacy HTTP, renewed with the session). Each shows an update arriving as an ordinary notification, the
//! filter being replaced, the subscription coming back after a restart, and an empty filter ending it.

use handlers::{BackendHandle, ListenFilter};
use protocol::Notification;
use serde_json::{Value, json};

use crate::fake_http::{self, Kind};
use crate::support::{
    Events, TempLog, call, eventually, http_config, kind, start, stdio_config, text_of,
};

const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const UPDATED: &str = "notifications/resources/updated";

fn filter(tools: bool, prompts: bool, resources: bool, uris: &[&str]) -> ListenFilter {
    ListenFilter {
        tools_list_changed: tools,
        prompts_list_changed: prompts,
        resources_list_changed: resources,
        resource_subscriptions: uris.iter().map(|u| (*u).to_owned()).collect(),
    }
}

fn uris(uris: &[&str]) -> ListenFilter {
    filter(false, false, false, uris)
}

fn params(n: &Notification) -> Value {
    serde_json::from_str(n.params.as_ref().map_or("null", |p| p.get())).unwrap()
}

/// Waits until the backend honours `want`.
async fn honoured(backend: &BackendHandle, want: Option<ListenFilter>) {
    let what = format!("the backend honours {want:?}");
    eventually(&what, || backend.listening() == want).await;
}

/// The next `notifications/resources/updated`, checked: for `uri`, without the subscription id, and with
/// no acknowledgement passed on before it.
async fn updated(events: &mut Events, uri: &str) {
    let seen = events.notifications_until(UPDATED).await;
    assert!(seen.iter().all(|n| n.method != ACKNOWLEDGED), "{seen:?}");
    assert_eq!(params(seen.last().unwrap()), json!({ "uri": uri }));
}

/// `touch` on the stdio fixture: how many notifications it sent.
async fn touch(backend: &BackendHandle, arguments: Value) -> String {
    let result = backend.call(call("touch", &arguments.to_string())).await;
    text_of(&result.unwrap())
}

#[actix_rt::test]
async fn modern_http_listen_stream_follows_the_filter_and_comes_back() {
    let server = fake_http::start(Kind::Modern);
    let url = server.url.clone();
    let (backend, mut events) = start(http_config("web", &url));
    // set before the backend is ready: prompts are not supported, so they are not asked for
    backend.listen(filter(true, true, false, &["file:///a", "file:///a"]));
    events.ready().await;
    honoured(&backend, Some(filter(true, false, false, &["file:///a"]))).await;
    let listen = server.fake.with_method("subscriptions/listen")[0].clone();
    assert_eq!(listen.headers["mcp-method"], "subscriptions/listen");
    assert_eq!(listen.headers["mcp-protocol-version"], "2026-07-28");
    let sent = listen.json();
    assert_eq!(
        sent["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    assert_eq!(server.fake.update("file:///a"), 1);
    updated(&mut events, "file:///a").await;

    // a new filter: a new stream; the old one is dropped once the new one is acknowledged
    backend.listen(uris(&["file:///b"]));
    honoured(&backend, Some(uris(&["file:///b"]))).await;
    eventually("the old stream is dropped", || {
        server.fake.open_listeners() == 1
    })
    .await;
    assert_eq!(server.fake.update("file:///a"), 0);
    assert_eq!(server.fake.update("file:///b"), 1);
    updated(&mut events, "file:///b").await;

    // the server ends the stream: it is listened to again
    server.fake.end_listeners();
    eventually("the subscription is sent again", || {
        server.fake.with_method("subscriptions/listen").len() == 3
            && server.fake.open_listeners() == 1
    })
    .await;
    assert_eq!(server.fake.update("file:///b"), 1);
    updated(&mut events, "file:///b").await;

    // the server restarts (same port, no state): the subscription is re-established on it
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    server.stop().await;
    drop(server);
    let server = fake_http::start_on(Kind::Modern, port, None);
    eventually("the restarted server gets the subscription", || {
        server.fake.open_listeners() == 1
    })
    .await;
    let again = server.fake.with_method("subscriptions/listen")[0].json();
    assert_eq!(
        again["params"]["notifications"],
        json!({"resourceSubscriptions": ["file:///b"]})
    );
    assert_eq!(server.fake.update("file:///b"), 1);
    updated(&mut events, "file:///b").await;

    // an empty filter ends it
    backend.listen(ListenFilter::default());
    eventually("the stream is dropped", || {
        server.fake.open_listeners() == 0
    })
    .await;
    honoured(&backend, None).await;
    assert_eq!(server.fake.with_method("subscriptions/listen").len(), 1);
    backend.shutdown();
}

#[actix_rt::test]
async fn modern_stdio_listen_request_follows_the_filter_and_comes_back() {
    let log = TempLog::new("listen-modern");
    let config = stdio_config("listening", &["--era", "modern"], Some(&log));
    let (backend, mut events) = start(config);
    events.ready().await;
    backend.listen(filter(true, true, false, &["file:///a"]));
    honoured(&backend, Some(filter(true, false, false, &["file:///a"]))).await;
    let first = log.wait_for(|l| l.starts_with("SUBSCRIBED")).await;
    assert!(
        first.ends_with(r#"{"resourceSubscriptions":["file:///a"],"toolsListChanged":true}"#),
        "{first}"
    );
    let first_id = first.split(' ').nth(1).unwrap().to_owned();

    assert_eq!(touch(&backend, json!({"uri": "file:///a"})).await, "1");
    updated(&mut events, "file:///a").await;
    assert_eq!(touch(&backend, json!({"list": "tools"})).await, "1");
    let changed = events
        .notification("notifications/tools/list_changed")
        .await;
    assert!(changed.params.is_none(), "{changed:?}");

    // a new filter: a new request; the old one is cancelled once the new one is acknowledged
    backend.listen(uris(&["file:///b"]));
    honoured(&backend, Some(uris(&["file:///b"]))).await;
    log.wait_for(|l| l == format!("UNSUBSCRIBED {first_id}"))
        .await;
    assert_eq!(touch(&backend, json!({"uri": "file:///a"})).await, "0");
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "1");
    updated(&mut events, "file:///b").await;

    // the process dies: the restarted one gets the subscription again
    assert_eq!(kind(&backend.call(call("exit", "{}")).await), "crashed");
    events.down().await;
    events.ready().await;
    let resubscribed = |l: &str| l.starts_with("SUBSCRIBED") && l.contains("file:///b");
    eventually("the restarted process is subscribed", || {
        let lines = log.lines();
        let restart = lines.iter().rposition(|l| l.starts_with("START")).unwrap();
        lines[restart..].iter().any(|l| resubscribed(l))
    })
    .await;
    honoured(&backend, Some(uris(&["file:///b"]))).await;
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "1");
    updated(&mut events, "file:///b").await;

    // an empty filter ends it
    backend.listen(ListenFilter::default());
    honoured(&backend, None).await;
    let last = log
        .lines()
        .into_iter()
        .rev()
        .find(|l| resubscribed(l))
        .unwrap();
    let last_id = last.split(' ').nth(1).unwrap().to_owned();
    log.wait_for(|l| l == format!("UNSUBSCRIBED {last_id}"))
        .await;
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "0");
    backend.shutdown();
}

#[actix_rt::test]
async fn legacy_stdio_subscribes_resources_and_again_after_a_restart() {
    let log = TempLog::new("listen-legacy");
    let config = stdio_config("subscribing", &["--era", "legacy"], Some(&log));
    let (backend, mut events) = start(config);
    // resources.listChanged is not supported: not honoured
    backend.listen(filter(true, false, true, &["file:///a"]));
    events.ready().await;
    honoured(&backend, Some(filter(true, false, false, &["file:///a"]))).await;
    let methods = |log: &TempLog| -> Vec<String> {
        log.messages()
            .iter()
            .filter(|m| {
                m["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("resources/"))
            })
            .map(|m| format!("{} {}", m["method"].as_str().unwrap(), m["params"]["uri"]))
            .collect()
    };
    assert_eq!(methods(&log), [r#"resources/subscribe "file:///a""#]);
    assert!(
        log.lines()
            .iter()
            .all(|l| !l.contains("subscriptions/listen"))
    );

    assert_eq!(touch(&backend, json!({"uri": "file:///a"})).await, "1");
    updated(&mut events, "file:///a").await;

    // a new filter: the URI removed is unsubscribed, the one added subscribed
    backend.listen(filter(true, false, false, &["file:///b"]));
    honoured(&backend, Some(filter(true, false, false, &["file:///b"]))).await;
    assert_eq!(
        methods(&log),
        [
            r#"resources/subscribe "file:///a""#,
            r#"resources/unsubscribe "file:///a""#,
            r#"resources/subscribe "file:///b""#
        ]
    );
    assert_eq!(touch(&backend, json!({"uri": "file:///a"})).await, "0");
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "1");
    updated(&mut events, "file:///b").await;

    // the process dies: the restarted one is subscribed again
    assert_eq!(kind(&backend.call(call("exit", "{}")).await), "crashed");
    events.down().await;
    events.ready().await;
    eventually("the restarted process is subscribed", || {
        let lines = log.lines();
        let restart = lines.iter().rposition(|l| l.starts_with("START")).unwrap();
        lines[restart..]
            .iter()
            .any(|l| l.contains("resources/subscribe") && l.contains("file:///b"))
    })
    .await;
    honoured(&backend, Some(filter(true, false, false, &["file:///b"]))).await;
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "1");
    updated(&mut events, "file:///b").await;

    // an empty filter unsubscribes everything
    backend.listen(ListenFilter::default());
    honoured(&backend, None).await;
    let unsubscribed = methods(&log);
    assert_eq!(
        unsubscribed.last().unwrap(),
        r#"resources/unsubscribe "file:///b""#
    );
    assert_eq!(touch(&backend, json!({"uri": "file:///b"})).await, "0");
    backend.shutdown();
}

#[actix_rt::test]
async fn legacy_http_subscribes_again_on_a_renewed_session() {
    // the session expires on the first tools/call
    let server = fake_http::start_expiring(1);
    let (backend, mut events) = start(http_config("old", &server.url));
    backend.listen(uris(&["file:///a"]));
    events.ready().await;
    honoured(&backend, Some(uris(&["file:///a"]))).await;
    let on = |session: &'static str| {
        move |r: &fake_http::Received| {
            r.json()["method"] == "resources/subscribe"
                && r.json()["params"]["uri"] == "file:///a"
                && r.headers.get("mcp-session-id").map(String::as_str) == Some(session)
        }
    };
    server.fake.wait_for(on("session-1")).await;
    assert_eq!(kind(&backend.call(call("echo", "{}")).await), "ok");
    server.fake.wait_for(on("session-2")).await;
    honoured(&backend, Some(uris(&["file:///a"]))).await;
    backend.shutdown();
}
