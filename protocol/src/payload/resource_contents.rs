//! Resource contents: [`TextResourceContents`], [`BlobResourceContents`] and [`ResourceContents`].

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Extra, Meta};

/// Text contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Binary contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// URI of the resource.
    pub uri: String,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The contents of a resource: text when the object has `text`, else blob when it has `blob`, else kept as
/// received.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Has `text`.
    Text(TextResourceContents),
    /// Has `blob`.
    Blob(BlobResourceContents),
    /// Neither: kept exactly as received.
    Unknown(Value),
}

impl ResourceContents {
    /// The resource URI (for [`ResourceContents::Unknown`], its `uri` if it is a string).
    pub fn uri(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(c) => Some(&c.uri),
            ResourceContents::Blob(c) => Some(&c.uri),
            ResourceContents::Unknown(v) => v.get("uri").and_then(Value::as_str),
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceContents::Text(c) => c.serialize(serializer),
            ResourceContents::Blob(c) => c.serialize(serializer),
            ResourceContents::Unknown(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(D::Error::custom("resource contents must be a JSON object"));
        }
        if value.get("text").is_some() {
            serde_json::from_value(value)
                .map(ResourceContents::Text)
                .map_err(D::Error::custom)
        } else if value.get("blob").is_some() {
            serde_json::from_value(value)
                .map(ResourceContents::Blob)
                .map_err(D::Error::custom)
        } else {
            Ok(ResourceContents::Unknown(value))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned>(v: &Value) -> (T, Value) {
        let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
        let back = serde_json::to_value(&t).unwrap_or_else(|e| panic!("{v}: {e}"));
        (t, back)
    }

    #[test]
    fn resource_contents_pick_text_blob_or_unknown() {
        let table = [
            (
                json!({"uri": "u", "text": "t", "mimeType": "text/plain", "x": 1}),
                "text",
            ),
            (
                json!({"uri": "u", "blob": "AA==", "_meta": {"k": "v"}}),
                "blob",
            ),
            (json!({"uri": "u", "stream": "wss://x"}), "unknown"),
        ];
        for (value, want) in table {
            let (c, back): (ResourceContents, _) = round_trip(&value);
            let got = match c {
                ResourceContents::Text(_) => "text",
                ResourceContents::Blob(_) => "blob",
                ResourceContents::Unknown(_) => "unknown",
            };
            assert_eq!(got, want, "{value}");
            assert_eq!(c.uri(), Some("u"));
            assert_eq!(back, value);
        }
        assert!(serde_json::from_value::<ResourceContents>(json!("x")).is_err());
    }
}
