//! A backend that lacks a list method it announces, or fails one, keeps the rest of its catalog (issue 35
//! §2): hand-written servers declare `resources` and answer `resources/templates/list` "method not found",
//! and such a backend used to be left out entirely, tools and all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};

use super::fixtures::{json_of, modern_request};
use super::{Exchange, InProcessGateway};
use crate::config::Config;

async fn modern(gw: &InProcessGateway, method: &str, params: Value) -> Exchange {
    let (headers, body) = modern_request(method, params, &[]);
    gw.post_as(None, headers, body).await
}

async fn start(words: &str) -> InProcessGateway {
    let toml = format!("[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\", {words}]\n");
    let config = Config::from_toml_str(&toml, Path::new("lists.toml")).unwrap();
    InProcessGateway::start(config).await.unwrap()
}

fn count(e: &Exchange, field: &str) -> usize {
    json_of(e)["result"][field]
        .as_array()
        .unwrap_or_else(|| panic!("{e:?}"))
        .len()
}

#[actix_rt::test]
async fn a_list_method_a_backend_does_not_implement_counts_as_empty() {
    let gw = start(r#""--unimplemented", "resources/templates/list""#).await;
    assert!(count(&modern(&gw, "tools/list", json!({})).await, "tools") > 0);
    assert!(count(&modern(&gw, "resources/list", json!({})).await, "resources") > 0);
    let templates = modern(&gw, "resources/templates/list", json!({})).await;
    assert_eq!(count(&templates, "resourceTemplates"), 0, "{templates:?}");
    let call = json!({"name": "m__echo", "arguments": {"text": "hi"}});
    let echo = modern(&gw, "tools/call", call).await;
    assert_eq!(json_of(&echo)["result"]["content"][0]["text"], "hi");
}

#[actix_rt::test]
async fn a_failing_list_never_drops_the_backends_other_lists() {
    let gw = start(r#""--failing", "prompts/list""#).await;
    assert!(count(&modern(&gw, "tools/list", json!({})).await, "tools") > 0);
    assert!(
        count(
            &modern(&gw, "resources/templates/list", json!({})).await,
            "resourceTemplates"
        ) > 0
    );
    assert_eq!(
        count(&modern(&gw, "prompts/list", json!({})).await, "prompts"),
        0
    );
    let call = json!({"name": "m__echo", "arguments": {"text": "hi"}});
    let echo = modern(&gw, "tools/call", call).await;
    assert_eq!(json_of(&echo)["result"]["content"][0]["text"], "hi");
}

#[actix_rt::test]
async fn a_backend_whose_every_list_fails_is_left_out_as_before() {
    let gw = start(
        r#""--failing", "tools/list", "--failing", "prompts/list", "--failing", "resources/list", "--failing", "resources/templates/list""#,
    )
    .await;
    assert_eq!(
        count(&modern(&gw, "tools/list", json!({})).await, "tools"),
        0
    );
}
