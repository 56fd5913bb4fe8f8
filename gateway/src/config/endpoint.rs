//! `[[endpoint]]`: more MCP endpoints on the same listener, each a virtual server — its own path, its own
//! `serverInfo` and instructions, its own selection of backends, tools, prompts and resources (the globs of
//! `[[backend]]` selections, here on exposed names), and optionally who may use it (`[endpoint.access]`).
//! `/mcp` stays the default endpoint with everything. What it means for requests is the `endpoint` domain;
//! this module only reads and validates the tables.

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, SelectionEntry, invalid};
use crate::glob::glob_match;

/// Endpoints a configuration may declare besides `/mcp`.
pub const MAX_ENDPOINTS: usize = 64;

/// Paths an endpoint may not take: the gateway's own routes.
const RESERVED: &[&str] = &[
    "/mcp",
    "/sse",
    "/messages",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// One `[[endpoint]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EndpointEntry {
    /// Where it is served (`/mcp/ops`).
    pub path: String,
    /// Its `serverInfo.name` (also how logs name it).
    pub name: String,
    /// Its `serverInfo.title`.
    #[serde(default)]
    pub title: Option<String>,
    /// Its `serverInfo.version` (the gateway's by default).
    #[serde(default)]
    pub version: Option<String>,
    /// Instructions for the model, before those of its backends.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Only the backends these globs name (absent: all).
    #[serde(default)]
    pub backends: Option<Vec<String>>,
    /// Tools by exposed name.
    #[serde(default)]
    pub tools: Option<SelectionEntry>,
    /// Prompts by exposed name.
    #[serde(default)]
    pub prompts: Option<SelectionEntry>,
    /// Resources by URI, templates by `uriTemplate`.
    #[serde(default)]
    pub resources: Option<SelectionEntry>,
    /// `[endpoint.access]`: who may use it (needs `[auth]`); absent: whoever may use `/mcp`.
    #[serde(default)]
    pub access: Option<AccessEntry>,
}

/// `[endpoint.access]`: a principal named by `principals` or in one of `groups` (either list empty: not a
/// condition), holding every scope of `scopes`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AccessEntry {
    /// Globs on the principal's name.
    pub principals: Vec<String>,
    /// Globs on the principal's groups.
    pub groups: Vec<String>,
    /// Scopes the principal's credential must grant, every one.
    pub scopes: Vec<String>,
}

/// Checks the `[[endpoint]]` tables: at most [`MAX_ENDPOINTS`]; paths that start with `/`, are unique and
/// are not the gateway's own; unique names; globs that are not empty; `backends` globs that each name a
/// configured backend (one that names none is most likely a typo); `access` only with `[auth]`.
pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    if config.endpoints.len() > MAX_ENDPOINTS {
        return Err(invalid(
            "endpoint",
            format!("at most {MAX_ENDPOINTS} endpoints"),
        ));
    }
    for (i, e) in config.endpoints.iter().enumerate() {
        let field = |f: &str| format!("endpoint[{i}].{f}");
        let path_ok = e.path.starts_with('/')
            && e.path.len() > 1
            && !e.path.ends_with('/')
            && e.path.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~')
            })
            && !e.path.contains("//");
        if !path_ok {
            return Err(invalid(
                field("path"),
                format!(
                    "{:?} must start with /, not end with /, and hold only letters, digits and - _ . ~ /",
                    e.path
                ),
            ));
        }
        let reserved = RESERVED.contains(&e.path.as_str())
            || e.path.starts_with("/.well-known/")
            || e.path == "/admin"
            || e.path.starts_with("/admin/");
        if reserved {
            return Err(invalid(
                field("path"),
                format!("{:?} is one of the gateway's own paths", e.path),
            ));
        }
        if let Some(j) = config.endpoints[..i].iter().position(|o| o.path == e.path) {
            return Err(invalid(
                field("path"),
                format!("{:?} is also endpoint[{j}]'s path", e.path),
            ));
        }
        if e.name.trim().is_empty() || e.name.chars().any(char::is_control) {
            return Err(invalid(field("name"), "must be a non-empty name"));
        }
        if let Some(j) = config.endpoints[..i].iter().position(|o| o.name == e.name) {
            return Err(invalid(
                field("name"),
                format!("{:?} is also endpoint[{j}]'s name", e.name),
            ));
        }
        for (k, glob) in e.backends.iter().flatten().enumerate() {
            let at = format!("{}[{k}]", field("backends"));
            if glob.is_empty() {
                return Err(invalid(at, "must not be empty"));
            }
            if !config.backends.iter().any(|b| glob_match(glob, &b.name)) {
                return Err(invalid(at, format!("{glob:?} names no configured backend")));
            }
        }
        for (kind, selection) in [
            ("tools", &e.tools),
            ("prompts", &e.prompts),
            ("resources", &e.resources),
        ] {
            let Some(s) = selection else { continue };
            let globs = s.allow.iter().flatten().chain(&s.deny);
            if globs.into_iter().any(|g| g.is_empty()) {
                return Err(invalid(field(kind), "globs must not be empty"));
            }
        }
        if let Some(access) = &e.access {
            if !config.auth.enabled() {
                return Err(invalid(
                    field("access"),
                    "access rules need authentication: configure [[auth.api_key]] or [auth.jwt]",
                ));
            }
            let lists = [&access.principals, &access.groups, &access.scopes];
            if lists.iter().any(|l| l.iter().any(String::is_empty)) {
                return Err(invalid(field("access"), "entries must not be empty"));
            }
        }
    }
    Ok(())
}
