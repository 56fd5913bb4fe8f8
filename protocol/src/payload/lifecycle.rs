//! The handshake and discovery: `initialize` (legacy), `server/discover` (2026-07-28), `Implementation`,
//! and the logging levels.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClientCapabilities, Extra, Meta, ServerCapabilities};

/// Name and version of a client or server (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description (2025-11-25 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Website (2025-11-25 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons (2025-11-25 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `initialize` params (legacy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The version the client asks for (kept as a string: it may name a version nobody knows).
    pub protocol_version: String,
    /// What the client can do.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `initialize` result (legacy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server will speak.
    pub protocol_version: String,
    /// What the server can do.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// Usage hints for the model (2025-03-26 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `server/discover` result (2026-07-28). `resultType`, `ttlMs` and `cacheScope` are kept in `extra` and
/// stamped by the shaper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Versions the server supports, newest first.
    pub supported_versions: Vec<String>,
    /// What the server can do.
    pub capabilities: ServerCapabilities,
    /// Usage hints for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta` (carries `io.modelcontextprotocol/serverInfo`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know (`resultType`, `ttlMs`, `cacheScope` among them).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Syslog severities used by MCP logging, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// debug
    Debug,
    /// info
    Info,
    /// notice
    Notice,
    /// warning
    Warning,
    /// error
    Error,
    /// critical
    Critical,
    /// alert
    Alert,
    /// emergency
    Emergency,
}

/// `logging/setLevel` params (legacy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The least severe level the client wants.
    pub level: LoggingLevel,
    /// `_meta`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Keys this crate does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_params_keep_unknown_fields() {
        let text = r#"{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1","x":1},"future":true}"#;
        let p: InitializeRequestParams = serde_json::from_str(text).unwrap();
        assert_eq!(p.protocol_version, "2025-06-18");
        assert!(p.capabilities.sampling.is_some());
        let back = serde_json::to_value(&p).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn logging_levels_are_ordered() {
        assert!(LoggingLevel::Debug < LoggingLevel::Emergency);
        let l: LoggingLevel = serde_json::from_str("\"warning\"").unwrap();
        assert_eq!(l, LoggingLevel::Warning);
        assert!(serde_json::from_str::<LoggingLevel>("\"WARNING\"").is_err());
    }
}
