//! Notification params (progress, cancellation, logging, resource updates) and the 2026-07-28
//! `subscriptions/listen` stream that replaced unsolicited list-changed notifications and
//! `resources/subscribe`.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use super::{Extra, LoggingLevel, Meta};

/// A progress token: a JSON string or a JSON integer, re-emitted exactly (an integer stays the same
/// integer, in or beyond `i64`, up to `u64::MAX`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProgressToken {
    /// A string token.
    String(String),
    /// An integer token (always an integer: `is_i64() || is_u64()`).
    Integer(Number),
}

impl ProgressToken {
    /// The string, for a string token.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ProgressToken::String(s) => Some(s),
            ProgressToken::Integer(_) => None,
        }
    }

    /// The integer, for an integer token that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ProgressToken::String(_) => None,
            ProgressToken::Integer(n) => n.as_i64(),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Integer(n.into())
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

impl TryFrom<Value> for ProgressToken {
    type Error = serde_json::Error;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        match value {
            Value::String(s) => Ok(ProgressToken::String(s)),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(ProgressToken::Integer(n)),
            Value::Number(_) => Err(serde_json::Error::custom(
                "a progress token must be an integer, not a fraction",
            )),
            _ => Err(serde_json::Error::custom(
                "a progress token must be a string or an integer",
            )),
        }
    }
}

impl From<ProgressToken> for Value {
    fn from(t: ProgressToken) -> Self {
        match t {
            ProgressToken::String(s) => Value::String(s),
            ProgressToken::Integer(n) => Value::Number(n),
        }
    }
}

impl fmt::Display for ProgressToken {
    /// As JSON: a string quoted, an integer bare.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::String(s) => write!(f, "{}", Value::String(s.clone())),
            ProgressToken::Integer(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProgressToken::String(s) => serializer.serialize_str(s),
            ProgressToken::Integer(n) => n.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ProgressToken::try_from(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// `notifications/progress` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far (increases; may be fractional; kept as the wire number).
    pub progress: Number,
    /// Total, if known (kept as the wire number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// Human-readable progress message (2025-03-26 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notifications/cancelled` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// Id of the request to cancel, as JSON (a string or an integer). Required on every generation but
    /// 2025-11-25, where it may be left out (task cancellation uses `tasks/cancel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Value>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notifications/message` params (a log message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value (`null` included).
    pub data: Value,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notifications/resources/updated` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedNotificationParams {
    /// URI of the updated resource (may be a sub-resource of the one subscribed to).
    pub uri: String,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId` on a 2026-07-28 listen stream).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The notification kinds a `subscriptions/listen` stream opts in to (2026-07-28). Each is opt-in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs (replaces `resources/subscribe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Keys this crate does not know (extension filters, e.g. the tasks extension's `taskIds`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `subscriptions/listen` params (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenRequestParams {
    /// What the client wants to hear about.
    pub notifications: SubscriptionFilter,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notifications/subscriptions/acknowledged` params: the first message on a listen stream (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset of the requested filter the server honours.
    pub notifications: SubscriptionFilter,
    /// `_meta` (carries `io.modelcontextprotocol/subscriptionId`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `subscriptions/listen` result: sent when the server closes the stream gracefully (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `_meta` (required by the schema: carries `io.modelcontextprotocol/subscriptionId`).
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

    #[test]
    fn progress_tokens_round_trip_exactly() {
        for text in [
            "\"abc\"",
            "\"\"",
            "\"\\u00e9\"",
            "0",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
        ] {
            let t: ProgressToken =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let back = serde_json::to_string(&t).unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&back).unwrap(),
                serde_json::from_str::<Value>(text).unwrap()
            );
            if !text.starts_with('"') {
                assert_eq!(back, text, "integers are re-emitted digit for digit");
            }
        }
        for bad in ["1.5", "1e3", "null", "true", "[]", "{}"] {
            assert!(serde_json::from_str::<ProgressToken>(bad).is_err(), "{bad}");
        }
        assert_eq!(ProgressToken::from(7).as_i64(), Some(7));
        assert_eq!(ProgressToken::from("x").as_str(), Some("x"));
        assert_eq!(ProgressToken::from("x").to_string(), "\"x\"");
        assert_eq!(ProgressToken::from(-3).to_string(), "-3");
        assert_ne!(ProgressToken::from("1"), ProgressToken::from(1));
    }

    #[test]
    fn progress_numbers_keep_their_form() {
        // (json, exact serialization)
        let table = [
            (
                r#"{"progressToken":1,"progress":50,"total":100}"#,
                r#"{"progressToken":1,"progress":50,"total":100}"#,
            ),
            (
                r#"{"progressToken":"t","progress":0.5,"total":1.0}"#,
                r#"{"progressToken":"t","progress":0.5,"total":1.0}"#,
            ),
            (
                r#"{"progressToken":"t","progress":3,"message":"m","_meta":{"k":1},"x":[1]}"#,
                r#"{"progressToken":"t","progress":3,"message":"m","_meta":{"k":1},"x":[1]}"#,
            ),
        ];
        for (input, want) in table {
            let p: ProgressNotificationParams = serde_json::from_str(input).unwrap();
            assert_eq!(serde_json::to_string(&p).unwrap(), want);
        }
    }

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: &Value) -> Value {
        let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
        serde_json::to_value(&t).unwrap()
    }

    #[test]
    fn round_trips_keep_unknown_fields() {
        let table: [(Value, RoundTrip); 10] = [
            (
                json!({"requestId": 5, "reason": "r", "_meta": {}, "x": 1}),
                rt::<CancelledNotificationParams>,
            ),
            (
                json!({"requestId": "abc"}),
                rt::<CancelledNotificationParams>,
            ),
            (
                json!({"reason": "task teardown"}),
                rt::<CancelledNotificationParams>,
            ),
            (
                json!({"level": "debug", "data": null}),
                rt::<LoggingMessageNotificationParams>,
            ),
            (
                json!({"level": "emergency", "logger": "l", "data": [1, {"a": 2.5}], "_meta": {}, "y": 2}),
                rt::<LoggingMessageNotificationParams>,
            ),
            (
                json!({"uri": "file:///a", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}, "z": 1}),
                rt::<ResourceUpdatedNotificationParams>,
            ),
            (
                json!({"toolsListChanged": true, "promptsListChanged": false, "resourcesListChanged": true, "resourceSubscriptions": ["a"], "taskIds": ["t"]}),
                rt::<SubscriptionFilter>,
            ),
            (
                json!({"notifications": {}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "q": 1}),
                rt::<SubscriptionsListenRequestParams>,
            ),
            (
                json!({"notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": "l"}}),
                rt::<SubscriptionsAcknowledgedNotificationParams>,
            ),
            (
                json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 1}}),
                rt::<SubscriptionsListenResult>,
            ),
        ];
        for (value, f) in table {
            assert_eq!(f(&value), value);
        }
    }

    #[test]
    fn required_fields_are_required() {
        assert!(
            serde_json::from_value::<LoggingMessageNotificationParams>(json!({"level": "info"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<LoggingMessageNotificationParams>(
                json!({"level": "loud", "data": 1})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<ProgressNotificationParams>(json!({"progressToken": 1}))
                .is_err()
        );
        assert!(serde_json::from_value::<SubscriptionsListenRequestParams>(json!({})).is_err());
    }
}
