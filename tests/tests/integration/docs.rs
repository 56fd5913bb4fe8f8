//! The docs' commands work as pasted (issue 10 §4), README.md's and the book's (docs/src): each block found
//! by its marker (`<!-- test: NAME`, see `support::doc_block`) and run — ports replaced by free ones, the
//! binary the one under test, every run bounded — or, where it needs what a test cannot have here (a
//! release build, the network), checked for what it names: files, packages, the binary's subcommands.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::interop::peers::run_bounded;
use crate::support::*;

/// The fenced `sh` block marked `<!-- test: NAME`.
fn sh(name: &str) -> String {
    doc_block(name, "sh")
}

/// `PATH` with the directory of the binary under test first, so that `mcpgw` in a block is that binary.
fn path_with_mcpgw() -> String {
    let bin_dir = mcpgw().parent().unwrap().to_owned();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn the_demo_curl_examples_work_against_the_demo_config() {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    let gw = start(cmd, "mcpgw listening on ");
    let addr = gw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let script = sh("demo-curl").replace("127.0.0.1:7800", &addr);
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script]);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "the docs' curl examples failed:\n{stdout}\n{stderr}");
    let answers: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(answers.len(), 2, "two JSON-RPC answers: {stdout}");
    assert_eq!(
        answers[0]["result"]["content"][0]["text"], "hello from curl",
        "{stdout}"
    );
    assert_eq!(answers[1]["id"], 2, "{stdout}");
    assert_eq!(
        answers[1]["result"]["structuredContent"]["sum"], 42,
        "{stdout}"
    );
}

#[test]
fn the_docs_two_replicas_serve_one_session() {
    let path = path_with_mcpgw();
    let script = sh("replicas")
        .replace("127.0.0.1:7811", &format!("127.0.0.1:{}", free_port()))
        .replace("127.0.0.1:7812", &format!("127.0.0.1:{}", free_port()));
    let dir = TempDir::new("docs-replicas");
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .current_dir(&dir.0)
        .env("PATH", path)
        .env_remove("MCPGW_SESSION_KEYS");
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(ok, "the docs' replicas example failed:\n{stdout}\n{stderr}");
    let answer: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {stdout}\n{stderr}"));
    assert_eq!(
        answer["result"]["structuredContent"]["sum"], 42,
        "the second replica served the first one's session: {stdout}"
    );
}

#[test]
fn the_docs_api_key_example_works() {
    let dir = TempDir::new("docs-api-key");
    let path = path_with_mcpgw();
    let script =
        sh("security-api-key").replace("127.0.0.1:7830", &format!("127.0.0.1:{}", free_port()));
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .current_dir(&dir.0)
        .env("PATH", path);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(ok, "the docs' API-key example failed:\n{stdout}\n{stderr}");
    let answer: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {stdout}\n{stderr}"));
    assert!(
        answer["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "the key was accepted and the tools listed: {answer}"
    );
    let config = std::fs::read_to_string(dir.0.join("secure.toml")).unwrap();
    let key = std::fs::read_to_string(dir.0.join("alice.key")).unwrap();
    assert!(
        !config.contains(key.trim()),
        "the config holds the digest, not the key"
    );
}

/// The docs' JWT and OAuth configs (Security) start as they are (their JWK URL pointed at a closed loopback
/// port: tests reach no other host), refuse a request without a token with the challenge the page shows, and
/// serve the metadata document it describes.
#[test]
fn the_docs_jwt_and_oauth_configs_start_and_challenge_as_described() {
    for (block, resource_metadata) in [
        ("security-jwt", None),
        (
            "security-oauth",
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
        ),
    ] {
        let dir = TempDir::new(block);
        let config = doc_block(block, "toml").replace(
            "https://login.example.com/.well-known/jwks.json",
            "http://127.0.0.1:9/jwks",
        );
        let gw = gateway(&config, &dir);
        let r = post_raw(&gw.url, &JSON_HEADERS, "{}");
        assert_eq!(r.status, 401, "{block}: {r:?}");
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer realm=\"mcpgw\""),
            "{block}: {challenge}"
        );
        assert!(
            !challenge.contains("error="),
            "{block}: no token, no error: {challenge}"
        );
        let base = gw.url.trim_end_matches("/mcp");
        let doc = client()
            .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .send()
            .unwrap();
        match resource_metadata {
            None => assert_eq!(doc.status().as_u16(), 404, "{block}: no OAuth, no document"),
            Some(url) => {
                assert!(
                    challenge.contains(&format!("resource_metadata=\"{url}\"")),
                    "{block}: {challenge}"
                );
                assert!(
                    challenge.contains("scope=\"mcp:tools demo\""),
                    "{challenge}"
                );
                assert_eq!(doc.status().as_u16(), 200);
                let doc: serde_json::Value = doc.json().unwrap();
                assert_eq!(doc["resource"], "https://mcp.example.com/mcp");
                assert_eq!(
                    doc["authorization_servers"],
                    serde_json::json!(["https://login.example.com/"])
                );
            }
        }
    }
}

/// The docs' policy example (Policy and rate limits), with API keys for alice (group ops) and bob: bob lists one tool, alice every
/// tool but those that may be destructive (the mock's `fail` says nothing, so it may be).
#[test]
fn the_docs_policy_example_filters_each_principals_list() {
    const ALICE: &str = "docs-alice-key-3f9a1c7e5b2d4a6c7d";
    const BOB: &str = "docs-bob-key-8e2c4a6f0b1d3e5a7c9f";
    let digest = crate::auth::api_keys::digest_of;
    let config = format!(
        "{}\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\n[[auth.api_key]]\nprincipal = \"bob\"\ndigest = \"{}\"\n",
        doc_block("security-policy", "toml"),
        digest(ALICE),
        digest(BOB)
    );
    let dir = TempDir::new("docs-policy");
    let gw = gateway(&config, &dir);
    let tools = |key: &str| -> Vec<String> {
        let auth = format!("Bearer {key}");
        let r = modern_request(
            &gw.url,
            "tools/list",
            serde_json::json!({}),
            &[("Authorization", auth.as_str())],
        );
        assert_eq!(r.status, 200, "{r:?}");
        let v = r.json();
        assert_eq!(v["result"]["cacheScope"], "private", "{v}");
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(tools(BOB), ["demo__echo"]);
    let alice = tools(ALICE);
    assert!(
        alice.contains(&"demo__echo".to_owned()) && alice.contains(&"demo__add".to_owned()),
        "{alice:?}"
    );
    assert!(!alice.contains(&"demo__fail".to_owned()), "{alice:?}");
}

/// The docs' rate-limit config starts as it is and refuses over its limits as described: calls beyond
/// the burst are tool errors with `retryAfterMs`, lists beyond theirs 429 with `Retry-After` and -32000.
#[test]
fn the_docs_rate_limit_config_starts_and_refuses_over_the_limit() {
    let dir = TempDir::new("docs-rate-limit");
    let gw = gateway(&doc_block("security-rate-limit", "toml"), &dir);
    let started = std::time::Instant::now();
    let (mut admitted, mut refused) = (0, 0);
    for i in 0..10 {
        let reply = modern_request(
            &gw.url,
            "tools/call",
            serde_json::json!({"name": "demo__echo", "arguments": {"text": format!("c{i}")}}),
            &[],
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let v = reply.json();
        if v["result"]["isError"] == true {
            assert!(
                v["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("rate limited: retry after ")),
                "{v}"
            );
            assert!(v["result"]["_meta"]["retryAfterMs"].is_u64(), "{v}");
            refused += 1;
        } else {
            admitted += 1;
        }
    }
    // burst 5, 1 a second: at most the page's bound.
    let bound = 5.0 + started.elapsed().as_secs_f64() + 0.25;
    assert!(
        admitted >= 5 && f64::from(admitted) <= bound,
        "{admitted} admitted"
    );
    assert_eq!(admitted + refused, 10);
    let statuses: Vec<u16> = (0..5)
        .map(|_| modern_request(&gw.url, "tools/list", serde_json::json!({}), &[]))
        .map(|reply| {
            if reply.status == 429 {
                assert!(reply.header("retry-after").is_some(), "{reply:?}");
                assert_eq!(reply.json()["error"]["code"], -32000, "{reply:?}");
                assert!(
                    reply.json()["error"]["data"]["retryAfterMs"].is_u64(),
                    "{reply:?}"
                );
            }
            reply.status
        })
        .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses[0], 200, "{statuses:?}");
}

/// A log line with its tracing spans (`backend{backend=demo}: `) taken out, as the docs show log lines.
fn without_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('{') {
        let word_start = rest[..open]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        match rest[open..].find("}: ") {
            Some(close) if word_start < open => {
                out.push_str(&rest[..word_start]);
                rest = &rest[open + close + 3..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `actual` is the line `expected` shows: equal, or, where `expected` has `...` (text left out),
/// its other parts in order.
fn shows(expected: &str, actual: &str) -> bool {
    let actual = without_spans(actual);
    if !expected.contains("...") {
        return expected.trim_end() == actual.trim_end();
    }
    let mut rest = actual.as_str();
    for part in expected.split("...").filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn output_lines_match_with_text_left_out() {
    assert!(shows(
        "... INFO backend ready generation=2026-07-28 transport=Stdio",
        "2026-12-07T02:46:15.995561Z  INFO backend{backend=demo}: backend ready generation=2026-07-28 transport=Stdio"
    ));
    assert!(shows(
        "... INFO backend process started backend=demo ...",
        "T  INFO backend{backend=demo}: backend process started backend=demo pid=Some(1) program=/x"
    ));
    assert!(!shows(
        "... INFO backend ready generation=2026-07-28 ...",
        "T  INFO backend ready generation=2025-11-25"
    ));
    assert!(shows("ok: done", "ok: done"));
    assert!(!shows("ok: done", "ok: done, mostly"));
    assert_eq!(without_spans("a {b} c"), "a {b} c");
}

/// The command of a one-line block (its comment dropped), `cargo run --release -p gateway --` and `mcpgw`
/// both meaning the binary under test; the arguments after `mcpgw`.
fn mcpgw_args(block: &str) -> Vec<String> {
    let lines: Vec<&str> = block
        .lines()
        .map(|l| l.split(" #").next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one command: {block}");
    let command = lines[0];
    let args = if let Some(rest) = command.strip_prefix("cargo run --release -p gateway --") {
        assert_package_builds_mcpgw("gateway");
        rest
    } else {
        command
            .strip_prefix("mcpgw")
            .unwrap_or_else(|| panic!("a command of mcpgw: {command}"))
    };
    args.split_whitespace().map(str::to_owned).collect()
}

/// The directory `dir` (from the repository's root) is the package `gateway`, whose binary is `mcpgw`.
fn assert_package_builds_mcpgw(dir: &str) {
    let manifest = repo_root().join(dir).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let toml: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(toml["package"]["name"].as_str(), Some("gateway"), "{dir}");
    let bins = toml["bin"].as_array().expect("[[bin]] tables");
    assert!(
        bins.iter().any(|b| b["name"].as_str() == Some("mcpgw")),
        "{dir} builds mcpgw"
    );
}

/// Install: `cargo install --locked --path gateway` (README and Getting started) names the package that
/// builds `mcpgw`, and the lock file `--locked` needs is there. (A release build of ~8 minutes is not run
/// here; the debug build every test uses is the same code.)
#[test]
fn the_docs_install_command_names_the_package_of_mcpgw() {
    for name in ["readme-install", "install"] {
        let block = sh(name);
        assert_eq!(
            block.trim(),
            "cargo install --locked --path gateway --profile dist",
            "{name}"
        );
        let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("\n[profile.dist]\n"),
            "the workspace defines the dist profile"
        );
        assert_package_builds_mcpgw("gateway");
        assert!(
            repo_root().join("Cargo.lock").is_file(),
            "--locked needs Cargo.lock"
        );
    }
}

/// The first run (README's `mcpgw serve`, Getting started's `cargo run --release -p gateway -- serve`):
/// the binary under test, run as the block says on a free port (`--listen` added), prints every line the
/// page shows after it — the address the one it was given, the workers this machine's cores.
#[test]
fn the_first_run_prints_what_the_docs_show() {
    for name in ["readme-first-run", "first-run-cargo"] {
        let args = mcpgw_args(&sh(name));
        assert_eq!(args, ["serve"], "{name}");
        let port = free_port();
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let expected: Vec<String> = doc_output(name)
            .replace("127.0.0.1:7800", &format!("127.0.0.1:{port}"))
            .replace(" 2 workers)", &format!(" {cores} workers)"))
            .lines()
            .map(str::to_owned)
            .collect();
        let mut child = Command::new(mcpgw())
            .args(&args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut printed: Vec<String> = Vec::new();
        let missing = |printed: &[String]| -> Vec<String> {
            expected
                .iter()
                .filter(|e| !printed.iter().any(|p| shows(e, p)))
                .cloned()
                .collect()
        };
        while !missing(&printed).is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => printed.push(line),
                Err(_) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let missing = missing(&printed);
        assert!(
            missing.is_empty(),
            "{name}: lines the docs show and mcpgw did not print: {missing:#?}\nprinted:\n{}",
            printed.join("\n")
        );
    }
}

/// `mcpgw check` on the demo config (Getting started: `cargo run --release -p gateway -- check`) prints
/// the report the page shows, line for line (`...` for the path of the binary).
#[test]
fn the_demo_check_prints_the_report_the_docs_show() {
    let args = mcpgw_args(&sh("check-demo"));
    assert_eq!(args, ["check"]);
    let bin = mcpgw();
    let file = bin.file_name().unwrap().to_string_lossy().into_owned();
    let expected = doc_output("check-demo").replace("/target/release/mcpgw", &format!("/{file}"));
    let mut cmd = Command::new(&bin);
    cmd.args(&args);
    let (ok, stdout, stderr) = run_bounded(cmd, Duration::from_secs(60));
    assert!(ok, "{stdout}\n{stderr}");
    let printed: Vec<&str> = stdout.lines().collect();
    let shown: Vec<&str> = expected.lines().collect();
    assert_eq!(
        printed.len(),
        shown.len(),
        "printed:\n{stdout}\nshown:\n{expected}"
    );
    for (shown, printed) in shown.iter().zip(&printed) {
        assert!(shows(shown, printed), "shown: {shown}\nprinted: {printed}");
    }
}

/// The quick start's commands (`mcpgw serve --config mcpgw.toml`, and in its comment `mcpgw serve
/// --mcp-json claude_desktop_config.json`), each with the file the page shows: the gateway starts and
/// listens (on a free port: `--listen` added). Its backends (`mcp-server-time`, `npx`, `uvx`) are not
/// started: `PATH` holds only the binary under test, so nothing is fetched from the network, and a backend
/// that cannot start leaves the gateway serving the others.
#[test]
fn the_quick_start_commands_start_the_gateway() {
    let block = sh("quick-start-serve");
    let (command, alternative) = block
        .trim()
        .split_once("# or: ")
        .expect("the alternative in the comment");
    let dir = TempDir::new("docs-quick-start");
    dir.file("mcpgw.toml", &doc_block("config-quick-start", "toml"));
    dir.file(
        "claude_desktop_config.json",
        &doc_block("mcp-json-claude", "json"),
    );
    let bin_dir = mcpgw().parent().unwrap().to_owned();
    for command in [command.trim(), alternative.trim()] {
        let args = mcpgw_args(command);
        let mut cmd = Command::new(mcpgw());
        cmd.args(&args)
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(&dir.0)
            .env("PATH", &bin_dir);
        let gw = start(cmd, "mcpgw listening on ");
        assert!(gw.url.ends_with("/mcp"), "{command}: {}", gw.url);
    }
}

/// The quick start's curl request, run as pasted against a gateway whose backend `time` is the built-in
/// mock with its synthetic `tool_0` renamed `get_current_time` (the real `mcp-server-time` is not installed
/// here): the request as written is accepted, routed to `time__get_current_time` and answered.
#[test]
fn the_quick_start_curl_request_is_answered() {
    let dir = TempDir::new("docs-quick-start-curl");
    let gw = gateway(
        "[[backend]]\nname = \"time\"\nbuiltin = [\"mock-backend\", \"--tools\", \"1\"]\n\n[backend.rename]\ntool_0 = \"get_current_time\"\n",
        &dir,
    );
    let addr = gw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let script = sh("quick-start-curl").replace("127.0.0.1:7800", addr);
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script]);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "{stdout}\n{stderr}");
    let answer: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["isError"],
        serde_json::Value::Null,
        "{answer}"
    );
    assert!(
        answer["result"]["content"][0]["text"].is_string(),
        "{answer}"
    );
}

/// The CORS preflight (Configuration, "Browsers (CORS)"), run as pasted against a gateway with the page's
/// `cors_allowed_origins`: 204 with the headers the page lists.
#[test]
fn the_cors_preflight_is_answered_as_described() {
    let dir = TempDir::new("docs-cors");
    let config = format!(
        "{}\n[[backend]]\nname = \"demo\"\nbuiltin = [\"mock-backend\"]\n",
        doc_block("config-cors", "toml")
    );
    let gw = gateway(&config, &dir);
    let addr = gw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let script = sh("cors-preflight").replace("127.0.0.1:7800", addr);
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script]);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "{stdout}\n{stderr}");
    let head = stdout.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 204"), "{stdout}");
    for header in [
        "access-control-allow-origin: http://localhost:6274",
        "access-control-allow-methods: get, post, delete, options",
        "access-control-max-age: 600",
        "vary: origin",
    ] {
        assert!(head.contains(header), "{header}:\n{stdout}");
    }
    assert!(
        !head.contains("access-control-allow-credentials"),
        "{stdout}"
    );
}

/// The admin listener's examples (Operating mcpgw): the page's `[admin]` config (its port a free one), the
/// metrics scrape filtered to `mcpgw_requests_total`, and a reload, each run as pasted.
#[test]
fn the_admin_examples_work() {
    let dir = TempDir::new("docs-admin");
    let admin = doc_block("config-admin", "toml");
    assert!(admin.contains("\"127.0.0.1:7801\""), "{admin}");
    let config = format!(
        "{}\n[[backend]]\nname = \"demo\"\nbuiltin = [\"mock-backend\"]\n",
        admin.replace("127.0.0.1:7801", "127.0.0.1:0")
    );
    let gw = gateway(&config, &dir);
    let base = admin_base(&gw);
    let r = modern_request(&gw.url, "tools/list", serde_json::json!({}), &[]);
    assert_eq!(r.status, 200, "{r:?}");
    let run = |name: &str| {
        let script = sh(name).replace("http://127.0.0.1:7801", &base);
        let mut bash = Command::new("bash");
        bash.args(["-euo", "pipefail", "-c", &script]);
        let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
        assert!(ok, "{name}:\n{stdout}\n{stderr}");
        stdout
    };
    let metrics = run("metrics-curl");
    assert!(
        !metrics.is_empty()
            && metrics
                .lines()
                .all(|l| l.starts_with("mcpgw_requests_total{")),
        "{metrics}"
    );
    assert!(metrics.contains("method=\"tools/list\""), "{metrics}");
    let reload: serde_json::Value = serde_json::from_str(run("admin-reload").trim()).unwrap();
    assert!(reload.is_object(), "{reload}");
}

/// The mock backend's two example commands (Load testing) start as written: the HTTP one (on a free port)
/// answers a `tools/list`, the stdio one (50 synthetic tools of 4,096 bytes) a call of its last tool.
#[test]
fn the_mock_backend_commands_start_as_written() {
    let block = sh("mock-backend-commands");
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 2, "{block}");
    let http = mcpgw_args(&lines[0].replace("127.0.0.1:7900", "127.0.0.1:0"));
    let mut cmd = Command::new(mcpgw());
    cmd.args(&http);
    let mock = start(cmd, "mock-backend listening on ");
    let r = modern_request(&mock.url, "tools/list", serde_json::json!({}), &[]);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.json()["result"]["tools"].is_array(), "{r:?}");

    let stdio = lines[1].trim();
    assert!(stdio.starts_with("mcpgw mock-backend --stdio "), "{stdio}");
    let request = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "tool_49", "arguments": {}}});
    let mut bash = Command::new("bash");
    bash.args([
        "-euo",
        "pipefail",
        "-c",
        &format!("printf '%s\\n' \"$REQUEST\" | {stdio}"),
    ])
    .env("REQUEST", request.to_string())
    .env("PATH", path_with_mcpgw());
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "{stdout}\n{stderr}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(4096),
        "{answer}"
    );
}

/// `.ci/run` (Running the tests) is there, executable, and runs the cargo steps the page lists as written.
#[test]
fn the_test_command_runs_the_steps_the_docs_list() {
    assert_eq!(
        sh("ci-run").split(" #").next().unwrap_or_default().trim(),
        ".ci/run"
    );
    let script = repo_root().join(".ci/run");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&script).unwrap().permissions());
    assert!(mode & 0o111 != 0, ".ci/run is executable");
    let text = std::fs::read_to_string(&script).unwrap();
    let page = std::fs::read_to_string(repo_root().join("docs/src/testing.md")).unwrap();
    for step in [
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --all-targets --locked -- -D warnings",
        "cargo test --workspace --locked",
        "FUZZ_SECONDS",
    ] {
        assert!(page.contains(step), "testing.md lists {step}");
        assert!(text.contains(step), ".ci/run runs {step}");
    }
}
