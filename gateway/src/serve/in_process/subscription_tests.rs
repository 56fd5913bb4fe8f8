//! `subscriptions/listen` through the pipeline: a request like any other until its stream is open (the
//! middleware chain, the worker's in-flight bound), bounded per request and per caller, its URIs routed by
//! the caller's view and subscribed through the backend that view routes them to.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::InProcessGateway;
use super::fixtures::{json_of, modern_request, principal};
use crate::config::Config;
use crate::session::subscriptions::{Filter, MAX_LISTENS_PER_CALLER, MAX_PER_LISTEN};

const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

async fn gateway(before: &str) -> InProcessGateway {
    let config =
        Config::from_toml_str(&format!("{before}\n{MOCK}"), Path::new("test.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

/// The listen request for `uris`, as a 2026-07-28 client sends it.
fn listen(uris: &[String]) -> (actix_web::http::header::HeaderMap, bytes::Bytes) {
    modern_request(
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": uris}}),
        &[("Accept", "text/event-stream")],
    )
}

/// A resource URI the mock serves.
async fn served_uri(gw: &InProcessGateway) -> String {
    let (headers, body) = modern_request("resources/list", json!({}), &[]);
    let listed = json_of(&gw.post(headers, body).await);
    listed["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{listed}"))
        .to_owned()
}

/// The first message of the answer to a listen from `who`, bounded in time: an answer that never comes (a
/// stream opened where a refusal was due, on the code before) fails the test instead of hanging it.
async fn first_message(
    gw: &InProcessGateway,
    who: Option<Arc<crate::auth::Principal>>,
    uris: &[String],
) -> Value {
    let (headers, body) = listen(uris);
    let answered = tokio::time::timeout(
        Duration::from_secs(20),
        gw.post_first(who, headers, body, 1),
    )
    .await
    .expect("the listen was answered (a refusal, or the stream's acknowledgement)");
    let first = answered.streamed.first().unwrap_or(&answered.body).clone();
    serde_json::from_slice(&first).unwrap_or_else(|e| panic!("{e}: {answered:?}"))
}

/// Regression: `subscriptions/listen` skipped the middleware chain (scopes, `allow_methods`, rate limits,
/// the access log, any middleware): a chain that does not allow it opened the stream anyway.
#[actix_rt::test]
async fn subscriptions_listen_runs_through_the_middleware_chain() {
    let gw = gateway(
        "[[middleware]]\nkind = \"allow_methods\"\nmethods = [\"initialize\", \"tools/list\"]\n",
    )
    .await;
    let answer = first_message(&gw, None, &[]).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert_eq!(gw.gateway().subscriptions.listen_streams(), 0);
}

/// Regression: a listen named any number of URIs (a few thousand stopped a worker for seconds).
#[actix_rt::test]
async fn a_listen_naming_more_uris_than_its_cap_is_refused_naming_the_cap() {
    let gw = gateway("").await;
    let uri = served_uri(&gw).await;
    let too_many: Vec<String> = (0..=MAX_PER_LISTEN).map(|i| format!("{uri}?{i}")).collect();
    let answer = first_message(&gw, None, &too_many).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&MAX_PER_LISTEN.to_string()), "{message}");
    assert_eq!(gw.gateway().subscriptions.listen_streams(), 0);
    // At the cap, it opens: acknowledged with the URIs the view routes (here the one the mock serves).
    let at_cap: Vec<String> = std::iter::once(uri.clone())
        .chain((1..MAX_PER_LISTEN).map(|i| format!("{uri}?{i}")))
        .collect();
    let ack = first_message(&gw, None, &at_cap).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let honoured = &ack["params"]["notifications"]["resourceSubscriptions"];
    assert!(
        honoured.as_array().unwrap().contains(&json!(uri)),
        "{honoured}"
    );
}

/// Regression: a caller's streams were bounded only gateway-wide; now one principal's streams are counted
/// against it (however many sessions or addresses it uses), and another principal is not affected.
#[actix_rt::test]
async fn a_principals_listen_streams_are_bounded_per_principal() {
    let gw = gateway("").await;
    let alice = principal("alice", &[], &[]);
    let id = alice.as_ref().unwrap().id();
    let caller = Some(handlers::Caller::new("principal", id.as_bytes()));
    let (tx, _rx) = mpsc::channel(1);
    let subscriptions = &gw.gateway().subscriptions;
    let reader = Arc::new(crate::session::Reader::new(0, alice.as_deref()));
    let held: Vec<_> = (0..MAX_LISTENS_PER_CALLER)
        .map(|i| {
            let id = protocol::RequestId::number(i as i64);
            subscriptions
                .listen(
                    id,
                    Filter::default(),
                    caller,
                    true,
                    tx.clone(),
                    reader.clone(),
                )
                .unwrap()
        })
        .collect();
    let refused = first_message(&gw, alice.clone(), &[]).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&MAX_LISTENS_PER_CALLER.to_string()),
        "{message}"
    );
    let bob = first_message(&gw, principal("bob", &[], &[]), &[]).await;
    assert_eq!(bob["method"], "notifications/subscriptions/acknowledged");
    drop(held);
    let again = first_message(&gw, alice, &[]).await;
    assert_eq!(again["method"], "notifications/subscriptions/acknowledged");
}
