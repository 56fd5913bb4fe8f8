//! What the in-process tests of catalog shaping, endpoints and search share: a principal as authentication
//! would establish it, a 2026-07-28 request with its mirrored headers, and readers of the answers.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use handlers::{InProcessAnswer, InProcessServer};
use serde_json::{Value, json};

use super::{Exchange, header_map};
use crate::auth::Principal;

/// A principal named `name` in `groups` whose credential grants `scopes`.
pub(super) fn principal(name: &str, groups: &[&str], scopes: &[&str]) -> Option<Arc<Principal>> {
    Some(Arc::new(Principal {
        name: name.to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        token: None,
    }))
}

/// A 2026-07-28 request of `method` with `params` (its `_meta` added), `Mcp-Method` and `Mcp-Name` (the
/// params' `name`, else `uri`) mirrored, and `extra` headers.
pub(super) fn modern_request(
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> (HeaderMap, Bytes) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let name = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .map(|n| protocol::headers::encode_value(n).into_owned());
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    (header_map(&headers).unwrap(), Bytes::from(body.to_string()))
}

/// The answer's JSON.
pub(super) fn json_of(e: &Exchange) -> Value {
    serde_json::from_slice(&e.body).unwrap_or_else(|err| panic!("{err}: {e:?}"))
}

/// The names of a `tools/list` answer's tools, in its order.
pub(super) fn tool_names(e: &Exchange) -> Vec<String> {
    json_of(e)["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{e:?}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The mock, counting the `tools/call` requests that reach it.
pub(super) struct Counting {
    pub(super) mock: mock::InProcessMock,
    pub(super) calls: Arc<AtomicUsize>,
}

impl InProcessServer for Counting {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        if serde_json::from_slice::<Value>(&message).is_ok_and(|v| v["method"] == "tools/call") {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
        self.mock.handle(message)
    }
}
