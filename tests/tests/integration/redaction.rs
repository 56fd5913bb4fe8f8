//! Issue 38 §3, redaction: `[redaction]` finds the built-in secrets and an operator's pattern in what a
//! real backend (the mock over stdio) answers — a tool result, a resource's contents, a prompt — and
//! redacts them, withholds the answer, or only reports it, for legacy and 2026-07-28 clients; counted in
//! `mcpgw_redactions_total`. A call's progress (a real stdio server's) is judged as its answer is.

use serde_json::{Value, json};

use crate::support::{
    ADMIN, LegacyClient, TempDir, admin_base, client, gateway, modern_request, one_stdio_mock,
    sse_messages,
};

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";

/// The mock over stdio, the admin listener, and docs/src/redaction.md's `[redaction]` in `mode`.
fn config(mode: &str) -> String {
    let table = crate::support::doc_block("config-redaction", "toml");
    assert!(table.contains("mode = \"redact\""), "{table}");
    format!(
        "{}{ADMIN}\n{}",
        one_stdio_mock(&[]),
        table.replace("mode = \"redact\"", &format!("mode = \"{mode}\""))
    )
}

fn echo(url: &str, text: &str) -> Value {
    modern_request(
        url,
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": text}}),
        &[],
    )
    .json()
}

fn metrics(gw: &crate::support::Running) -> String {
    client()
        .get(format!("{}/metrics", admin_base(gw)))
        .send()
        .expect("metrics")
        .text()
        .expect("text")
}

#[test]
fn secrets_in_tool_results_resources_and_prompts_are_redacted_for_both_eras() {
    let dir = TempDir::new("redaction-redact");
    let gw = gateway(&config("redact"), &dir);
    let said = format!("token {TOKEN} for EMP-123456, nothing else");
    let answer = echo(&gw.url, &said);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "token [redacted: github_token] for [redacted: employee], nothing else",
        "{answer}"
    );
    let plain = echo(&gw.url, "nothing to hide");
    assert_eq!(plain["result"]["content"][0]["text"], "nothing to hide");

    let read = modern_request(
        &gw.url,
        "resources/read",
        json!({"uri": format!("mock://mock-backend/items/{KEY_ID}")}),
        &[],
    )
    .json();
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text, "item [redacted: aws_access_key_id]", "{read}");
    assert!(!read.to_string().contains(KEY_ID), "{read}");

    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let prompt = legacy
        .request(
            "prompts/get",
            json!({"name": "m__greet", "arguments": {"name": TOKEN}}),
        )
        .json();
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "Hello, [redacted: github_token]!",
        "{prompt}"
    );
    let called = legacy
        .request(
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": said}}),
        )
        .json();
    assert!(!called.to_string().contains(TOKEN), "{called}");

    let scraped = metrics(&gw);
    for line in [
        "mcpgw_redactions_total{pattern=\"github_token\",mode=\"redact\"} 3",
        "mcpgw_redactions_total{pattern=\"custom\",mode=\"redact\"} 2",
        "mcpgw_redactions_total{pattern=\"aws_access_key_id\",mode=\"redact\"} 1",
    ] {
        assert!(scraped.contains(line), "{line} in:\n{scraped}");
    }
    // The log names the pattern, never what matched.
    let logged = gw.log_to_end(std::time::Duration::from_millis(500));
    assert!(
        logged
            .iter()
            .any(|l| l.contains("held a secret or pattern"))
    );
    assert!(
        !logged.iter().any(|l| l.contains(TOKEN)),
        "a secret was logged"
    );
}

#[test]
fn refuse_withholds_the_answer_in_its_methods_shape_and_audit_passes_it_on() {
    let dir = TempDir::new("redaction-refuse");
    let gw = gateway(&config("refuse"), &dir);
    let refused = echo(&gw.url, TOKEN);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["content"][0]["text"],
        "the answer of backend mock was withheld: it held github_token"
    );
    let read = modern_request(
        &gw.url,
        "resources/read",
        json!({"uri": format!("mock://mock-backend/items/{KEY_ID}")}),
        &[],
    )
    .json();
    assert!(
        read["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("withheld")),
        "{read}"
    );
    assert!(!read.to_string().contains(KEY_ID), "{read}");
    drop(gw);

    let dir = TempDir::new("redaction-audit");
    let gw = gateway(&config("audit"), &dir);
    let passed = echo(&gw.url, TOKEN);
    assert_eq!(passed["result"]["content"][0]["text"], TOKEN, "{passed}");
    let scraped = metrics(&gw);
    assert!(
        scraped.contains("mcpgw_redactions_total{pattern=\"github_token\",mode=\"audit\"} 1"),
        "{scraped}"
    );
}

/// The progress backend (`tests/fixtures/progress_server.py`, a legacy stdio server whose `work` tool says
/// its `tag` in each progress message and in its answer) and docs/src/redaction.md's `[redaction]` in `mode`.
fn progress_config(mode: &str) -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/progress_server.py");
    let table = crate::support::doc_block("config-redaction", "toml");
    format!(
        "[[backend]]\nname = \"p\"\ncommand = [\"python3\", {:?}]\n{ADMIN}\n{}",
        script.to_string_lossy(),
        table.replace("mode = \"redact\"", &format!("mode = \"{mode}\""))
    )
}

/// A legacy session's `p__work` call with a progress token, tagged `tag`: every message of its SSE answer.
fn work_with_progress(url: &str, tag: &str) -> Vec<Value> {
    let mut legacy = LegacyClient::connect(url, "2025-06-18");
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "_meta": {"progressToken": "t"}, "name": "p__work", "arguments": {"tag": tag, "steps": 2}}});
    let messages = sse_messages(legacy.post_streaming(&body));
    let mut all = Vec::new();
    while let Ok(m) = messages.recv_timeout(std::time::Duration::from_secs(30)) {
        let done = m.get("id").is_some();
        all.push(m);
        if done {
            break;
        }
    }
    assert!(
        all.last().is_some_and(|m| m["id"] == 7),
        "no answer: {all:?}"
    );
    all
}

fn progress_messages(all: &[Value]) -> Vec<&str> {
    all.iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect()
}

#[test]
fn progress_notifications_are_redacted_like_the_answer_they_leaked_beside() {
    // Redacted: the progress of a call as its answer (the stage saw only the answer before).
    let dir = TempDir::new("redaction-progress");
    let gw = gateway(&progress_config("redact"), &dir);
    crate::interop::peers::wait_for_tools(&gw, &["p__work"]);
    let all = work_with_progress(&gw.url, TOKEN);
    assert_eq!(
        progress_messages(&all),
        [
            "[redacted: github_token] 1/2",
            "[redacted: github_token] 2/2"
        ],
        "{all:?}"
    );
    assert_eq!(
        all.last().unwrap()["result"]["content"][0]["text"],
        "done [redacted: github_token]"
    );
    assert!(!format!("{all:?}").contains(TOKEN), "{all:?}");
    // Three matches: two notifications and the answer.
    let scraped = metrics(&gw);
    assert!(
        scraped.contains("mcpgw_redactions_total{pattern=\"github_token\",mode=\"redact\"} 3"),
        "{scraped}"
    );
    // Clean progress passes as it was.
    let all = work_with_progress(&gw.url, "plain");
    assert_eq!(
        progress_messages(&all),
        ["plain 1/2", "plain 2/2"],
        "{all:?}"
    );
    drop(gw);

    // Refused: the notifications are withheld, the answer refused in its method's shape.
    let dir = TempDir::new("redaction-progress-refuse");
    let gw = gateway(&progress_config("refuse"), &dir);
    crate::interop::peers::wait_for_tools(&gw, &["p__work"]);
    let all = work_with_progress(&gw.url, TOKEN);
    assert!(progress_messages(&all).is_empty(), "{all:?}");
    assert_eq!(all.last().unwrap()["result"]["isError"], true, "{all:?}");
    assert!(!format!("{all:?}").contains(TOKEN), "{all:?}");
}

/// A real backend from npm (`@modelcontextprotocol/server-filesystem`): a file holding a private key and a
/// token is read redacted by the Python and TypeScript SDK clients in both eras, and a file over the
/// backend's `max_message_bytes` fails its call as too large, in the tool error's shape.
#[test]
fn a_real_filesystem_servers_secrets_are_redacted_and_its_oversized_file_refused() {
    use crate::interop::peers;
    let Some(deps) = peers::deps("redaction filesystem") else {
        return;
    };
    let dir = TempDir::new("redaction-filesystem");
    let root = dir.0.join("share");
    std::fs::create_dir_all(&root).expect("share");
    let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----";
    std::fs::write(
        root.join("notes.txt"),
        format!("deploy key:\n{key}\ntoken {TOKEN}\nend\n"),
    )
    .expect("notes");
    std::fs::write(root.join("big.txt"), "x".repeat(200_000)).expect("big");
    let command = [
        deps.node.display().to_string(),
        deps.filesystem.display().to_string(),
        root.display().to_string(),
    ];
    let config = format!(
        "[[backend]]\nname = \"fs\"\ncommand = {}\nmax_message_bytes = 65536\n\n[redaction]\n",
        serde_json::to_string(&command).expect("JSON")
    );
    let gw = gateway(&config, &dir);
    peers::wait_for_tools(&gw, &["fs__read_text_file"]);
    let notes = root.join("notes.txt").display().to_string();
    let big = root.join("big.txt").display().to_string();
    let args = peers::call_args(&[
        ("fs__read_text_file", json!({"path": notes})),
        ("fs__read_text_file", json!({"path": big})),
    ]);
    for (client, mode) in peers::CLIENTS_AND_ERAS {
        let report = peers::script_client(&deps, client, &gw.url, mode, &args)
            .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}"));
        let calls = report["calls"].as_array().expect("calls");
        let text = calls[0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("[redacted: private_key]"),
            "{client:?} {mode}: {text}"
        );
        assert!(
            text.contains("token [redacted: github_token]"),
            "{client:?} {mode}: {text}"
        );
        assert!(
            !text.contains("MIIEvQ") && !text.contains(TOKEN),
            "{client:?} {mode}: {text}"
        );
        assert!(
            text.starts_with("deploy key:") && text.trim_end().ends_with("end"),
            "{text}"
        );
        assert_eq!(calls[1]["isError"], true, "{client:?} {mode}: {report}");
        assert!(
            calls[1]["text"]
                .as_str()
                .is_some_and(|t| t.contains("more than 65536 bytes in one message")),
            "{client:?} {mode}: {report}"
        );
    }
}
