//! Tools: `tools/list` and `tools/call`, and the pagination params every list request shares.
//!
//! 2026-07-28 results also carry `resultType` and (on `tools/list`) `ttlMs` / `cacheScope`; as in
//! [`DiscoverResult`](super::DiscoverResult), those stay in `extra` and are stamped by the shaper.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ContentBlock, Extra, InputResponses, Meta};

/// Params of a paginated list request (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Opaque cursor from a previous page's `nextCursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `_meta` (required on 2026-07-28, where it carries the per-request protocol version and capabilities).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/list` params.
pub type ListToolsRequestParams = PaginatedRequestParams;

/// What a tool's behaviour is like. Hints only: untrusted unless the server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool again with the same arguments has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Execution properties of a tool (2025-11-25 only; gone on 2026-07-28, where tasks are an extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// `"forbidden"` (the default), `"optional"` or `"required"`: whether the tool supports task-augmented
    /// execution. Kept as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name, unique per server.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (root `type: "object"`; may hold `x-mcp-header` on 2026-07-28).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints (2025-03-26 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution properties (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Icons (2025-11-25 and later), passed through as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know (`resultType`, `ttlMs`, `cacheScope` among them).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/call` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments, passed on without looking inside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to a previous `InputRequiredResult`'s `inputRequests` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Echo of a previous `InputRequiredResult`'s `requestState`, byte-exact (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Task augmentation `{ttl?}` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/call` result. A tool's own failure is a result with `isError: true`, not a JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured result.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured result (2025-06-18 and later; an object before 2026-07-28, any JSON value since; a `null`
    /// that is present stays `Some(Value::Null)`).
    #[serde(
        default,
        deserialize_with = "super::content::present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool failed (absent means `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know (`resultType` among them).
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a tool handler returns: a [`CallToolResult`].
pub type CallToolResponse = CallToolResult;

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            ..CallToolResult::default()
        }
    }

    /// A successful structured result: `structuredContent` is `value`, and one text block holds `value`
    /// serialized compactly (what the spec asks of tools for clients that only read `content`).
    pub fn json(value: Value) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..CallToolResult::default()
        }
    }

    /// A tool failure: one text block with `message`, and `isError: true`.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(message)],
            is_error: Some(true),
            ..CallToolResult::default()
        }
    }

    /// Whether this result reports a tool failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads a value as some type and writes it back.
    type RoundTrip = fn(&Value) -> Value;

    #[test]
    fn constructors_produce_exact_json() {
        // (result, exact serialization)
        let table = [
            (
                CallToolResult::text("hi"),
                r#"{"content":[{"type":"text","text":"hi"}]}"#,
            ),
            (
                CallToolResult::error("boom"),
                r#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#,
            ),
            (
                CallToolResult::json(json!({"b": [1, 2.5], "a": "x"})),
                r#"{"content":[{"type":"text","text":"{\"a\":\"x\",\"b\":[1,2.5]}"}],"structuredContent":{"a":"x","b":[1,2.5]}}"#,
            ),
            (
                CallToolResult::json(json!([1, "two"])),
                r#"{"content":[{"type":"text","text":"[1,\"two\"]"}],"structuredContent":[1,"two"]}"#,
            ),
        ];
        for (result, want) in table {
            assert_eq!(serde_json::to_string(&result).unwrap(), want);
            let back: CallToolResponse = serde_json::from_str(want).unwrap();
            assert_eq!(back, result);
        }
    }

    #[test]
    fn is_error_reads_the_flag() {
        assert!(CallToolResult::error("x").is_error());
        assert!(!CallToolResult::text("x").is_error());
        assert!(!CallToolResult::json(json!(1)).is_error());
        let explicit_false: CallToolResult =
            serde_json::from_value(json!({"content": [], "isError": false})).unwrap();
        assert!(!explicit_false.is_error());
    }

    #[test]
    fn missing_content_defaults_to_empty() {
        let r: CallToolResult =
            serde_json::from_value(json!({"structuredContent": {"a": 1}})).unwrap();
        assert!(r.content.is_empty());
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content": [], "structuredContent": {"a": 1}})
        );
        let null: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": null})).unwrap();
        assert_eq!(null.structured_content, Some(Value::Null));
        let absent: CallToolResult = serde_json::from_value(json!({"content": []})).unwrap();
        assert_eq!(absent.structured_content, None);
    }

    #[test]
    fn unknown_fields_survive() {
        // (json, type) — every struct here keeps fields it does not know, at the top and nested.
        let table: [(Value, RoundTrip); 6] = [
            (
                json!({"cursor": "c", "_meta": {"k": 1}, "future": [1]}),
                |v| rt::<PaginatedRequestParams>(v),
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "newHint": 1},
                       "execution": {"taskSupport": "optional", "x": 2}, "icons": [{"src": "https://x/i.png"}], "fresh": true}),
                |v| rt::<Tool>(v),
            ),
            (
                json!({"tools": [], "nextCursor": "n", "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
                |v| rt::<ListToolsResult>(v),
            ),
            (
                json!({"name": "t", "arguments": {"n": 18446744073709551615u64, "f": 1.5}, "inputResponses": {"k": {"action": "cancel"}},
                       "requestState": "s", "task": {"ttl": 1000}, "_meta": {"progressToken": 7}, "zz": null}),
                |v| rt::<CallToolRequestParams>(v),
            ),
            (
                json!({"content": [{"type": "later", "x": 1}], "isError": false, "resultType": "complete", "other": {}}),
                |v| rt::<CallToolResult>(v),
            ),
            (json!({"content": [], "structuredContent": null}), |v| {
                rt::<CallToolResult>(v)
            }),
        ];
        for (value, f) in table {
            assert_eq!(f(&value), value);
        }
    }

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: &Value) -> Value {
        let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
        serde_json::to_value(&t).unwrap()
    }

    #[test]
    fn tool_requires_name_and_input_schema() {
        assert!(serde_json::from_value::<Tool>(json!({"name": "t"})).is_err());
        assert!(serde_json::from_value::<Tool>(json!({"inputSchema": {}})).is_err());
        assert!(serde_json::from_value::<CallToolRequestParams>(json!({"arguments": {}})).is_err());
    }
}
