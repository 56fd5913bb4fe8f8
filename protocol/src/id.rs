//! JSON-RPC request ids, kept byte-exact: a string of any content and an integer of any size are re-emitted
//! exactly as they were received (the raw JSON text is kept, escapes and digits included).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON-RPC request id: a JSON string or a JSON integer (MCP forbids `null` and fractions).
#[derive(Clone)]
pub struct RequestId {
    raw: Box<RawValue>,
}

/// Why a JSON value cannot be a request id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequestId {
    /// `null`, a boolean, an object or an array.
    #[error("request id must be a string or an integer")]
    WrongType,
    /// A number with a fraction or an exponent.
    #[error("request id must be an integer, not a fractional number")]
    NotInteger,
}

impl RequestId {
    /// Accepts the raw JSON text of an id as it appeared in a message.
    pub fn from_raw(raw: &RawValue) -> Result<RequestId, InvalidRequestId> {
        Self::check(raw.get())?;
        Ok(RequestId {
            raw: raw.to_owned(),
        })
    }

    /// Accepts an owned raw JSON value (no copy).
    pub fn from_boxed_raw(raw: Box<RawValue>) -> Result<RequestId, InvalidRequestId> {
        Self::check(raw.get())?;
        Ok(RequestId { raw })
    }

    fn check(text: &str) -> Result<(), InvalidRequestId> {
        match text.as_bytes().first() {
            Some(b'"') => Ok(()),
            Some(b'-' | b'0'..=b'9') => {
                if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
                    Err(InvalidRequestId::NotInteger)
                } else {
                    Ok(())
                }
            }
            _ => Err(InvalidRequestId::WrongType),
        }
    }

    /// An integer id.
    pub fn number(n: i64) -> RequestId {
        let raw = RawValue::from_string(n.to_string()).expect("an integer is valid JSON");
        RequestId { raw }
    }

    /// A string id (escaped as JSON).
    pub fn string(s: &str) -> RequestId {
        let text = serde_json::to_string(s).expect("a string serializes");
        let raw = RawValue::from_string(text).expect("a serialized string is valid JSON");
        RequestId { raw }
    }

    /// The exact JSON text, e.g. `"abc"` (with quotes) or `12345678901234567890123`.
    pub fn raw(&self) -> &str {
        self.raw.get()
    }

    /// The id as a raw JSON value (for embedding in other messages).
    pub fn as_raw_value(&self) -> &RawValue {
        &self.raw
    }

    /// True for a string id.
    pub fn is_string(&self) -> bool {
        self.raw().starts_with('"')
    }

    /// The id as an `i64`, when it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        if self.is_string() {
            None
        } else {
            self.raw().parse().ok()
        }
    }

    /// The decoded string content, when it is a string id.
    pub fn as_string(&self) -> Option<String> {
        if self.is_string() {
            serde_json::from_str(self.raw()).ok()
        } else {
            None
        }
    }

    /// The id as a `serde_json::Value`. Integers beyond 64 bits lose precision here: use [`RequestId::raw`]
    /// wherever the id goes back on the wire.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.raw()).unwrap_or(serde_json::Value::Null)
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.raw() == other.raw()
    }
}
impl Eq for RequestId {}

impl Hash for RequestId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw().hash(state);
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.raw())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw())
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::string(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        RequestId::from_boxed_raw(raw).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        let id: RequestId = serde_json::from_str(text).unwrap();
        serde_json::to_string(&id).unwrap()
    }

    #[test]
    fn ids_are_re_emitted_byte_exact() {
        for text in [
            "0",
            "-1",
            "9223372036854775807",
            "123456789012345678901234567890123456789",
            "-98765432109876543210987654321",
            r#""""#,
            r#""abc""#,
            r#""\u00e9t\u00e9 \ud83d\ude00 \"quoted\" \\ \n""#,
            r#""été 😀""#,
        ] {
            assert_eq!(round_trip(text), text);
        }
    }

    #[test]
    fn wrong_ids_are_refused() {
        for text in ["null", "true", "1.5", "1e3", "[1]", "{}"] {
            assert!(serde_json::from_str::<RequestId>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn accessors() {
        let big: RequestId = serde_json::from_str("123456789012345678901234567890").unwrap();
        assert_eq!(big.as_i64(), None);
        assert!(!big.is_string());
        assert_eq!(RequestId::number(42).as_i64(), Some(42));
        let s = RequestId::string("a\"b");
        assert_eq!(s.raw(), r#""a\"b""#);
        assert_eq!(s.as_string().as_deref(), Some("a\"b"));
        assert_eq!(RequestId::from(7), RequestId::number(7));
    }
}
