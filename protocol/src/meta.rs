//! `_meta`: the reserved keys, and the per-request metadata a 2026-07-28 request carries (protocol version,
//! client capabilities, client info, log level, progress token), read without copying the rest of `params`.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{Error, ErrorCode};
use crate::payload::{Implementation, LoggingLevel};

/// `_meta` key: the request's protocol version (2026-07-28, required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities (2026-07-28, required).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's `Implementation` (2026-07-28, recommended).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level the client wants for this request (2026-07-28).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's `Implementation` (2026-07-28).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key: the id of the `subscriptions/listen` request it belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: the progress token (all generations).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// Result `_meta` key where mcpgw explains a failure it turned into a tool error (code, backend, kind).
pub const GATEWAY_ERROR: &str = "io.mcpgw/error";

/// The parts of `params` that validation looks at, borrowed from the body.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ParamsView<'a> {
    #[serde(rename = "_meta", borrow, default)]
    pub meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub uri: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct MetaView<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    client_info: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", borrow, default)]
    log_level: Option<&'a RawValue>,
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

impl<'a> ParamsView<'a> {
    /// Reads the view from raw params. Array params (legal JSON-RPC, never MCP) read as empty.
    pub fn read(params: Option<&'a RawValue>) -> Result<ParamsView<'a>, Error> {
        match params {
            Some(p) if p.get().starts_with('{') => serde_json::from_str(p.get())
                .map_err(|e| Error::new(ErrorCode::InvalidParams, format!("invalid params: {e}"))),
            _ => Ok(ParamsView::default()),
        }
    }
}

/// A raw field as a string, when present and a string.
pub(crate) fn string_of(field: Option<&RawValue>) -> Option<String> {
    field.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
}

/// The per-request metadata of a request (all optional here; validation decides what is required when).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, as sent.
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities`, an object.
    pub client_capabilities: Option<Value>,
    /// `io.modelcontextprotocol/clientInfo`.
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`.
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`: a string or an integer, kept as JSON.
    pub progress_token: Option<Value>,
}

impl RequestMeta {
    /// Reads `_meta`. A key of the wrong type is `InvalidParams` naming the key.
    pub(crate) fn read(meta: Option<&RawValue>) -> Result<RequestMeta, Error> {
        let Some(meta) = meta else {
            return Ok(RequestMeta::default());
        };
        if !meta.get().starts_with('{') {
            return Err(invalid("_meta must be an object"));
        }
        let view: MetaView<'_> = serde_json::from_str(meta.get())
            .map_err(|e| Error::new(ErrorCode::InvalidParams, format!("invalid _meta: {e}")))?;
        let protocol_version = view
            .protocol_version
            .map(|raw| {
                serde_json::from_str::<String>(raw.get())
                    .map_err(|_| invalid(format!("_meta {PROTOCOL_VERSION} must be a string")))
            })
            .transpose()?;
        let client_capabilities = view
            .client_capabilities
            .map(|raw| match serde_json::from_str::<Value>(raw.get()) {
                Ok(v @ Value::Object(_)) => Ok(v),
                _ => Err(invalid(format!(
                    "_meta {CLIENT_CAPABILITIES} must be an object"
                ))),
            })
            .transpose()?;
        let client_info = view
            .client_info
            .map(|raw| {
                serde_json::from_str::<Implementation>(raw.get()).map_err(|_| {
                    invalid(format!(
                        "_meta {CLIENT_INFO} must be an object with string name and version"
                    ))
                })
            })
            .transpose()?;
        let log_level = view
            .log_level
            .map(|raw| {
                serde_json::from_str::<LoggingLevel>(raw.get())
                    .map_err(|_| invalid(format!("_meta {LOG_LEVEL} is not a logging level")))
            })
            .transpose()?;
        let progress_token = view
            .progress_token
            .map(|raw| match serde_json::from_str::<Value>(raw.get()) {
                Ok(v @ Value::String(_)) => Ok(v),
                Ok(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Value::Number(n)),
                _ => Err(invalid(
                    "_meta progressToken must be a string or an integer",
                )),
            })
            .transpose()?;
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
        })
    }
}

fn invalid(msg: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorCode::InvalidParams, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<RequestMeta, Error> {
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        RequestMeta::read(Some(&raw))
    }

    #[test]
    fn reads_the_standard_keys() {
        let m = read(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"debug","progressToken":7,"other":1}"#).unwrap();
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(
            m.client_capabilities,
            Some(serde_json::json!({"sampling": {}}))
        );
        assert_eq!(m.client_info.unwrap().name, "c");
        assert_eq!(m.log_level, Some(LoggingLevel::Debug));
        assert_eq!(m.progress_token, Some(serde_json::json!(7)));
    }

    #[test]
    fn wrong_types_are_invalid_params() {
        for text in [
            r#"[]"#,
            r#"{"io.modelcontextprotocol/protocolVersion":5}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities":[]}"#,
            r#"{"io.modelcontextprotocol/clientInfo":{"name":1}}"#,
            r#"{"io.modelcontextprotocol/logLevel":"loud"}"#,
            r#"{"progressToken":1.5}"#,
        ] {
            assert_eq!(
                read(text).unwrap_err().code(),
                ErrorCode::InvalidParams,
                "{text}"
            );
        }
    }
}
