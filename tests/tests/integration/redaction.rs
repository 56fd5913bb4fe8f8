//! Issue 38 §3, redaction: `[redaction]` finds the built-in secrets and an operator's pattern in what a
//! real backend (the mock over stdio) answers — a tool result, a resource's contents, a prompt — and
//! redacts them, withholds the answer, or only reports it, for legacy and 2026-07-28 clients; counted in
//! `mcpgw_redactions_total`. A call's progress (a real stdio server's) is judged as its answer is, and so is
//! what a backend asks the client during a call, on every path between the eras.

use serde_json::{Value, json};

use crate::support::{
    ADMIN, LegacyClient, TempDir, admin_base, client, gateway, modern_request, modern_tools_call,
    one_stdio_mock, sse_messages,
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

/// A legacy stdio server of `tests/fixtures/` as a backend (`backend`: its name, and prefix if any), the
/// admin listener, and docs/src/redaction.md's `[redaction]` in `mode`. The fixtures: `progress_server.py`,
/// whose `work` tool says its `tag` in each progress message and in its answer; `sampling_server.py`, whose
/// `summarize` asks the client to summarize its `text` and says what the client answered or how it was
/// refused.
fn fixture_config(script: &str, backend: &str, mode: &str) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(script);
    let table = crate::support::doc_block("config-redaction", "toml");
    format!(
        "[[backend]]\n{backend}\ncommand = [\"python3\", {:?}]\n{ADMIN}\n{}",
        script.to_string_lossy(),
        table.replace("mode = \"redact\"", &format!("mode = \"{mode}\""))
    )
}

fn progress_config(mode: &str) -> String {
    fixture_config("progress_server.py", "name = \"p\"", mode)
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

fn asking_config(mode: &str) -> String {
    fixture_config(
        "sampling_server.py",
        "name = \"sampler\"\nprefix = \"\"",
        mode,
    )
}

/// A legacy session (declaring sampling) calls `summarize` with `text`: the first message of its stream.
fn legacy_summarize(
    url: &str,
    text: &str,
) -> (LegacyClient, std::sync::mpsc::Receiver<Value>, Value) {
    let mut host = LegacyClient::connect_with(url, "2025-06-18", json!({"sampling": {}}));
    let stream = sse_messages(host.post_streaming(&json!({"jsonrpc": "2.0", "id": 10,
        "method": "tools/call", "params": {"name": "summarize", "arguments": {"text": text}}})));
    let first = stream
        .recv_timeout(WAIT)
        .expect("a message on the call's stream");
    (host, stream, first)
}

/// A 2026-07-28 client (declaring sampling) calls `summarize` with `text`.
fn modern_summarize(url: &str, text: &str) -> Value {
    let arguments = json!({"arguments": {"text": text}});
    modern_tools_call(url, "summarize", json!({"sampling": {}}), arguments, &[]).json()
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The question a backend asks the client (sampling here) leaked what `[redaction]` kept out of its answer:
/// it is now judged on the way to a legacy client (relayed on the call's stream) and to a 2026-07-28 one
/// (inside `input_required`) — redacted, or withheld with the backend told why.
#[test]
fn a_backends_question_to_the_client_is_judged_like_its_answer() {
    let dir = TempDir::new("redaction-asks");
    let gw = gateway(&asking_config("redact"), &dir);
    crate::interop::peers::wait_for_tools(&gw, &["summarize"]);
    let (mut host, stream, ask) = legacy_summarize(&gw.url, TOKEN);
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    assert_eq!(
        ask["params"]["messages"][0]["content"]["text"], "Summarize: [redacted: github_token]",
        "{ask}"
    );
    let id = ask["id"].as_str().expect("the gateway's id").to_owned();
    let answered = host.post(&json!({"jsonrpc": "2.0", "id": id, "result": {
        "role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}}));
    assert_eq!(answered.status, 202, "{answered:?}");
    let done = stream.recv_timeout(WAIT).expect("the answer");
    assert_eq!(
        done["result"]["content"][0]["text"], "summary: short",
        "{done}"
    );

    let first = modern_summarize(&gw.url, TOKEN);
    let asked = &first["result"]["inputRequests"]["r0"];
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"], "Summarize: [redacted: github_token]",
        "{first}"
    );
    assert!(!first.to_string().contains(TOKEN), "{first}");
    // Counted once each, where the question was judged (the input_required result held no match after).
    let scraped = metrics(&gw);
    assert!(
        scraped.contains("mcpgw_redactions_total{pattern=\"github_token\",mode=\"redact\"} 2"),
        "{scraped}"
    );
    // A clean question is asked as it was.
    let (_host, _stream, ask) = legacy_summarize(&gw.url, "a long story");
    assert_eq!(
        ask["params"]["messages"][0]["content"]["text"],
        "Summarize: a long story"
    );
    drop(gw);

    // Refused: no client is asked; the backend hears why, and its answer says so.
    let dir = TempDir::new("redaction-asks-refuse");
    let gw = gateway(&asking_config("refuse"), &dir);
    crate::interop::peers::wait_for_tools(&gw, &["summarize"]);
    let refused = "refused -32602: invalid params: mcpgw withheld this sampling/createMessage from the \
                   client: it held github_token";
    let (_host, _stream, done) = legacy_summarize(&gw.url, TOKEN);
    assert_eq!(done["id"], 10, "the answer, not a question: {done}");
    assert_eq!(done["result"]["content"][0]["text"], refused, "{done}");
    let done = modern_summarize(&gw.url, TOKEN);
    assert_eq!(done["result"]["content"][0]["text"], refused, "{done}");
    assert!(done["result"].get("inputRequests").is_none(), "{done}");
}

/// A real 2026-07-28 backend (the Python SDK's `py_asking_server.py`) asks a legacy client through
/// `input_required`: the question the gateway asks on the call's stream is redacted, or the call refused.
#[test]
fn a_2026_backends_input_requests_are_judged_before_a_legacy_client_is_asked() {
    use crate::interop::peers::{self, Proc};
    let Some(deps) = peers::deps("redaction input requests") else {
        return;
    };
    let mut cmd = std::process::Command::new(&deps.python);
    cmd.arg(deps.dir.join("py_asking_server.py"))
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "600"])
        .env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    let py = Proc::start(cmd, "py_asking_server listening on ");
    let table = crate::support::doc_block("config-redaction", "toml");
    for mode in ["redact", "refuse"] {
        let dir = TempDir::new(&format!("redaction-input-{mode}"));
        let config = format!(
            "[[backend]]\nname = \"asker\"\nprefix = \"ask\"\nurl = {}\n{}",
            serde_json::to_string(&py.url).expect("JSON"),
            table.replace("mode = \"redact\"", &format!("mode = \"{mode}\""))
        );
        let gw = gateway(&config, &dir);
        peers::wait_for_tools(&gw, &["ask__py_ask_model"]);
        let mut host = LegacyClient::connect_with(&gw.url, "2025-06-18", json!({"sampling": {}}));
        let stream = sse_messages(host.post_streaming(&json!({"jsonrpc": "2.0", "id": 10,
            "method": "tools/call", "params": {"name": "ask__py_ask_model", "arguments": {"topic": TOKEN}}})));
        let first = stream
            .recv_timeout(WAIT)
            .expect("a message on the call's stream");
        assert!(!first.to_string().contains(TOKEN), "{mode}: {first}");
        if mode == "redact" {
            assert_eq!(first["method"], "sampling/createMessage", "{first}");
            let text = first["params"]["messages"][0]["content"]["text"]
                .as_str()
                .unwrap_or_default();
            assert_eq!(
                text, "Write one line about [redacted: github_token].",
                "{first}"
            );
        } else {
            assert_eq!(first["id"], 10, "the answer, not a question: {first}");
            assert_eq!(first["result"]["isError"], true, "{first}");
            assert_eq!(
                first["result"]["content"][0]["text"],
                "the request of backend asker to the client was withheld: it held github_token",
                "{first}"
            );
        }
    }
}
