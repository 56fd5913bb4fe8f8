//! The README's commands work as pasted (issue 10 §4): its curl examples against the demo config.

use std::process::Command;
use std::time::Duration;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// The fenced block that follows `<!-- test: NAME` in the README.
fn readme_block(name: &str) -> String {
    let readme = include_str!("../../../README.md");
    let after = readme
        .split(&format!("<!-- test: {name}"))
        .nth(1)
        .unwrap_or_else(|| panic!("README has no block marked {name}"));
    let block = after
        .split("```sh\n")
        .nth(1)
        .expect("a sh block follows the marker");
    block.split("\n```").next().unwrap_or_default().to_owned()
}

#[test]
fn the_readme_curl_examples_work_against_the_demo_config() {
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    let gw = start(cmd, "mcpgw listening on ");
    let addr = gw
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let script = readme_block("demo-curl").replace("127.0.0.1:7800", &addr);
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script]);
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(30));
    assert!(ok, "the README's curl examples failed:\n{stdout}\n{stderr}");
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
fn the_readme_two_replicas_serve_one_session() {
    let bin_dir = mcpgw().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = readme_block("replicas")
        .replace("127.0.0.1:7801", &format!("127.0.0.1:{}", free_port()))
        .replace("127.0.0.1:7802", &format!("127.0.0.1:{}", free_port()));
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .env("PATH", path)
        .env_remove("MCPGW_SESSION_KEYS");
    let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(60));
    assert!(
        ok,
        "the README's replicas example failed:\n{stdout}\n{stderr}"
    );
    let answer: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {stdout}\n{stderr}"));
    assert_eq!(
        answer["result"]["structuredContent"]["sum"], 42,
        "the second replica served the first one's session: {stdout}"
    );
}
