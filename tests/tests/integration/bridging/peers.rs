//! Real peers across eras: server-everything behind a 2026-07-28 Python client, and a 2026-07-28 Python
//! backend behind legacy clients.

use std::process::Command;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::interop::peers::{self, Deps, Proc, wait_for_tools};
use crate::support::*;

/// The longest one message may take to arrive.
const WAIT: Duration = Duration::from_secs(20);

/// What the Python client's sampling callback answers (non-ASCII on purpose).
const SAMPLED: &str = "Forty-two — sampled by the Python client ✓";

/// A 2026-07-28 `tools/call` declaring `capabilities`.
fn modern_call(url: &str, tool: &str, arguments: Value, capabilities: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
        "name": tool, "arguments": arguments}});
    post_tools_call(url, tool, &body, None)
}

/// POSTs a 2026-07-28 `tools/call` body with its headers, and the client's credentials, if any.
fn post_tools_call(url: &str, tool: &str, body: &Value, authorization: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ]
    .into_iter()
    .chain(authorization.map(|a| ("Authorization", a)))
    .collect();
    post_raw(url, &headers, body.to_string())
}

/// A config with server-everything (stdio) as the backend `everything` (prefix `ev`), plus `extra` lines.
fn everything_config(deps: &Deps, extra: &str) -> String {
    let command = [
        deps.node.display().to_string(),
        deps.everything.display().to_string(),
        "stdio".into(),
    ];
    format!(
        "[[backend]]\nname = \"everything\"\nprefix = \"ev\"\n{extra}command = {}\n",
        serde_json::to_string(&command).unwrap()
    )
}

/// Runs `py_client.py` with the sampling and elicitation callbacks; its JSON report.
fn python_client(
    deps: &Deps,
    url: &str,
    mode: &str,
    elicit: &Value,
    calls: &[(&str, Value)],
) -> Value {
    let extra = [
        "--sample-text".to_owned(),
        SAMPLED.to_owned(),
        "--elicit".to_owned(),
        elicit.to_string(),
    ];
    peers::py_client(deps, url, mode, &extra, calls).unwrap_or_else(|e| panic!("{e}"))
}

/// The outcome of call `k` of a `py_client.py` report: its text, after checking it succeeded.
fn call_text(report: &Value, k: usize) -> String {
    let call = &report["calls"][k];
    assert!(
        call["ok"] == true && call["isError"] == false,
        "call {k} did not succeed: {call}\nreport: {report}"
    );
    call["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn server_everything_asks_a_python_2026_client_through_input_required() {
    let Some(deps) =
        peers::deps("server_everything_asks_a_python_2026_client_through_input_required")
    else {
        return;
    };
    let dir = TempDir::new("bridging-everything");
    let gw = gateway(&everything_config(&deps, ""), &dir);
    // server-everything registers these only for a client declaring sampling / elicitation: mcpgw did
    wait_for_tools(
        &gw,
        &[
            "ev__trigger-sampling-request",
            "ev__trigger-elicitation-request",
        ],
    );

    // the mechanism, seen raw: the backend's question is an input_required result with a sealed state
    let prompt = "What is the answer to everything?";
    let args = json!({"prompt": prompt, "maxTokens": 20});
    let r = modern_call(
        &gw.url,
        "ev__trigger-sampling-request",
        args.clone(),
        json!({}),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"]["code"], -32021, "{r:?}");
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let r = modern_call(
        &gw.url,
        "ev__trigger-sampling-request",
        args.clone(),
        json!({"sampling": {}}),
    );
    let first = r.json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let asked = &first["result"]["inputRequests"]["r0"];
    assert_eq!(asked["method"], "sampling/createMessage", "{first}");
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"],
        format!("Resource trigger-sampling-request context: {prompt}")
    );
    assert!(first["result"]["requestState"].is_string(), "{first}");

    // the real client: the SDK answers input_required through its callbacks and retries by itself
    let elicit = json!({"name": "Ada Lovelace", "check": true, "integer": 7});
    let report = python_client(
        &deps,
        &gw.url,
        "2026-07-28",
        &elicit,
        &[
            ("ev__trigger-sampling-request", args),
            ("ev__trigger-elicitation-request", json!({})),
        ],
    );
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    // each question was asked once: each retry answered the backend request parked for it
    let asked = report["asked"].as_array().expect("the callbacks' record");
    assert_eq!(asked.len(), 2, "{report}");
    assert_eq!(asked[0]["method"], "sampling/createMessage");
    assert_eq!(
        asked[0]["params"]["messages"][0]["content"]["text"],
        format!("Resource trigger-sampling-request context: {prompt}")
    );
    assert_eq!(asked[0]["params"]["maxTokens"], 20);
    assert_eq!(asked[1]["method"], "elicitation/create");
    assert_eq!(
        asked[1]["params"]["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(
        asked[1]["params"]["requestedSchema"]["required"],
        json!(["name"])
    );

    // the sampled text the callback returned is in the backend's tool result
    let sampled = call_text(&report, 0);
    assert!(sampled.starts_with("LLM sampling result: "), "{sampled}");
    let echoed: Value = serde_json::from_str(sampled.trim_start_matches("LLM sampling result: "))
        .unwrap_or_else(|e| {
            panic!("the backend's JSON echo of the sampling result ({e}): {sampled}")
        });
    assert_eq!(
        echoed,
        json!({"model": "py-client-model", "role": "assistant", "content": {"type": "text", "text": SAMPLED}})
    );
    // and so is the elicitation answer
    let elicited = call_text(&report, 1);
    for line in [
        "User provided the requested information!",
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Favorite Integer: 7",
        "\"action\": \"accept\"",
    ] {
        assert!(
            elicited.contains(line),
            "{line:?} missing from {elicited:?}"
        );
    }
}

/// A 2026-07-28 retry of a `tools/call` answering question `r0` with `answer` under `state`, with the
/// client's credentials (`Authorization`), if any.
fn modern_retry(
    url: &str,
    tool: &str,
    arguments: &Value,
    answer: &Value,
    state: &Value,
    authorization: Option<&str>,
) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        },
        "name": tool, "arguments": arguments,
        "inputResponses": {"r0": answer}, "requestState": state}});
    post_tools_call(url, tool, &body, authorization)
}

/// Whether the gateway logged `needle` within a short wait.
fn logged(gw: &Running, needle: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match gw.log.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[test]
fn a_legacy_backends_question_is_answered_on_its_parked_request_or_replayed_once_it_expired() {
    let Some(deps) = peers::deps(
        "a_legacy_backends_question_is_answered_on_its_parked_request_or_replayed_once_it_expired",
    ) else {
        return;
    };
    let dir = TempDir::new("bridging-parked");
    let path = dir.file(
        "mcpgw.toml",
        &everything_config(&deps, "timeout_ms = 3000\n"),
    );
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(path)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info,mcpgw::pipeline::dispatch::replay=debug");
    let gw = start(cmd, "mcpgw listening on ");
    let tool = "ev__trigger-sampling-request";
    wait_for_tools(&gw, &[tool]);
    let args = json!({"prompt": "parked?", "maxTokens": 5});
    let answer = json!({"role": "assistant", "model": "m",
        "content": {"type": "text", "text": SAMPLED}});

    // answered in time: the backend request asked is the one that carries on
    for (round, wait, resumed) in [
        (1, Duration::ZERO, true),
        (2, Duration::from_millis(3_500), false),
    ] {
        let first = modern_call(&gw.url, tool, args.clone(), json!({"sampling": {}})).json();
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"].clone();
        // round 2: the parked request's deadline (the backend's 3 s timeout) passes first; the retry is
        // then replayed to the backend, which asks again and is answered from the retry
        std::thread::sleep(wait);
        // the state is bound to the credentials it was issued to (none here): a retry under others fails,
        // and does not use the state up
        let stolen = modern_retry(
            &gw.url,
            tool,
            &args,
            &answer,
            &state,
            Some("Bearer mallory"),
        )
        .json();
        assert_eq!(stolen["error"]["code"], -32602, "round {round}: {stolen}");
        assert!(
            stolen["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("other credentials")),
            "round {round}: {stolen}"
        );
        let retry = modern_retry(&gw.url, tool, &args, &answer, &state, None).json();
        let text = retry["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.starts_with("LLM sampling result: "),
            "round {round}: {retry}"
        );
        assert!(text.contains(SAMPLED), "round {round}: {retry}");
        assert_eq!(
            logged(
                &gw,
                "resuming the parked backend request",
                Duration::from_millis(500)
            ),
            resumed,
            "round {round}"
        );
    }
}

#[test]
fn a_python_2026_backend_asks_legacy_clients_on_the_request_stream() {
    let Some(deps) = peers::deps("a_python_2026_backend_asks_legacy_clients_on_the_request_stream")
    else {
        return;
    };
    let mut cmd = Command::new(&deps.python);
    cmd.arg(deps.dir.join("py_asking_server.py"))
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "600"])
        .env("PYTHONUNBUFFERED", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    let py = Proc::start(cmd, "py_asking_server listening on ");
    let dir = TempDir::new("bridging-asking");
    let config = format!(
        "[[backend]]\nname = \"asker\"\nprefix = \"ask\"\nurl = {}\n",
        serde_json::to_string(&py.url).unwrap()
    );
    let gw = gateway(&config, &dir);
    wait_for_tools(&gw, &["ask__py_ask_name", "ask__py_ask_model"]);
    let logs = || {
        let gateway: Vec<String> = gw.log.try_iter().collect();
        format!(
            "--- mcpgw ---\n{}\n--- py_asking_server ---\n{}",
            gateway.join("\n"),
            py.drain_log().join("\n")
        )
    };

    // the backend speaks 2026-07-28: a modern client gets its input_required, passed through
    let r = modern_call(
        &gw.url,
        "ask__py_ask_name",
        json!({"greeting": "Hi"}),
        json!({"elicitation": {}}),
    );
    let first = r.json();
    assert_eq!(
        first["result"]["resultType"],
        "input_required",
        "{first}\n{}",
        logs()
    );
    let requests = first["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests");
    assert_eq!(requests.len(), 1, "{first}");
    let (_, asked) = requests.iter().next().unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["message"], "What is your name?");

    // a raw legacy client: the real elicitation request arrives on the call's own SSE stream
    let mut host = LegacyClient::connect_with(&gw.url, "2025-06-18", json!({"elicitation": {}}));
    let resp = host.post_streaming(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "ask__py_ask_name", "arguments": {"greeting": "Hello"}}}));
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let stream = sse_messages(resp);
    let ask = stream
        .recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("no elicitation request on the stream\n{}", logs()));
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "What is your name?", "{ask}");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["name"]["type"], "string",
        "{ask}"
    );
    let ask_id = ask["id"].as_str().expect("a string id").to_owned();
    assert!(
        ask_id.starts_with("mcpgw-ask-"),
        "the gateway's own id: {ask_id}"
    );
    let answered = host.post(&json!({"jsonrpc": "2.0", "id": ask_id, "result": {
        "action": "accept", "content": {"name": "Grace Hopper"}}}));
    assert_eq!(answered.status, 202, "{answered:?}");
    let done = stream
        .recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("no tool result on the stream\n{}", logs()));
    assert_eq!(done["id"], 10, "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Grace Hopper!",
        "{done}"
    );
    assert!(
        done["result"].get("resultType").is_none(),
        "no 2026 fields for a 2025-06-18 client: {done}"
    );

    // the Python SDK client in legacy mode: its callbacks are asked for real, once each
    let report = python_client(
        &deps,
        &gw.url,
        "legacy",
        &json!({"name": "Ada Lovelace"}),
        &[
            ("ask__py_ask_name", json!({"greeting": "Good morning"})),
            ("ask__py_ask_model", json!({"topic": "tea"})),
        ],
    );
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
    let asked = report["asked"].as_array().expect("the callbacks' record");
    assert_eq!(asked.len(), 2, "{report}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(asked[0]["params"]["message"], "What is your name?");
    assert_eq!(asked[1]["method"], "sampling/createMessage");
    assert_eq!(
        asked[1]["params"]["messages"][0]["content"]["text"],
        "Write one line about tea."
    );
    assert_eq!(call_text(&report, 0), "Good morning, Ada Lovelace!");
    assert_eq!(call_text(&report, 1), format!("tea: {SAMPLED}"));
}
