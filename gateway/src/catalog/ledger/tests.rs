use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::catalog::CatalogSnapshot;

const GRACE: Duration = Duration::from_secs(10);

fn listing(backend: &str) -> BackendListing {
    BackendListing {
        backend: backend.to_owned(),
        prefix: backend.to_owned(),
        tools: vec![json!({"name": "echo", "inputSchema": {"type": "object"}})],
        ..BackendListing::default()
    }
}

fn build(ledger: &Ledger, attempts: Vec<(&str, Attempt)>, now: Instant) -> CatalogSnapshot {
    let attempts: BTreeMap<String, Attempt> = attempts
        .into_iter()
        .map(|(n, a)| (n.to_owned(), a))
        .collect();
    ledger
        .build(attempts, now, now, None)
        .expect("no collision")
}

fn standing(ledger: &Ledger, name: &str, now: Instant) -> &'static str {
    ledger
        .report(now)
        .into_iter()
        .find(|r| r.name == name)
        .map_or("absent", |r| r.standing.label())
}

#[test]
fn a_failed_listing_keeps_the_last_good_catalog_marked_stale() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a", "b"], GRACE);
    let snap = build(
        &ledger,
        vec![
            ("a", Attempt::Listed(listing("a"))),
            ("b", Attempt::Listed(listing("b"))),
        ],
        t0,
    );
    assert!(snap.tool("a__echo").is_some() && snap.tool("b__echo").is_some());
    assert_eq!(snap.degraded(), None);

    let t1 = t0 + Duration::from_secs(1);
    let snap = build(
        &ledger,
        vec![(
            "a",
            Attempt::Failed("backend a is at its concurrency limit".into()),
        )],
        t1,
    );
    assert!(snap.tool("a__echo").is_some(), "kept, not dropped");
    assert_eq!(snap.backends_stale(), ["a"]);
    assert!(snap.backends_missing().is_empty());
    assert!(
        snap.tool("b__echo").is_some(),
        "b was not asked and keeps its listing"
    );
    let report = ledger.report(t1 + Duration::from_millis(500));
    assert_eq!(report[0].standing.label(), "stale");
    assert_eq!(
        report[0].standing.reason(),
        Some("backend a is at its concurrency limit")
    );
    assert_eq!(report[0].catalog_age, Some(Duration::from_millis(1_500)));
    assert_eq!(report[1].standing, Standing::Up);

    // listed again with backoff until it answers
    assert_eq!(ledger.next_due(), Some(t1 + Duration::from_millis(250)));
    assert!(ledger.take_due(t1).is_empty());
    let due = ledger.take_due(t1 + Duration::from_millis(250));
    assert_eq!(due.into_iter().collect::<Vec<_>>(), ["a"]);
    let t2 = t1 + Duration::from_millis(250);
    build(
        &ledger,
        vec![("a", Attempt::Failed("timed out".into()))],
        t2,
    );
    assert_eq!(ledger.next_due(), Some(t2 + Duration::from_millis(500)));
    let t3 = t2 + Duration::from_millis(500);
    ledger.take_due(t3);
    let snap = build(&ledger, vec![("a", Attempt::Listed(listing("a")))], t3);
    assert_eq!(snap.degraded(), None);
    assert_eq!(ledger.next_due(), None, "nothing to retry once it answers");
}

#[test]
fn a_backend_is_left_out_only_when_down_past_the_grace_period() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a"], GRACE);
    build(&ledger, vec![("a", Attempt::Listed(listing("a")))], t0);
    // (when, attempt or none, standing, listed)
    let t1 = t0 + Duration::from_secs(1);
    let snap = build(
        &ledger,
        vec![("a", Attempt::Down("connection refused".into()))],
        t1,
    );
    assert!(
        snap.tool("a__echo").is_some(),
        "a restart does not empty the catalog"
    );
    assert_eq!(snap.backends_stale(), ["a"]);
    assert_eq!(
        ledger.next_due(),
        Some(t1 + GRACE),
        "looked at again when the grace ends"
    );
    // still down, asked again within the grace: the outage counts from its start
    let snap = build(
        &ledger,
        vec![("a", Attempt::Down("connection refused".into()))],
        t1 + Duration::from_secs(5),
    );
    assert_eq!(snap.backends_stale(), ["a"]);
    // the grace ends: left out, whether asked or not
    let snap = build(&ledger, vec![], t1 + GRACE);
    assert_eq!(snap.backends_missing(), ["a"]);
    assert!(snap.tool("a__echo").is_none());
    assert_eq!(standing(&ledger, "a", t1 + GRACE), "down");
    // back: listed again
    let snap = build(
        &ledger,
        vec![("a", Attempt::Listed(listing("a")))],
        t1 + GRACE * 2,
    );
    assert!(snap.tool("a__echo").is_some());
    assert_eq!(standing(&ledger, "a", t1 + GRACE * 2), "up");
}

#[test]
fn a_backend_never_listed_is_down_whatever_went_wrong() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a", "b", "c"], GRACE);
    assert_eq!(standing(&ledger, "a", t0), "down", "not listed yet");
    let snap = build(
        &ledger,
        vec![
            ("a", Attempt::Down("connecting".into())),
            ("b", Attempt::Failed("timed out".into())),
        ],
        t0,
    );
    assert_eq!(snap.backends_missing(), ["a", "b", "c"]);
    assert!(snap.backends_stale().is_empty());
    // an up backend that failed is retried; one not connected waits for its `Ready`
    assert_eq!(ledger.next_due(), Some(t0 + Duration::from_millis(250)));
}

#[test]
fn retries_back_off_to_thirty_seconds() {
    let table = [
        (1, 250),
        (2, 500),
        (3, 1_000),
        (4, 2_000),
        (7, 16_000),
        (8, 30_000),
        (100, 30_000),
    ];
    for (failures, ms) in table {
        assert_eq!(
            retry_delay(failures),
            Duration::from_millis(ms),
            "{failures}"
        );
    }
}

#[test]
fn a_backend_whose_new_listing_collides_is_left_out_alone() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a", "b"], GRACE);
    build(&ledger, vec![("a", Attempt::Listed(listing("a")))], t0);
    // b lists a tool that collides with a's (both unprefixed)
    let mut a = listing("a");
    a.prefix = String::new();
    build(&ledger, vec![("a", Attempt::Listed(a))], t0);
    let mut b = listing("b");
    b.prefix = String::new();
    let attempts = BTreeMap::from([("b".to_owned(), Attempt::Listed(b.clone()))]);
    let only_b = |n: &str| n == "b";
    let snap = ledger
        .build(attempts, t0, t0, Some(&only_b))
        .expect("built without b");
    assert!(snap.tool("echo").is_some(), "a stays listed");
    assert_eq!(snap.backends_missing(), ["b"]);
    let report = ledger.report(t0);
    assert_eq!(report[1].standing.label(), "down");
    assert!(
        report[1].standing.reason().unwrap().contains("collides"),
        "{report:?}"
    );
    assert_eq!(report[1].catalog_age, None, "its listing is forgotten");
    // at start the same collision is an error
    let fresh = Ledger::new(["a", "b"], GRACE);
    let mut a = listing("a");
    a.prefix = String::new();
    let attempts = BTreeMap::from([
        ("a".to_owned(), Attempt::Listed(a)),
        ("b".to_owned(), Attempt::Listed(b)),
    ]);
    assert!(fresh.build(attempts, t0, t0, None).is_err());
}

#[test]
fn a_list_that_fails_keeps_its_last_good_copy_and_never_drops_the_others() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a"], GRACE);
    let mut first = listing("a");
    first.prompts = vec![json!({"name": "greet"})];
    let snap = build(&ledger, vec![("a", Attempt::Listed(first))], t0);
    assert!(snap.prompt("a__greet").is_some());

    // prompts/list fails; tools/list gives a new tool: the new tools, the old prompts, marked stale.
    let mut second = listing("a");
    second
        .tools
        .push(json!({"name": "added", "inputSchema": {"type": "object"}}));
    let failed = vec![FailedList {
        kind: ListKind::Prompts,
        reason: "backend a failed: internal error".into(),
    }];
    let t1 = t0 + Duration::from_secs(1);
    let snap = build(&ledger, vec![("a", Attempt::Partial(second, failed))], t1);
    assert!(snap.tool("a__echo").is_some() && snap.tool("a__added").is_some());
    assert!(
        snap.prompt("a__greet").is_some(),
        "the failed list's last good copy is kept"
    );
    assert_eq!(snap.backends_stale(), ["a"]);
    let report = ledger.report(t1);
    assert_eq!(
        report[0].standing.reason(),
        Some("prompts/list: backend a failed: internal error")
    );
    assert_eq!(
        ledger.next_due(),
        Some(t1 + Duration::from_millis(250)),
        "retried"
    );

    // The next full listing makes it up again.
    let t2 = t1 + Duration::from_secs(1);
    build(&ledger, vec![("a", Attempt::Listed(listing("a")))], t2);
    assert_eq!(standing(&ledger, "a", t2), "up");
}

#[test]
fn a_list_that_fails_on_a_first_listing_is_empty_and_the_rest_is_served() {
    let t0 = Instant::now();
    let ledger = Ledger::new(["a"], GRACE);
    let failed = vec![FailedList {
        kind: ListKind::ResourceTemplates,
        reason: "timed out".into(),
    }];
    let snap = build(
        &ledger,
        vec![("a", Attempt::Partial(listing("a"), failed))],
        t0,
    );
    assert!(snap.tool("a__echo").is_some());
    assert_eq!(standing(&ledger, "a", t0), "stale");
}
