//! Configuration: the TOML file (`mcpgw serve --config mcpgw.toml`), the `mcpServers` JSON files MCP hosts use
//! (`--mcp-json FILE`), and the embedded demo config used when neither is given. Everything is validated at
//! start with errors that name the field. Every config struct is `Serialize` too, for `GET /admin/config`:
//! a field that may hold a secret is written through `redact` (`the_shown_config_holds_no_secret`).

mod admin;
mod auth;
mod authorization;
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
mod openapi;
mod policy;
pub mod qualified;
pub mod rate_limit;
pub mod redact;
mod redaction;
mod secret_files;
mod shaping;
mod suggest;
mod telemetry;
mod tls;
pub mod traces;
mod url_elicitation;

pub use listen::parse_listen;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use admin::AdminConfig;
pub use auth::{
    ALGORITHMS, ApiKeyEntry, AuthConfig, JwtConfig, OAuthConfig, OneOrMany, ScopeRule,
    parse_digest, parse_proxy_block,
};
pub use authorization::{AuthorizationConfig, LinkProof};
pub use backend_auth::{BackendAuth, Grant};
pub use catalog::CatalogConfig;
pub use cluster::{ClusterConfig, SealCipher};
pub use cors::normalize_origin;
pub use demo::demo_config;
pub use egress::{EgressConfig, valid_host_pattern};
pub use endpoint::{AccessEntry, EndpointEntry};
pub use era::BackendEra;
pub use forwarded::ForwardedHeader;
pub use interceptor::{EVENTS as INTERCEPTED_EVENTS, InterceptorEntry, InterceptorMode};
pub use mcp_json::from_mcp_json;
pub(crate) use policy::validate_reach;
pub use policy::{ANNOTATIONS, PATTERN_KINDS, PolicyRule};
pub use rate_limit::{LimitPer, RateLimitConfig};
pub use redaction::{PATTERN_SIZE_LIMIT, PatternEntry, RedactionConfig, RedactionMode};
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

/// One `[[middleware]]`: a built-in middleware of the request pipeline (see `pipeline::builtin`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MiddlewareEntry {
    /// Which one.
    pub kind: MiddlewareKind,
    /// `allow_methods`: the methods that pass (MCP wire names).
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// `library`: the name of a middleware a binary built with the mcpgw library added.
    #[serde(default)]
    pub name: Option<String>,
}

/// The built-in middlewares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MiddlewareKind {
    /// One log line per JSON-RPC request (target `mcpgw::access`).
    AccessLog,
    /// Only the listed methods pass; the others are answered as unknown methods.
    AllowMethods,
    /// A middleware the binary's builder added (`name`): placed here instead of after the tables.
    Library,
    /// The `[redaction]` stage, placed here instead of last (closest to the dispatch).
    Redaction,
    /// The `[[interceptor]]` stage, placed here instead of after the tables and library middlewares.
    Interceptors,
}

/// The smallest `[[backend]] max_message_bytes` and `max_stream_bytes`: 1 KiB.
pub const MIN_MESSAGE_BYTES: usize = 1024;
/// The largest `[[backend]] max_message_bytes` and `max_stream_bytes`: 1 GiB.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;

/// The default of `[server] cache_max_bytes`: 64 MiB of cached results.
pub const DEFAULT_CACHE_MAX_BYTES: usize = 64 * 1024 * 1024;

/// The default of `[server] h2_max_concurrent_streams`: RFC 9113 §6.5.2's recommended minimum, nginx's and
/// most servers' order of magnitude.
pub const DEFAULT_H2_MAX_CONCURRENT_STREAMS: usize = 100;

/// `[server]`: the front door.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Where to listen (`127.0.0.1:7800`; also `7800`, on loopback, or `localhost:7800`).
    #[serde(deserialize_with = "listen::deserialize")]
    pub listen: SocketAddr,
    /// The largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
    /// A request body with no byte for this long is cut: 408 and the connection closed, in milliseconds.
    pub body_idle_timeout_ms: u64,
    /// A request body not whole after this long is cut: 408 and the connection closed, in milliseconds.
    pub body_timeout_ms: u64,
    /// A legacy session idle for this long expires (404 afterwards).
    pub session_idle_secs: u64,
    /// A legacy session ends this long after its `initialize`, however busy (its id carries the expiry).
    pub session_max_lifetime_secs: u64,
    /// After SIGTERM or SIGINT, how long the listener keeps accepting (with `/readyz` answering 503) so that
    /// a load balancer can move away, in seconds.
    pub drain_grace_secs: u64,
    /// After SIGTERM or SIGINT, how long requests in flight may take to finish before each still running is
    /// answered "gateway shutting down", in seconds (from the signal; at least `drain_grace_secs`).
    pub drain_timeout_secs: u64,
    /// Legacy sessions held at most; `initialize` beyond it is refused with 503.
    pub max_sessions: usize,
    /// The most entries a JSON-RPC batch (2025-03-26 sessions) may hold; a larger one is refused with
    /// -32600 naming the limit. At least 1.
    pub max_batch: usize,
    /// Bytes of cached `resources/read` results held at most (their JSON text, counted exactly); a result
    /// larger than it is served and not cached. At least 1; [`DEFAULT_CACHE_MAX_BYTES`] by default.
    pub cache_max_bytes: usize,
    /// Default per-backend request timeout, in milliseconds.
    pub request_timeout_ms: u64,
    /// How long each backend gets to answer a catalog listing, in milliseconds (at start: to connect and
    /// list; those that did not join when they come up).
    pub list_timeout_ms: u64,
    /// How long a backend that went down keeps its last good catalog (listed as stale, its calls answered
    /// "unavailable") before it is left out of the lists, in milliseconds; 0 leaves it out at once.
    pub down_grace_ms: u64,
    /// Items per page of `tools/list` and the other lists.
    pub page_size: usize,
    /// `"method-not-found"` (-32601, default) or `"invalid-params"` (-32602) for unknown tools.
    pub unknown_tool_code: UnknownToolCode,
    /// HTTP worker threads (default: one per core).
    pub workers: Option<usize>,
    /// How long an event written on a long-lived stream may wait for its client to read it before the
    /// stream's connection is closed, in milliseconds.
    pub stream_write_timeout_ms: u64,
    /// Requests in flight per worker before the gateway answers "overloaded".
    pub max_in_flight_per_worker: usize,
    /// Connections open at once (all workers); one more is closed at once.
    pub max_connections: usize,
    /// Requests in progress at once on one HTTP/2 connection (the TLS front door's streams); one more is
    /// answered 503. `None`: [`DEFAULT_H2_MAX_CONCURRENT_STREAMS`].
    pub h2_max_concurrent_streams: Option<usize>,
    /// `Host` names accepted (any port; `"*"` for any). Default: loopback names when listening on loopback,
    /// anything otherwise. Other hosts get 403 (DNS-rebinding protection).
    pub allowed_hosts: Option<Vec<String>>,
    /// `Origin`s accepted when a request carries one (`scheme://host`, any port; `"*"` for any), whatever
    /// the listen address; others get 403. Default: loopback origins when listening on loopback, none
    /// otherwise, and then a same-origin request passes too when `allowed_hosts` (or the loopback default)
    /// names its `Host` (`front::http::origin`).
    pub allowed_origins: Option<Vec<String>>,
    /// Serve HTTPS with this certificate chain (PEM), with `tls_key_file`; reloaded on SIGHUP.
    pub tls_cert_file: Option<PathBuf>,
    /// The key (PEM) of `tls_cert_file`.
    pub tls_key_file: Option<PathBuf>,
    /// Require client certificates issued by these CAs (PEM).
    pub tls_client_ca_file: Option<PathBuf>,
    /// Refuse settings that weaken security: listening beyond loopback without `[auth]`,
    /// `tls_insecure_skip_verify` on a backend, keys fetched over plain http beyond loopback.
    pub strict: bool,
    /// Proxies (`"CIDR"` or an address) whose forwarding header (`forwarded_header`) is believed: only on a
    /// connection from one of them is the client's address taken from it (the rightmost hop that is not
    /// itself a trusted proxy). None by default: the headers are ignored.
    pub trusted_proxies: Vec<String>,
    /// The one header the trusted proxies write the client's address in; every other forwarding header is
    /// ignored (a client can send its own). Not set: `X-Forwarded-For` (and `mcpgw check` says so when
    /// `trusted_proxies` is set).
    pub forwarded_header: Option<ForwardedHeader>,
    /// Web origins (`scheme://host[:port]`) whose browser pages may call the gateway: preflights answered,
    /// responses readable (CORS). Each passes the `Origin` check too. None by default: no CORS headers.
    pub cors_allowed_origins: Vec<String>,
    /// `"text"` (default) or `"json"`: how log lines are written on standard error (`--log-format`
    /// overrides).
    pub log_format: LogFormat,
    /// The log level and per-target directives (`RUST_LOG`'s syntax: `"info,mcpgw::access=warn"`); `RUST_LOG`,
    /// when set, wins. Applied again by a config reload. Default: `info`.
    pub log_level: Option<String>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Human-readable lines (colours only on a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A built-in server's or library middleware's name: ASCII letters, digits, `_` and `-`, 1 to 64 of them.
pub(crate) fn is_server_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn validate_middleware(i: usize, m: &MiddlewareEntry) -> Result<(), ConfigError> {
    match (m.kind, &m.name) {
        (MiddlewareKind::Library, None) => {
            return Err(invalid(
                format!("middleware[{i}].name"),
                "library needs the name of a middleware the binary added",
            ));
        }
        (MiddlewareKind::Library, Some(name)) if !is_server_name(name) => {
            return Err(invalid(
                format!("middleware[{i}].name"),
                "a middleware's name is 1 to 64 ASCII letters, digits, '_' and '-'",
            ));
        }
        (
            MiddlewareKind::AccessLog
            | MiddlewareKind::AllowMethods
            | MiddlewareKind::Redaction
            | MiddlewareKind::Interceptors,
            Some(_),
        ) => {
            return Err(invalid(
                format!("middleware[{i}].name"),
                "only library takes a name",
            ));
        }
        _ => {}
    }
    match (m.kind, &m.methods) {
        (
            MiddlewareKind::Library | MiddlewareKind::Redaction | MiddlewareKind::Interceptors,
            Some(_),
        ) => Err(invalid(
            format!("middleware[{i}].methods"),
            "only allow_methods takes methods",
        )),
        (
            MiddlewareKind::Library | MiddlewareKind::Redaction | MiddlewareKind::Interceptors,
            None,
        ) => Ok(()),
        (MiddlewareKind::AccessLog, Some(_)) => Err(invalid(
            format!("middleware[{i}].methods"),
            "only allow_methods takes methods",
        )),
        (MiddlewareKind::AllowMethods, None) => Err(invalid(
            format!("middleware[{i}].methods"),
            "allow_methods needs the methods that pass",
        )),
        (MiddlewareKind::AllowMethods, Some(methods)) => {
            for (j, name) in methods.iter().enumerate() {
                if !protocol::Method::parse(name).is_some_and(protocol::Method::is_client_request) {
                    return Err(invalid(
                        format!("middleware[{i}].methods[{j}]"),
                        format!("{name:?} is not a method an MCP client sends"),
                    ));
                }
            }
            Ok(())
        }
        (MiddlewareKind::AccessLog, None) => Ok(()),
    }
}

/// The code an unknown tool name gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownToolCode {
    /// -32601 (the founding document's default).
    #[default]
    MethodNotFound,
    /// -32602 (what the MCP spec suggests).
    InvalidParams,
}

impl ServerConfig {
    /// `max_connections` unless configured.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 25_000;
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7800)),
            max_body_bytes: 4 * 1024 * 1024,
            body_idle_timeout_ms: 5_000,
            body_timeout_ms: 30_000,
            session_idle_secs: 30 * 60,
            session_max_lifetime_secs: 24 * 60 * 60,
            drain_grace_secs: 5,
            drain_timeout_secs: 30,
            max_sessions: 100_000,
            max_batch: 100,
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            request_timeout_ms: 30_000,
            list_timeout_ms: 5_000,
            down_grace_ms: 30_000,
            page_size: 100,
            unknown_tool_code: UnknownToolCode::default(),
            workers: None,
            stream_write_timeout_ms: 10_000,
            max_in_flight_per_worker: 4096,
            max_connections: ServerConfig::DEFAULT_MAX_CONNECTIONS,
            h2_max_concurrent_streams: None,
            allowed_hosts: None,
            allowed_origins: None,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            strict: false,
            trusted_proxies: Vec::new(),
            forwarded_header: None,
            cors_allowed_origins: Vec::new(),
            log_format: LogFormat::default(),
            log_level: None,
        }
    }
}

/// One `[[backend]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BackendEntry {
    /// Unique name (letters, digits, `-`, `_`).
    pub name: String,
    /// stdio: the program and its arguments.
    #[serde(serialize_with = "redact::command")]
    pub command: Option<Vec<String>>,
    /// stdio: environment variables added to the gateway's own.
    #[serde(default, serialize_with = "redact::env_values")]
    pub env: BTreeMap<String, String>,
    /// stdio: working directory.
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP (or 2024-11-05 HTTP+SSE) URL.
    #[serde(serialize_with = "redact::url")]
    pub url: Option<String>,
    /// A server built into mcpgw, run inside its process: `["mock-backend", flags…]`.
    pub builtin: Option<Vec<String>>,
    /// Name prefix of its tools and prompts; default: the name; `""`: none.
    pub prefix: Option<String>,
    /// Request timeout in milliseconds (default: `[server] request_timeout_ms`).
    pub timeout_ms: Option<u64>,
    /// Requests in flight at once (default 64); more are answered "overloaded" at once.
    pub max_in_flight: Option<usize>,
    /// Each caller's share of those (a principal with `[auth]`, else a legacy session, else a client
    /// address; default a quarter of `max_in_flight`): beyond it a caller takes a free permit only while a
    /// share's worth stays free, else its call is answered "overloaded" (`handlers::share`'s rule).
    pub max_in_flight_per_caller: Option<usize>,
    /// The old name of `max_in_flight_per_caller`, still accepted (both at once are refused); read it
    /// through [`BackendEntry::per_caller`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight_per_session: Option<usize>,
    /// The largest message read from it, in bytes (default 32 MiB): a larger answer fails its request
    /// ("too large": a tool error for a tool, a JSON-RPC error otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<usize>,
    /// The most one request's response stream may carry in all, in bytes (default: no bound but the
    /// deadline): its notifications and questions, then the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stream_bytes: Option<usize>,
    /// Its circuit breaker (`[backend.circuit]`).
    #[serde(default)]
    pub circuit: circuit::CircuitEntry,
    /// Deadlines of single tools, by the backend's own tool name, in milliseconds (instead of `timeout_ms`).
    #[serde(default)]
    pub tool_timeouts_ms: BTreeMap<String, u64>,
    /// https: extra roots (PEM) trusted beside the platform's.
    pub tls_ca_file: Option<PathBuf>,
    /// https: the gateway's client certificate (PEM), for backends that require one.
    pub tls_client_cert_file: Option<PathBuf>,
    /// https: the key (PEM) of `tls_client_cert_file`.
    pub tls_client_key_file: Option<PathBuf>,
    /// https: the name sent as SNI and verified, instead of the URL's host (still the address connected to).
    pub tls_server_name: Option<String>,
    /// https: no certificate verification at all (warned at start; refused under `[server] strict`).
    #[serde(default)]
    pub tls_insecure_skip_verify: bool,
    /// http: speak HTTP/2 to it with prior knowledge (h2c) instead of HTTP/1.1; https backends negotiate
    /// HTTP/2 by ALPN either way.
    #[serde(default)]
    pub http2: bool,
    /// `file://` URIs the gateway answers the backend's `roots/list` with, whoever's request it arrives in;
    /// none: `roots/list` goes to the client whose request it belongs to, and gets no roots outside any.
    #[serde(default)]
    pub roots: Vec<String>,
    /// The generation spoken to it: `auto` (probe), `legacy` or `modern` (pinned).
    #[serde(default)]
    pub era: BackendEra,
    /// Whether its URL elicitations reach clients: `per_principal` (default), `shared` or `off`.
    #[serde(default)]
    pub url_elicitation: UrlElicitation,
    /// The gateway's own credential towards this (HTTP) backend (`[backend.auth]`).
    pub auth: Option<BackendAuth>,
    /// Which of its tools are in the catalog, by its own names (`{ allow = [globs], deny = [globs] }`).
    pub tools: Option<SelectionEntry>,
    /// Which of its prompts are in the catalog, by its own names.
    pub prompts: Option<SelectionEntry>,
    /// Which of its resources (by `uri`) and resource templates (by `uriTemplate`) are in the catalog.
    pub resources: Option<SelectionEntry>,
    /// Its tools' and prompts' new names, by their own (`[backend.rename]`); the prefix applies to the new.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// Its tools' descriptions, by their own names (`[backend.describe]`).
    #[serde(default)]
    pub describe: BTreeMap<String, String>,
    /// An OpenAPI 3.0/3.1 document (a file path or an http(s) URL) whose operations are its tools.
    #[serde(default, serialize_with = "redact::url")]
    pub openapi: Option<String>,
    /// With `openapi`: where the REST API is (`https://api.example.com/v1`).
    #[serde(default, serialize_with = "redact::url")]
    pub base_url: Option<String>,
    /// With `openapi`: which operations become tools, by tool name (`{ allow = [globs], deny = [globs] }`).
    #[serde(default)]
    pub operations: Option<SelectionEntry>,
}

/// How a backend is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendTransport {
    /// A child process over stdio.
    Stdio {
        /// Program and arguments.
        command: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// An HTTP URL.
    Http {
        /// The URL.
        url: String,
    },
    /// A server built into mcpgw: its name and flags.
    Builtin {
        /// `["mock-backend", flags…]`.
        words: Vec<String>,
    },
    /// A REST API described by an OpenAPI document, served in-process.
    OpenApi {
        /// The document: a file path or an http(s) URL.
        document: String,
        /// Where the API is.
        base_url: String,
    },
}

impl BackendEntry {
    /// Each caller's share (`max_in_flight_per_caller`, or its old name), if configured.
    pub fn per_caller(&self) -> Option<usize> {
        self.max_in_flight_per_caller
            .or(self.max_in_flight_per_session)
    }

    /// The effective prefix.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(&self.name)
    }

    /// The transport (valid after [`Config::validate`]).
    pub fn transport(&self) -> BackendTransport {
        if let Some(words) = &self.builtin {
            return BackendTransport::Builtin {
                words: words.clone(),
            };
        }
        if let Some(document) = &self.openapi {
            return BackendTransport::OpenApi {
                document: document.clone(),
                base_url: self.base_url.clone().unwrap_or_default(),
            };
        }
        match (&self.command, &self.url) {
            (Some(command), _) => BackendTransport::Stdio {
                command: command.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            },
            (None, Some(url)) => BackendTransport::Http { url: url.clone() },
            (None, None) => BackendTransport::Http { url: String::new() },
        }
    }

    /// Its TLS settings, as the handlers take them.
    pub fn tls(&self) -> handlers::TlsClient {
        handlers::TlsClient {
            ca_file: self.tls_ca_file.clone(),
            client_cert_file: self.tls_client_cert_file.clone(),
            client_key_file: self.tls_client_key_file.clone(),
            server_name: self.tls_server_name.clone(),
            insecure_skip_verify: self.tls_insecure_skip_verify,
        }
    }

    /// The request timeout.
    pub fn timeout(&self, server: &ServerConfig) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(server.request_timeout_ms))
    }

    /// The deadline of one of its tools (its own name) when `tool_timeouts_ms` sets one.
    pub fn tool_timeout(&self, tool: &str) -> Option<Duration> {
        self.tool_timeouts_ms
            .get(tool)
            .map(|ms| Duration::from_millis(*ms))
    }
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

    /// Checks every field; the first problem is reported with its field path.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.server;
        if s.max_body_bytes < 1024 {
            return Err(invalid("server.max_body_bytes", "must be at least 1024"));
        }
        if s.body_idle_timeout_ms == 0 {
            return Err(invalid("server.body_idle_timeout_ms", "must be above 0"));
        }
        if s.body_timeout_ms == 0 {
            return Err(invalid("server.body_timeout_ms", "must be above 0"));
        }
        if s.page_size == 0 {
            return Err(invalid("server.page_size", "must be at least 1"));
        }
        if s.max_sessions == 0 {
            return Err(invalid("server.max_sessions", "must be at least 1"));
        }
        if s.cache_max_bytes == 0 {
            return Err(invalid(
                "server.cache_max_bytes",
                "must be at least 1 (the cache is always bounded; a result larger than it is not cached)",
            ));
        }
        if s.request_timeout_ms == 0 || s.list_timeout_ms == 0 {
            return Err(invalid(
                "server.request_timeout_ms",
                "timeouts must be above 0",
            ));
        }
        if s.session_idle_secs == 0 {
            return Err(invalid("server.session_idle_secs", "must be above 0"));
        }
        if s.session_max_lifetime_secs == 0 || s.session_max_lifetime_secs > u64::from(u32::MAX) {
            return Err(invalid(
                "server.session_max_lifetime_secs",
                "must be above 0 and at most 4294967295",
            ));
        }
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
        for (i, p) in s.trusted_proxies.iter().enumerate() {
            if parse_proxy_block(p).is_none() {
                return Err(invalid(
                    format!("server.trusted_proxies[{i}]"),
                    format!("{p:?} is not an address or a CIDR block (10.0.0.0/8, fd00::/8)"),
                ));
            }
        }
        if s.max_batch == 0 {
            return Err(invalid("server.max_batch", "must be at least 1"));
        }
        if s.drain_timeout_secs < s.drain_grace_secs {
            return Err(invalid(
                "server.drain_timeout_secs",
                "must be at least server.drain_grace_secs (requests in flight get at least the grace)",
            ));
        }
        if s.stream_write_timeout_ms == 0 {
            return Err(invalid("server.stream_write_timeout_ms", "must be above 0"));
        }
        if s.max_in_flight_per_worker == 0 {
            return Err(invalid(
                "server.max_in_flight_per_worker",
                "must be at least 1",
            ));
        }
        if s.max_connections == 0 {
            return Err(invalid("server.max_connections", "must be at least 1"));
        }
        if s.h2_max_concurrent_streams == Some(0) {
            return Err(invalid(
                "server.h2_max_concurrent_streams",
                "must be at least 1",
            ));
        }
        if s.workers == Some(0) {
            return Err(invalid("server.workers", "must be at least 1"));
        }
        tls::validate_server(s)?;
        if let Some(level) = &s.log_level
            && let Err(e) = tracing_subscriber::EnvFilter::try_new(level)
        {
            return Err(invalid(
                "server.log_level",
                format!("{level:?} does not parse: {e}"),
            ));
        }
        for (i, origin) in s.cors_allowed_origins.iter().enumerate() {
            if let Err(why) = normalize_origin(origin) {
                return Err(invalid(format!("server.cors_allowed_origins[{i}]"), why));
            }
        }
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
            let field = |f: &str| format!("backend[{i}].{f}");
            if b.name.is_empty() || !valid_token(&b.name) {
                return Err(invalid(
                    field("name"),
                    format!("{:?} must be non-empty letters, digits, '-' or '_'", b.name),
                ));
            }
            if let Some(first) = names.insert(&b.name, i) {
                return Err(invalid(
                    field("name"),
                    format!("{:?} is also the name of backend[{first}]", b.name),
                ));
            }
            if !valid_token(b.prefix()) {
                return Err(invalid(
                    field("prefix"),
                    format!(
                        "{:?} must be letters, digits, '-' or '_' (or empty)",
                        b.prefix()
                    ),
                ));
            }
            shaping::validate(i, b)?;
            let given = [
                b.command.is_some(),
                b.url.is_some(),
                b.builtin.is_some(),
                b.openapi.is_some(),
            ];
            match given.iter().filter(|g| **g).count() {
                0 => {
                    return Err(invalid(
                        field("command"),
                        "give command (stdio), url (HTTP), builtin or openapi",
                    ));
                }
                1 => {}
                _ => {
                    return Err(invalid(
                        field("command"),
                        "give only one of command, url, builtin and openapi",
                    ));
                }
            }
            openapi::validate(b, &field)?;
            if let Some(words) = &b.builtin {
                match words.split_first() {
                    Some((server, flags)) if server == "mock-backend" => {
                        if let Err(why) = mock::InProcessMock::from_words(flags) {
                            return Err(invalid(field("builtin"), why));
                        }
                    }
                    // A server a library user built into their binary (`Builder::backend`), checked by
                    // name when the gateway starts; it takes no flags.
                    Some((server, [])) if is_server_name(server) => {}
                    _ => {
                        return Err(invalid(
                            field("builtin"),
                            "the builtin servers are [\"mock-backend\", flags...] and, in a binary built with the mcpgw library, [\"NAME\"] of a server it added",
                        ));
                    }
                }
            }
            match (&b.command, &b.url) {
                (Some(c), None) if c.is_empty() || c[0].is_empty() => {
                    return Err(invalid(field("command"), "must name a program"));
                }
                (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                    return Err(invalid(
                        field("url"),
                        format!("{u:?} must start with http:// or https://"),
                    ));
                }
                _ => {}
            }
            if b.command.is_none() && (!b.env.is_empty() || b.cwd.is_some()) {
                return Err(invalid(
                    field("env"),
                    "env and cwd apply to command backends only",
                ));
            }
            if b.timeout_ms == Some(0) {
                return Err(invalid(field("timeout_ms"), "must be above 0"));
            }
            if b.max_in_flight == Some(0) {
                return Err(invalid(field("max_in_flight"), "must be at least 1"));
            }
            for (key, bytes) in [
                ("max_message_bytes", b.max_message_bytes),
                ("max_stream_bytes", b.max_stream_bytes),
            ] {
                if bytes.is_some_and(|n| !(MIN_MESSAGE_BYTES..=MAX_MESSAGE_BYTES).contains(&n)) {
                    return Err(invalid(
                        field(key),
                        format!(
                            "must be between {MIN_MESSAGE_BYTES} (1 KiB) and {MAX_MESSAGE_BYTES} (1 GiB)"
                        ),
                    ));
                }
            }
            if let (Some(message), Some(stream)) = (b.max_message_bytes, b.max_stream_bytes)
                && stream < message
            {
                return Err(invalid(
                    field("max_stream_bytes"),
                    "must be at least max_message_bytes (the stream holds the response)",
                ));
            }
            if b.max_in_flight_per_caller.is_some() && b.max_in_flight_per_session.is_some() {
                return Err(invalid(
                    field("max_in_flight_per_caller"),
                    "max_in_flight_per_caller and max_in_flight_per_session (its old name) are both \
                     given: keep max_in_flight_per_caller only",
                ));
            }
            if let Some(share) = b.per_caller() {
                let max = b
                    .max_in_flight
                    .unwrap_or(handlers::BackendConfig::DEFAULT_MAX_IN_FLIGHT);
                let name = if b.max_in_flight_per_caller.is_some() {
                    "max_in_flight_per_caller"
                } else {
                    "max_in_flight_per_session"
                };
                if share == 0 || share > max {
                    return Err(invalid(
                        field(name),
                        format!("must be between 1 and max_in_flight ({max})"),
                    ));
                }
            }
            if let Err((f, why)) = b.circuit.check() {
                return Err(invalid(field(f), why));
            }
            if let Some((tool, _)) = b.tool_timeouts_ms.iter().find(|(_, ms)| **ms == 0) {
                return Err(invalid(
                    field("tool_timeouts_ms"),
                    format!("{tool}: must be above 0"),
                ));
            }
            if b.builtin.is_some() && !b.roots.is_empty() {
                return Err(invalid(
                    field("roots"),
                    "a builtin backend never asks for roots",
                ));
            }
            era::validate(b, &field)?;
            tls::validate_backend(b, s.strict, &field)?;
            if let Some(auth) = &b.auth {
                auth.validate(&field, b.url.is_some() || b.openapi.is_some(), s.strict)?;
                if auth.is_token_exchange() && b.openapi.is_some() {
                    return Err(invalid(
                        field("auth.grant"),
                        "an openapi backend takes a fixed value or client credentials, not the client's exchanged token",
                    ));
                }
                if auth.is_authorization_code() && b.openapi.is_some() {
                    return Err(invalid(
                        field("auth.grant"),
                        "an openapi backend takes a fixed value or client credentials, not a user's own authorization",
                    ));
                }
                if auth.is_token_exchange() && !self.auth.enabled() {
                    return Err(invalid(
                        field("auth.grant"),
                        "token_exchange exchanges the client's token: configure [auth] so that clients present one",
                    ));
                }
            }
            for (k, root) in b.roots.iter().enumerate() {
                if !is_file_uri(root) {
                    return Err(invalid(
                        format!("{}[{k}]", field("roots")),
                        format!("{root:?} must be a file:// URI with a path (file:///srv/data)"),
                    ));
                }
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

/// A root as MCP has them: `file://`, an absolute path, no whitespace or control characters.
fn is_file_uri(uri: &str) -> bool {
    uri.strip_prefix("file://").is_some_and(|rest| {
        let path = rest.find('/').map(|slash| &rest[slash..]);
        path.is_some_and(|p| p.len() > 1 || rest.len() == 1)
            && !uri.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

#[cfg(test)]
mod tests;
