//! Content blocks (what tool results, prompt messages and sampling messages carry); resource contents are
//! in [`resource_contents`](super::resource_contents).
//!
//! [`ContentBlock`] is tagged by `type`. The block structs themselves hold no `type` field: the enum writes it
//! on the way out and takes it off on the way in. A block whose `type` this crate does not know (a newer
//! generation's) is kept whole as [`ContentBlock::Unknown`].
//!
//! Generations: `text`, `image`, `resource` in all; `audio` since 2025-03-26; `resource_link` since 2025-06-18;
//! `tool_use` / `tool_result` (sampling only) since 2025-11-25; `_meta` on blocks since 2025-06-18.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::{Extra, Meta};
// Resource contents used to live here: keep them reachable at `payload::content::*` too.
pub use super::resource_contents::{BlobResourceContents, ResourceContents, TextResourceContents};

/// The sender or recipient of messages and data in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// user
    User,
    /// assistant
    Assistant,
}

/// Hints for the client on how to use or display an object (`Annotated.annotations` on 2024-11-05).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the data is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance, 0 (optional) to 1 (effectively required). Kept as the wire number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Number>,
    /// ISO 8601 time of the last modification (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Text (`type: "text"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An image (`type: "image"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// MIME type of the image.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Audio (`type: "audio"`, 2025-03-26 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// MIME type of the audio.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A link to a resource the client may read (`type: "resource_link"`, 2025-06-18 and later). Same fields as
/// [`Resource`](super::Resource).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// URI of the resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
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
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resource's contents embedded in a message (`type: "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The contents (text or blob).
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A model's request to call a tool, in sampling (`type: "tool_use"`, 2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Id of this tool use, matched by [`ToolResultContent::tool_use_id`].
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub input: Map<String, Value>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of a tool use, in sampling (`type: "tool_result"`, 2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured result (an object on 2025-11-25, any JSON value on 2026-07-28; a `null` that is present
    /// stays `Some(Value::Null)`).
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One content block, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`
    Text(TextContent),
    /// `image`
    Image(ImageContent),
    /// `audio`
    Audio(AudioContent),
    /// `resource_link`
    ResourceLink(ResourceLink),
    /// `resource`
    Resource(EmbeddedResource),
    /// `tool_use`
    ToolUse(ToolUseContent),
    /// `tool_result`
    ToolResult(ToolResultContent),
    /// A block of a type this crate does not know, kept exactly as received (its `type` included).
    Unknown(Value),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// The block's `type` (for [`ContentBlock::Unknown`], whatever string it carried).
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a `text` block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}

/// Writes `type` first, then the block's own fields.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

fn tagged<S: Serializer, T: Serialize>(
    serializer: S,
    kind: &str,
    inner: &T,
) -> Result<S::Ok, S::Error> {
    Tagged { kind, inner }.serialize(serializer)
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(c) => tagged(serializer, "text", c),
            ContentBlock::Image(c) => tagged(serializer, "image", c),
            ContentBlock::Audio(c) => tagged(serializer, "audio", c),
            ContentBlock::ResourceLink(c) => tagged(serializer, "resource_link", c),
            ContentBlock::Resource(c) => tagged(serializer, "resource", c),
            ContentBlock::ToolUse(c) => tagged(serializer, "tool_use", c),
            ContentBlock::ToolResult(c) => tagged(serializer, "tool_result", c),
            ContentBlock::Unknown(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        ContentBlock::try_from(value).map_err(D::Error::custom)
    }
}

impl TryFrom<Value> for ContentBlock {
    type Error = serde_json::Error;

    /// Reads a block from JSON: an object with a string `type`. A known type must have that type's shape; an
    /// unknown type is kept as [`ContentBlock::Unknown`].
    fn try_from(value: Value) -> Result<Self, Self::Error> {
        let Value::Object(map) = value else {
            return Err(serde_json::Error::custom(
                "a content block must be a JSON object",
            ));
        };
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                return Err(serde_json::Error::custom(
                    "content block `type` must be a string",
                ));
            }
            None => return Err(serde_json::Error::custom("content block without `type`")),
        };
        fn body<T: serde::de::DeserializeOwned>(
            mut map: Map<String, Value>,
        ) -> Result<T, serde_json::Error> {
            map.remove("type");
            serde_json::from_value(Value::Object(map))
        }
        Ok(match kind {
            "text" => ContentBlock::Text(body(map)?),
            "image" => ContentBlock::Image(body(map)?),
            "audio" => ContentBlock::Audio(body(map)?),
            "resource_link" => ContentBlock::ResourceLink(body(map)?),
            "resource" => ContentBlock::Resource(body(map)?),
            "tool_use" => ContentBlock::ToolUse(body(map)?),
            "tool_result" => ContentBlock::ToolResult(body(map)?),
            // Keep it exactly as received; `map` still holds `type`.
            _ => ContentBlock::Unknown(Value::Object(map)),
        })
    }
}

/// For an `Option<Value>` field whose value may be any JSON, `null` included: absent (with
/// `#[serde(default)]`) is `None`, present is `Some`, even when it is `null`.
pub(super) fn present_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
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
    fn blocks_round_trip_and_dispatch_on_type() {
        // (json, expected kind, known?)
        let table = [
            (json!({"type": "text", "text": "hi"}), "text", true),
            (
                json!({"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 1}}),
                "text",
                true,
            ),
            (
                json!({"type": "image", "data": "AAA=", "mimeType": "image/png", "_meta": {"a": 1}}),
                "image",
                true,
            ),
            (
                json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav"}),
                "audio",
                true,
            ),
            (
                json!({"type": "resource_link", "uri": "file:///a", "name": "a", "size": 12}),
                "resource_link",
                true,
            ),
            (
                json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}),
                "resource",
                true,
            ),
            (
                json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}}),
                "resource",
                true,
            ),
            (
                json!({"type": "tool_use", "id": "c1", "name": "t", "input": {"x": 1}}),
                "tool_use",
                true,
            ),
            (
                json!({"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "r"}], "structuredContent": [1, 2]}),
                "tool_result",
                true,
            ),
            (
                json!({"type": "hologram", "frames": [1, 2.5, "x"], "nested": {"a": null}}),
                "hologram",
                false,
            ),
            (
                json!({"type": "text", "text": "t", "futureField": {"k": [1]}}),
                "text",
                true,
            ),
        ];
        for (value, kind, known) in table {
            let (block, back): (ContentBlock, _) = round_trip(&value);
            assert_eq!(block.kind(), kind, "{value}");
            assert_eq!(!matches!(block, ContentBlock::Unknown(_)), known, "{value}");
            assert_eq!(back, value);
        }
    }

    #[test]
    fn unknown_block_is_kept_byte_for_value() {
        let text = r#"{"type":"x-future","n":12345678901234567,"f":0.1,"s":"é\"","a":[true,null]}"#;
        let block: ContentBlock = serde_json::from_str(text).unwrap();
        let ContentBlock::Unknown(ref v) = block else {
            panic!("expected Unknown, got {block:?}")
        };
        assert_eq!(*v, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(block.kind(), "x-future");
        let back = serde_json::to_string(&block).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&back).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn malformed_blocks_are_rejected() {
        for bad in [
            json!("text"),
            json!([]),
            json!({"text": "no type"}),
            json!({"type": 3, "text": "x"}),
            json!({"type": "text"}),
            json!({"type": "image", "data": "AA=="}),
        ] {
            assert!(
                serde_json::from_value::<ContentBlock>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn text_constructor_and_type_first() {
        let b = ContentBlock::text("hello");
        assert_eq!(b.as_text(), Some("hello"));
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"type":"text","text":"hello"}"#
        );
    }

    #[test]
    fn type_is_not_duplicated_into_extra() {
        let b: ContentBlock = serde_json::from_value(json!({"type": "text", "text": "x"})).unwrap();
        let ContentBlock::Text(t) = b else { panic!() };
        assert!(t.extra.is_empty());
    }

    #[test]
    fn annotations_priority_keeps_integer_or_float() {
        for v in [
            json!({"priority": 1}),
            json!({"priority": 0.25}),
            json!({"lastModified": "2025-01-01T00:00:00Z", "z": 1}),
        ] {
            let (_, back): (Annotations, _) = round_trip(&v);
            assert_eq!(back, v);
        }
        assert!(serde_json::from_value::<Annotations>(json!({"audience": ["robot"]})).is_err());
    }
}
