//! The de facto `mcpServers` JSON files MCP hosts use:
//! `{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}, "cwd": "..."} | {"url": "..."}}}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{BackendEntry, Config, ConfigError, ServerConfig};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    mcp_servers: BTreeMap<String, Server>,
}

#[derive(Deserialize)]
struct Server {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    /// Hosts write `"type": "stdio" | "http" | "sse" | "streamable-http"`; the transport follows from the
    /// other fields, so it is read and otherwise ignored.
    #[serde(rename = "type")]
    _kind: Option<String>,
    #[serde(default)]
    disabled: bool,
}

/// Reads an `mcpServers` file into a config (with default `[server]` settings), validated.
pub fn from_mcp_json(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    from_mcp_json_str(&text, path)
}

pub(super) fn from_mcp_json_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let file: File = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let backends = file
        .mcp_servers
        .into_iter()
        .filter(|(_, s)| !s.disabled)
        .map(|(name, s)| BackendEntry {
            command: s
                .command
                .map(|c| std::iter::once(c).chain(s.args).collect()),
            env: s.env,
            cwd: s.cwd,
            url: s.url,
            builtin: None,
            prefix: None,
            timeout_ms: None,
            max_in_flight: None,
            tls_ca_file: None,
            tls_client_cert_file: None,
            tls_client_key_file: None,
            tls_server_name: None,
            tls_insecure_skip_verify: false,
            roots: Vec::new(),
            name,
        })
        .collect();
    let config = Config {
        server: ServerConfig::default(),
        backends,
    };
    config.validate()?;
    Ok(config)
}
