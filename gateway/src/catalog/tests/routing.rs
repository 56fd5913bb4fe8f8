//! Routing: resources (exact before template), completion references, and the validation catalog facts.

use protocol::validate::Catalog;
use serde_json::json;

use super::{build, listing, sample};
use crate::catalog::{ListKind, ResourceMatch};

#[test]
fn resource_routing_exact_before_template() {
    let snap = build(sample()).expect("builds");
    // (uri, backend, matched)
    let table = [
        ("file:///etc/motd", Some(("fs", ResourceMatch::Exact))),
        (
            "file:///etc/passwd",
            Some(("fs", ResourceMatch::Template("file:///{+path}"))),
        ),
        (
            "file:///logs/app.log",
            Some(("logs", ResourceMatch::Template("file:///logs/{name}"))),
        ),
        (
            "file:///logs/a/b.log",
            Some(("fs", ResourceMatch::Template("file:///{+path}"))),
        ),
        (
            "weather://paris",
            Some(("weather", ResourceMatch::Template("weather://{city}"))),
        ),
        ("weather://paris/today", None),
        ("weather://", None),
        ("ftp://x", None),
        ("", None),
    ];
    for (uri, want) in table {
        let got = snap.resource(uri).map(|r| (r.backend, r.matched));
        assert_eq!(got, want, "{uri}");
    }
    // A template the matcher does not support is listed but routes nothing.
    let mut odd = listing("odd", "odd");
    odd.resource_templates = vec![
        json!({"uriTemplate": "odd://{.ext}"}),
        json!({"uriTemplate": "{+all"}),
    ];
    let snap = build(vec![odd]).expect("builds");
    assert_eq!(
        snap.page(ListKind::ResourceTemplates, None, 10)
            .expect("page")
            .items
            .len(),
        2
    );
    assert!(snap.resource("odd://.json").is_none());
    assert!(snap.resource("anything").is_none());
}

#[test]
fn completion_routing() {
    let snap = build(sample()).expect("builds");
    // (reference, expected backend and rewritten reference)
    let table = [
        (
            json!({"type": "ref/prompt", "name": "weather__brief"}),
            Some(("weather", json!({"type": "ref/prompt", "name": "brief"}))),
        ),
        (
            json!({"type": "ref/prompt", "name": "logs__summarize", "title": "S"}),
            Some((
                "logs",
                json!({"type": "ref/prompt", "name": "summarize", "title": "S"}),
            )),
        ),
        (json!({"type": "ref/prompt", "name": "brief"}), None),
        (json!({"type": "ref/prompt"}), None),
        (json!({"type": "ref/prompt", "name": 1}), None),
        (
            json!({"type": "ref/resource", "uri": "weather://{city}"}),
            Some((
                "weather",
                json!({"type": "ref/resource", "uri": "weather://{city}"}),
            )),
        ),
        (
            json!({"type": "ref/resource", "uri": "file:///{+path}"}),
            Some((
                "fs",
                json!({"type": "ref/resource", "uri": "file:///{+path}"}),
            )),
        ),
        (
            json!({"type": "ref/resource", "uri": "file:///logs/{name}"}),
            Some((
                "logs",
                json!({"type": "ref/resource", "uri": "file:///logs/{name}"}),
            )),
        ),
        (
            json!({"type": "ref/resource", "uri": "file:///logs/x"}),
            Some((
                "logs",
                json!({"type": "ref/resource", "uri": "file:///logs/x"}),
            )),
        ),
        (
            json!({"type": "ref/resource", "uri": "file:///etc/motd"}),
            Some((
                "fs",
                json!({"type": "ref/resource", "uri": "file:///etc/motd"}),
            )),
        ),
        (json!({"type": "ref/resource", "uri": "nope://x"}), None),
        (json!({"type": "ref/resource"}), None),
        (json!({"type": "ref/tool", "name": "weather__get"}), None),
        (json!({"name": "weather__brief"}), None),
        (json!("ref/prompt"), None),
        (json!(null), None),
    ];
    for (reference, want) in table {
        let got = snap.completion_backend(&reference);
        assert_eq!(
            got.as_ref().map(|(b, r)| (*b, r.clone())),
            want,
            "{reference}"
        );
    }
}

#[test]
fn validation_catalog_facts() {
    let mut a = listing("a", "a");
    a.tools = vec![
        json!({"name": "h", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}),
    ];
    let mut samples = sample();
    samples.push(a);
    let snap = build(samples).expect("builds");
    let catalog: &dyn Catalog = &snap;
    let route = catalog.tool("a__h").expect("routed");
    assert_eq!(route.header_params.len(), 1);
    assert_eq!(route.header_params[0].header, "Region");
    assert!(route.required_capabilities.is_none());
    assert!(
        catalog
            .tool("weather__get")
            .is_some_and(|r| r.header_params.is_empty())
    );
    assert!(catalog.tool("h").is_none());
    // (uri, served)
    for (uri, served) in [
        ("file:///etc/motd", true),
        ("weather://x", true),
        ("nope://x", false),
    ] {
        let key = catalog.resource(uri);
        assert_eq!(key.is_some(), served, "{uri}");
        // The key validation hands on routes where the lookup by URI does.
        if let Some(key) = key {
            let by_key = snap.resource_at(key).map(|r| r.backend.to_owned());
            let by_uri = snap.resource(uri).map(|r| r.backend.to_owned());
            assert_eq!(by_key, by_uri, "{uri}");
        }
    }
    for (name, served) in [
        ("weather__brief", true),
        ("brief", false),
        ("weather__get", false),
    ] {
        let key = catalog.prompt(name);
        assert_eq!(key.is_some(), served, "{name}");
        if let Some(key) = key {
            assert_eq!(
                snap.prompt_at(key).map(|p| p.exposed_name.as_str()),
                Some(name)
            );
        }
    }
    let key = catalog.tool("a__h").expect("routed").key;
    assert_eq!(
        snap.tool_at(key).map(|t| t.exposed_name.as_str()),
        Some("a__h")
    );
}
