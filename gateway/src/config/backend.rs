//! `[[backend]]`: one backend's settings (how it is reached, its limits, names and credentials) and the
//! checks of one table.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    BackendAuth, BackendEra, ConfigError, SelectionEntry, ServerConfig, UrlElicitation, circuit, era,
    invalid, is_server_name, openapi, redact, shaping, tls, valid_token,
};

/// The smallest `[[backend]] max_message_bytes` and `max_stream_bytes`: 1 KiB.
pub const MIN_MESSAGE_BYTES: usize = 1024;
/// The largest `[[backend]] max_message_bytes` and `max_stream_bytes`: 1 GiB.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;

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

impl BackendEntry {
    /// Checks the table `backend[i]` (not how it relates to the others: names are unique, checked by
    /// `Config::validate`). `client_auth`: whether `[auth]` is configured.
    pub(super) fn validate(
        &self,
        i: usize,
        server: &ServerConfig,
        client_auth: bool,
    ) -> Result<(), ConfigError> {
            let field = |f: &str| format!("backend[{i}].{f}");
            if self.name.is_empty() || !valid_token(&self.name) {
                return Err(invalid(
                    field("name"),
                    format!("{:?} must be non-empty letters, digits, '-' or '_'", self.name),
                ));
            }
            if !valid_token(self.prefix()) {
                return Err(invalid(
                    field("prefix"),
                    format!(
                        "{:?} must be letters, digits, '-' or '_' (or empty)",
                        self.prefix()
                    ),
                ));
            }
            shaping::validate(i, self)?;
            let given = [
                self.command.is_some(),
                self.url.is_some(),
                self.builtin.is_some(),
                self.openapi.is_some(),
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
            openapi::validate(self, &field)?;
            if let Some(words) = &self.builtin {
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
            match (&self.command, &self.url) {
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
            if self.command.is_none() && (!self.env.is_empty() || self.cwd.is_some()) {
                return Err(invalid(
                    field("env"),
                    "env and cwd apply to command backends only",
                ));
            }
            if self.timeout_ms == Some(0) {
                return Err(invalid(field("timeout_ms"), "must be above 0"));
            }
            if self.max_in_flight == Some(0) {
                return Err(invalid(field("max_in_flight"), "must be at least 1"));
            }
            for (key, bytes) in [
                ("max_message_bytes", self.max_message_bytes),
                ("max_stream_bytes", self.max_stream_bytes),
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
            if let (Some(message), Some(stream)) = (self.max_message_bytes, self.max_stream_bytes)
                && stream < message
            {
                return Err(invalid(
                    field("max_stream_bytes"),
                    "must be at least max_message_bytes (the stream holds the response)",
                ));
            }
            if self.max_in_flight_per_caller.is_some() && self.max_in_flight_per_session.is_some() {
                return Err(invalid(
                    field("max_in_flight_per_caller"),
                    "max_in_flight_per_caller and max_in_flight_per_session (its old name) are both \
                     given: keep max_in_flight_per_caller only",
                ));
            }
            if let Some(share) = self.per_caller() {
                let max = self
                    .max_in_flight
                    .unwrap_or(handlers::BackendConfig::DEFAULT_MAX_IN_FLIGHT);
                let name = if self.max_in_flight_per_caller.is_some() {
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
            if let Err((f, why)) = self.circuit.check() {
                return Err(invalid(field(f), why));
            }
            if let Some((tool, _)) = self.tool_timeouts_ms.iter().find(|(_, ms)| **ms == 0) {
                return Err(invalid(
                    field("tool_timeouts_ms"),
                    format!("{tool}: must be above 0"),
                ));
            }
            if self.builtin.is_some() && !self.roots.is_empty() {
                return Err(invalid(
                    field("roots"),
                    "a builtin backend never asks for roots",
                ));
            }
            era::validate(self, &field)?;
            tls::validate_backend(self, server.strict, &field)?;
            if let Some(auth) = &self.auth {
                auth.validate(&field, self.url.is_some() || self.openapi.is_some(), server.strict)?;
                if auth.is_token_exchange() && self.openapi.is_some() {
                    return Err(invalid(
                        field("auth.grant"),
                        "an openapi backend takes a fixed value or client credentials, not the client's exchanged token",
                    ));
                }
                if auth.is_authorization_code() && self.openapi.is_some() {
                    return Err(invalid(
                        field("auth.grant"),
                        "an openapi backend takes a fixed value or client credentials, not a user's own authorization",
                    ));
                }
                if auth.is_token_exchange() && !client_auth {
                    return Err(invalid(
                        field("auth.grant"),
                        "token_exchange exchanges the client's token: configure [auth] so that clients present one",
                    ));
                }
            }
            for (k, root) in self.roots.iter().enumerate() {
                if !is_file_uri(root) {
                    return Err(invalid(
                        format!("{}[{k}]", field("roots")),
                        format!("{root:?} must be a file:// URI with a path (file:///srv/data)"),
                    ));
                }
            }
        Ok(())
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
