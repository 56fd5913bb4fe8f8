//! Tests of the catalog as a whole, with the helpers they share: building, prefixing, collisions, duplicates,
//! annotations and malformed items, missing backends. Ordering and pagination are in `paging`, resource,
//! completion and validation routing in `routing`.

mod paging;
mod routing;
mod shaping;

use protocol::headers::{ParamHeader, ParamKind};
use serde_json::{Value, json};

use super::*;

pub(super) fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}})
}

pub(super) fn listing(backend: &str, prefix: &str) -> BackendListing {
    BackendListing {
        backend: backend.to_owned(),
        prefix: prefix.to_owned(),
        ..BackendListing::default()
    }
}

pub(super) fn build(listings: Vec<BackendListing>) -> Result<CatalogSnapshot, CatalogError> {
    let mut b = CatalogBuilder::new();
    for l in listings {
        b.add(l);
    }
    b.build()
}

pub(super) fn all_items(
    snap: &CatalogSnapshot,
    list: ListKind,
    page_size: usize,
) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = snap
            .page(list, cursor.as_deref(), page_size)
            .expect("a cursor the snapshot issued");
        pages.push(page.items);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return pages,
        }
    }
}

/// Three backends with a bit of everything.
pub(super) fn sample() -> Vec<BackendListing> {
    let mut weather = listing("weather", "weather");
    weather.tools = vec![tool("get"), tool("forecast")];
    weather.prompts = vec![json!({"name": "brief", "arguments": [{"name": "city"}]})];
    weather.resource_templates = vec![json!({"uriTemplate": "weather://{city}", "name": "city"})];
    let mut fs = listing("fs", "");
    fs.tools = vec![tool("read_file")];
    fs.resources = vec![json!({"uri": "file:///etc/motd", "name": "motd"})];
    fs.resource_templates = vec![json!({"uriTemplate": "file:///{+path}", "name": "file"})];
    let mut logs = listing("logs", "logs");
    logs.prompts = vec![json!({"name": "summarize"})];
    logs.resource_templates = vec![json!({"uriTemplate": "file:///logs/{name}", "name": "log"})];
    vec![weather, fs, logs]
}
#[test]
fn prefixing_with_and_without_prefix() {
    let snap = build(sample()).expect("no collision");
    // (exposed tool, backend, original)
    let tools = [
        ("weather__get", "weather", "get"),
        ("weather__forecast", "weather", "forecast"),
        ("read_file", "fs", "read_file"),
    ];
    for (exposed, backend, original) in tools {
        let e = snap.tool(exposed).expect(exposed);
        assert_eq!(
            (e.backend.as_str(), e.original_name.as_str()),
            (backend, original)
        );
        assert_eq!(e.exposed_name, exposed);
        assert_eq!(e.tool["name"], exposed);
        assert_eq!(e.tool["description"], format!("the {original} tool"));
    }
    for unknown in ["get", "forecast", "fs__read_file", "weather__", ""] {
        assert!(snap.tool(unknown).is_none(), "{unknown}");
    }
    // (exposed prompt, backend, original)
    let prompts = [
        ("weather__brief", "weather", "brief"),
        ("logs__summarize", "logs", "summarize"),
    ];
    for (exposed, backend, original) in prompts {
        let e = snap.prompt(exposed).expect(exposed);
        assert_eq!(
            (e.backend.as_str(), e.original_name.as_str()),
            (backend, original)
        );
        assert_eq!(e.prompt["name"], exposed);
    }
    assert_eq!(
        snap.prompt("weather__brief")
            .map(|p| p.prompt["arguments"][0]["name"].clone()),
        Some(json!("city"))
    );
    // Resources and templates keep their URIs and names.
    let resources = snap
        .page(ListKind::Resources, None, 10)
        .expect("first page")
        .items;
    assert_eq!(
        resources,
        vec![json!({"uri": "file:///etc/motd", "name": "motd"})]
    );
    let templates = snap
        .page(ListKind::ResourceTemplates, None, 10)
        .expect("first page")
        .items;
    let names: Vec<&Value> = templates.iter().map(|t| &t["name"]).collect();
    assert_eq!(names, [&json!("log"), &json!("file"), &json!("city")]);
}

#[test]
fn collisions_name_both_backends() {
    let with_tools = |b: &str, p: &str, tools: &[&str]| {
        let mut l = listing(b, p);
        l.tools = tools.iter().map(|t| tool(t)).collect();
        l
    };
    let with = |b: &str, p: &str, field: &str, items: Vec<Value>| {
        let mut l = listing(b, p);
        match field {
            "prompts" => l.prompts = items,
            "resources" => l.resources = items,
            _ => l.resource_templates = items,
        }
        l
    };
    // (listings, kind, name, message)
    let table = [
        (
            vec![
                with_tools("a", "weather", &["get"]),
                with_tools("b", "weather", &["get"]),
            ],
            "tool",
            "weather__get",
            "tool name weather__get collides: backends a and b both expose it",
        ),
        (
            vec![with_tools("b", "", &["get"]), with_tools("a", "", &["get"])],
            "tool",
            "get",
            "tool name get collides: backends a and b both expose it",
        ),
        (
            vec![
                with_tools("a", "x", &["y__z"]),
                with_tools("b", "x__y", &["z"]),
            ],
            "tool",
            "x__y__z",
            "tool name x__y__z collides: backends a and b both expose it",
        ),
        (
            vec![
                with("a", "p", "prompts", vec![json!({"name": "q"})]),
                with("b", "p", "prompts", vec![json!({"name": "q"})]),
            ],
            "prompt",
            "p__q",
            "prompt name p__q collides: backends a and b both expose it",
        ),
        (
            vec![
                with(
                    "a",
                    "a",
                    "resources",
                    vec![json!({"uri": "file:///x", "name": "1"})],
                ),
                with(
                    "b",
                    "b",
                    "resources",
                    vec![json!({"uri": "file:///x", "name": "2"})],
                ),
            ],
            "resource",
            "file:///x",
            "resource uri file:///x collides: backends a and b both expose it",
        ),
        (
            vec![
                with(
                    "b",
                    "b",
                    "templates",
                    vec![json!({"uriTemplate": "db://{t}", "name": "1"})],
                ),
                with(
                    "a",
                    "a",
                    "templates",
                    vec![json!({"uriTemplate": "db://{t}", "name": "2"})],
                ),
            ],
            "resource template",
            "db://{t}",
            "resource template uri db://{t} collides: backends a and b both expose it",
        ),
    ];
    for (listings, kind, name, message) in table {
        let mut reversed = listings.clone();
        reversed.reverse();
        for order in [listings, reversed] {
            let err = build(order).expect_err(message);
            assert_eq!(
                err,
                CatalogError::Collision {
                    kind,
                    name: name.to_owned(),
                    first: "a".to_owned(),
                    second: "b".to_owned()
                }
            );
            assert_eq!(err.to_string(), message);
        }
    }
    // The same tool name under different prefixes, and equal resource names, do not collide.
    let ok = build(vec![
        with_tools("a", "a", &["get"]),
        with_tools("b", "b", &["get"]),
        with(
            "c",
            "c",
            "resources",
            vec![json!({"uri": "file:///1", "name": "same"})],
        ),
        with(
            "d",
            "d",
            "resources",
            vec![json!({"uri": "file:///2", "name": "same"})],
        ),
    ]);
    assert!(ok.is_ok());
}

#[test]
fn duplicates_within_one_backend_keep_the_first() {
    let mut a = listing("a", "a");
    a.tools = vec![
        tool("t"),
        json!({"name": "t", "description": "second", "inputSchema": {"type": "object"}}),
    ];
    a.prompts = vec![json!({"name": "p", "n": 1}), json!({"name": "p", "n": 2})];
    a.resources = vec![
        json!({"uri": "u://1", "n": 1}),
        json!({"uri": "u://1", "n": 2}),
    ];
    a.resource_templates = vec![
        json!({"uriTemplate": "u://{x}", "n": 1}),
        json!({"uriTemplate": "u://{x}", "n": 2}),
    ];
    let snap = build(vec![a]).expect("duplicates within one backend are not collisions");
    assert_eq!(
        snap.tool("a__t").map(|t| t.tool["description"].clone()),
        Some(json!("the t tool"))
    );
    assert_eq!(
        snap.prompt("a__p").map(|p| p.prompt["n"].clone()),
        Some(json!(1))
    );
    for list in [
        ListKind::Tools,
        ListKind::Prompts,
        ListKind::Resources,
        ListKind::ResourceTemplates,
    ] {
        let items = snap.page(list, None, 10).expect("first page").items;
        assert_eq!(items.len(), 1, "{list:?}");
        if list == ListKind::Resources || list == ListKind::ResourceTemplates {
            assert_eq!(items[0]["n"], 1, "{list:?}");
        }
    }
}

#[test]
fn annotations_and_malformed_items() {
    let annotated = json!({
        "name": "call",
        "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}}
        }}
    });
    let mut a = listing("a", "a");
    a.tools = vec![
        annotated,
        // invalid annotations: dropped
        json!({"name": "bad_type", "inputSchema": {"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}),
        json!({"name": "bad_name", "inputSchema": {"properties": {"n": {"type": "string", "x-mcp-header": "a b"}}}}),
        json!({"name": "dup", "inputSchema": {"properties": {
            "x": {"type": "string", "x-mcp-header": "X"}, "y": {"type": "string", "x-mcp-header": "x"}}}}),
        // wrong shapes: dropped
        json!({"name": "no_schema"}),
        json!({"name": "array_schema", "inputSchema": []}),
        json!({"name": 7, "inputSchema": {"type": "object"}}),
        json!({"name": "", "inputSchema": {"type": "object"}}),
        json!({"inputSchema": {"type": "object"}}),
        json!("tool"),
        json!(null),
        json!([tool("nested")]),
        tool("plain"),
    ];
    a.prompts = vec![json!({"name": null}), json!(3), json!({"name": "ok"})];
    a.resources = vec![
        json!({"uri": 1}),
        json!({"name": "no uri"}),
        json!({"uri": "u://ok"}),
    ];
    a.resource_templates = vec![
        json!({"uriTemplate": {}}),
        json!(false),
        json!({"uriTemplate": "u://{x}"}),
    ];
    let snap = build(vec![a]).expect("malformed items are skipped, not errors");

    let call = snap.tool("a__call").expect("valid annotations are kept");
    let want = vec![
        ParamHeader {
            header: "Dry-Run".into(),
            path: vec!["opts".into(), "dry".into()],
            kind: ParamKind::Boolean,
        },
        ParamHeader {
            header: "Region".into(),
            path: vec!["region".into()],
            kind: ParamKind::String,
        },
    ];
    let sorted = |mut v: Vec<ParamHeader>| {
        v.sort_by(|a, b| a.header.cmp(&b.header));
        v
    };
    assert_eq!(sorted(call.client_headers.clone()), want);
    assert_eq!(sorted(call.backend_headers.clone()), want);
    assert_eq!(
        snap.tool("a__plain").map(|t| t.client_headers.len()),
        Some(0)
    );

    let names: Vec<Value> = snap
        .page(ListKind::Tools, None, 100)
        .expect("page")
        .items
        .into_iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("a__call"), json!("a__plain")]);
    for list in [
        ListKind::Prompts,
        ListKind::Resources,
        ListKind::ResourceTemplates,
    ] {
        assert_eq!(
            snap.page(list, None, 100).expect("page").items.len(),
            1,
            "{list:?}"
        );
    }
}

#[test]
fn missing_backends_and_empty() {
    let empty = CatalogSnapshot::empty();
    assert!(empty.is_empty());
    assert!(empty.backends_missing().is_empty());
    assert!(empty.tool("x").is_none() && empty.resource("x").is_none());
    assert_eq!(
        empty
            .page(ListKind::Tools, None, 50)
            .expect("page")
            .items
            .len(),
        0
    );

    let mut b = CatalogBuilder::new();
    b.missing("slow", "timed out after 5s");
    b.missing("down", "connection refused");
    b.missing("slow", "timed out again");
    let mut fs = listing("fs", "");
    fs.tools = vec![tool("read_file")];
    b.add(fs);
    let snap = b
        .build()
        .expect("a missing backend does not fail the build");
    assert_eq!(snap.backends_missing(), ["down", "slow"]);
    assert!(!snap.is_empty());
    assert!(snap.tool("read_file").is_some());
}

#[test]
fn lists_are_as_fresh_as_their_least_fresh_backend_and_not_at_all_with_one_missing() {
    let fresh = |ttl_ms, public| Some(ListFreshness { ttl_ms, public });
    let listed_at = std::time::Instant::now();
    let build = |missing: bool| {
        let mut b = CatalogBuilder::new();
        b.listed_at(listed_at);
        let mut a = listing("a", "a");
        a.tools = vec![tool("t")];
        a.freshness.tools = fresh(60_000, true);
        a.freshness.prompts = fresh(5_000, false);
        let mut c = listing("c", "c");
        c.tools = vec![tool("t")];
        c.freshness.tools = fresh(30_000, true);
        b.add(a);
        b.add(c);
        if missing {
            b.missing("down", "connection refused");
        }
        b.build().expect("no collision")
    };
    let snap = build(false);
    let tools = snap.freshness(ListKind::Tools, listed_at);
    assert_eq!((tools.ttl_ms, tools.public), (30_000, true));
    let prompts = snap.freshness(ListKind::Prompts, listed_at);
    assert_eq!((prompts.ttl_ms, prompts.public), (5_000, false));
    assert_eq!(
        snap.freshness(ListKind::Resources, listed_at).ttl_ms,
        0,
        "no contributor"
    );
    assert_eq!(
        snap.expires_at(),
        Some(listed_at + std::time::Duration::from_millis(5_000))
    );
    let snap = build(true);
    for list in [ListKind::Tools, ListKind::Prompts] {
        assert_eq!(snap.freshness(list, listed_at).ttl_ms, 0, "{list:?}");
    }
    assert_eq!(snap.expires_at(), None);
}

#[test]
fn snapshot_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<CatalogSnapshot>();
    assert_send_sync::<std::sync::Arc<CatalogSnapshot>>();
}

#[test]
fn a_stale_backend_stays_listed_and_named_and_nothing_is_reusable() {
    let listed_at = std::time::Instant::now();
    let mut b = CatalogBuilder::new();
    b.listed_at(listed_at);
    let mut busy = listing("busy", "b");
    busy.tools = vec![tool("echo")];
    busy.freshness.tools = Some(ListFreshness {
        ttl_ms: 60_000,
        public: true,
    });
    b.stale(busy);
    b.missing("gone", "connection refused");
    let snap = b.build().expect("no collision");
    assert!(
        snap.tool("b__echo").is_some(),
        "its last good tools are routed"
    );
    assert_eq!(snap.backends_stale(), ["busy"]);
    assert_eq!(snap.backends_missing(), ["gone"]);
    assert_eq!(
        snap.degraded(),
        Some(serde_json::json!({"missing": ["gone"], "stale": ["busy"]}))
    );
    assert_eq!(snap.freshness(ListKind::Tools, listed_at).ttl_ms, 0);

    let mut b = CatalogBuilder::new();
    b.add(listing("fine", "f"));
    assert_eq!(b.build().expect("no collision").degraded(), None);
}

#[test]
fn a_kept_listing_counts_its_ttl_from_when_it_was_made() {
    let fresh = ListsFreshness {
        tools: Some(ListFreshness {
            ttl_ms: 10_000,
            public: true,
        }),
        prompts: Some(ListFreshness::NONE),
        ..ListsFreshness::default()
    };
    let aged = fresh.aged(std::time::Duration::from_millis(2_500));
    assert_eq!(aged.tools.map(|f| f.ttl_ms), Some(7_500));
    assert_eq!(aged.prompts.map(|f| f.ttl_ms), Some(0));
    assert_eq!(aged.resources, None);
    let expired = fresh.aged(std::time::Duration::from_secs(60));
    assert_eq!(expired.tools.map(|f| f.ttl_ms), Some(0));
}
