//! `[[interceptor]]`: an MCP server that validates or rewrites what passes through the gateway (the MCP
//! interceptors extension, SEP-2624), reached like a backend — stdio or HTTP, with a backend's TLS,
//! credential, deadline, concurrency and circuit settings — and the requests it is asked about. Read
//! here; started and invoked by the `intercept` domain.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::backend_auth::BackendAuth;
use super::{BackendEntry, ConfigError, circuit, invalid};

/// The events (methods) an interceptor can be asked about at the gateway.
pub const EVENTS: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

/// One `[[interceptor]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InterceptorEntry {
    /// Its name in logs and metrics (letters, digits, `-`, `_`; not a backend's).
    pub name: String,
    /// stdio: the program and its arguments.
    #[serde(default, serialize_with = "super::redact::command")]
    pub command: Option<Vec<String>>,
    /// stdio: environment variables added to the gateway's own.
    #[serde(default, serialize_with = "super::redact::env_values")]
    pub env: BTreeMap<String, String>,
    /// stdio: the working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// HTTP: its MCP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// The deadline of one invocation, in milliseconds (default 2000), also sent as `timeoutMs`.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Invocations in flight at once (default 32); one more is an invocation failure at once.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Its circuit breaker (`[interceptor.circuit]`): while open, each invocation fails at once.
    #[serde(default)]
    pub circuit: circuit::CircuitEntry,
    /// HTTPS: the CA certificates that sign its certificate, besides the platform's.
    #[serde(default)]
    pub tls_ca_file: Option<PathBuf>,
    /// HTTPS: a client certificate.
    #[serde(default)]
    pub tls_client_cert_file: Option<PathBuf>,
    /// HTTPS: the client certificate's key.
    #[serde(default)]
    pub tls_client_key_file: Option<PathBuf>,
    /// HTTPS: the name its certificate is checked against, instead of the URL's host.
    #[serde(default)]
    pub tls_server_name: Option<String>,
    /// The credential the gateway sends it (`[interceptor.auth]`, as `[backend.auth]`).
    #[serde(default)]
    pub auth: Option<BackendAuth>,
    /// Its interceptors the gateway uses, by the names `interceptors/list` gives (default: all). Each
    /// named one counts even while the server cannot be reached: an invocation failure, so a fail-closed
    /// one refuses rather than passes.
    #[serde(default, rename = "use")]
    pub uses: Vec<String>,
    /// The events it is asked about (default all three: `tools/call`, `resources/read`, `prompts/get`),
    /// within what its interceptors' hooks name.
    #[serde(default = "all_events")]
    pub events: Vec<String>,
    /// The tools it is asked about, by exposed name (`*`/`?` patterns; default all).
    #[serde(default = "everything")]
    pub tools: Vec<String>,
    /// The backends whose requests it is asked about (`*`/`?` patterns; default all).
    #[serde(default = "everything")]
    pub backends: Vec<String>,
    /// `enforce` or `audit` for all its interceptors (default: each one's own `mode`, else `enforce`).
    #[serde(default)]
    pub mode: Option<InterceptorMode>,
    /// Whether an invocation that fails (unreachable, timed out, malformed answer, circuit open) lets the
    /// request pass (default `false`: it is refused).
    #[serde(default)]
    pub fail_open: Option<bool>,
}

/// An interceptor's mode, as the gateway applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterceptorMode {
    /// Its refusals refuse, its rewrites apply (the extension's `active`).
    #[serde(alias = "active")]
    Enforce,
    /// Run and logged, never refusing nor rewriting.
    Audit,
}

fn default_timeout_ms() -> u64 {
    2000
}

fn default_max_in_flight() -> usize {
    32
}

fn all_events() -> Vec<String> {
    EVENTS.iter().map(|e| (*e).to_owned()).collect()
}

fn everything() -> Vec<String> {
    vec!["*".to_owned()]
}

impl InterceptorEntry {
    /// How it is reached, as a `[[backend]]` of its name: the handlers crate connects to it as to any.
    pub fn as_backend(&self) -> Result<BackendEntry, ConfigError> {
        let mut table = toml::Table::new();
        let mut put = |key: &str, value: Option<toml::Value>| {
            if let Some(v) = value {
                table.insert(key.to_owned(), v);
            }
        };
        put("name", value(&self.name));
        put("command", self.command.as_ref().and_then(value));
        if !self.env.is_empty() {
            put("env", value(&self.env));
        }
        put("cwd", self.cwd.as_ref().and_then(value));
        put("url", self.url.as_ref().and_then(value));
        put("timeout_ms", value(&self.timeout_ms));
        put("max_in_flight", value(&self.max_in_flight));
        put("tls_ca_file", self.tls_ca_file.as_ref().and_then(value));
        put(
            "tls_client_cert_file",
            self.tls_client_cert_file.as_ref().and_then(value),
        );
        put(
            "tls_client_key_file",
            self.tls_client_key_file.as_ref().and_then(value),
        );
        put("tls_server_name", self.tls_server_name.as_ref().and_then(value));
        let mut entry: BackendEntry = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| invalid(format!("interceptor {}", self.name), e.to_string()))?;
        entry.circuit = self.circuit;
        entry.auth = self.auth.clone();
        Ok(entry)
    }

    /// The fields of `interceptor[i]` that can be judged alone; its reach is judged as a backend's.
    pub fn validate(&self, i: usize) -> Result<(), ConfigError> {
        let field = |f: &str| format!("interceptor[{i}].{f}");
        if !super::is_server_name(&self.name) {
            return Err(invalid(field("name"), "1 to 64 ASCII letters, digits, '_' and '-'"));
        }
        if self.timeout_ms == 0 || self.timeout_ms > 60_000 {
            return Err(invalid(field("timeout_ms"), "between 1 and 60000"));
        }
        if self.max_in_flight == 0 {
            return Err(invalid(field("max_in_flight"), "must be at least 1"));
        }
        if self.events.is_empty() {
            return Err(invalid(field("events"), "name at least one event"));
        }
        for (j, e) in self.events.iter().enumerate() {
            if !EVENTS.contains(&e.as_str()) {
                return Err(invalid(
                    format!("interceptor[{i}].events[{j}]"),
                    format!("{e:?} is not an event the gateway intercepts ({})", EVENTS.join(", ")),
                ));
            }
        }
        if self.tools.is_empty() || self.backends.is_empty() {
            return Err(invalid(field("tools"), "tools and backends name at least one pattern (or \"*\")"));
        }
        Ok(())
    }
}

/// A field's value as TOML.
fn value<T: Serialize>(v: &T) -> Option<toml::Value> {
    toml::Value::try_from(v).ok()
}
