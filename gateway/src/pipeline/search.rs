//! `call_tool` made a direct call: with `[catalog] search`, a `tools/call` of the gateway's `call_tool` is
//! rewritten, before validation, into the `tools/call` of the tool it names with its arguments (and, over
//! HTTP, its `Mcp-Name` and `Mcp-Param-*` headers as a client of that tool would send them). From there it
//! is validated, authorized, limited, routed and shaped exactly like a direct call: a name the principal may
//! not use is answered as unregistered, because it is one in the principal's view.
//!
//! A body that does not name `call_tool`, or names it without a string `name`, is left as it is (the
//! gateway then answers `call_tool` itself with a tool error). It must not look at anything but the body.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use protocol::headers::{argument_at, encode_value, value_for};
use serde_json::{Map, Value};

use crate::catalog::CatalogSnapshot;

const CALL_TOOL: &[u8] = b"call_tool";

/// The body (and `headers`) with every `call_tool` call unwrapped; `None` when there is none to unwrap.
pub(crate) fn unwrap_call_tool(
    body: &[u8],
    headers: Option<&mut HeaderMap>,
    view: &CatalogSnapshot,
) -> Option<Bytes> {
    if !body.windows(CALL_TOOL.len()).any(|w| w == CALL_TOOL) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(body).ok()?;
    let unwrapped = match &mut message {
        Value::Array(batch) => {
            let mut any = false;
            for entry in batch.iter_mut() {
                any |= unwrap_one(entry).is_some();
            }
            any
        }
        single => match unwrap_one(single) {
            Some((name, arguments)) => {
                if let Some(headers) = headers {
                    set_headers(headers, &name, arguments.as_ref(), view);
                }
                true
            }
            None => false,
        },
    };
    unwrapped.then(|| Bytes::from(message.to_string()))
}

/// Unwraps one message in place when it is a `tools/call` of `call_tool` naming a tool: the inner name and
/// arguments.
fn unwrap_one(message: &mut Value) -> Option<(String, Option<Map<String, Value>>)> {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = message.get_mut("params")?.as_object_mut()?;
    if params.get("name").and_then(Value::as_str) != Some("call_tool") {
        return None;
    }
    let outer = params.get("arguments")?.as_object()?;
    let name = outer.get("name")?.as_str()?.to_owned();
    let inner = outer.get("arguments").cloned();
    params.insert("name".to_owned(), Value::String(name.clone()));
    match inner {
        Some(arguments) => params.insert("arguments".to_owned(), arguments),
        None => params.remove("arguments"),
    };
    let arguments = params.get("arguments").and_then(Value::as_object).cloned();
    Some((name, arguments))
}

/// The headers a client of the inner tool would send: `Mcp-Name` (when the request carried one) and the
/// tool's `Mcp-Param-*` values from its arguments (those sent for `call_tool` are dropped: it has none).
fn set_headers(
    headers: &mut HeaderMap,
    name: &str,
    arguments: Option<&Map<String, Value>>,
    view: &CatalogSnapshot,
) {
    if headers.contains_key("mcp-name")
        && let Ok(value) = HeaderValue::from_str(&encode_value(name))
    {
        headers.insert(HeaderName::from_static("mcp-name"), value);
    }
    let stale: Vec<HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("mcp-param-"))
        .cloned()
        .collect();
    for key in stale {
        headers.remove(key);
    }
    let Some(tool) = view.tool(name) else {
        return;
    };
    for param in &tool.client_headers {
        let value = argument_at(arguments, &param.path).and_then(|v| value_for(param.kind, v));
        let header = HeaderName::from_bytes(format!("mcp-param-{}", param.header).as_bytes());
        if let (Some(value), Ok(header)) = (value, header)
            && let Ok(value) = HeaderValue::from_str(&value)
        {
            headers.insert(header, value);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn unwrapped(body: Value) -> Option<Value> {
        let bytes = body.to_string();
        unwrap_call_tool(bytes.as_bytes(), None, &CatalogSnapshot::empty())
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn call_tool_becomes_the_call_it_names_and_anything_else_is_left_alone() {
        let call = |params: Value| json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let cases = [
            (
                call(
                    json!({"name": "call_tool", "arguments": {"name": "m__add", "arguments": {"a": 1}}, "_meta": {"k": 1}}),
                ),
                Some(call(
                    json!({"name": "m__add", "arguments": {"a": 1}, "_meta": {"k": 1}}),
                )),
            ),
            (
                call(json!({"name": "call_tool", "arguments": {"name": "m__now"}})),
                Some(call(json!({"name": "m__now"}))),
            ),
            // No name to call: left for the gateway to answer as a tool error.
            (
                call(json!({"name": "call_tool", "arguments": {"arguments": {}}})),
                None,
            ),
            (
                call(json!({"name": "call_tool", "arguments": {"name": 3}})),
                None,
            ),
            (call(json!({"name": "call_tool"})), None),
            // Not call_tool, or not a call.
            (
                call(json!({"name": "m__call_tool_like", "arguments": {"name": "x"}})),
                None,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "call_tool", "arguments": {"name": "x"}}}),
                None,
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(unwrapped(body.clone()), expected, "{body}");
        }
        let batch = json!([
            call(json!({"name": "call_tool", "arguments": {"name": "a", "arguments": {}}})),
            call(json!({"name": "b", "arguments": {}})),
        ]);
        assert_eq!(
            unwrapped(batch),
            Some(json!([
                call(json!({"name": "a", "arguments": {}})),
                call(json!({"name": "b", "arguments": {}})),
            ]))
        );
        // Not JSON: left for validation to refuse.
        assert!(unwrap_call_tool(b"{call_tool", None, &CatalogSnapshot::empty()).is_none());
    }

    #[test]
    fn the_mcp_name_header_follows_the_unwrapped_name_and_call_tools_params_are_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("mcp-name"),
            HeaderValue::from_static("call_tool"),
        );
        headers.insert(
            HeaderName::from_static("mcp-param-x"),
            HeaderValue::from_static("1"),
        );
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "call_tool", "arguments": {"name": "m__echo", "arguments": {"text": "hi"}}}});
        let out = unwrap_call_tool(
            body.to_string().as_bytes(),
            Some(&mut headers),
            &CatalogSnapshot::empty(),
        );
        assert!(out.is_some());
        assert_eq!(headers.get("mcp-name").unwrap(), "m__echo");
        assert!(headers.get("mcp-param-x").is_none());
    }
}
