//! The resource cache, completions and the template list follow the view, through the pipeline. Two builtin
//! mocks whose URIs overlap: `a` (`--name m`) serves the template `mock://m/items/{id}`, and `b` (`--name
//! m/items`) lists `mock://m/items/readme` itself. A view that shows `b` routes that URI to `b` (an exact
//! resource wins over a template); a view without `b` routes it to `a`'s template. Both mark their reads
//! reusable by everyone (`--ttl-ms`, public), so a cache keyed by the URI alone would answer one view with the
//! other backend's result.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request, principal};
use super::{Exchange, InProcessGateway};
use crate::config::Config;

const OVERLAP: &str = r#"
# The rules name principals: they apply only with [auth] (the tests give each request its principal).
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "a"
builtin = ["mock-backend", "--name", "m", "--ttl-ms", "60000"]

[[backend]]
name = "b"
builtin = ["mock-backend", "--name", "m/items", "--ttl-ms", "60000"]

[[policy]]
principal = "all"
allow = ["*"]

[[policy]]
principal = "only_a"
allow = ["backend:a"]

[[endpoint]]
path = "/mcp/a"
name = "a-only"
backends = ["a"]
"#;

/// The URI both backends can serve: `b`'s own resource, `a`'s item `readme`.
const SHARED: &str = "mock://m/items/readme";
/// What `a` answers for it (`b` answers its README).
const FROM_A: &str = "item readme";

async fn gateway() -> InProcessGateway {
    let config = Config::from_toml_str(OVERLAP, Path::new("overlap.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

/// A 2026-07-28 request of `method` at `path` by the principal `who`.
async fn modern(
    gw: &InProcessGateway,
    path: &str,
    who: &str,
    method: &str,
    params: Value,
) -> Exchange {
    let (headers, body) = modern_request(method, params, &[]);
    gw.post_at(path, principal(who, &[], &[]), headers, body)
        .await
}

/// The text `resources/read` of [`SHARED`] answered at `path` for `who`.
async fn read(gw: &InProcessGateway, path: &str, who: &str) -> String {
    let e = modern(gw, path, who, "resources/read", json!({"uri": SHARED})).await;
    let answer = json_of(&e);
    assert_eq!(answer["result"]["cacheScope"], "public", "{e:?}");
    answer["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{e:?}"))
        .to_owned()
}

#[actix_rt::test]
async fn a_cached_read_is_not_served_to_a_view_that_does_not_show_its_backend() {
    let gw = gateway().await;
    // `all` sees `b`: its README, now cached.
    let from_b = read(&gw, "/mcp", "all").await;
    assert!(from_b.starts_with("mcpgw mock-backend"), "{from_b}");
    assert_eq!(read(&gw, "/mcp", "all").await, from_b, "a hit");
    // `only_a`'s policy and the endpoint without `b` route the URI to `a`: `b`'s result is not theirs.
    assert_eq!(read(&gw, "/mcp", "only_a").await, FROM_A);
    assert_eq!(read(&gw, "/mcp/a", "all").await, FROM_A);
    // Each view keeps its own entry: `all` still reads `b`'s.
    assert_eq!(read(&gw, "/mcp", "all").await, from_b);
}

#[actix_rt::test]
async fn a_backend_cannot_fill_the_cache_entry_of_a_uri_another_backend_serves() {
    let gw = gateway().await;
    // `a` answers first, for the view without `b` (public, for 60 s)...
    assert_eq!(read(&gw, "/mcp/a", "all").await, FROM_A);
    assert_eq!(read(&gw, "/mcp", "only_a").await, FROM_A);
    // ...and the view that routes the URI to `b` gets `b`'s answer, not `a`'s.
    let from_b = read(&gw, "/mcp", "all").await;
    assert!(from_b.starts_with("mcpgw mock-backend"), "{from_b}");
}

#[actix_rt::test]
async fn completions_and_the_template_list_follow_the_view() {
    let gw = gateway().await;
    let templates = |e: &Exchange| -> Vec<String> {
        json_of(e)["result"]["resourceTemplates"]
            .as_array()
            .unwrap_or_else(|| panic!("{e:?}"))
            .iter()
            .map(|t| t["uriTemplate"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = modern(&gw, "/mcp", "all", "resources/templates/list", json!({})).await;
    assert_eq!(
        templates(&all),
        ["mock://m/items/items/{id}", "mock://m/items/{id}"]
    );
    for (path, who) in [("/mcp", "only_a"), ("/mcp/a", "all")] {
        let view = modern(&gw, path, who, "resources/templates/list", json!({})).await;
        assert_eq!(templates(&view), ["mock://m/items/{id}"], "{path} {who}");
    }
    // A prompt and a template of `b`: completed for `all`, answered like a reference nobody serves where
    // the view does not show `b`.
    let complete =
        |reference: Value| json!({"ref": reference, "argument": {"name": "name", "value": "A"}});
    let hidden = [
        json!({"type": "ref/prompt", "name": "b__greet"}),
        json!({"type": "ref/resource", "uri": "mock://m/items/items/{id}"}),
    ];
    let nobody = [
        json!({"type": "ref/prompt", "name": "c__greet"}),
        json!({"type": "ref/resource", "uri": "mock://c/items/items/{id}"}),
    ];
    for (reference, unknown) in hidden.iter().zip(&nobody) {
        let seen = modern(
            &gw,
            "/mcp",
            "all",
            "completion/complete",
            complete(reference.clone()),
        );
        let seen = seen.await;
        assert!(
            json_of(&seen)["result"]["completion"]["values"].is_array(),
            "{seen:?}"
        );
        let unregistered = |path, who| {
            modern(
                &gw,
                path,
                who,
                "completion/complete",
                complete(unknown.clone()),
            )
        };
        for (path, who) in [("/mcp", "only_a"), ("/mcp/a", "all")] {
            let denied = modern(
                &gw,
                path,
                who,
                "completion/complete",
                complete(reference.clone()),
            );
            let denied = json_of(&denied.await);
            let mut expected = json_of(&unregistered(path, who).await);
            expected["error"]["data"]["ref"] = reference.clone();
            assert_eq!(denied, expected, "{path} {who} {reference}");
            assert!(denied["error"].is_object(), "{denied}");
        }
    }
}
