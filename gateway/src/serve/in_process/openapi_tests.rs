//! An openapi backend through the pipeline: its document's operations are the catalog's tools (prefixed,
//! selected by `operations`), and a reload of an unchanged config reads the document again — a changed
//! document is a catalog change.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::json;

use super::InProcessGateway;
use super::fixtures::{modern_request, tool_names};
use crate::config::Config;
use crate::reload::config::apply;

fn document(operations: &[&str]) -> String {
    let paths: serde_json::Map<String, serde_json::Value> = operations
        .iter()
        .map(|op| {
            (
                format!("/{op}"),
                json!({"get": {"operationId": op, "responses": {"200": {"description": "ok"}}}}),
            )
        })
        .collect();
    json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths}).to_string()
}

#[actix_rt::test]
async fn a_reload_reads_the_document_again_and_a_changed_one_changes_the_catalog() {
    let dir = std::env::temp_dir().join(format!("mcpgw-openapi-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("api.json");
    std::fs::write(&file, document(&["list_things", "get_thing", "drop_thing"])).unwrap();
    let toml = format!(
        "[[backend]]\nname = \"api\"\nopenapi = {:?}\nbase_url = \"http://127.0.0.1:9\"\noperations = {{ deny = [\"drop_*\"] }}\n",
        file.display().to_string()
    );
    let config = || Config::from_toml_str(&toml, Path::new("openapi.toml")).unwrap();
    let gw = InProcessGateway::start(config()).await.unwrap();
    let list = || async {
        let (headers, body) = modern_request("tools/list", json!({}), &[]);
        tool_names(&gw.post(headers, body).await)
    };
    assert_eq!(list().await, ["api__get_thing", "api__list_things"]);
    let before = gw.gateway().catalog.snapshot().version();

    std::fs::write(&file, document(&["list_things", "get_thing", "put_thing"])).unwrap();
    apply(gw.gateway(), config()).await.unwrap();
    assert_eq!(
        list().await,
        ["api__get_thing", "api__list_things", "api__put_thing"]
    );
    assert_ne!(gw.gateway().catalog.snapshot().version(), before);
}
