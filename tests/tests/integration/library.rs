//! Issue 38 §1, mcpgw as a library: the examples of `gateway/examples/` (binaries built with
//! `mcpgw::Gateway::builder()`, each the whole `mcpgw` command line with its own additions) started as
//! processes and asked over HTTP (both eras) and stdio.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{
    LegacyClient, Running, StdioGateway, TempDir, example, modern_request, start,
};

/// A backend `m`: the built-in mock, in-process.
const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

/// `example serve --config CONFIG` on a free loopback port.
fn serve(name: &str, config: &str, dir: &TempDir) -> Running {
    let path = dir.file("mcpgw.toml", config);
    let mut cmd = Command::new(example(name));
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info");
    start(cmd, "mcpgw listening on ")
}

fn call(url: &str, tool: &str, arguments: Value, headers: &[(&str, &str)]) -> Value {
    modern_request(
        url,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        headers,
    )
    .json()
}

fn stdio_line(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn the_founding_documents_auth_check_refuses_a_request_without_a_principal_for_its_own_id() {
    let dir = TempDir::new("library-auth-check");
    let key = "library-example-key-0123456789";
    let config = format!(
        "{MOCK}\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\n",
        crate::auth::api_keys::digest_of(key)
    );
    // Over HTTP with `[auth]`, every request that reaches the chain has a principal: it passes.
    let gw = serve("auth_check", &config, &dir);
    let bearer = format!("Bearer {key}");
    let answer = call(
        &gw.url,
        "m__echo",
        json!({"text": "hi"}),
        &[("Authorization", &bearer)],
    );
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    drop(gw);

    // Over stdio nobody is authenticated: the middleware answers at once, for the request's own id, in
    // both eras (a legacy `initialize` is a request of the chain too).
    let path = dir.file("stdio.toml", MOCK);
    let mut stdio = StdioGateway::start_bin(&example("auth_check"), &path);
    for id in [json!("a-string-id"), json!(77)] {
        let refused = stdio.ask(&stdio_line(
            id.clone(),
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": "hi"}}),
        ));
        assert_eq!(refused["id"], id, "{refused}");
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(refused["error"]["message"], "Unauthorized", "{refused}");
    }
    let init = stdio.ask(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "it", "version": "1"}}}),
    );
    assert_eq!(init["error"]["message"], "Unauthorized", "{init}");
}

#[test]
fn a_tool_served_in_process_is_listed_and_called_in_both_eras_beside_the_configs_backends() {
    let dir = TempDir::new("library-in-process-tool");
    let gw = serve("in_process_tool", MOCK, &dir);
    let list = modern_request(&gw.url, "tools/list", json!({}), &[]).json();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"greeter__greet"), "{names:?}");
    assert!(names.contains(&"m__echo"), "{names:?}");

    let greeted = call(&gw.url, "greeter__greet", json!({"name": "Ada"}), &[]);
    assert_eq!(
        greeted["result"]["content"][0]["text"], "Hello, Ada!",
        "{greeted}"
    );
    // The handler's error is a tool error the model reads.
    let empty = call(&gw.url, "greeter__greet", json!({"name": " "}), &[]);
    assert_eq!(empty["result"]["isError"], true, "{empty}");
    assert_eq!(
        empty["result"]["content"][0]["text"],
        "name must be a non-empty string"
    );

    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let greeted = legacy
        .request(
            "tools/call",
            json!({"name": "greeter__greet", "arguments": {"name": "Grace"}}),
        )
        .json();
    assert_eq!(
        greeted["result"]["content"][0]["text"], "Hello, Grace!",
        "{greeted}"
    );
}

#[test]
fn a_config_naming_a_server_or_middleware_the_binary_was_not_built_with_does_not_start() {
    let dir = TempDir::new("library-unknown");
    // The order docs/src/library.md shows: access_log, then the example's auth_check.
    let ordered = format!(
        "{MOCK}{}",
        crate::support::doc_block("config-library-order", "toml")
    );
    let cases = [
        (
            "[[backend]]\nname = \"g\"\nbuiltin = [\"greeter\"]\n",
            "mcpgw",
            "backend g: builtin names \"greeter\", which is not built into this binary (built in: mock-backend)",
        ),
        (
            "[[backend]]\nname = \"g\"\nbuiltin = [\"greeter\"]\n",
            "in_process_tool",
            "",
        ),
        (
            ordered.as_str(),
            "mcpgw",
            "no middleware named \"auth_check\" was added to this binary (added: none)",
        ),
        (ordered.as_str(), "auth_check", ""),
    ];
    for (config, bin, refused) in cases {
        let path = dir.file("check.toml", config);
        let bin = if bin == "mcpgw" {
            crate::support::mcpgw()
        } else {
            example(bin)
        };
        let out = Command::new(&bin)
            .args(["check", "--config"])
            .arg(&path)
            .output()
            .expect("check runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if refused.is_empty() {
            assert!(out.status.success(), "{bin:?} {config}: {stderr}");
        } else {
            assert!(!out.status.success(), "{bin:?} {config}");
            assert!(stderr.contains(refused), "{bin:?}: {stderr}");
        }
    }
}

#[test]
fn a_middleware_rewrites_the_arguments_the_backend_gets_and_refuses_with_a_tool_error() {
    let dir = TempDir::new("library-rewrite");
    let gw = serve("rewrite_arguments", MOCK, &dir);
    let echoed = call(&gw.url, "m__echo", json!({"text": "   padded   "}), &[]);
    assert_eq!(echoed["result"]["content"][0]["text"], "padded", "{echoed}");
    let long = "x".repeat(10_001);
    let refused = call(&gw.url, "m__echo", json!({"text": long}), &[]);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["content"][0]["text"],
        "argument text is longer than 10000 characters"
    );
    let mut legacy = LegacyClient::connect(&gw.url, "2025-11-25");
    let echoed = legacy
        .request(
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": "\tlegacy\n"}}),
        )
        .json();
    assert_eq!(echoed["result"]["content"][0]["text"], "legacy", "{echoed}");
}

/// The page's Rust blocks are the examples' own code, word for word.
#[test]
fn the_library_pages_code_is_the_examples_code_and_its_command_runs() {
    let root = crate::support::repo_root();
    for (block, example) in [
        ("library-auth-check", "auth_check"),
        ("library-tool", "in_process_tool"),
    ] {
        let code = crate::support::doc_block(block, "rust");
        let source =
            std::fs::read_to_string(root.join("gateway/examples").join(format!("{example}.rs")))
                .expect("the example's source");
        assert!(
            source.contains(code.trim()),
            "docs/src/library.md's {block} is not in gateway/examples/{example}.rs"
        );
    }
    // The dependency it names is this package and its library's name.
    let dependency = crate::support::doc_block("library-dependency", "toml");
    let table: toml::Table = toml::from_str(&dependency).expect("TOML");
    let mcpgw = &table["dependencies"]["mcpgw"];
    assert_eq!(mcpgw["package"].as_str(), Some("gateway"));
    let manifest: toml::Table = toml::from_str(
        &std::fs::read_to_string(root.join("gateway/Cargo.toml")).expect("gateway/Cargo.toml"),
    )
    .expect("TOML");
    assert_eq!(manifest["package"]["name"].as_str(), Some("gateway"));
    assert_eq!(manifest["lib"]["name"].as_str(), Some("mcpgw"));

    // The command: `cargo run -p gateway --example in_process_tool -- ARGS`, run as the built example with
    // ARGS (the config file named there, with a listen address of the test's).
    let command = crate::support::doc_block("library-run", "sh");
    let (run, args) = command
        .trim()
        .split_once(" -- ")
        .expect("cargo run … -- ARGS");
    assert_eq!(run, "cargo run -p gateway --example in_process_tool");
    let dir = TempDir::new("library-run");
    dir.file("mcpgw.toml", MOCK);
    let mut cmd = Command::new(example("in_process_tool"));
    cmd.args(args.split_whitespace())
        .args(["--listen", "127.0.0.1:0"])
        .current_dir(&dir.0)
        .env("RUST_LOG", "info");
    let gw = start(cmd, "mcpgw listening on ");
    let greeted = call(&gw.url, "greeter__greet", json!({"name": "docs"}), &[]);
    assert_eq!(
        greeted["result"]["content"][0]["text"], "Hello, docs!",
        "{greeted}"
    );
}
