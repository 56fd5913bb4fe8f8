//! `[[middleware]]`: the built-in middlewares' places in the request pipeline, and library middlewares'
//! names.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

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

/// A built-in server's or library middleware's name: ASCII letters, digits, `_` and `-`, 1 to 64 of them.
pub(crate) fn is_server_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub(super) fn validate_middleware(i: usize, m: &MiddlewareEntry) -> Result<(), ConfigError> {
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
