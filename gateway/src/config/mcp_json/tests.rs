use std::path::Path;

use super::from_mcp_json_str;
use crate::config::{BackendTransport, Config};

fn load(text: &str) -> Result<Config, String> {
    from_mcp_json_str(text, Path::new("mcp.json")).map_err(|e| e.to_string())
}

fn stdio(command: &[&str]) -> BackendTransport {
    BackendTransport::Stdio {
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        env: Default::default(),
        cwd: None,
    }
}

fn http(url: &str) -> BackendTransport {
    BackendTransport::Http {
        url: url.to_owned(),
    }
}

#[test]
fn both_shapes_load_with_type_given_or_inferred() {
    let table: &[(&str, &[(&str, BackendTransport)])] = &[
        // Claude Desktop: no type; command means stdio, url means HTTP.
        (
            r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                               "remote": {"url": "http://127.0.0.1:1/mcp"}}}"#,
            &[
                ("remote", http("http://127.0.0.1:1/mcp")),
                ("time", stdio(&["uvx", "mcp-server-time"])),
            ],
        ),
        // Hosts that write a type in the Claude shape.
        (
            r#"{"mcpServers": {"r": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"}}}"#,
            &[("r", http("http://127.0.0.1:1/mcp"))],
        ),
        // VS Code: every type, and type left out.
        (
            r#"{"inputs": [], "servers": {
                 "a": {"type": "stdio", "command": "mcp-a"},
                 "b": {"type": "http", "url": "http://127.0.0.1:2/mcp"},
                 "c": {"type": "sse", "url": "http://127.0.0.1:3/sse"},
                 "d": {"command": "mcp-d", "args": ["-v"]},
                 "e": {"url": "https://127.0.0.1:4/mcp"}}}"#,
            &[
                ("a", stdio(&["mcp-a"])),
                ("b", http("http://127.0.0.1:2/mcp")),
                ("c", http("http://127.0.0.1:3/sse")),
                ("d", stdio(&["mcp-d", "-v"])),
                ("e", http("https://127.0.0.1:4/mcp")),
            ],
        ),
        // Disabled servers are left out; null fields are absent ones.
        (
            r#"{"servers": {"off": {"command": "x", "disabled": true},
                            "on": {"command": "y", "args": null, "disabled": false}}}"#,
            &[("on", stdio(&["y"]))],
        ),
        (r#"{"mcpServers": {}}"#, &[]),
    ];
    for (text, expected) in table {
        let config = load(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let got: Vec<(&str, BackendTransport)> = config
            .backends
            .iter()
            .map(|b| (b.name.as_str(), b.transport()))
            .collect();
        let expected: Vec<(&str, BackendTransport)> = expected.to_vec();
        assert_eq!(got, expected, "{text}");
    }
}

#[test]
fn env_and_cwd_reach_the_backend() {
    let c = load(r#"{"servers": {"t": {"command": "uvx", "env": {"TZ": "UTC"}, "cwd": "/srv"}}}"#)
        .unwrap();
    let t = &c.backends[0];
    assert_eq!(t.env.get("TZ").map(String::as_str), Some("UTC"));
    assert_eq!(t.cwd.as_deref(), Some(Path::new("/srv")));
}

/// The two shapes as the docs show them (Getting started, "Host config files") load into what the page says.
#[test]
fn the_docs_host_config_files_load_as_described() {
    let transports = |name: &str| -> Vec<(String, BackendTransport)> {
        let text = crate::docs_blocks::block(name, "json");
        let config = load(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        config
            .backends
            .iter()
            .map(|b| (b.name.clone(), b.transport()))
            .collect()
    };
    let with =
        |command: &[&str], env: &[(&str, &str)], cwd: Option<&str>| BackendTransport::Stdio {
            command: command.iter().map(|w| (*w).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: cwd.map(Into::into),
        };
    assert_eq!(
        transports("mcp-json-claude"),
        [
            ("remote".to_owned(), http("http://127.0.0.1:8000/mcp")),
            (
                "time".to_owned(),
                with(&["uvx", "mcp-server-time"], &[("TZ", "UTC")], None)
            ),
        ]
    );
    assert_eq!(
        transports("mcp-json-vscode"),
        [
            ("old".to_owned(), http("http://127.0.0.1:8001/sse")),
            ("remote".to_owned(), http("http://127.0.0.1:8000/mcp")),
            (
                "time".to_owned(),
                with(&["uvx", "mcp-server-time"], &[], Some("/srv"))
            ),
        ]
    );
}

#[test]
fn each_error_names_its_field() {
    let table = [
        // The top level.
        (r#"[]"#, "invalid config: mcpServers: "),
        (r#"{}"#, "invalid config: mcpServers: missing"),
        (
            r#"{"mcp_servers": {}}"#,
            "invalid config: mcpServers: missing",
        ),
        (
            r#"{"mcpServers": {}, "servers": {}}"#,
            "invalid config: mcpServers, servers: the file has both keys",
        ),
        (
            r#"{"servers": []}"#,
            "invalid config: servers: must be an object",
        ),
        // One server, in either shape.
        (
            r#"{"mcpServers": {"x": 1}}"#,
            "mcpServers.x: must be an object",
        ),
        (
            r#"{"mcpServers": {"x": {}}}"#,
            "mcpServers.x.command: give command",
        ),
        (
            r#"{"servers": {"x": {"command": "a", "url": "http://h"}}}"#,
            "servers.x.url: give command (stdio) or url (http), not both",
        ),
        (
            r#"{"servers": {"x": {"type": "websocket", "url": "ws://h"}}}"#,
            r#"servers.x.type: "websocket" is not a transport"#,
        ),
        (
            r#"{"servers": {"x": {"type": 3}}}"#,
            "servers.x.type: must be a string",
        ),
        (
            r#"{"servers": {"x": {"type": "stdio", "url": "http://h"}}}"#,
            "servers.x.command: a stdio server needs a command",
        ),
        (
            r#"{"servers": {"x": {"type": "stdio", "command": "a", "url": "http://h"}}}"#,
            "servers.x.url: a stdio server takes no url",
        ),
        (
            r#"{"servers": {"x": {"type": "sse", "command": "a"}}}"#,
            "servers.x.url: an http server needs a url",
        ),
        (
            r#"{"servers": {"x": {"type": "http", "url": "http://h", "args": ["a"]}}}"#,
            "servers.x.args: applies to stdio servers only",
        ),
        (
            r#"{"mcpServers": {"x": {"url": "http://h", "env": {"A": "1"}}}}"#,
            "mcpServers.x.env: applies to stdio servers only",
        ),
        (
            r#"{"mcpServers": {"time": {"command": 7}}}"#,
            "mcpServers.time.command: must be a string",
        ),
        (
            r#"{"mcpServers": {"time": {"command": "uvx", "args": "mcp-server-time"}}}"#,
            "mcpServers.time.args: must be an array of strings",
        ),
        (
            r#"{"mcpServers": {"time": {"command": "uvx", "env": {"TZ": 1}}}}"#,
            "mcpServers.time.env: must be an object of strings",
        ),
        (
            r#"{"mcpServers": {"time": {"command": "uvx", "disabled": "no"}}}"#,
            "mcpServers.time.disabled: must be true or false",
        ),
        (
            r#"{"servers": {"x": {"url": "http://h", "headers": {"Authorization": "t"}}}}"#,
            "servers.x.headers: per-server HTTP headers are not supported",
        ),
        (
            r#"{"servers": {"x": {"command": "a", "envFile": ".env"}}}"#,
            "servers.x.envFile: not supported",
        ),
        // What the config's own validation finds, said with the server's name.
        (
            r#"{"mcpServers": {"time": {"command": ""}}}"#,
            "invalid config: mcpServers.time.command: must name a program",
        ),
        (
            r#"{"servers": {"web": {"type": "http", "url": "ftp://h"}}}"#,
            "invalid config: servers.web.url: \"ftp://h\" must start with http://",
        ),
        (
            r#"{"mcpServers": {"my server": {"command": "a"}}}"#,
            "invalid config: mcpServers.my server: \"my server\" must be",
        ),
    ];
    for (text, expected) in table {
        let err = load(text).expect_err(text);
        assert!(
            err.contains(expected),
            "{text}: {err:?} does not say {expected:?}"
        );
        assert!(!err.contains("backend["), "{text}: {err:?} names an index");
    }
}

#[test]
fn a_file_that_is_not_json_is_a_parse_error_naming_it() {
    let err = load("{").unwrap_err();
    assert!(err.starts_with("mcp.json: "), "{err}");
}
