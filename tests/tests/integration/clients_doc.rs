//! The client snippets of docs/src/clients.md (issue 35 §1), each run where a client exists here and checked
//! for shape where it does not: `mcpgw tools`/`mcpgw call` and the Python and TypeScript SDK programs run
//! against a gateway and print what the page shows; Claude Desktop's command line and the stdio bridge run
//! over stdio; the URLs and headers of Claude Code, Cursor and VS Code reach a gateway with `[auth]`.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::interop::peers::{deps, run_bounded};
use crate::support::*;

/// The API key the `[auth]` gateway of these tests accepts.
const KEY: &str = "clients-doc-key-0123456789abcdefghij";

/// The demo config's gateway, on a free port; its endpoint URL.
fn demo_gateway() -> Running {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    start(cmd, "mcpgw listening on ")
}

/// A gateway with `[auth]` accepting [`KEY`], in front of the stdio mock (tools `m__*`).
fn secured_gateway(dir: &TempDir) -> Running {
    let config = format!(
        "{}\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\n",
        one_stdio_mock(&[]),
        crate::auth::api_keys::digest_of(KEY)
    );
    gateway(&config, dir)
}

/// A 2026-07-28 `tools/list` to `url` with `headers`: the HTTP status and the body.
fn list_with(url: &str, headers: &serde_json::Map<String, Value>) -> (u16, Value) {
    let mut req = client()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list");
    for (name, value) in headers {
        req = req.header(name.as_str(), value.as_str().unwrap());
    }
    let resp = req
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().unwrap_or(Value::Null))
}

fn path_with_mcpgw() -> String {
    format!(
        "{}:{}",
        mcpgw().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn the_cli_snippet_prints_what_the_page_shows() {
    let gw = demo_gateway();
    let mut bash = Command::new("bash");
    bash.args(["-uo", "pipefail", "-c", &doc_block("client-cli", "sh")])
        .env("PATH", path_with_mcpgw())
        .env("MCPGW_URL", &gw.url)
        .env_remove("RUST_LOG");
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, doc_output("client-cli"), "{stderr}");
    assert!(
        stderr.contains("mcpgw call: demo__fail answered with a tool error:\nas asked"),
        "{stderr}"
    );
}

#[test]
fn the_readme_first_answer_prints_what_it_shows() {
    let gw = demo_gateway();
    let mut bash = Command::new("bash");
    bash.args([
        "-euo",
        "pipefail",
        "-c",
        &doc_block("readme-first-answer", "sh"),
    ])
    .env("PATH", path_with_mcpgw())
    .env("MCPGW_URL", &gw.url)
    .env_remove("RUST_LOG");
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, doc_output("readme-first-answer"), "{stderr}");
}

#[test]
fn the_claude_code_commands_name_the_endpoint() {
    let gw = demo_gateway();
    let block = doc_block("client-claude-code", "sh");
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 2, "{block}");
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            words[..5],
            ["claude", "mcp", "add", "--transport", "http"],
            "{line}"
        );
        assert_eq!(words[6], "http://127.0.0.1:7800/mcp", "{line}");
    }
    assert!(lines[1].contains("--header \"Authorization: Bearer $(cat alice.key)\""));
    // The URL it names is the MCP endpoint: the demo gateway answers there.
    let url = lines[0]
        .split_whitespace()
        .nth(6)
        .unwrap()
        .replace("http://127.0.0.1:7800/mcp", &gw.url);
    let (status, body) = list_with(&url, &serde_json::Map::new());
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
}

#[test]
fn the_claude_desktop_command_line_serves_over_stdio() {
    let dir = TempDir::new("clients-desktop");
    let snippet: Value = serde_json::from_str(&doc_block("client-claude-desktop", "json")).unwrap();
    let server = &snippet["mcpServers"]["mcpgw"];
    assert_eq!(server["command"], "mcpgw");
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[..3], ["serve", "--stdio", "--config"], "{args:?}");
    assert_eq!(args.len(), 4, "{args:?}");
    // The same command line, the config path being a real one.
    let config = dir.file("mcpgw.toml", &one_stdio_mock(&[]));
    let mut gw = StdioGateway::start(&config);
    let answer = gw.ask(&modern_call("m__echo", json!({"text": "from a host"})));
    assert_eq!(
        answer["result"]["content"][0]["text"], "from a host",
        "{answer}"
    );
    assert!(gw.close_and_wait(Duration::from_secs(10)).is_some());
}

#[test]
fn the_stdio_bridge_reaches_a_gateway_with_auth() {
    let dir = TempDir::new("clients-bridge");
    let remote = secured_gateway(&dir);
    let key_file = dir.file("alice.key", &format!("{KEY}\n"));
    let bridge = doc_block("client-stdio-bridge", "toml")
        .replace("http://127.0.0.1:7800/mcp", &remote.url)
        .replace("/home/me/alice.key", key_file.to_str().unwrap());
    let config = dir.file("bridge.toml", &bridge);
    let mut gw = StdioGateway::start(&config);
    // Its backend comes up in the background: asked until the remote gateway's tool is there.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = gw.ask(&modern_call("m__echo", json!({"text": "bridged"})));
        if answer["result"]["content"][0]["text"] == "bridged" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never bridged: {answer}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_cursor_and_vs_code_headers_authenticate() {
    let dir = TempDir::new("clients-editors");
    let gw = secured_gateway(&dir);
    let cursor: Value = serde_json::from_str(&doc_block("client-cursor", "json")).unwrap();
    let cursor = &cursor["mcpServers"]["mcpgw"];
    let vscode: Value = serde_json::from_str(&doc_block("client-vscode", "json")).unwrap();
    let input = &vscode["inputs"][0];
    assert_eq!(input["type"], "promptString");
    assert_eq!(input["password"], true);
    let id = input["id"].as_str().unwrap();
    let vscode = &vscode["servers"]["mcpgw"];
    assert_eq!(vscode["type"], "http");
    // (the server entry, the placeholder its editor fills in)
    let placeholder = format!("${{input:{id}}}");
    for (server, fills) in [(cursor, "${env:MCPGW_KEY}"), (vscode, placeholder.as_str())] {
        assert_eq!(server["url"], "http://127.0.0.1:7800/mcp", "{server}");
        let url = gw.url.clone();
        let mut headers = server["headers"].as_object().unwrap().clone();
        let (status, _) = list_with(&url, &serde_json::Map::new());
        assert_eq!(status, 401, "without the header");
        for value in headers.values_mut() {
            let text = value.as_str().unwrap();
            assert!(text.contains(fills), "{text}");
            *value = Value::String(text.replace(fills, KEY));
        }
        let (status, body) = list_with(&url, &headers);
        assert_eq!(status, 200, "{server}: {body}");
        assert!(
            body["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        );
    }
}

#[test]
fn the_inspector_command_names_its_package() {
    let block = doc_block("client-inspector", "sh");
    assert_eq!(block.trim(), "npx @modelcontextprotocol/inspector");
    // Its direct mode's origin is what the CORS block allows.
    let cors = doc_block("config-inspector-cors", "toml");
    assert!(cors.contains("\"http://localhost:6274\""), "{cors}");
}

/// The Inspector's command-line mode (`@modelcontextprotocol/inspector`, installed in the interop fixture:
/// `npx` runs that same package's `mcp-inspector`), its profile in a directory of its own.
#[test]
fn the_inspector_cli_prints_what_the_page_shows() {
    let Some(deps) = deps("clients_doc inspector") else {
        return;
    };
    let gw = demo_gateway();
    let block = doc_block("client-inspector-cli", "sh");
    let args = block
        .trim()
        .strip_prefix("npx @modelcontextprotocol/inspector ")
        .expect("the snippet runs the Inspector with npx")
        .replace("http://127.0.0.1:7800/mcp", &gw.url);
    let home = TempDir::new("clients-inspector");
    let mut cmd = Command::new(&deps.node);
    cmd.arg(deps.dir.join("node_modules/.bin/mcp-inspector"))
        .args(args.split_whitespace())
        .env("HOME", &home.0)
        .env("NO_PROXY", "127.0.0.1,localhost");
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(60));
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, doc_output("client-inspector-cli"), "{stderr}");
}

#[test]
fn the_python_sdk_snippet_prints_what_the_page_shows() {
    let Some(deps) = deps("clients_doc python") else {
        return;
    };
    let gw = demo_gateway();
    let dir = TempDir::new("clients-python");
    let script = doc_block("client-python", "python").replace("http://127.0.0.1:7800/mcp", &gw.url);
    let path = dir.file("snippet.py", &script);
    let mut cmd = Command::new(&deps.python);
    cmd.arg(path).env("NO_PROXY", "127.0.0.1,localhost");
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(60));
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, doc_output("client-python"), "{stderr}");
}

#[test]
fn the_typescript_sdk_snippet_prints_what_the_page_shows() {
    let Some(deps) = deps("clients_doc typescript") else {
        return;
    };
    let gw = demo_gateway();
    let script = doc_block("client-typescript", "js").replace("http://127.0.0.1:7800/mcp", &gw.url);
    // Beside the fixture's node_modules, where the SDK is installed; removed afterwards.
    let path = deps
        .dir
        .join(format!(".clients-doc-{}.mjs", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let mut cmd = Command::new(&deps.node);
    cmd.arg(&path).env("NO_PROXY", "127.0.0.1,localhost");
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(60));
    let _ = std::fs::remove_file(&path);
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, doc_output("client-typescript"), "{stderr}");
}

/// A 2026-07-28 `tools/call` as one stdio line.
fn modern_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": name, "arguments": arguments}})
}
