//! Prompts: `prompts/list` and `prompts/get`.
//!
//! 2026-07-28 results also carry `resultType` and (on `prompts/list`) `ttlMs` / `cacheScope`; those stay in
//! `extra` and are stamped by the shaper.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ContentBlock, Extra, InputResponses, Meta, PaginatedRequestParams, Role};

/// An argument a prompt accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A prompt (template) a server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
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

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said (one block).
    pub content: ContentBlock,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `prompts/list` params.
pub type ListPromptsRequestParams = PaginatedRequestParams;

/// `prompts/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

/// `prompts/get` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The prompt to get.
    pub name: String,
    /// Argument values (strings per the schema; kept as JSON so nothing is lost on the way through).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
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

/// `prompts/get` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know (`resultType` among them).
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
        let table: [(Value, RoundTrip); 6] = [
            (
                json!({"name": "a", "required": false, "x": 1}),
                rt::<PromptArgument>,
            ),
            (
                json!({"name": "p", "title": "P", "arguments": [{"name": "a", "z": [1]}], "icons": [{"src": "s"}], "_meta": {}, "new": 0}),
                rt::<Prompt>,
            ),
            (
                json!({"role": "assistant", "content": {"type": "future", "x": 1}, "y": 2}),
                rt::<PromptMessage>,
            ),
            (
                json!({"prompts": [], "nextCursor": "c", "resultType": "complete", "ttlMs": 1, "cacheScope": "public"}),
                rt::<ListPromptsResult>,
            ),
            (
                json!({"name": "p", "arguments": {"a": "b", "n": 3}, "inputResponses": {"k": {}}, "requestState": "s", "_meta": {"m": 1}, "q": 1}),
                rt::<GetPromptRequestParams>,
            ),
            (
                json!({"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "t"}}], "resultType": "complete"}),
                rt::<GetPromptResult>,
            ),
        ];
        for (value, f) in table {
            assert_eq!(f(&value), value);
        }
    }

    #[test]
    fn message_content_is_one_block() {
        let m: PromptMessage = serde_json::from_value(
            json!({"role": "user", "content": {"type": "text", "text": "t"}}),
        )
        .unwrap();
        assert_eq!(m.content.as_text(), Some("t"));
        assert!(
            serde_json::from_value::<PromptMessage>(
                json!({"role": "user", "content": [{"type": "text", "text": "t"}]})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<PromptMessage>(
                json!({"role": "system", "content": {"type": "text", "text": "t"}})
            )
            .is_err()
        );
    }
}
