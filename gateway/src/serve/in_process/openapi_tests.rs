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

/// A YAML document whose aliases, nested three deep, copy 150 scalars 10,000 times: 1.5 million values from
/// about 2 KB of text.
fn alias_bomb() -> String {
    let scalars = vec!["lol"; 150].join(", ");
    let a = vec!["*a"; 100].join(", ");
    let b = vec!["*b"; 100].join(", ");
    format!(
        "openapi: 3.0.3\ninfo: {{title: laughs, version: '1'}}\npaths: {{}}\nx-laughs:\n  a: &a [{scalars}]\n  b: &b [{a}]\n  c: [{b}]\n"
    )
}

#[actix_rt::test]
async fn an_openapi_alias_bomb_is_refused_and_the_other_backends_keep_serving() {
    let dir = std::env::temp_dir().join(format!("mcpgw-openapi-bomb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bomb = dir.join("bomb.yaml");
    std::fs::write(&bomb, alias_bomb()).unwrap();
    let good = dir.join("good.json");
    std::fs::write(&good, document(&["list_things"])).unwrap();
    let toml = format!(
        "[[backend]]\nname = \"bomb\"\nopenapi = {:?}\nbase_url = \"http://127.0.0.1:9\"\n\n\
         [[backend]]\nname = \"api\"\nopenapi = {:?}\nbase_url = \"http://127.0.0.1:9\"\n\n\
         [[backend]]\nname = \"mock\"\nbuiltin = [\"mock-backend\"]\n",
        bomb.display().to_string(),
        good.display().to_string()
    );
    let config = Config::from_toml_str(&toml, Path::new("bomb.toml")).unwrap();
    let gw = InProcessGateway::start(config).await.unwrap();

    let status = gw.gateway().live().backend("bomb").unwrap().status();
    let why = status.last_error.unwrap_or_default();
    assert!(
        why.contains("once its aliases are copied") && why.contains("refused"),
        "{why}"
    );
    let (headers, body) = modern_request("tools/list", json!({}), &[]);
    let tools = tool_names(&gw.post(headers, body).await);
    assert!(tools.contains(&"api__list_things".to_owned()), "{tools:?}");
    assert!(tools.iter().any(|t| t.starts_with("mock__")), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("bomb__")), "{tools:?}");
    let (headers, body) = modern_request(
        "tools/call",
        json!({"name": "mock__echo", "arguments": {"text": "still serving"}}),
        &[],
    );
    let answer = gw.post(headers, body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        String::from_utf8_lossy(&answer.body).contains("still serving"),
        "{answer:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
