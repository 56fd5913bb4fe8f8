//! [`RawObject`]: a JSON object read one level deep, its values left as raw JSON text. Used wherever a message
//! is edited on the way through (a tool name de-prefixed, `_meta` keys added or removed, results stamped)
//! without reformatting or re-parsing anything below the top level, so big numbers and unknown fields survive.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A JSON object: keys in their order, values raw. Borrowed from the text it was read from; values set
/// later may be owned.
#[derive(Debug, Clone, Default)]
pub struct RawObject<'a> {
    /// Keys borrowed from the text when it holds them unescaped (no allocation per key), owned otherwise.
    fields: Vec<(Cow<'a, str>, RawText<'a>)>,
}

/// A key as read: borrowed when the text has it without escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[derive(Debug, Clone)]
enum RawText<'a> {
    Borrowed(&'a RawValue),
    Owned(Box<RawValue>),
}

impl RawText<'_> {
    fn get(&self) -> &RawValue {
        match self {
            RawText::Borrowed(r) => r,
            RawText::Owned(r) => r,
        }
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some((Key(k), val)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    fields.push((k, RawText::Borrowed(val)));
                }
                Ok(RawObject { fields })
            }
        }
        d.deserialize_map(V)
    }
}

impl serde::Serialize for RawObject<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            map.serialize_entry(k.as_ref(), v.get())?;
        }
        map.end()
    }
}

impl<'a> RawObject<'a> {
    /// Reads an object; `None` when `raw` is not a JSON object.
    pub fn parse(raw: &'a RawValue) -> Option<RawObject<'a>> {
        serde_json::from_str(raw.get()).ok()
    }

    /// Reads an object from optional params; absent params are an empty object.
    pub fn parse_or_empty(raw: Option<&'a RawValue>) -> Option<RawObject<'a>> {
        match raw {
            Some(r) => RawObject::parse(r),
            None => Some(RawObject::default()),
        }
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.get())
    }

    /// The keys and raw values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.fields.iter().map(|(k, v)| (k.as_ref(), v.get()))
    }

    /// Sets `key` (replacing it in place, or appending).
    pub fn set(&mut self, key: &str, value: Box<RawValue>) {
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = RawText::Owned(value),
            None => self
                .fields
                .push((Cow::Owned(key.to_owned()), RawText::Owned(value))),
        }
    }

    /// Sets `key` to a serializable value.
    pub fn set_value<T: serde::Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        if let Ok(raw) = serde_json::value::to_raw_value(value) {
            self.set(key, raw);
        }
    }

    /// Removes `key`; true when it was there.
    pub fn remove(&mut self, key: &str) -> bool {
        let before = self.fields.len();
        self.fields.retain(|(k, _)| k != key);
        self.fields.len() != before
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Writes the object as compact JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, k.as_ref()).expect("writing to a Vec cannot fail");
            out.push(b':');
            out.extend_from_slice(v.get().get().as_bytes());
        }
        out.push(b'}');
    }

    /// The object as an owned raw value.
    pub fn to_raw(&self) -> Box<RawValue> {
        // Serialized, not re-read: `RawValue::from_string` would parse the whole text again to check it,
        // where every part is already JSON (raw values as they were read, keys escaped by serde_json).
        serde_json::value::to_raw_value(self).expect("an object of raw values serializes")
    }
}

/// Whether the JSON `text` may hold `key` as an object key, at any depth: it contains the key as written,
/// or a `\u` escape that could spell it. False means a parse would not find it, so it can be skipped
/// (most messages carry no progress token and ask for no input).
pub fn may_hold_key(text: &str, key: &str) -> bool {
    text.contains(key) || text.contains("\\u")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_missed_only_when_no_spelling_of_it_is_in_the_text() {
        let cases = [
            (r#"{"content":[],"isError":false}"#, "requestState", false),
            (
                r#"{"requestState":"s","resultType":"input_required"}"#,
                "requestState",
                true,
            ),
            (r#"{"request\u0053tate":"s"}"#, "requestState", true),
            (
                r#"{"a":{"_meta":{"progressToken":1}}}"#,
                "progressToken",
                true,
            ),
            (r#"{"text":"caf\u00e9"}"#, "progressToken", true),
            (r#"{"text":"progress token"}"#, "progressToken", false),
        ];
        for (text, key, may) in cases {
            assert_eq!(may_hold_key(text, key), may, "{text}");
            // Whenever a parse finds the key, the check said it might be there.
            let found = serde_json::from_str::<serde_json::Value>(text)
                .unwrap()
                .as_object()
                .is_some_and(|o| o.contains_key(key));
            assert!(!found || may, "{text}");
        }
    }

    #[test]
    fn edits_keep_everything_else_byte_exact() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"name":"a__t","arguments":{"big":123456789012345678901234567890,"f":1.50},"x":[1]}"#).unwrap();
        let mut obj = RawObject::parse(&raw).unwrap();
        obj.set_value("name", "t");
        assert!(obj.remove("x"));
        assert!(!obj.remove("x"));
        obj.set_value("added", &true);
        assert_eq!(
            obj.to_raw().get(),
            r#"{"name":"t","arguments":{"big":123456789012345678901234567890,"f":1.50},"added":true}"#
        );
        assert_eq!(
            obj.get("arguments").unwrap().get(),
            r#"{"big":123456789012345678901234567890,"f":1.50}"#
        );
    }

    #[test]
    fn non_objects_are_refused() {
        for text in ["[]", "1", "\"x\"", "null"] {
            let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
            assert!(RawObject::parse(&raw).is_none(), "{text}");
        }
        assert!(RawObject::parse_or_empty(None).unwrap().is_empty());
    }
}
