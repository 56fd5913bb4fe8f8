//! The policy's decisions, table-driven; the views one worker keeps (built once per audience and catalog,
//! dropped past their bound); a restricted view's lists, routes and backend names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use protocol::validate::Catalog;
use serde_json::{Value, json};

use super::views::{Seen, Views};
use super::*;
use crate::catalog::{BackendListing, CatalogBuilder, CatalogSnapshot, ListKind};

/// The rules of `toml`, with `[auth]` on (rules naming principals apply only with it).
fn rules(toml: &str) -> Arc<Policy> {
    let toml = format!(
        "{toml}\n[[auth.api_key]]\nprincipal = \"tester\"\ndigest = \"sha256:{}\"\n",
        "0".repeat(64)
    );
    let config =
        crate::config::Config::from_toml_str(&toml, std::path::Path::new("t.toml")).unwrap();
    Policy::new(&config.policies).expect("rules")
}

fn principal(name: &str, groups: &[&str]) -> Principal {
    Principal {
        name: name.to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        scopes: Vec::new(),
        token: None,
    }
}

fn tool_with(annotations: Value) -> Value {
    json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": annotations})
}

const RULES: &str = r#"
[[policy]]
principal = "alice"
allow = ["backend:time", "mock__echo", "resource:mock://m/*", "mock__greet*"]
deny = ["time__danger"]

[[policy]]
group = "ops"
allow = ["*"]
deny = ["backend:secrets", "annotation:destructiveHint"]

[[policy]]
principal = "*"
allow = ["tool:public__*"]
"#;

#[test]
fn decisions_follow_deny_wins_then_allow_then_nothing() {
    let policy = rules(RULES);
    let plain = json!({"name": "x", "inputSchema": {}});
    let read_only = tool_with(json!({"readOnlyHint": true}));
    let not_destructive = tool_with(json!({"destructiveHint": false}));
    let alice = principal("alice", &[]);
    let carol = principal("carol", &["ops"]);
    type Row<'a> = (Option<&'a Principal>, Item<'a>, &'a str);
    let rows: Vec<Row<'_>> = vec![
        // alice: her backend, minus one denied tool; one tool of another backend; nothing else.
        (
            Some(&alice),
            Item::Tool {
                name: "time__now",
                backend: "time",
                tool: &plain,
            },
            "allowed",
        ),
        (
            Some(&alice),
            Item::Tool {
                name: "time__danger",
                backend: "time",
                tool: &plain,
            },
            "policy[0] denies \"time__danger\"",
        ),
        (
            Some(&alice),
            Item::Tool {
                name: "mock__echo",
                backend: "mock",
                tool: &plain,
            },
            "allowed",
        ),
        (
            Some(&alice),
            Item::Tool {
                name: "mock__add",
                backend: "mock",
                tool: &plain,
            },
            "no rule allows it",
        ),
        (
            Some(&alice),
            Item::Prompt {
                name: "mock__greeting",
                backend: "mock",
            },
            "allowed",
        ),
        (
            Some(&alice),
            Item::Resource {
                uri: "mock://m/readme",
                backend: "mock",
            },
            "allowed",
        ),
        (
            Some(&alice),
            Item::Resource {
                uri: "mock://other/readme",
                backend: "mock",
            },
            "no rule allows it",
        ),
        (
            Some(&alice),
            Item::Template {
                uri_template: "mock://m/items/{id}",
                backend: "mock",
            },
            "allowed",
        ),
        // `principal = "*"` applies to alice too.
        (
            Some(&alice),
            Item::Tool {
                name: "public__x",
                backend: "p",
                tool: &plain,
            },
            "allowed",
        ),
        (Some(&alice), Item::Backend("time"), "allowed"),
        (Some(&alice), Item::Backend("mock"), "no rule allows it"),
        // carol (group ops): everything but a backend and destructive tools (the spec's default: a tool
        // that says nothing may be destructive).
        (
            Some(&carol),
            Item::Tool {
                name: "a__b",
                backend: "a",
                tool: &read_only,
            },
            "allowed",
        ),
        (
            Some(&carol),
            Item::Tool {
                name: "a__c",
                backend: "a",
                tool: &not_destructive,
            },
            "allowed",
        ),
        (
            Some(&carol),
            Item::Tool {
                name: "a__d",
                backend: "a",
                tool: &plain,
            },
            "policy[1] denies \"annotation:destructiveHint\"",
        ),
        (
            Some(&carol),
            Item::Prompt {
                name: "p",
                backend: "secrets",
            },
            "policy[1] denies \"backend:secrets\"",
        ),
        (
            Some(&carol),
            Item::Resource {
                uri: "file:///x",
                backend: "fs",
            },
            "allowed",
        ),
        // No principal: only the `*` rule.
        (
            None,
            Item::Tool {
                name: "public__x",
                backend: "p",
                tool: &plain,
            },
            "allowed",
        ),
        (
            None,
            Item::Tool {
                name: "time__now",
                backend: "time",
                tool: &plain,
            },
            "no rule allows it",
        ),
        (
            None,
            Item::Prompt {
                name: "public__x",
                backend: "p",
            },
            "no rule allows it",
        ),
    ];
    for (who, item, expected) in rows {
        let subject = policy.subject(policy.audience(who));
        assert_eq!(
            subject.decide(item).to_string(),
            expected,
            "{who:?} {item:?}"
        );
    }
}

#[test]
fn principals_the_same_rules_apply_to_share_one_audience() {
    let policy = rules(RULES);
    let a = policy.audience(Some(&principal("dave", &["ops"])));
    let b = policy.audience(Some(&principal("erin", &["ops", "other"])));
    let c = policy.audience(Some(&principal("alice", &[])));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_ne!(policy.audience(None), c);
}

fn listing(backend: &str, tools: &[Value]) -> BackendListing {
    BackendListing {
        backend: backend.to_owned(),
        prefix: backend.to_owned(),
        tools: tools.to_vec(),
        ..BackendListing::default()
    }
}

fn catalog() -> Arc<CatalogSnapshot> {
    let mut mock = listing(
        "mock",
        &[
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
            json!({"name": "add", "inputSchema": {"type": "object"}}),
        ],
    );
    mock.prompts = vec![json!({"name": "greet"})];
    mock.resources = vec![
        json!({"uri": "mock://m/readme", "name": "readme"}),
        json!({"uri": "mock://other/readme", "name": "other"}),
    ];
    mock.resource_templates = vec![json!({"uriTemplate": "mock://m/items/{id}", "name": "item"})];
    let time = listing(
        "time",
        &[
            json!({"name": "now", "inputSchema": {"type": "object"}}),
            json!({"name": "danger", "inputSchema": {"type": "object"}}),
        ],
    );
    let mut b = CatalogBuilder::new();
    b.add(mock);
    b.add(time);
    b.missing("secrets", "down");
    b.missing("dormant", "down");
    Arc::new(b.build().unwrap())
}

fn names(snapshot: &CatalogSnapshot, list: ListKind) -> Vec<String> {
    let key = match list {
        ListKind::Tools | ListKind::Prompts => "name",
        ListKind::Resources => "uri",
        ListKind::ResourceTemplates => "uriTemplate",
    };
    snapshot
        .page(list, None, 100)
        .unwrap()
        .items
        .iter()
        .map(|i| i[key].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_view_lists_routes_and_names_only_what_its_audience_may_use() {
    let policy = rules(RULES);
    let full = catalog();
    let alice = principal("alice", &[]);
    let mut views = Views::new(policy);
    let view = views.view(&full, Some(&alice));
    let seen = &view.snapshot;
    assert_eq!(names(seen, ListKind::Tools), ["mock__echo", "time__now"]);
    assert_eq!(names(seen, ListKind::Prompts), ["mock__greet"]);
    assert_eq!(names(seen, ListKind::Resources), ["mock://m/readme"]);
    assert_eq!(
        names(seen, ListKind::ResourceTemplates),
        ["mock://m/items/{id}"]
    );
    // Routes exist only for what is listed; a URI through a kept template must be allowed itself.
    assert!(Catalog::tool(seen.as_ref(), "time__now").is_some());
    assert!(Catalog::tool(seen.as_ref(), "time__danger").is_none());
    assert!(Catalog::tool(seen.as_ref(), "mock__add").is_none());
    assert!(Catalog::resource(seen.as_ref(), "mock://m/items/7").is_some());
    assert!(Catalog::resource(seen.as_ref(), "mock://other/readme").is_none());
    assert!(
        full.resource("mock://other/readme").is_some(),
        "the full catalog routes it"
    );
    // Lists differ by principal: private, whatever the backends said.
    let now = std::time::Instant::now();
    assert_eq!(seen.freshness(ListKind::Tools, now).scope(), "private");
    assert_eq!(full.freshness(ListKind::Tools, now).scope(), "public");
    // Backends missing from the catalog are named only to an audience that may see them.
    assert_eq!(
        full.degraded().unwrap()["missing"],
        json!(["dormant", "secrets"])
    );
    assert_eq!(
        seen.degraded(),
        None,
        "alice may name neither: {:?}",
        seen.degraded()
    );
    let carol = views.view(&full, Some(&principal("carol", &["ops"])));
    assert_eq!(
        carol.snapshot.degraded().unwrap()["missing"],
        json!(["dormant"])
    );
    assert!(carol.snapshot.shows_backend("mock") && !carol.snapshot.shows_backend("secrets"));
}

#[test]
fn a_view_is_built_once_per_audience_and_catalog() {
    let policy = rules(RULES);
    let mut views = Views::new(policy);
    let full = catalog();
    let first = views.view(&full, Some(&principal("dave", &["ops"])));
    for who in ["dave", "erin", "frank"] {
        let again = views.view(&full, Some(&principal(who, &["ops"])));
        assert!(Arc::ptr_eq(&first.snapshot, &again.snapshot), "{who}");
    }
    assert_eq!(views.built(), 1);
    views.view(&full, Some(&principal("alice", &[])));
    assert_eq!(views.built(), 2);
    // A new catalog: every view is made again, from it.
    let next = catalog();
    let rebuilt = views.view(&next, Some(&principal("dave", &["ops"])));
    assert!(!Arc::ptr_eq(&first.snapshot, &rebuilt.snapshot));
    assert_eq!((views.built(), views.len()), (3, 1));
}

#[test]
fn views_past_their_bound_drop_the_least_recently_used() {
    let policy = rules(
        r#"
[[policy]]
principal = "a"
allow = ["*"]
[[policy]]
principal = "b"
allow = ["*"]
[[policy]]
principal = "c"
allow = ["*"]
"#,
    );
    let mut views = Views::bounded(policy, 2);
    let full = catalog();
    let (a, b, c) = (
        principal("a", &[]),
        principal("b", &[]),
        principal("c", &[]),
    );
    views.view(&full, Some(&a));
    views.view(&full, Some(&b));
    views.view(&full, Some(&a));
    views.view(&full, Some(&c));
    assert_eq!((views.len(), views.built()), (2, 3), "the bound holds");
    // `b` was the least recently used: dropped, and built again when asked for; `a` was kept.
    views.view(&full, Some(&a));
    assert_eq!(views.built(), 3);
    views.view(&full, Some(&b));
    assert_eq!((views.len(), views.built()), (2, 4));
}

#[test]
fn seen_answers_as_its_view_for_names_the_view_lacks() {
    let policy = rules(RULES);
    let full = catalog();
    let alice = principal("alice", &[]);
    let mut views = Views::new(policy);
    let view = views.view(&full, Some(&alice));
    let seen = Seen {
        view: &view,
        full: &full,
        principal: Some(&alice),
    };
    assert!(seen.tool("time__now").is_some());
    assert!(seen.tool("time__danger").is_none());
    assert!(seen.tool("nobody__serves").is_none());
    assert!(seen.prompt("mock__greet").is_some());
    assert!(seen.resource("mock://other/readme").is_none());
}
