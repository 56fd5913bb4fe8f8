//! `mcpgw tools` and `mcpgw call` (issue 35 §1), the real binary against a real gateway: a first tool answer
//! without JSON-RPC, in either era, with the token from a file, and every failure a clear line and exit 1.

use std::process::Command;
use std::time::Duration;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// `mcpgw ARGS`, bounded: (succeeded, stdout, stderr).
fn cli(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(mcpgw());
    cmd.args(args).env_remove("RUST_LOG");
    run_bounded(cmd, Duration::from_secs(60))
}

#[test]
fn tools_and_call_answer_in_either_era() {
    let dir = TempDir::new("cli-eras");
    let gw = gateway(&one_stdio_mock(&[]), &dir);
    let (ok, out, err) = cli(&["tools", "--url", &gw.url]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains(
            "m__echo  Returns the text it is given.\n    arguments: text (string, required)\n"
        ),
        "{out}"
    );
    assert!(out.lines().last().unwrap().ends_with(" tools"), "{out}");
    for era in ["auto", "legacy", "modern"] {
        let (ok, out, err) = cli(&[
            "call",
            "m__echo",
            r#"{"text": "hello from the cli"}"#,
            "--url",
            &gw.url,
            "--era",
            era,
        ]);
        assert!(ok, "{era}: {out}\n{err}");
        assert_eq!(out, "hello from the cli\n", "{era}: {err}");
        let (ok, out, err) = cli(&["tools", "--url", &gw.url, "--era", era, "--json"]);
        assert!(ok, "{era}: {err}");
        let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(
            listed["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "m__add"),
            "{era}: {out}"
        );
    }
    let (ok, out, _) = cli(&[
        "call",
        "m__add",
        r#"{"a": 2, "b": 40}"#,
        "--url",
        &gw.url,
        "--json",
    ]);
    assert!(ok);
    let result: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["structuredContent"]["sum"], 42, "{out}");
}

#[test]
fn every_failure_is_one_clear_line_and_exit_1() {
    let dir = TempDir::new("cli-failures");
    let gw = gateway(&one_stdio_mock(&[]), &dir);
    let closed = format!("http://127.0.0.1:{}/mcp", free_port());
    // (arguments, what standard error says)
    let table: [(Vec<&str>, &str); 5] = [
        (
            vec![
                "call",
                "m__fail",
                r#"{"message": "it broke"}"#,
                "--url",
                &gw.url,
            ],
            "mcpgw call: m__fail answered with a tool error:\nit broke",
        ),
        (
            vec!["call", "m__nope", "--url", &gw.url],
            "mcpgw call: error -32601: unknown tool: m__nope",
        ),
        (
            vec!["call", "m__echo", "[1]", "--url", &gw.url],
            "the arguments must be a JSON object",
        ),
        (
            vec!["tools", "--url", &closed],
            "(is `mcpgw serve` running there?)",
        ),
        (
            vec![
                "tools",
                "--url",
                &gw.url,
                "--bearer-file",
                "/nonexistent/key",
            ],
            "reading --bearer-file /nonexistent/key",
        ),
    ];
    for (args, says) in table {
        let (ok, out, err) = cli(&args);
        assert!(!ok, "{args:?}: {out}");
        assert!(err.contains(says), "{args:?}: {says:?} not in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            says.lines().count(),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_token_comes_from_a_file_and_is_never_printed() {
    let dir = TempDir::new("cli-token");
    let key = "cli-test-key-0123456789abcdefghij";
    let config = format!(
        "{}\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\n",
        one_stdio_mock(&[]),
        crate::auth::api_keys::digest_of(key)
    );
    let gw = gateway(&config, &dir);
    let (ok, out, err) = cli(&["tools", "--url", &gw.url]);
    assert!(!ok, "{out}");
    assert!(err.contains("401"), "{err}");
    let wrong = dir.file("wrong.key", "not-the-key-0123456789abcdefghij\n");
    let (ok, _, err) = cli(&[
        "tools",
        "--url",
        &gw.url,
        "--bearer-file",
        wrong.to_str().unwrap(),
    ]);
    assert!(!ok && !err.contains("not-the-key"), "{err}");
    let file = dir.file("alice.key", &format!("{key}\n"));
    for era in ["legacy", "modern"] {
        let (ok, out, err) = cli(&[
            "call",
            "m__echo",
            r#"{"text": "as alice"}"#,
            "--url",
            &gw.url,
            "--bearer-file",
            file.to_str().unwrap(),
            "--era",
            era,
        ]);
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "as alice\n");
        assert!(!err.contains(key), "{err}");
    }
}

/// Regression: `mcpgw tools` asked for every list the server announces and failed when one of the others
/// did (a server whose `prompts/list` fails); it asks for the tools alone now.
#[test]
fn tools_no_longer_fails_on_a_failing_prompts_list() {
    let mock = http_mock(&["--failing", "prompts/list"]);
    let (ok, out, err) = cli(&["tools", "--url", &mock.url]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("echo  Returns the text it is given."), "{out}");
}
