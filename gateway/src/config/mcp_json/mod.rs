//! The JSON files MCP hosts write their servers in, in either of the two shapes in use:
//!
//! - Claude Desktop (and most hosts): `{"mcpServers": {"time": {"command": "uvx", "args": [...], "env": {...},
//!   "cwd": "..."}, "remote": {"url": "..."}}}`;
//! - VS Code (`.vscode/mcp.json`): `{"servers": {"time": {"type": "stdio", "command": ..., "args": ...},
//!   "remote": {"type": "http" | "sse", "url": "..."}}}`.
//!
//! Each server becomes a `[[backend]]` named by its key. `type` is optional wherever it can be inferred
//! (`command`: stdio, `url`: HTTP); `"sse"` (and `"streamable-http"`) is an HTTP backend like `"http"`, since
//! the gateway probes an HTTP backend's era itself (Streamable HTTP of either era, else 2024-11-05 HTTP+SSE).
//! Every error names the server's field as written in the file (`mcpServers.time.command`), never an index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{BackendEntry, Config, ConfigError, ServerConfig, invalid};

/// The two top-level keys, by host.
const CLAUDE: &str = "mcpServers";
const VS_CODE: &str = "servers";

/// Fields hosts write that mcpgw cannot honour: an error rather than a backend that silently misbehaves.
const UNSUPPORTED: [(&str, &str); 2] = [
    (
        "headers",
        "per-server HTTP headers are not supported by mcpgw",
    ),
    ("envFile", "not supported: put the variables in \"env\""),
];

/// Reads a host's servers file (either shape) into a config (with default `[server]` settings), validated.
pub fn from_mcp_json(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        error,
    })?;
    from_mcp_json_str(&text, path)
}

pub(super) fn from_mcp_json_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let root: Value = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let Value::Object(root) = root else {
        return Err(invalid(
            CLAUDE,
            "the file must be a JSON object holding \"mcpServers\" (Claude Desktop) or \"servers\" (VS Code)",
        ));
    };
    let (key, servers) = match (root.get(CLAUDE), root.get(VS_CODE)) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                format!("{CLAUDE}, {VS_CODE}"),
                "the file has both keys: give \"mcpServers\" (Claude Desktop) or \"servers\" (VS Code), not both",
            ));
        }
        (None, None) => {
            return Err(invalid(
                CLAUDE,
                "missing: give \"mcpServers\" (Claude Desktop) or \"servers\" (VS Code)",
            ));
        }
        (Some(s), None) => (CLAUDE, s),
        (None, Some(s)) => (VS_CODE, s),
    };
    let Value::Object(servers) = servers else {
        return Err(invalid(key, "must be an object of servers by name"));
    };
    let mut backends = Vec::new();
    for (name, server) in servers {
        if let Some(entry) = backend(key, name, server)? {
            backends.push(entry);
        }
    }
    let config = Config {
        server: ServerConfig::default(),
        backends,
        middlewares: Vec::new(),
        cluster: Default::default(),
        auth: Default::default(),
        policies: Vec::new(),
        rate_limits: Vec::new(),
        traces: None,
        admin: Default::default(),
        telemetry: Default::default(),
        catalog: Default::default(),
        endpoints: Vec::new(),
        egress: Default::default(),
        authorization: Default::default(),
        redaction: None,
        interceptors: Vec::new(),
    };
    config.validate().map_err(|e| rename(e, key, &config))?;
    Ok(config)
}

/// How a server is reached, from its `type` or, without one, from its fields.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Stdio,
    Http,
}

/// One server's entry, or `None` when it is `"disabled": true`.
fn backend(key: &str, name: &str, server: &Value) -> Result<Option<BackendEntry>, ConfigError> {
    let at = format!("{key}.{name}");
    let Value::Object(server) = server else {
        return Err(invalid(at, "must be an object"));
    };
    let field = |f: &str| format!("{at}.{f}");
    if get::<bool>(server, "disabled", &field, "true or false")? == Some(true) {
        return Ok(None);
    }
    let kind: Option<String> = get(server, "type", &field, "a string")?;
    let command: Option<String> = get(server, "command", &field, "a string")?;
    let args: Option<Vec<String>> = get(server, "args", &field, "an array of strings")?;
    let env: Option<BTreeMap<String, String>> = get(server, "env", &field, "an object of strings")?;
    let cwd: Option<PathBuf> = get(server, "cwd", &field, "a string")?;
    let url: Option<String> = get(server, "url", &field, "a string")?;
    for (unsupported, why) in UNSUPPORTED {
        if server.contains_key(unsupported) {
            return Err(invalid(field(unsupported), why));
        }
    }
    let kind = match kind.as_deref() {
        Some("stdio") => Kind::Stdio,
        Some("http" | "sse" | "streamable-http") => Kind::Http,
        Some(other) => {
            return Err(invalid(
                field("type"),
                format!("{other:?} is not a transport: give \"stdio\", \"http\" or \"sse\""),
            ));
        }
        None => match (&command, &url) {
            (Some(_), None) => Kind::Stdio,
            (None, Some(_)) => Kind::Http,
            (Some(_), Some(_)) => {
                return Err(invalid(
                    field("url"),
                    "give command (stdio) or url (http), not both",
                ));
            }
            (None, None) => {
                return Err(invalid(
                    field("command"),
                    "give command (stdio) or url (http)",
                ));
            }
        },
    };
    match kind {
        Kind::Stdio => {
            if command.is_none() {
                return Err(invalid(field("command"), "a stdio server needs a command"));
            }
            if url.is_some() {
                return Err(invalid(field("url"), "a stdio server takes no url"));
            }
        }
        Kind::Http => {
            if url.is_none() {
                return Err(invalid(field("url"), "an http server needs a url"));
            }
            let stdio_only = [
                ("command", command.is_some()),
                ("args", args.is_some()),
                ("env", env.is_some()),
                ("cwd", cwd.is_some()),
            ];
            if let Some((f, _)) = stdio_only.iter().find(|(_, given)| *given) {
                return Err(invalid(
                    field(f),
                    "applies to stdio servers only, not to an http one",
                ));
            }
        }
    }
    Ok(Some(BackendEntry {
        command: command.map(|c| std::iter::once(c).chain(args.unwrap_or_default()).collect()),
        env: env.unwrap_or_default(),
        cwd,
        url,
        builtin: None,
        openapi: None,
        base_url: None,
        operations: None,
        prefix: None,
        timeout_ms: None,
        max_in_flight: None,
        max_in_flight_per_caller: None,
        max_in_flight_per_session: None,
        max_message_bytes: None,
        max_stream_bytes: None,
        circuit: Default::default(),
        tool_timeouts_ms: BTreeMap::new(),
        tls_ca_file: None,
        tls_client_cert_file: None,
        tls_client_key_file: None,
        tls_server_name: None,
        tls_insecure_skip_verify: false,
        http2: false,
        roots: Vec::new(),
        era: Default::default(),
        url_elicitation: Default::default(),
        tools: None,
        prompts: None,
        resources: None,
        rename: BTreeMap::new(),
        describe: BTreeMap::new(),
        auth: None,
        name: name.to_owned(),
    }))
}

/// The field `name` of a server, `None` when absent or `null`; a value of another type is an error saying
/// what it must be (`what`).
fn get<T: DeserializeOwned>(
    server: &Map<String, Value>,
    name: &str,
    field: &dyn Fn(&str) -> String,
    what: &str,
) -> Result<Option<T>, ConfigError> {
    match server.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|_| invalid(field(name), format!("must be {what}"))),
    }
}

/// A validation error about `backend[i].field` said as the file says it: `mcpServers.<name>.field` (the
/// name and prefix rules are about the server's key itself).
fn rename(error: ConfigError, key: &str, config: &Config) -> ConfigError {
    let ConfigError::Invalid { field, message } = error else {
        return error;
    };
    let named = field
        .strip_prefix("backend[")
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(index, rest)| {
            let backend = config.backends.get(index.parse::<usize>().ok()?)?;
            let at = format!("{key}.{}", backend.name);
            Some(match rest.strip_prefix('.') {
                None | Some("name" | "prefix") => at,
                Some(rest) => format!("{at}.{rest}"),
            })
        });
    ConfigError::Invalid {
        field: named.unwrap_or(field),
        message,
    }
}

#[cfg(test)]
mod tests;
