//! The 2026-07-28 request-metadata headers (SEP-2243): the value encoding (`=?base64?…?=`), the
//! `x-mcp-header` annotations of a tool's `inputSchema`, and how a `Mcp-Param-*` header is compared with
//! the argument it mirrors. Used by validation on the client side and by the gateway on the backend side.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

/// Header names (compared case-insensitively).
pub mod names {
    /// The protocol version header.
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    /// The method header (2026-07-28).
    pub const METHOD: &str = "mcp-method";
    /// The name header (2026-07-28): tool or prompt name, or resource URI.
    pub const NAME: &str = "mcp-name";
    /// The prefix of parameter headers (2026-07-28).
    pub const PARAM_PREFIX: &str = "mcp-param-";
    /// The legacy session header.
    pub const SESSION_ID: &str = "mcp-session-id";
    /// Content type.
    pub const CONTENT_TYPE: &str = "content-type";
    /// Accept.
    pub const ACCEPT: &str = "accept";
}

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

// Standard alphabet with canonical padding, as the 2026-07-28 conformance suite requires: a value whose padding
// is missing is not valid Base64 and is refused.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Why a header value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// A control character or a byte outside visible ASCII in a plain value.
    #[error("header value has characters a plain header value cannot carry")]
    InvalidCharacters,
    /// The `=?base64?…?=` payload is not valid Base64.
    #[error("header value is not valid base64")]
    BadBase64,
    /// The decoded bytes are not UTF-8.
    #[error("decoded header value is not valid utf-8")]
    BadUtf8,
}

/// Encodes a value for a mirrored header: as it is when it is a plain header value, otherwise (non-ASCII,
/// control characters, leading or trailing whitespace, or a value that looks like the sentinel) as
/// `=?base64?{Base64(UTF-8)}?=`.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_plain(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("{PREFIX}{}{SUFFIX}", BASE64.encode(value)))
    }
}

/// A value that can go in a header as it is.
fn is_plain(value: &str) -> bool {
    let visible = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
    visible && !padded && !sentinel
}

/// Decodes a received header value. `=?base64?…?=` (exact lower-case markers) is decoded; anything else is
/// taken literally and must be visible ASCII, spaces and tabs.
pub fn decode_value(raw: &[u8]) -> Result<Cow<'_, str>, HeaderValueError> {
    if raw.len() >= PREFIX.len() + SUFFIX.len()
        && raw.starts_with(PREFIX.as_bytes())
        && raw.ends_with(SUFFIX.as_bytes())
    {
        let inner = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
        let bytes = BASE64
            .decode(inner)
            .map_err(|_| HeaderValueError::BadBase64)?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| HeaderValueError::BadUtf8);
    }
    if raw
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
    {
        // All visible ASCII: valid UTF-8 by construction.
        std::str::from_utf8(raw)
            .map(Cow::Borrowed)
            .map_err(|_| HeaderValueError::InvalidCharacters)
    } else {
        Err(HeaderValueError::InvalidCharacters)
    }
}

/// The JSON type of an annotated argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `"type": "string"`.
    String,
    /// `"type": "integer"` (within ±(2^53−1)).
    Integer,
    /// `"type": "boolean"`.
    Boolean,
}

/// One `x-mcp-header` annotation of a tool: header `Mcp-Param-{header}` mirrors the argument at `path`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The `{Name}` part of `Mcp-Param-{Name}`, as annotated.
    pub header: String,
    /// The property path inside `arguments` (one element for a top-level argument).
    pub path: Vec<String>,
    /// The argument's type.
    pub kind: ParamKind,
}

/// Why a tool's `x-mcp-header` annotations are invalid (such a tool is left out of `tools/list`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// The annotation is not a non-empty RFC 9110 token.
    #[error("x-mcp-header {0:?} is not a valid header name token")]
    BadName(String),
    /// Two annotations share a name, case-insensitively.
    #[error("x-mcp-header {0:?} is used twice")]
    Duplicate(String),
    /// The annotated property is not a string, integer or boolean.
    #[error("x-mcp-header {0:?} is on a property that is not a string, integer or boolean")]
    BadType(String),
    /// The annotation is not reachable through `properties` alone.
    #[error("x-mcp-header {0:?} is not reachable through properties alone")]
    Unreachable(String),
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Reads every `x-mcp-header` annotation of an `inputSchema`, enforcing the spec's constraints.
pub fn param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, AnnotationError> {
    let mut out = Vec::new();
    walk(input_schema, Some(&mut Vec::new()), &mut out)?;
    let mut seen: Vec<String> = Vec::with_capacity(out.len());
    for p in &out {
        let lower = p.header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(AnnotationError::Duplicate(p.header.clone()));
        }
        seen.push(lower);
    }
    Ok(out)
}

/// `path` is `Some` while the node is reachable from the root through `properties` keys only.
fn walk(
    node: &Value,
    path: Option<&mut Vec<String>>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), AnnotationError> {
    let Value::Object(obj) = node else {
        if let Value::Array(items) = node {
            for item in items {
                walk(item, None, out)?;
            }
        }
        return Ok(());
    };
    if let Some(annotation) = obj.get("x-mcp-header") {
        let name = annotation.as_str().unwrap_or_default().to_owned();
        let Some(path) = path.as_deref() else {
            return Err(AnnotationError::Unreachable(name));
        };
        if path.is_empty() {
            return Err(AnnotationError::Unreachable(name));
        }
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(AnnotationError::BadName(name));
        }
        let kind = match obj.get("type").and_then(Value::as_str) {
            Some("string") => ParamKind::String,
            Some("integer") => ParamKind::Integer,
            Some("boolean") => ParamKind::Boolean,
            _ => return Err(AnnotationError::BadType(name)),
        };
        out.push(ParamHeader {
            header: name,
            path: path.to_vec(),
            kind,
        });
    }
    let mut path = path;
    for (key, child) in obj {
        if key == "properties" {
            if let Value::Object(props) = child {
                for (prop, schema) in props {
                    match path.as_deref_mut() {
                        Some(p) => {
                            p.push(prop.clone());
                            walk(schema, Some(p), out)?;
                            p.pop();
                        }
                        None => walk(schema, None, out)?,
                    }
                }
            }
        } else if key != "x-mcp-header" {
            walk(child, None, out)?;
        }
    }
    Ok(())
}

/// The argument an annotation points at, if present and not `null`.
pub fn argument_at<'a>(
    arguments: Option<&'a Map<String, Value>>,
    path: &[String],
) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = arguments?.get(first)?;
    for key in rest {
        v = v.as_object()?.get(key)?;
    }
    (!v.is_null()).then_some(v)
}

/// The header value a client sends for an argument (already encoded), or `None` when the value's JSON type
/// does not fit the annotation (a string for an integer, say), or is an integer beyond ±(2^53−1).
pub fn value_for(kind: ParamKind, value: &Value) -> Option<String> {
    match (kind, value) {
        (ParamKind::String, Value::String(s)) => Some(encode_value(s).into_owned()),
        (ParamKind::Boolean, Value::Bool(b)) => Some(b.to_string()),
        (ParamKind::Integer, Value::Number(n)) => integer_of(n).map(|i| i.to_string()),
        _ => None,
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn integer_of(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return (i.unsigned_abs() <= MAX_SAFE as u64).then_some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE).then_some(f as i64)
}

/// Whether a decoded header value mirrors the body value. Integers compare numerically (`42.0` equals `42`).
pub fn header_matches(kind: ParamKind, decoded: &str, body: &Value) -> bool {
    match (kind, body) {
        (ParamKind::String, Value::String(s)) => s == decoded,
        (ParamKind::Boolean, Value::Bool(b)) => decoded == if *b { "true" } else { "false" },
        (ParamKind::Integer, Value::Number(n)) => {
            let Some(body) = integer_of(n) else {
                return false;
            };
            match decoded.parse::<i64>() {
                Ok(h) => h == body,
                Err(_) => decoded
                    .parse::<f64>()
                    .is_ok_and(|f| f.is_finite() && f.fract() == 0.0 && f == body as f64),
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encoding_table() {
        // (value, encoded)
        let table = [
            ("get_weather", "get_weather"),
            ("New York", "New York"),
            ("file:///tmp/a b.txt", "file:///tmp/a b.txt"),
            (" lead", "=?base64?IGxlYWQ=?="),
            ("trail ", "=?base64?dHJhaWwg?="),
            ("été", "=?base64?w6l0w6k=?="),
            ("a\nb", "=?base64?YQpi?="),
            ("=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="),
        ];
        for (value, encoded) in table {
            assert_eq!(encode_value(value), encoded, "{value:?}");
            assert_eq!(
                decode_value(encoded.as_bytes()).unwrap(),
                value,
                "{encoded:?}"
            );
        }
    }

    #[test]
    fn decoding_table() {
        // (raw header bytes, decoded or error)
        let table: &[(&[u8], Result<&str, HeaderValueError>)] = &[
            (b"plain", Ok("plain")),
            (b"=?BASE64?w6l0w6k=?=", Ok("=?BASE64?w6l0w6k=?=")), // upper-case marker: literal
            (b"=?base64?w6l0w6k=", Ok("=?base64?w6l0w6k=")),     // no suffix: literal
            (b"base64?w6l0w6k=?=", Ok("base64?w6l0w6k=?=")),     // no prefix: literal
            (b"=?base64?w6l0w6k?=", Err(HeaderValueError::BadBase64)), // padding omitted: refused
            (b"=?base64?!!!?=", Err(HeaderValueError::BadBase64)),
            (b"=?base64?/w==?=", Err(HeaderValueError::BadUtf8)),
            (b"caf\xc3\xa9", Err(HeaderValueError::InvalidCharacters)),
            (b"a\x01b", Err(HeaderValueError::InvalidCharacters)),
        ];
        for (raw, want) in table {
            let got = decode_value(raw);
            match want {
                Ok(s) => assert_eq!(got.as_deref(), Ok(*s), "{raw:?}"),
                Err(e) => assert_eq!(got.unwrap_err(), *e, "{raw:?}"),
            }
        }
    }

    #[test]
    fn annotations_are_read_and_checked() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
                "plain": {"type": "string"}
            }
        });
        let got = param_headers(&schema).unwrap();
        assert_eq!(got.len(), 3);
        assert!(got.contains(&ParamHeader {
            header: "Dry-Run".into(),
            path: vec!["opts".into(), "dry".into()],
            kind: ParamKind::Boolean
        }));

        // (schema, error)
        let bad = [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "BadName",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
                "BadName",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "BadType",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
                "Duplicate",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
                "Unreachable",
            ),
            (
                json!({"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "O"}}}]}),
                "Unreachable",
            ),
            (
                json!({"type": "string", "x-mcp-header": "Root"}),
                "Unreachable",
            ),
        ];
        for (schema, want) in bad {
            let err = param_headers(&schema).unwrap_err();
            assert!(format!("{err:?}").starts_with(want), "{schema}: {err:?}");
        }
    }

    #[test]
    fn header_comparison_table() {
        use ParamKind::*;
        // (kind, decoded header, body value, matches)
        let table = [
            (String, "us-west", json!("us-west"), true),
            (String, "US-WEST", json!("us-west"), false),
            (Integer, "42", json!(42), true),
            (Integer, "42", json!(42.0), true),
            (Integer, "42.0", json!(42), true),
            (Integer, "43", json!(42), false),
            (
                Integer,
                "9007199254740993",
                json!(9007199254740993u64),
                false,
            ),
            (Boolean, "true", json!(true), true),
            (Boolean, "True", json!(true), false),
            (Boolean, "false", json!(true), false),
            (String, "42", json!(42), false),
        ];
        for (kind, header, body, want) in table {
            assert_eq!(
                header_matches(kind, header, &body),
                want,
                "{kind:?} {header} {body}"
            );
        }
        assert_eq!(value_for(Integer, &json!(7)), Some("7".into()));
        assert_eq!(
            value_for(String, &json!("é")),
            Some("=?base64?w6k=?=".into())
        );
        assert_eq!(value_for(Integer, &json!("7")), None);
    }
}
