//! The subscription tables: bounds per session, listen, caller and gateway, and fan-out to exactly who asked.

use super::*;
use serde_json::json;
use std::sync::Arc;

fn updated(uri: &str) -> Notification {
    Notification::new(
        "notifications/resources/updated",
        Some(&json!({"uri": uri})),
    )
}

fn reader() -> Arc<Reader> {
    Arc::new(Reader::new(0, None))
}

fn uris(backend: &str, names: impl IntoIterator<Item = String>) -> BTreeMap<String, String> {
    names.into_iter().map(|u| (u, backend.to_owned())).collect()
}

#[test]
fn updates_reach_subscribers_only() {
    let subs = Subscriptions::default();
    subs.subscribe("s1", "file:///a", "files").unwrap();
    subs.subscribe("s2", "file:///b", "files").unwrap();
    let to = |uri| subs.recipients(Some("files"), &updated(uri)).sessions;
    assert_eq!(to("file:///a"), vec!["s1"]);
    assert!(to("file:///c").is_empty());
    assert_eq!(subs.uris_of("files").len(), 2);
    subs.unsubscribe("s1", "file:///a");
    assert!(to("file:///a").is_empty());
    // s1 holds nothing now (its actor may rest); s2 still does.
    assert!(!subs.has_session("s1"));
    assert!(subs.has_session("s2") && subs.has_sessions());
    subs.end_session("s2");
    assert!(subs.uris_of("files").is_empty());
    assert!(!subs.has_sessions());
}

#[test]
fn a_resource_update_reaches_only_who_subscribed_through_the_backend_that_sent_it() {
    let subs = Arc::new(Subscriptions::default());
    subs.subscribe("s1", "mem://x", "a").unwrap();
    let (tx, _rx) = mpsc::channel(4);
    let filter = Filter {
        uris: uris("a", ["mem://x".to_owned()]),
        ..Filter::default()
    };
    let _guard = subs
        .listen(RequestId::number(1), filter, None, true, tx, reader())
        .unwrap();
    // Backend b serves (to another view) the same URI: its update is not a's subscribers' business.
    let from_b = subs.recipients(Some("b"), &updated("mem://x"));
    assert!(from_b.sessions.is_empty() && from_b.listens.is_empty());
    let from_a = subs.recipients(Some("a"), &updated("mem://x"));
    assert_eq!((from_a.sessions.len(), from_a.listens.len()), (1, 1));
    assert!(subs.uris_of("b").is_empty());
}

#[test]
fn listen_streams_get_what_they_asked_for_tagged() {
    let subs = Arc::new(Subscriptions::default());
    let (tx, _rx) = mpsc::channel(4);
    let filter = Filter {
        tools: true,
        uris: uris("files", ["file:///a".to_owned()]),
        ..Filter::default()
    };
    let guard = subs
        .listen(RequestId::number(9), filter, None, true, tx, reader())
        .unwrap();
    let changed = |method: &str| subs.recipients(None, &Notification::new(method, None));
    let r = changed("notifications/tools/list_changed");
    assert_eq!(r.listens.len(), 1);
    assert!(r.all_sessions);
    let msg: serde_json::Value = serde_json::from_slice(&r.listens[0].1).unwrap();
    assert_eq!(msg["params"]["_meta"][SUBSCRIPTION_ID], 9);
    assert!(
        changed("notifications/prompts/list_changed")
            .listens
            .is_empty()
    );
    let to_a = || subs.recipients(Some("files"), &updated("file:///a"));
    assert_eq!(to_a().listens.len(), 1);
    assert_eq!(subs.uris_of("files").len(), 1);
    drop(guard);
    assert!(to_a().listens.is_empty());
    assert!(
        changed("notifications/tools/list_changed")
            .listens
            .is_empty()
    );
    assert!(
        subs.uris_of("files").is_empty(),
        "the stream's URIs go with it"
    );
    assert_eq!(subs.lock().callers.len(), 0);
}

#[test]
fn a_session_is_bounded() {
    let subs = Subscriptions::default();
    for i in 0..MAX_PER_SESSION {
        subs.subscribe("s", &format!("u{i}"), "b").unwrap();
    }
    assert_eq!(
        subs.subscribe("s", "one-more", "b"),
        Err(SubscribeError::UrisForSession)
    );
    subs.subscribe("s", "u0", "b").unwrap();
}

#[test]
fn a_caller_with_many_sessions_and_streams_is_bounded_across_them() {
    let subs = Arc::new(Subscriptions::default());
    let caller = Some(Caller::new("principal", b"alice"));
    let other = Some(Caller::new("principal", b"bob"));
    // Four sessions of one principal fill its bound; a fifth session's first URI is refused.
    for s in 0..MAX_PER_CALLER / MAX_PER_SESSION {
        for i in 0..MAX_PER_SESSION {
            subs.subscribe_as(caller, &format!("s{s}"), &format!("u{i}"), "b")
                .unwrap();
        }
    }
    assert_eq!(
        subs.subscribe_as(caller, "s-more", "u0", "b"),
        Err(SubscribeError::UrisForCaller)
    );
    let (tx, _rx) = mpsc::channel(1);
    let one = Filter {
        uris: uris("b", ["x".to_owned()]),
        ..Filter::default()
    };
    assert_eq!(
        subs.listen(
            RequestId::number(1),
            one.clone(),
            caller,
            true,
            tx.clone(),
            reader()
        )
        .err(),
        Some(SubscribeError::UrisForCaller)
    );
    // Another principal is not affected.
    subs.subscribe_as(other, "t", "u0", "b").unwrap();
    let guard = subs.listen(RequestId::number(2), one, other, true, tx.clone(), reader());
    assert!(guard.is_ok());
    // Its sessions gone, the caller may subscribe again.
    subs.end_session("s0");
    subs.subscribe_as(caller, "s-more", "u0", "b").unwrap();
}

#[test]
fn a_caller_holds_at_most_its_streams() {
    let subs = Arc::new(Subscriptions::default());
    let caller = Some(Caller::new("address", &[127, 0, 0, 1]));
    let (tx, _rx) = mpsc::channel(1);
    let mut held = Vec::new();
    for i in 0..MAX_LISTENS_PER_CALLER {
        let id = RequestId::number(i as i64);
        held.push(
            subs.listen(id, Filter::default(), caller, true, tx.clone(), reader())
                .unwrap(),
        );
    }
    let refused = subs
        .listen(
            RequestId::number(-1),
            Filter::default(),
            caller,
            true,
            tx.clone(),
            reader(),
        )
        .err();
    assert_eq!(refused, Some(SubscribeError::ListensForCaller));
    assert!(refused.is_some_and(|e| e.is_callers()));
    held.pop();
    assert!(
        subs.listen(
            RequestId::number(-2),
            Filter::default(),
            caller,
            true,
            tx,
            reader()
        )
        .is_ok()
    );
}

/// Regression: a listen stream with a few thousand URIs re-scanned every subscribed URI once per URI it
/// named (under the lock, on the worker's thread). Now each backend's URIs are its own index: what one
/// backend's sync reads is what that backend serves, whatever else is subscribed.
#[test]
fn subscribing_many_uris_costs_work_in_proportion_to_them_not_to_everything_subscribed() {
    let subs = Arc::new(Subscriptions::default());
    let (tx, _rx) = mpsc::channel(1);
    let mut guards = Vec::new();
    // 40 streams of 1,000 URIs each through backend "big"; one URI through "small".
    for s in 0..40 {
        let filter = Filter {
            uris: uris("big", (0..1000).map(|i| format!("mem://{s}/{i}"))),
            ..Filter::default()
        };
        guards.push(
            subs.listen(
                RequestId::number(s),
                filter,
                None,
                true,
                tx.clone(),
                reader(),
            )
            .unwrap(),
        );
    }
    let filter = Filter {
        uris: uris("small", ["mem://one".to_owned()]),
        ..Filter::default()
    };
    guards.push(
        subs.listen(
            RequestId::number(99),
            filter,
            None,
            true,
            tx.clone(),
            reader(),
        )
        .unwrap(),
    );
    let state = subs.lock();
    // What "small"'s sync reads: its own index entry, one URI.
    assert_eq!(state.by_backend.get("small").map(BTreeMap::len), Some(1));
    assert_eq!(state.by_backend.get("big").map(BTreeMap::len), Some(40_000));
    // An update of one URI reaches its one stream through the index, not by visiting the 41 streams.
    let key = ("big".to_owned(), "mem://7/7".to_owned());
    assert_eq!(state.listening.get(&key).map(BTreeSet::len), Some(1));
    drop(state);
    assert_eq!(subs.uris_of("small").len(), 1);
    let r = subs.recipients(Some("big"), &updated("mem://7/7"));
    assert_eq!(r.listens.len(), 1);
}
