//! Configuration: the TOML file (`mcpgw serve --config mcpgw.toml`), the `mcpServers` JSON files MCP hosts use
//! (`--mcp-json FILE`), and the embedded demo config used when neither is given. Everything is validated at
//! start with errors that name the field. Every config struct is `Serialize` too, for `GET /admin/config`:
//! a field that may hold a secret is written through `redact` (`the_shown_config_holds_no_secret`).

mod admin;
mod auth;
mod authorization;
mod backend;
mod backend_auth;
pub mod catalog;
pub mod circuit;
mod cluster;
mod cors;
mod demo;
mod egress;
pub mod endpoint;
mod era;
mod forwarded;
mod http_url;
mod interceptor;
mod listen;
mod mcp_json;
mod middleware;
mod openapi;
mod policy;
pub mod qualified;
pub mod rate_limit;
pub mod redact;
mod redaction;
mod secret_files;
mod server;
mod shaping;
mod suggest;
mod telemetry;
mod tls;
pub mod traces;
mod url_elicitation;

pub use listen::parse_listen;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use admin::AdminConfig;
pub use auth::{ApiKeyEntry, AuthConfig, JwtConfig, OAuthConfig, ScopeRule, parse_digest, parse_proxy_block};
#[cfg(any(test, feature = "internals"))]
pub use auth::{ALGORITHMS, OneOrMany};
pub use authorization::{AuthorizationConfig, LinkProof};
pub use backend::{BackendEntry, BackendTransport};
#[cfg(any(test, feature = "internals"))]
pub use backend::{MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES};
pub use backend_auth::{BackendAuth};
#[cfg(any(test, feature = "internals"))]
pub use backend_auth::Grant;
pub use catalog::CatalogConfig;
pub use cluster::{ClusterConfig, SealCipher};
pub use cors::normalize_origin;
pub use demo::demo_config;
pub use egress::{EgressConfig};
#[cfg(any(test, feature = "internals"))]
pub use egress::valid_host_pattern;
pub use endpoint::{AccessEntry, EndpointEntry};
pub use era::BackendEra;
pub use forwarded::ForwardedHeader;
pub use interceptor::{EVENTS as INTERCEPTED_EVENTS, InterceptorEntry, InterceptorMode};
pub use mcp_json::from_mcp_json;
pub(crate) use middleware::is_server_name;
use middleware::validate_middleware;
pub use middleware::{MiddlewareEntry, MiddlewareKind};
pub(crate) use policy::validate_reach;
pub use policy::{PolicyRule};
#[cfg(any(test, feature = "internals"))]
pub use policy::{ANNOTATIONS, PATTERN_KINDS};
pub use rate_limit::{LimitPer, RateLimitConfig};
pub use redaction::{PATTERN_SIZE_LIMIT, RedactionConfig, RedactionMode};
#[cfg(any(test, feature = "internals"))]
pub use redaction::PatternEntry;
pub use server::{
    DEFAULT_CACHE_MAX_BYTES, DEFAULT_H2_MAX_CONCURRENT_STREAMS, LogFormat, ServerConfig, UnknownToolCode,
};
pub use shaping::SelectionEntry;
pub use telemetry::TelemetryConfig;
pub use tls::server_files;
pub use traces::TracesConfig;
pub use url_elicitation::UrlElicitation;

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[server]`.
    #[serde(default)]
    pub server: ServerConfig,
    /// One `[[backend]]` table per backend.
    #[serde(default, rename = "backend")]
    pub backends: Vec<BackendEntry>,
    /// `[[middleware]]` tables: the request pipeline's middlewares, in the order they run.
    #[serde(default, rename = "middleware")]
    pub middlewares: Vec<MiddlewareEntry>,
    /// `[cluster]`: the key ring and Redis replicas share.
    #[serde(default)]
    pub cluster: ClusterConfig,
    /// `[auth]`: who may ask (off until configured).
    #[serde(default)]
    pub auth: AuthConfig,
    /// `[[policy]]` tables: what each principal or group may use (off until one is configured).
    #[serde(default, rename = "policy")]
    pub policies: Vec<PolicyRule>,
    /// `[[rate_limit]]` tables: token buckets on requests (none by default: no limit).
    #[serde(rename = "rate_limit", default)]
    pub rate_limits: Vec<RateLimitConfig>,
    /// `[traces]`: OpenTelemetry traces over OTLP/HTTP (off when absent).
    #[serde(default)]
    pub traces: Option<TracesConfig>,
    /// `[admin]`: the operator's listener (none by default).
    #[serde(default)]
    pub admin: AdminConfig,
    /// `[telemetry]`: the metrics' options.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// `[catalog]`: how the catalog is offered (search instead of the full list).
    #[serde(default)]
    pub catalog: CatalogConfig,
    /// `[[endpoint]]` tables: virtual servers beside `/mcp` (none by default).
    #[serde(default, rename = "endpoint")]
    pub endpoints: Vec<EndpointEntry>,
    /// `[egress]`: what the gateway may fetch on its own.
    #[serde(default)]
    pub egress: EgressConfig,
    /// `[authorization]`: each user's own authorization to backends (`grant = "authorization_code"`).
    #[serde(default)]
    pub authorization: AuthorizationConfig,
    /// `[[interceptor]]`: MCP servers asked to validate or rewrite requests and answers (SEP-2624).
    #[serde(default, rename = "interceptor", skip_serializing_if = "Vec::is_empty")]
    pub interceptors: Vec<InterceptorEntry>,
    /// `[redaction]`: secrets and patterns in backends' answers, redacted, refused or reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<RedactionConfig>,
}


/// A configuration error, naming the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (said in the message, so not a `source` as well: it would be printed twice).
        error: std::io::Error,
    },
    /// The file does not parse.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the key and line).
        message: String,
    },
    /// A value is invalid.
    #[error("invalid config: {field}: {message}")]
    Invalid {
        /// The field, e.g. `backend[1].url`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

fn valid_token(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Config {
    /// The first `[[middleware]] kind = "library"` table naming a middleware that was not `added` (the
    /// names of those a binary's builder added), said in a line: a config for another binary.
    pub fn unknown_library(&self, added: &[String]) -> Option<String> {
        let (i, name) = self.middlewares.iter().enumerate().find_map(|(i, e)| {
            let name = e.name.as_deref()?;
            (e.kind == MiddlewareKind::Library && !added.iter().any(|a| a == name))
                .then_some((i, name))
        })?;
        Some(format!(
            "middleware[{i}]: no middleware named {name:?} was added to this binary (added: {})",
            if added.is_empty() {
                "none".to_owned()
            } else {
                added.join(", ")
            }
        ))
    }

    /// `[server] strict`: no listening beyond loopback without authentication. Checked again by `serve`
    /// after `--listen` is applied.
    pub fn validate_strict(&self) -> Result<(), ConfigError> {
        if self.server.strict && !self.server.listen.ip().is_loopback() && !self.auth.enabled() {
            return Err(invalid(
                "server.strict",
                format!(
                    "listening on {} (beyond loopback) needs authentication: configure [[auth.api_key]] or [auth.jwt]",
                    self.server.listen
                ),
            ));
        }
        Ok(())
    }

    /// The request timeout of the backend named `backend` (the server's default for an unknown name).
    pub fn backend_timeout(&self, backend: &str) -> Duration {
        self.backends
            .iter()
            .find(|b| b.name == backend)
            .map_or(Duration::from_millis(self.server.request_timeout_ms), |b| {
                b.timeout(&self.server)
            })
    }

    /// Reads and validates a TOML file.
    pub fn from_toml_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        Config::from_toml_str(&text, path)
    }

    /// Parses and validates TOML text (`origin` names it in errors).
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_owned(),
            message: suggest::did_you_mean(e.to_string().trim_end()),
        })?;
        secret_files::read(&mut config)?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.server;
        s.validate()?;
        self.cluster.validate()?;
        self.egress.validate()?;
        if let Some(redaction) = &self.redaction {
            redaction.validate()?;
        }
        for (i, entry) in self.interceptors.iter().enumerate() {
            entry.validate(i)?;
            if self.backends.iter().any(|b| b.name == entry.name)
                || self.interceptors[..i].iter().any(|o| o.name == entry.name)
            {
                return Err(invalid(
                    format!("interceptor[{i}].name"),
                    "a name of its own: not a backend's nor another interceptor's",
                ));
            }
            let as_backend = entry.as_backend()?;
            let mut probe = Config::from_toml_str("", Path::new("<interceptor>"))?;
            probe.backends.push(as_backend);
            probe
                .validate()
                .map_err(|e| invalid(format!("interceptor[{i}]"), e.to_string()))?;
        }
        if self.interceptors.is_empty()
            && self.middlewares.iter().any(|m| m.kind == MiddlewareKind::Interceptors)
        {
            return Err(invalid(
                "middleware",
                "kind = \"interceptors\" places the [[interceptor]] stage: add an [[interceptor]]",
            ));
        }
        if self.redaction.is_none()
            && self.middlewares.iter().any(|m| m.kind == MiddlewareKind::Redaction)
        {
            return Err(invalid(
                "middleware",
                "kind = \"redaction\" places the [redaction] stage: add a [redaction] table",
            ));
        }
        if let Some(traces) = &self.traces {
            traces.validate()?;
        }
        self.auth.validate(s.strict)?;
        self.validate_strict()?;
        self.admin.validate(self.auth.enabled(), s.listen)?;
        for (i, m) in self.middlewares.iter().enumerate() {
            validate_middleware(i, m)?;
        }
        for (i, rule) in self.policies.iter().enumerate() {
            rule.validate(i)?;
        }
        policy::validate_reach(&self.policies, self.auth.enabled(), "without [auth]")?;
        rate_limit::validate(&self.rate_limits)?;
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, b) in self.backends.iter().enumerate() {
            b.validate(i, s, self.auth.enabled())?;
            if let Some(first) = names.insert(&b.name, i) {
                return Err(invalid(
                    format!("backend[{i}].name"),
                    format!("{:?} is also the name of backend[{first}]", b.name),
                ));
            }
        }
        let per_user = self
            .backends
            .iter()
            .find(|b| {
                b.auth
                    .as_ref()
                    .is_some_and(BackendAuth::is_authorization_code)
            })
            .map(|b| b.name.as_str());
        self.authorization.validate(
            per_user,
            self.auth.enabled(),
            self.auth.oauth.is_some(),
            s.strict,
        )?;
        self.catalog.validate(self.auth.enabled())?;
        endpoint::validate(self)
    }
}
#[cfg(test)]
mod tests;
