//! Full JSON-RPC messages among the examples: each parses as a [`Message`] and re-serializes to equal JSON;
//! bare error objects round-trip inside a response; every example request passes [`validate`] when sent
//! with the headers a correct 2026-07-28 client sends.

use std::path::PathBuf;

use protocol::Message;
use protocol::headers::encode_value;
use protocol::validate::{
    Catalog, Config, HttpMethod, HttpRequest, RouteKey, ToolRoute, ValidKind, validate,
};
use serde_json::{Value, json};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec/schema/2026-07-28/examples")
}

fn all_examples() -> Vec<(String, PathBuf, Value)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(examples_dir())
        .expect("examples directory exists")
        .map(|e| e.expect("dir entry").path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let value: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            out.push((name.clone(), file, value));
        }
    }
    out
}

/// Lets everything through: the examples name tools, resources and prompts of their own.
struct Everything;

impl Catalog for Everything {
    fn tool(&self, _: &str) -> Option<ToolRoute<'_>> {
        Some(ToolRoute::default())
    }
    fn resource(&self, _: &str) -> Option<RouteKey> {
        Some(RouteKey(0))
    }
    fn prompt(&self, _: &str) -> Option<RouteKey> {
        Some(RouteKey(0))
    }
}

#[test]
fn every_full_message_round_trips() {
    let mut messages = 0;
    let mut bare_errors = 0;
    for (dir, file, value) in all_examples() {
        if value.get("jsonrpc").is_some() {
            let bytes = serde_json::to_vec(&value).unwrap();
            let m = Message::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
            let back: Value = serde_json::from_slice(&m.to_bytes()).unwrap();
            assert_eq!(back, value, "{}", file.display());
            messages += 1;
        } else if dir.ends_with("Error") && value.get("code").is_some() {
            let wrapped = json!({"jsonrpc": "2.0", "id": 1, "error": value});
            let m = Message::parse(&serde_json::to_vec(&wrapped).unwrap()).unwrap();
            let back: Value = serde_json::from_slice(&m.to_bytes()).unwrap();
            assert_eq!(back, wrapped, "{}", file.display());
            bare_errors += 1;
        }
    }
    assert!(messages >= 30, "only {messages} full messages found");
    assert!(bare_errors >= 3, "only {bare_errors} bare errors found");
}

#[test]
fn every_example_request_passes_validation() {
    let mut checked = 0;
    for (_, file, value) in all_examples() {
        if value.get("jsonrpc").is_none()
            || value.get("id").is_none()
            || value.get("method").is_none()
        {
            continue;
        }
        let method = value["method"].as_str().unwrap().to_owned();
        let params = &value["params"];
        let version = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .unwrap_or_else(|| {
                panic!(
                    "{}: example request without a protocol version",
                    file.display()
                )
            });
        let mut headers: Vec<(String, String)> = vec![
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("MCP-Protocol-Version".into(), version.into()),
            ("Mcp-Method".into(), method.clone()),
        ];
        if let Some(name) = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
        {
            if matches!(
                method.as_str(),
                "tools/call" | "prompts/get" | "resources/read"
            ) {
                headers.push(("Mcp-Name".into(), encode_value(name).into_owned()));
            }
        }
        let body = serde_json::to_vec(&value).unwrap();
        let req = HttpRequest {
            method: HttpMethod::Post,
            headers: &headers,
            body: &body,
        };
        let valid = validate(&req, &Config::default(), &Everything, None)
            .unwrap_or_else(|r| panic!("{}: rejected: {r:?}", file.display()));
        assert!(
            matches!(valid.kind(), ValidKind::Call(_)),
            "{}",
            file.display()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} example requests found");
}
