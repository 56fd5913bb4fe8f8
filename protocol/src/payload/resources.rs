//! Resources: `resources/list`, `resources/templates/list`, `resources/read`, and the legacy
//! `resources/subscribe` / `resources/unsubscribe` (replaced on 2026-07-28 by `subscriptions/listen`).
//!
//! 2026-07-28 results also carry `resultType` and (cacheable ones) `ttlMs` / `cacheScope`; those stay in
//! `extra` and are stamped by the shaper.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use super::{Annotations, Extra, InputResponses, Meta, PaginatedRequestParams, ResourceContents};

/// A resource a server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// URI of the resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, if known (kept as the wire number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Number>,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
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

/// A family of resources named by an RFC 6570 URI template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type shared by all matching resources, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
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

/// `resources/list` params.
pub type ListResourcesRequestParams = PaginatedRequestParams;
/// `resources/templates/list` params.
pub type ListResourceTemplatesRequestParams = PaginatedRequestParams;

/// `resources/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
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

/// `resources/templates/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
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

/// `resources/read` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// URI of the resource to read.
    pub uri: String,
    /// Answers to a previous `InputRequiredResult`'s `inputRequests` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Echo of a previous `InputRequiredResult`'s `requestState`, byte-exact (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/read` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (one resource may yield several, e.g. a directory).
    pub contents: Vec<ResourceContents>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know (`resultType`, `ttlMs`, `cacheScope` among them).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/subscribe` params (legacy).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeRequestParams {
    /// URI of the resource to watch.
    pub uri: String,
    /// `_meta` (2025-11-25 schema; allowed on all legacy generations).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/unsubscribe` params (legacy).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsubscribeRequestParams {
    /// URI of the resource to stop watching.
    pub uri: String,
    /// `_meta` (2025-11-25 schema; allowed on all legacy generations).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads a value as some type and writes it back.
    type RoundTrip = fn(&Value) -> Value;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: &Value) -> Value {
        let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
        serde_json::to_value(&t).unwrap()
    }

    #[test]
    fn round_trips_keep_unknown_fields() {
        let table: [(Value, RoundTrip); 8] = [
            (
                json!({"uri": "file:///a", "name": "a", "size": 18446744073709551615u64, "annotations": {"priority": 0.5},
                       "icons": [{"src": "data:,", "theme": "dark"}], "_meta": {"k": 1}, "new": [null]}),
                rt::<Resource>,
            ),
            (
                json!({"uri": "file:///a", "name": "a", "size": 1.5}),
                rt::<Resource>,
            ),
            (
                json!({"uriTemplate": "file:///{p}", "name": "p", "mimeType": "text/plain", "later": 1}),
                rt::<ResourceTemplate>,
            ),
            (
                json!({"resources": [], "nextCursor": "n", "resultType": "complete", "ttlMs": 5, "cacheScope": "public"}),
                rt::<ListResourcesResult>,
            ),
            (
                json!({"resourceTemplates": [{"uriTemplate": "x", "name": "y"}], "z": true}),
                rt::<ListResourceTemplatesResult>,
            ),
            (
                json!({"uri": "u", "inputResponses": {"a": {"roots": []}}, "requestState": "st", "_meta": {"progressToken": "p"}, "q": 1}),
                rt::<ReadResourceRequestParams>,
            ),
            (
                json!({"contents": [{"uri": "u", "text": "t"}, {"uri": "u", "blob": "AA=="}, {"uri": "u", "weird": 1}], "resultType": "complete"}),
                rt::<ReadResourceResult>,
            ),
            (json!({"uri": "u", "x": 1}), rt::<SubscribeRequestParams>),
        ];
        for (value, f) in table {
            assert_eq!(f(&value), value);
        }
        assert_eq!(
            rt::<UnsubscribeRequestParams>(&json!({"uri": "u"})),
            json!({"uri": "u"})
        );
    }

    #[test]
    fn required_fields_are_required() {
        assert!(serde_json::from_value::<Resource>(json!({"uri": "u"})).is_err());
        assert!(serde_json::from_value::<ResourceTemplate>(json!({"name": "n"})).is_err());
        assert!(serde_json::from_value::<ReadResourceRequestParams>(json!({})).is_err());
        assert!(serde_json::from_value::<ReadResourceResult>(json!({})).is_err());
    }
}
