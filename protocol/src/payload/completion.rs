//! Argument completion: `completion/complete`.
//!
//! The reference is `ref/prompt {name}` or `ref/resource {uri}` in every generation (the resource one is named
//! `ResourceReference` before 2025-06-18 and `ResourceTemplateReference` since; same shape). `context` exists
//! since 2025-06-18.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::{Extra, Meta};

/// `ref/prompt`: completion for a prompt argument.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptReference {
    /// Name of the prompt.
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ref/resource`: completion for a resource template variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// The URI or URI template.
    pub uri: String,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The name of [`ResourceTemplateReference`] before 2025-06-18.
pub type ResourceReference = ResourceTemplateReference;

/// What is being completed, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionReference {
    /// `ref/prompt`
    Prompt(PromptReference),
    /// `ref/resource`
    Resource(ResourceTemplateReference),
    /// A reference of a type this crate does not know, kept exactly as received.
    Unknown(Value),
}

impl CompletionReference {
    /// The reference's `type`.
    pub fn kind(&self) -> &str {
        match self {
            CompletionReference::Prompt(_) => "ref/prompt",
            CompletionReference::Resource(_) => "ref/resource",
            CompletionReference::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for CompletionReference {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CompletionReference::Prompt(r) => Tagged {
                kind: "ref/prompt",
                inner: r,
            }
            .serialize(serializer),
            CompletionReference::Resource(r) => Tagged {
                kind: "ref/resource",
                inner: r,
            }
            .serialize(serializer),
            CompletionReference::Unknown(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let Value::Object(mut map) = value else {
            return Err(D::Error::custom(
                "a completion reference must be a JSON object",
            ));
        };
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.as_str(),
            _ => {
                return Err(D::Error::custom(
                    "completion reference without a string `type`",
                ));
            }
        };
        match kind {
            "ref/prompt" => {
                map.remove("type");
                serde_json::from_value(Value::Object(map))
                    .map(CompletionReference::Prompt)
                    .map_err(D::Error::custom)
            }
            "ref/resource" => {
                map.remove("type");
                serde_json::from_value(Value::Object(map))
                    .map(CompletionReference::Resource)
                    .map_err(D::Error::custom)
            }
            _ => Ok(CompletionReference::Unknown(Value::Object(map))),
        }
    }
}

/// The argument being completed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionArgument {
    /// Argument name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Extra context for a completion (2025-06-18 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionContext {
    /// Already-resolved arguments (strings per the schema, kept as JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `completion/complete` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Extra context (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The completion values of a [`CompleteResult`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values (at most 100).
    pub values: Vec<String>,
    /// How many values exist in all (kept as the wire number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// Whether more values exist than were sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `completion/complete` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The completion.
    pub completion: Completion,
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

    #[test]
    fn references_dispatch_on_type_and_round_trip() {
        // (json, kind, known?)
        let table = [
            (
                json!({"type": "ref/prompt", "name": "p"}),
                "ref/prompt",
                true,
            ),
            (
                json!({"type": "ref/prompt", "name": "p", "title": "P", "x": 1}),
                "ref/prompt",
                true,
            ),
            (
                json!({"type": "ref/resource", "uri": "file:///{p}"}),
                "ref/resource",
                true,
            ),
            (
                json!({"type": "ref/tool", "name": "t", "n": 1.5}),
                "ref/tool",
                false,
            ),
        ];
        for (value, kind, known) in table {
            let r: CompletionReference = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(r.kind(), kind);
            assert_eq!(!matches!(r, CompletionReference::Unknown(_)), known);
            assert_eq!(serde_json::to_value(&r).unwrap(), value);
        }
        for bad in [
            json!({"name": "p"}),
            json!({"type": "ref/prompt"}),
            json!({"type": "ref/resource", "name": "x"}),
            json!(1),
        ] {
            assert!(
                serde_json::from_value::<CompletionReference>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn params_and_result_keep_unknown_fields() {
        let params = json!({
            "ref": {"type": "ref/resource", "uri": "u"},
            "argument": {"name": "a", "value": "v", "q": 1},
            "context": {"arguments": {"x": "y"}, "w": 2},
            "_meta": {"progressToken": 1},
            "future": true
        });
        let p: CompleteRequestParams = serde_json::from_value(params.clone()).unwrap();
        assert_eq!(p.reference.kind(), "ref/resource");
        assert_eq!(serde_json::to_value(&p).unwrap(), params);

        let result = json!({"completion": {"values": ["a"], "total": 10, "hasMore": true, "x": 1}, "resultType": "complete"});
        let r: CompleteResult = serde_json::from_value(result.clone()).unwrap();
        assert_eq!(
            r.completion.total.as_ref().and_then(Number::as_u64),
            Some(10)
        );
        assert_eq!(serde_json::to_value(&r).unwrap(), result);
    }
}
