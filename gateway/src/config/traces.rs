//! `[traces]`: OpenTelemetry traces exported over OTLP/HTTP (protobuf). Absent: no tracer is built, no span
//! is made and nothing is added to what backends receive.
//!
//! This module only reads and checks the section; `telemetry::traces` builds the exporter from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// The OTLP/HTTP path of traces, appended to an `endpoint` given as the collector's base URL.
pub const TRACES_PATH: &str = "/v1/traces";

/// `[traces]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// The collector: its OTLP/HTTP base URL (`http://127.0.0.1:4318`, `/v1/traces` is appended) or the
    /// full traces URL (ending in `/v1/traces`). `http://` or `https://`.
    #[serde(serialize_with = "super::redact::required_url")]
    pub endpoint: String,
    /// The share of traces started here that are recorded, 0 to 1 (default 1). Parent-based: a request
    /// whose client sent a trace context follows the client's sampled flag.
    #[serde(default = "one")]
    pub sample_ratio: f64,
    /// The `service.name` resource attribute (default "mcpgw").
    #[serde(default = "service_name")]
    pub service_name: String,
    /// One export's time limit, retries included, in milliseconds (default 10,000).
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Spans waiting for export at most; a span ended when the queue is full is dropped (default 2,048).
    #[serde(default = "max_queue")]
    pub max_queue: usize,
    /// HTTP headers sent to the collector with every export (an API key, a tenant); their values are never
    /// shown (`/admin/config`).
    #[serde(default, serialize_with = "super::redact::env_values")]
    pub headers: BTreeMap<String, String>,
}

fn one() -> f64 {
    1.0
}
fn service_name() -> String {
    "mcpgw".into()
}
fn timeout_ms() -> u64 {
    10_000
}
fn max_queue() -> usize {
    2_048
}

impl TracesConfig {
    /// The URL spans are POSTed to: `endpoint` as it is when it ends in `/v1/traces`, else with it appended.
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with(TRACES_PATH) {
            base.to_owned()
        } else {
            format!("{base}{TRACES_PATH}")
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let url = reqwest::Url::parse(&self.endpoint).map_err(|e| {
            invalid(
                "traces.endpoint",
                format!("{:?} is not a URL: {e}", self.endpoint),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(invalid(
                "traces.endpoint",
                "must be an http:// or https:// URL with a host (the collector's OTLP/HTTP endpoint)",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("traces.endpoint", "must have no query or fragment"));
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(invalid(
                "traces.sample_ratio",
                "must be between 0 and 1 (the share of new traces recorded)",
            ));
        }
        if self.service_name.trim().is_empty() {
            return Err(invalid("traces.service_name", "must not be empty"));
        }
        if self.timeout_ms == 0 || self.timeout_ms > 600_000 {
            return Err(invalid(
                "traces.timeout_ms",
                "must be above 0 and at most 600000",
            ));
        }
        if self.max_queue == 0 || self.max_queue > 1_000_000 {
            return Err(invalid(
                "traces.max_queue",
                "must be at least 1 and at most 1000000",
            ));
        }
        for (name, value) in &self.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(invalid(
                    format!("traces.headers.{name}"),
                    "is not an HTTP header name",
                ));
            }
            if reqwest::header::HeaderValue::from_str(value).is_err() {
                return Err(invalid(
                    format!("traces.headers.{name}"),
                    "is not a valid HTTP header value",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(section: &str) -> Result<TracesConfig, String> {
        #[derive(Deserialize)]
        struct Doc {
            traces: TracesConfig,
        }
        let doc: Doc = toml::from_str(section).map_err(|e| e.to_string())?;
        doc.traces.validate().map_err(|e| e.to_string())?;
        Ok(doc.traces)
    }

    #[test]
    fn defaults_and_the_traces_url() {
        let t = parsed("[traces]\nendpoint = \"http://127.0.0.1:4318\"").unwrap();
        assert_eq!(t.sample_ratio, 1.0);
        assert_eq!(t.service_name, "mcpgw");
        assert_eq!(t.timeout_ms, 10_000);
        assert_eq!(t.max_queue, 2_048);
        assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
        for (endpoint, url) in [
            ("http://c:4318/", "http://c:4318/v1/traces"),
            ("https://c/otlp", "https://c/otlp/v1/traces"),
            ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
        ] {
            let t = parsed(&format!("[traces]\nendpoint = \"{endpoint}\"")).unwrap();
            assert_eq!(t.traces_url(), url, "{endpoint}");
        }
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            ("endpoint = \"127.0.0.1:4318\"", "traces.endpoint"),
            ("endpoint = \"ftp://c\"", "traces.endpoint"),
            ("endpoint = \"http://c/?a=1\"", "traces.endpoint"),
            (
                "endpoint = \"http://c\"\nsample_ratio = 1.5",
                "traces.sample_ratio",
            ),
            (
                "endpoint = \"http://c\"\nsample_ratio = -0.1",
                "traces.sample_ratio",
            ),
            (
                "endpoint = \"http://c\"\nservice_name = \" \"",
                "traces.service_name",
            ),
            (
                "endpoint = \"http://c\"\ntimeout_ms = 0",
                "traces.timeout_ms",
            ),
            ("endpoint = \"http://c\"\nmax_queue = 0", "traces.max_queue"),
            (
                "endpoint = \"http://c\"\nheaders = { \"bad name\" = \"x\" }",
                "traces.headers.bad name",
            ),
            (
                "endpoint = \"http://c\"\nheaders = { key = \"a\\nb\" }",
                "traces.headers.key",
            ),
            ("endpoint = \"http://c\"\nratio = 1", "unknown field"),
            ("sample_ratio = 1", "missing field `endpoint`"),
        ];
        for (body, named) in cases {
            let err = parsed(&format!("[traces]\n{body}")).unwrap_err();
            assert!(err.contains(named), "{body}: {err}");
        }
        assert!(
            parsed("[traces]\nendpoint = \"http://c\"\nsample_ratio = 0\nheaders = { authorization = \"Bearer k\" }")
                .is_ok()
        );
    }
}
