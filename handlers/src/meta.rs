//! `params._meta` as each backend era wants it, edited one level deep so that nothing else is reformatted.
//!
//! To a modern (2026-07-28) backend every request carries `_meta` with the protocol version, the client
//! capabilities and the client info; to a legacy backend those keys are removed. In both, `progressToken`
//! is removed (progress is not bridged yet) and every other `_meta` key is kept. Only the top level of
//! `params` and of `_meta` is parsed, as ordered key → raw value pairs: argument values are copied byte for
//! byte (big integers, number spellings, string escapes all survive). Keys are re-encoded as JSON strings.

use std::fmt;

use protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROGRESS_TOKEN, PROTOCOL_VERSION};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The `_meta` keys that only a modern backend gets (and a legacy one must not).
const MODERN_KEYS: [&str; 3] = [PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO];

/// Why params cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParamsError {
    /// Params are not valid JSON (cannot happen for params that came through `protocol::message`).
    #[error("params are not valid json: {0}")]
    Invalid(String),
    /// A modern backend needs `_meta`, which only an object can carry.
    #[error("params must be a json object to carry _meta")]
    NotObject,
}

/// The three keys a modern backend gets, as raw JSON values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModernMeta<'a> {
    /// `io.modelcontextprotocol/protocolVersion`, e.g. `"2026-07-28"` (with quotes).
    pub protocol_version: &'a RawValue,
    /// `io.modelcontextprotocol/clientCapabilities`, an object.
    pub client_capabilities: &'a RawValue,
    /// `io.modelcontextprotocol/clientInfo`, an `Implementation` object.
    pub client_info: &'a RawValue,
}

impl ModernMeta<'_> {
    fn entries(&self) -> [(&'static str, &RawValue); 3] {
        [
            (PROTOCOL_VERSION, self.protocol_version),
            (CLIENT_CAPABILITIES, self.client_capabilities),
            (CLIENT_INFO, self.client_info),
        ]
    }
}

/// Params for a modern backend: `_meta` gets the three modern keys (replacing any the client sent), loses
/// `progressToken`, and keeps everything else; absent params become `{"_meta":{...}}`.
pub(crate) fn for_modern(
    params: Option<&RawValue>,
    meta: ModernMeta<'_>,
) -> Result<Box<RawValue>, ParamsError> {
    let object = match params {
        None => RawObject::default(),
        Some(p) if p.get().trim_start().starts_with('{') => RawObject::read(p)?,
        Some(_) => return Err(ParamsError::NotObject),
    };
    let extra = object.capacity_hint() + 512;
    Ok(rewrite(&object, Some(meta), extra))
}

/// Params for a legacy backend: `_meta` loses the modern keys and `progressToken` (and disappears when
/// nothing is left in it); everything else is kept. Params that need no change are returned as they are.
pub(crate) fn for_legacy(
    params: Option<Box<RawValue>>,
) -> Result<Option<Box<RawValue>>, ParamsError> {
    let Some(params) = params else {
        return Ok(None);
    };
    if !params.get().trim_start().starts_with('{') {
        // Array params: legal JSON-RPC, never MCP; nothing to edit.
        return Ok(Some(params));
    }
    let object = RawObject::read(&params)?;
    let needs_edit = object.meta().is_some_and(|meta| {
        RawObject::read(meta).is_ok_and(|m| {
            m.0.iter()
                .any(|(k, _)| MODERN_KEYS.contains(&k.as_str()) || k == PROGRESS_TOKEN)
        })
    });
    if !needs_edit {
        return Ok(Some(params));
    }
    Ok(Some(rewrite(&object, None, object.capacity_hint())))
}

/// Writes `object` with its `_meta` edited (stamped with `modern` when given).
fn rewrite(
    object: &RawObject<'_>,
    modern: Option<ModernMeta<'_>>,
    capacity: usize,
) -> Box<RawValue> {
    let mut out = ObjectWriter::with_capacity(capacity);
    let mut meta_written = false;
    for (key, value) in &object.0 {
        if key != "_meta" {
            out.entry(key, value.get());
            continue;
        }
        // With duplicate `_meta` keys the last one counts (as for every JSON parser); it is written once.
        if !meta_written {
            meta_written = true;
            if let Some(meta) = edited_meta(object.meta(), modern) {
                out.entry(key, &meta);
            }
        }
    }
    if !meta_written {
        if let Some(meta) = edited_meta(None, modern) {
            out.entry("_meta", &meta);
        }
    }
    out.finish()
}

/// The edited `_meta` object, or `None` when it would be empty on a legacy backend. A `_meta` that is not
/// an object is kept as it is for a legacy backend and replaced for a modern one.
fn edited_meta(meta: Option<&RawValue>, modern: Option<ModernMeta<'_>>) -> Option<String> {
    let kept = match meta.map(RawObject::read) {
        Some(Ok(object)) => object,
        Some(Err(_)) if modern.is_none() => return meta.map(|m| m.get().to_owned()),
        _ => RawObject::default(),
    };
    let mut out = ObjectWriter::with_capacity(meta.map_or(0, |m| m.get().len()) + 256);
    for (key, value) in &kept.0 {
        if !MODERN_KEYS.contains(&key.as_str()) && key != PROGRESS_TOKEN {
            out.entry(key, value.get());
        }
    }
    if let Some(modern) = modern {
        for (key, value) in modern.entries() {
            out.entry(key, value.get());
        }
    }
    (!out.is_empty() || modern.is_some()).then(|| out.finish().get().to_owned())
}

/// A JSON object read one level deep: keys in order (duplicates kept), values raw.
#[derive(Debug, Default)]
struct RawObject<'a>(Vec<(String, &'a RawValue)>);

impl<'a> RawObject<'a> {
    fn read(raw: &'a RawValue) -> Result<RawObject<'a>, ParamsError> {
        serde_json::from_str(raw.get()).map_err(|e| ParamsError::Invalid(e.to_string()))
    }

    /// The last `_meta` value.
    fn meta(&self) -> Option<&'a RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == "_meta")
            .map(|(_, v)| *v)
    }

    fn capacity_hint(&self) -> usize {
        self.0
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum()
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
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    entries.push(entry);
                }
                Ok(RawObject(entries))
            }
        }
        d.deserialize_map(V)
    }
}

/// Writes a JSON object from keys and raw values.
struct ObjectWriter {
    out: String,
}

impl ObjectWriter {
    fn with_capacity(n: usize) -> ObjectWriter {
        let mut out = String::with_capacity(n + 2);
        out.push('{');
        ObjectWriter { out }
    }

    fn is_empty(&self) -> bool {
        self.out.len() == 1
    }

    fn entry(&mut self, key: &str, raw_value: &str) {
        if !self.is_empty() {
            self.out.push(',');
        }
        // Writing a string into a String cannot fail.
        self.out
            .push_str(&serde_json::to_string(key).unwrap_or_else(|_| String::from("\"\"")));
        self.out.push(':');
        self.out.push_str(raw_value);
    }

    fn finish(mut self) -> Box<RawValue> {
        self.out.push('}');
        // Keys are encoded by serde_json and values were valid raw JSON: the object is valid.
        RawValue::from_string(self.out).unwrap_or_else(|_| empty_object())
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is valid JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn modern(params: Option<&str>) -> String {
        let v = raw(r#""2026-07-28""#);
        let caps = raw(r#"{"sampling":{}}"#);
        let info = raw(r#"{"name":"mcpgw","version":"1"}"#);
        let meta = ModernMeta {
            protocol_version: &v,
            client_capabilities: &caps,
            client_info: &info,
        };
        let p = params.map(raw);
        for_modern(p.as_deref(), meta).unwrap().get().to_owned()
    }

    fn legacy(params: Option<&str>) -> Option<String> {
        for_legacy(params.map(raw))
            .unwrap()
            .map(|r| r.get().to_owned())
    }

    const STAMP: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"mcpgw","version":"1"}"#;

    #[test]
    fn modern_params_get_the_three_keys() {
        assert_eq!(modern(None), format!("{{\"_meta\":{{{STAMP}}}}}"));
        assert_eq!(
            modern(Some(r#"{"name":"t"}"#)),
            format!("{{\"name\":\"t\",\"_meta\":{{{STAMP}}}}}")
        );
    }

    #[test]
    fn modern_meta_is_replaced_in_place_keeping_other_keys() {
        let got = modern(Some(
            r#"{"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2025-01-01","x.y/z":[1, 2]},"name":"t"}"#,
        ));
        assert_eq!(
            got,
            format!("{{\"_meta\":{{\"x.y/z\":[1, 2],{STAMP}}},\"name\":\"t\"}}")
        );
    }

    #[test]
    fn argument_values_survive_byte_exact() {
        let args = r#"{"big":123456789012345678901234567890,"f":1.50,"e":1E+2,"s":"\u00e9\n","n":{ "deep" : [ 1 ,2 ] }}"#;
        let text = format!(r#"{{"name":"t","arguments":{args}}}"#);
        let got = modern(Some(&text));
        assert!(got.contains(args), "{got}");
        let with_meta =
            format!(r#"{{"name":"t","arguments":{args},"_meta":{{"progressToken":"p","k":1}}}}"#);
        let got = legacy(Some(&with_meta)).unwrap();
        assert_eq!(
            got,
            format!(r#"{{"name":"t","arguments":{args},"_meta":{{"k":1}}}}"#)
        );
    }

    #[test]
    fn legacy_removes_modern_keys_and_progress_token() {
        let got = legacy(Some(&format!(
            r#"{{"_meta":{{{STAMP},"progressToken":1}},"a":1}}"#
        )));
        assert_eq!(got.as_deref(), Some(r#"{"a":1}"#));
        let got = legacy(Some(&format!(
            r#"{{"a":1,"_meta":{{{STAMP},"keep":true}}}}"#
        )));
        assert_eq!(got.as_deref(), Some(r#"{"a":1,"_meta":{"keep":true}}"#));
    }

    #[test]
    fn legacy_params_without_meta_are_untouched() {
        let text = r#"{ "name" : "t", "arguments" : { "x" : 1.0 } }"#;
        assert_eq!(legacy(Some(text)).as_deref(), Some(text));
        let text = r#"{"_meta":{"other":1}}"#;
        assert_eq!(legacy(Some(text)).as_deref(), Some(text));
        assert_eq!(legacy(None), None);
        assert_eq!(legacy(Some("[1,2]")).as_deref(), Some("[1,2]"));
    }

    #[test]
    fn odd_meta_values() {
        // not an object: replaced for a modern backend, kept for a legacy one
        let got: Value = serde_json::from_str(&modern(Some(r#"{"_meta":null}"#))).unwrap();
        assert_eq!(
            got["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            legacy(Some(r#"{"_meta":"x","a":1}"#)).as_deref(),
            Some(r#"{"_meta":"x","a":1}"#)
        );
        // duplicate _meta: the last counts, written once at the first position
        let got = modern(Some(r#"{"_meta":{"a":1},"x":0,"_meta":{"b":2}}"#));
        assert_eq!(got, format!("{{\"_meta\":{{\"b\":2,{STAMP}}},\"x\":0}}"));
    }

    #[test]
    fn escaped_keys_and_errors() {
        let got: Value = serde_json::from_str(&modern(Some(r#"{"a\"b":1}"#))).unwrap();
        assert_eq!(got["a\"b"], json!(1));
        let meta = ModernMeta {
            protocol_version: &raw("\"v\""),
            client_capabilities: &raw("{}"),
            client_info: &raw("{}"),
        };
        assert_eq!(
            for_modern(Some(&raw("[1]")), meta).unwrap_err(),
            ParamsError::NotObject
        );
    }
}
