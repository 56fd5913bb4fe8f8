//! Server-to-client input: sampling (`sampling/createMessage`), elicitation (`elicitation/create`) and roots
//! (`roots/list`), and the 2026-07-28 multi-round-trip types that carry them.
//!
//! On legacy generations these are JSON-RPC requests from server to client. On 2026-07-28 a server never
//! sends requests: it answers `tools/call`, `prompts/get` or `resources/read` with an [`InputRequiredResult`]
//! whose `inputRequests` hold `{method, params}` objects, and the client retries the original request with
//! `inputResponses` (the results, under the same keys) and the echoed `requestState`.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::{ContentBlock, Extra, Meta, Role, Tool};

/// `resultType` of an [`InputRequiredResult`].
pub const RESULT_TYPE_INPUT_REQUIRED: &str = "input_required";

/// One server-to-client request inside `inputRequests`: `sampling/createMessage`, `elicitation/create`,
/// `roots/list`, or any kind a later generation adds (kept generic so it survives unchanged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The request method.
    pub method: String,
    /// The request params, as JSON (`roots/list` may have none: then this is `Null` and is not written).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InputRequest {
    /// A request of `method` with `params` (any serializable params type of this module).
    pub fn new(
        method: impl Into<String>,
        params: impl Serialize,
    ) -> Result<Self, serde_json::Error> {
        Ok(InputRequest {
            method: method.into(),
            params: serde_json::to_value(params)?,
            extra: Extra::new(),
        })
    }

    /// The params read as `T` (e.g. [`ElicitRequestParams`] for `elicitation/create`).
    pub fn params_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.params)
    }
}

/// `inputRequests`: server-chosen keys to the requests the client must fulfil.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// `inputResponses`: the client's results (`CreateMessageResult`, `ElicitResult`, `ListRootsResult`, …)
/// under the keys of the `inputRequests` they answer, kept as JSON.
pub type InputResponses = Map<String, Value>;

/// A result saying the server needs input before it can finish (2026-07-28). At least one of
/// `inputRequests` and `requestState` is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `"input_required"`.
    pub result_type: String,
    /// The requests the client must fulfil.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes on the retry, byte-exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InputRequiredResult {
    /// An `input_required` result with these requests and state.
    pub fn new(input_requests: Option<InputRequests>, request_state: Option<String>) -> Self {
        InputRequiredResult {
            result_type: RESULT_TYPE_INPUT_REQUIRED.to_owned(),
            input_requests,
            request_state,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// A model name hint in [`ModelPreferences`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// A (sub)string of a model name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's model preferences for sampling. Priorities are 0–1, kept as wire numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<Number>,
    /// How much speed matters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<Number>,
    /// How much capability matters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<Number>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `content` of a sampling message: one block, or (2025-11-25 and later) an array of blocks. The blocks
/// are text, image, audio, `tool_use` and `tool_result`.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingContent {
    /// A single block.
    Single(ContentBlock),
    /// An array of blocks.
    Multiple(Vec<ContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever the shape.
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(b) => b.serialize(serializer),
            SamplingContent::Multiple(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .map(ContentBlock::try_from)
                .collect::<Result<Vec<_>, _>>()
                .map(SamplingContent::Multiple)
                .map_err(D::Error::custom),
            other => ContentBlock::try_from(other)
                .map(SamplingContent::Single)
                .map_err(D::Error::custom),
        }
    }
}

/// A message in a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// `_meta` (2025-11-25 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How the model may use tools while sampling (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// `"auto"` (default), `"required"` or `"none"`, kept as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sampling/createMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Which model the server would like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt the server wants (the client may change or drop it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `"none"`, `"thisServer"` or `"allServers"`, kept as a string (needs client `sampling.context` unless
    /// `"none"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Sampling temperature (kept as the wire number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Maximum tokens to sample (kept as the wire number).
    pub max_tokens: Number,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata, passed through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Tools the model may use (2025-11-25 and later; needs client `sampling.tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use them (2025-11-25 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Task augmentation `{ttl?}` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// `_meta` (legacy generations; the 2026-07-28 schema has none here).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sampling/createMessage` result (the client's answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who says it (normally `assistant`).
    pub role: Role,
    /// What the model produced.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or provider-specific).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `elicitation/create` params: form mode (`message`, `requestedSchema`; `mode` absent or `"form"`) or, on
/// 2025-11-25 and later, URL mode (`mode: "url"`, `message`, `url`, and on 2025-11-25 only `elicitationId`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestParams {
    /// `"form"` or `"url"` (absent means form), kept as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to tell the user.
    pub message: String,
    /// Form mode: a flat JSON Schema object of primitive properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: where to send the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL mode on 2025-11-25: id matched by `notifications/elicitation/complete` (removed on 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Task augmentation `{ttl?}` (2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// `_meta` (2025-11-25; the 2026-07-28 schema has none here).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestParams {
    /// Whether this is a URL-mode elicitation (needs client `elicitation.url`).
    pub fn is_url_mode(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted / confirmed.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// `elicitation/create` result (the client's answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// Form mode, on accept: the submitted values (string, integer, boolean, or array of strings since
    /// 2025-11-25), kept as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// `_meta` (legacy generations; the 2026-07-28 schema has none here).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A root (directory or file) the client exposes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Root {
    /// URI of the root (a `file://` URI).
    pub uri: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta` (2025-06-18 and later).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `roots/list` result (the client's answer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// `_meta` (legacy generations; the 2026-07-28 schema has none here).
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
        let table: [(Value, RoundTrip); 13] = [
            (
                json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}, "f": {"method": "future/ask", "params": {"x": [1.0]}, "extra": 1}},
                       "requestState": "s", "_meta": {"m": 1}, "new": 1}),
                rt::<InputRequiredResult>,
            ),
            (
                json!({"resultType": "input_required", "requestState": "only"}),
                rt::<InputRequiredResult>,
            ),
            (
                json!({"method": "roots/list", "params": {"_meta": {}}}),
                rt::<InputRequest>,
            ),
            (
                json!({"hints": [{"name": "x", "q": 1}], "costPriority": 1, "speedPriority": 0.5, "z": 0}),
                rt::<ModelPreferences>,
            ),
            (
                json!({"role": "user", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}, "_meta": {}, "x": 1}),
                rt::<SamplingMessage>,
            ),
            (
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "n", "input": {}}, {"type": "new"}]}),
                rt::<SamplingMessage>,
            ),
            (
                json!({"messages": [], "maxTokens": 100, "temperature": 0.7, "includeContext": "thisServer", "stopSequences": ["x"],
                       "metadata": {"k": "v"}, "toolChoice": {"mode": "auto", "t": 1}, "task": {"ttl": 5}, "_meta": {"progressToken": 1}, "w": 1}),
                rt::<CreateMessageRequestParams>,
            ),
            (
                json!({"messages": [], "maxTokens": 1.0e3}),
                rt::<CreateMessageRequestParams>,
            ),
            (
                json!({"role": "assistant", "content": {"type": "text", "text": "t"}, "model": "m", "stopReason": "endTurn", "resultType": "complete"}),
                rt::<CreateMessageResult>,
            ),
            (
                json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e", "task": {}, "_meta": {}, "y": 1}),
                rt::<ElicitRequestParams>,
            ),
            (
                json!({"action": "accept", "content": {"a": "b", "n": 3, "t": true, "l": ["x"]}, "_meta": {}, "k": 1}),
                rt::<ElicitResult>,
            ),
            (
                json!({"uri": "file:///r", "name": "R", "_meta": {"a": 1}, "b": 2}),
                rt::<Root>,
            ),
            (
                json!({"roots": [{"uri": "file:///r"}], "_meta": {}, "c": 3}),
                rt::<ListRootsResult>,
            ),
        ];
        for (value, f) in table {
            assert_eq!(f(&value), value);
        }
    }

    #[test]
    fn input_request_params_read_as_typed() {
        let r = InputRequest::new(
            "elicitation/create",
            ElicitRequestParams {
                message: "hi".into(),
                requested_schema: Some(json!({"type": "object"})),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"method": "elicitation/create", "params": {"message": "hi", "requestedSchema": {"type": "object"}}})
        );
        let p: ElicitRequestParams = r.params_as().unwrap();
        assert!(!p.is_url_mode());
        assert!(r.params_as::<CreateMessageRequestParams>().is_err());
    }

    #[test]
    fn input_required_constructor() {
        let r = InputRequiredResult::new(None, Some("s".into()));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
    }

    #[test]
    fn sampling_content_shapes() {
        let one: SamplingContent =
            serde_json::from_value(json!({"type": "text", "text": "a"})).unwrap();
        assert!(matches!(one, SamplingContent::Single(_)));
        assert_eq!(one.blocks().len(), 1);
        let many: SamplingContent = serde_json::from_value(
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        )
        .unwrap();
        assert_eq!(many.blocks().len(), 2);
        for bad in [json!("x"), json!([1]), json!({"text": "no type"})] {
            assert!(
                serde_json::from_value::<SamplingContent>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        assert!(serde_json::from_value::<ElicitResult>(json!({"action": "maybe"})).is_err());
    }
}
