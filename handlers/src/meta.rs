//! `params._meta` as each backend era wants it, edited one level deep so that nothing else is reformatted.
//!
//! To a modern (2026-07-28) backend every request carries `_meta` with the protocol version, the client
//! capabilities and the client info; to a legacy backend those keys are removed. Every other `_meta` key is
//! kept (`progressToken` was already rewritten to a backend-unique token, or removed, by the handle). Only the top level of
//! `params` and of `_meta` is parsed ([`RawObject`], ordered key → raw value pairs): argument values are
//! copied byte for byte (big integers, number spellings, string escapes all survive).

use protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION};
use protocol::raw::RawObject;
use serde_json::value::RawValue;

/// The `_meta` keys a legacy backend must not get: the modern ones.
const REMOVED_FOR_LEGACY: [&str; 3] = [PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO];

/// Why params cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParamsError {
    /// A modern backend needs `_meta`, which only an object can carry.
    #[error("params must be a json object to carry _meta")]
    NotObject,
    /// What was written is not JSON (a raw value that was not): never expected, refused rather than sent.
    #[error("the params written for the backend are not json")]
    NotJson,
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

/// Params for a modern backend: `_meta` gets the three modern keys (replacing any the client sent), loses
/// and keeps everything else; absent params become `{"_meta":{...}}`. A `_meta` that is
/// not an object is replaced. (`write_modern` writes the same text into a request body.)
pub(crate) fn for_modern(
    params: Option<&RawValue>,
    stamp: ModernMeta<'_>,
) -> Result<Box<RawValue>, ParamsError> {
    let mut out = Vec::with_capacity(params.map_or(0, |p| p.get().len()) + 256);
    write_modern(&mut out, params, stamp)?;
    // Every part written is JSON already (raw values as read, keys escaped); the check costs one scan on
    // the paths that need an owned value (stdio, the legacy SSE transport), never on a Streamable HTTP call.
    String::from_utf8(out)
        .ok()
        .and_then(|text| RawValue::from_string(text).ok())
        .ok_or(ParamsError::NotJson)
}

/// Writes params for a modern backend (as [`for_modern`] returns them) into `out`, in one pass: the top
/// level of `params` and of `_meta` read once, nothing serialized twice. `_meta` stays where it was (a
/// repeated `_meta` is written once, at the end, edited), its other keys in their order, the three modern
/// keys last.
pub(crate) fn write_modern(
    out: &mut Vec<u8>,
    params: Option<&RawValue>,
    stamp: ModernMeta<'_>,
) -> Result<(), ParamsError> {
    let object = RawObject::parse_or_empty(params).ok_or(ParamsError::NotObject)?;
    let meta = object
        .get("_meta")
        .and_then(RawObject::parse)
        .unwrap_or_default();
    let copies = object.iter().filter(|(k, _)| *k == "_meta").count();
    let write_meta = |out: &mut Vec<u8>| {
        out.extend_from_slice(b"\"_meta\":{");
        for (key, value) in meta.iter() {
            if !REMOVED_FOR_LEGACY.contains(&key) {
                push_entry(out, key, value);
                out.push(b',');
            }
        }
        push_entry(out, PROTOCOL_VERSION, stamp.protocol_version);
        out.push(b',');
        push_entry(out, CLIENT_CAPABILITIES, stamp.client_capabilities);
        out.push(b',');
        push_entry(out, CLIENT_INFO, stamp.client_info);
        out.push(b'}');
    };
    out.push(b'{');
    let mut first = true;
    for (key, value) in object.iter() {
        let in_place = key == "_meta";
        if in_place && copies > 1 {
            continue;
        }
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        if in_place {
            write_meta(out);
        } else {
            push_entry(out, key, value);
        }
    }
    if copies != 1 {
        if !first {
            out.push(b',');
        }
        write_meta(out);
    }
    out.push(b'}');
    Ok(())
}

/// `"key":value`, the key escaped as JSON needs (without serde_json when it needs nothing).
fn push_entry(out: &mut Vec<u8>, key: &str, value: &RawValue) {
    if key
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    } else {
        // Serializing a &str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, key);
    }
    out.push(b':');
    out.extend_from_slice(value.get().as_bytes());
}

/// Params for a legacy backend: `_meta` loses the modern keys (and disappears when
/// nothing is left in it); everything else is kept. Params that need no change (no `_meta`, a `_meta`
/// without those keys or that is not an object, array params) are returned as they are.
pub(crate) fn for_legacy(params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
    let params = params?;
    let edited = {
        let Some(mut object) = RawObject::parse(&params) else {
            return Some(params);
        };
        let Some(mut meta) = object.get("_meta").and_then(RawObject::parse) else {
            return Some(params);
        };
        let mut removed = false;
        for key in REMOVED_FOR_LEGACY {
            removed |= meta.remove(key);
        }
        if !removed {
            return Some(params);
        }
        let meta = (!meta.is_empty()).then(|| meta.to_raw());
        set_meta(&mut object, meta);
        object.to_raw()
    };
    Some(edited)
}

/// Sets (in place) or removes `_meta`. Validated params never repeat a key; should they, every copy goes
/// and the edited one is appended, so no unedited copy reaches the backend.
fn set_meta(object: &mut RawObject<'_>, meta: Option<Box<RawValue>>) {
    let copies = object.iter().filter(|(k, _)| *k == "_meta").count();
    if copies > 1 || meta.is_none() {
        object.remove("_meta");
    }
    if let Some(meta) = meta {
        object.set("_meta", meta);
    }
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
        for_legacy(params.map(raw)).map(|r| r.get().to_owned())
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
            format!(
                "{{\"_meta\":{{\"progressToken\":7,\"x.y/z\":[1, 2],{STAMP}}},\"name\":\"t\"}}"
            )
        );
    }

    #[test]
    fn argument_values_survive_byte_exact() {
        let args = r#"{"big":123456789012345678901234567890,"f":1.50,"e":1E+2,"s":"\u00e9\n","n":{ "deep" : [ 1 ,2 ] }}"#;
        let text = format!(r#"{{"name":"t","arguments":{args}}}"#);
        let got = modern(Some(&text));
        assert!(got.contains(args), "{got}");
        let with_meta = format!(
            r#"{{"name":"t","arguments":{args},"_meta":{{"progressToken":"p","k":1,{STAMP}}}}}"#
        );
        let got = legacy(Some(&with_meta)).unwrap();
        assert_eq!(
            got,
            format!(r#"{{"name":"t","arguments":{args},"_meta":{{"progressToken":"p","k":1}}}}"#)
        );
    }

    #[test]
    fn legacy_removes_modern_keys() {
        let got = legacy(Some(&format!(r#"{{"_meta":{{{STAMP}}},"a":1}}"#)));
        assert_eq!(got.as_deref(), Some(r#"{"a":1}"#));
        let got = legacy(Some(&format!(
            r#"{{"_meta":{{{STAMP},"progressToken":"mcpgw-1"}},"a":1}}"#
        )));
        assert_eq!(
            got.as_deref(),
            Some(r#"{"_meta":{"progressToken":"mcpgw-1"},"a":1}"#)
        );
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
        // duplicate _meta: one edited copy is left
        let got = modern(Some(r#"{"_meta":{"a":1},"x":0,"_meta":{"b":2}}"#));
        assert_eq!(got, format!("{{\"x\":0,\"_meta\":{{\"a\":1,{STAMP}}}}}"));
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
