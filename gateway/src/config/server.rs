//! `[server]`: the front door's settings, their defaults and their checks.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, ForwardedHeader, invalid, listen, normalize_origin, parse_proxy_block, tls};

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

impl ServerConfig {
    /// Checks `[server]`'s own fields; the first problem is reported with its field path.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let s = self;
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
        Ok(())
    }
}
