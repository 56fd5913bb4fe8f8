//! Client and server capabilities, in both shapes: legacy (2024-11-05 … 2025-11-25) and 2026-07-28 (where
//! `tasks` moved under `extensions` and `roots.listChanged` went away). One struct per side covers both: every
//! key is optional and unknown keys are kept.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Extra;

/// What a client declares it can do (`initialize` params, or `_meta` clientCapabilities on 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// `roots` (`{listChanged?}` on legacy generations, `{}` on 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<Map<String, Value>>,
    /// `sampling` (`{context?, tools?}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Map<String, Value>>,
    /// `elicitation` (`{form?, url?}`; `{}` means form only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Map<String, Value>>,
    /// `tasks` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Map<String, Value>>,
    /// `extensions` (2026-07-28), keyed by extension id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a server declares it can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// `logging`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<Map<String, Value>>,
    /// `completions` (2025-03-26 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<Map<String, Value>>,
    /// `prompts` (`{listChanged?}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Map<String, Value>>,
    /// `resources` (`{subscribe?, listChanged?}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Map<String, Value>>,
    /// `tools` (`{listChanged?}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Map<String, Value>>,
    /// `tasks` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Map<String, Value>>,
    /// `extensions` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The part of `required` that `declared` lacks, as a capabilities object (what `-32021` puts in
/// `data.requiredCapabilities`), or `None` when everything required is declared.
///
/// Both are capability objects. A key is satisfied when `declared` has it; nested objects are compared key by
/// key (so `{"elicitation":{"url":{}}}` is missing from `{"elicitation":{}}`), with one rule from the spec:
/// an empty `elicitation` object means form mode.
pub fn missing_capabilities(required: &Value, declared: &Value) -> Option<Value> {
    fn missing(
        required: &Map<String, Value>,
        declared: Option<&Map<String, Value>>,
        path: &[&str],
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, need) in required {
            let have = declared.and_then(|d| d.get(key));
            match (need, have) {
                (_, None) => {
                    let implied_form = path == ["elicitation"]
                        && key == "form"
                        && declared.is_some_and(|d| d.is_empty());
                    if !implied_form {
                        out.insert(key.clone(), need.clone());
                    }
                }
                (Value::Object(need_obj), Some(Value::Object(have_obj)))
                    if !need_obj.is_empty() =>
                {
                    let mut sub_path = path.to_vec();
                    sub_path.push(key);
                    let sub = missing(need_obj, Some(have_obj), &sub_path);
                    if !sub.is_empty() {
                        out.insert(key.clone(), Value::Object(sub));
                    }
                }
                _ => {}
            }
        }
        out
    }
    let required = required.as_object()?;
    let out = missing(required, declared.as_object(), &[]);
    (!out.is_empty()).then_some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_capabilities_table() {
        // (required, declared, missing)
        let table = [
            (
                json!({"sampling": {}}),
                json!({}),
                Some(json!({"sampling": {}})),
            ),
            (json!({"sampling": {}}), json!({"sampling": {}}), None),
            (
                json!({"elicitation": {"url": {}}}),
                json!({"elicitation": {}}),
                Some(json!({"elicitation": {"url": {}}})),
            ),
            (
                json!({"elicitation": {"form": {}}}),
                json!({"elicitation": {}}),
                None,
            ),
            (
                json!({"elicitation": {"form": {}}}),
                json!({"elicitation": {"url": {}}}),
                Some(json!({"elicitation": {"form": {}}})),
            ),
            (
                json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
                json!({"extensions": {}}),
                Some(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})),
            ),
            (
                json!({"roots": {}, "sampling": {}}),
                json!({"roots": {"listChanged": true}}),
                Some(json!({"sampling": {}})),
            ),
            (json!({}), json!({}), None),
        ];
        for (required, declared, want) in table {
            assert_eq!(
                missing_capabilities(&required, &declared),
                want,
                "{required} vs {declared}"
            );
        }
    }

    #[test]
    fn unknown_keys_survive() {
        let text =
            r#"{"roots":{"listChanged":true},"extensions":{"x.y/z":{}},"futureCap":{"a":1}}"#;
        let c: ClientCapabilities = serde_json::from_str(text).unwrap();
        assert!(c.extra.contains_key("futureCap"));
        let back: Value = serde_json::to_value(&c).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }
}
