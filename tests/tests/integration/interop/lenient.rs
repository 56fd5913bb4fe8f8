//! What real SDK servers send off the spec's happy path, accepted (issue 9 §1): a 2026-07-28 server that asks
//! the client (`sampling/createMessage`, `elicitation/create`, `roots/list`) on a request's response stream,
//! as the TypeScript SDK 1.x server does in its stateless mode (`sdk_stateless_server.py` behaves like it),
//! and answers with several JSON-RPC messages in one `application/json` body; backends that ask for roots
//! outside any request (server-filesystem at start); and tools that need a capability the client lacks
//! (server-everything's sampling and elicitation tools, listed to every client).
//!
//! The real Python and TypeScript SDK clients drive it, in a legacy session and as 2026-07-28 clients.

use serde_json::{Value, json};

use super::peers::{self, Deps, Proc, ScriptClient};
use crate::support::{self, Running, TempDir};

/// What the clients' sampling callbacks answer (non-ASCII on purpose).
const SAMPLED: &str = "sampled through mcpgw ✓";

/// The stateless SDK-like server and server-everything behind one gateway.
struct Asking {
    gateway: Running,
    sdk: Proc,
    _dir: TempDir,
}

impl Asking {
    fn start(deps: &Deps, name: &str) -> Asking {
        let sdk = peers::python_fixture(
            deps,
            "sdk_stateless_server.py",
            &[],
            "sdk_stateless_server listening on ",
        );
        let dir = TempDir::new(&format!("lenient-{name}"));
        let everything = [
            deps.node.display().to_string(),
            deps.everything.display().to_string(),
            "stdio".into(),
        ];
        let config = format!(
            "[[backend]]\nname = \"sdk\"\nurl = {url}\n\n[[backend]]\nname = \"everything\"\nprefix = \"ev\"\ncommand = {everything}\n",
            url = serde_json::to_string(&sdk.url).unwrap(),
            everything = serde_json::to_string(&everything).unwrap(),
        );
        let gateway = support::gateway(&config, &dir);
        peers::wait_for_tools(
            &gateway,
            &["sdk__ask_sampling", "ev__trigger-sampling-request"],
        );
        Asking {
            gateway,
            sdk,
            _dir: dir,
        }
    }

    fn logs(&self) -> String {
        let gateway: Vec<String> = self.gateway.log.try_iter().collect();
        format!(
            "--- mcpgw ---\n{}\n--- sdk_stateless_server ---\n{}",
            gateway.join("\n"),
            self.sdk.drain_log().join("\n")
        )
    }

    /// What the SDK-like server says it received as answers to its requests.
    fn answers_seen(&self, client: ScriptClient, deps: &Deps, mode: &str) -> Vec<Value> {
        let args = ["--call", "sdk__answers_seen", "{}"].map(str::to_owned);
        let report = peers::script_client(deps, client, &self.gateway.url, mode, &args).unwrap();
        let text = report["calls"][0]["text"].as_str().unwrap_or("[]");
        let seen: Value = serde_json::from_str(text).unwrap_or_default();
        seen.as_array().cloned().unwrap_or_default()
    }
}

/// The elicitation schema the server asks with: defaults, an enum and a titled `oneOf`.
fn elicit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "default": "Ada"},
            "color": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"},
            "size": {"type": "string", "title": "Size", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "s"},
            "subscribe": {"type": "boolean", "default": true},
            "count": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3}
        },
        "required": ["name", "color"]
    })
}

/// Every client answers every question; what it must report, call by call (tool, arguments, text).
fn answered_calls() -> Vec<(&'static str, Value, String)> {
    vec![
        (
            "sdk__ask_sampling",
            json!({"prompt": "say something"}),
            format!("sampled {{model}}: {SAMPLED}"),
        ),
        (
            "sdk__ask_elicitation",
            json!({"message": "who are you?"}),
            r#"elicited accept {"color":"blue","name":"Grace","size":"l"}"#.to_owned(),
        ),
        (
            "sdk__ask_roots",
            json!({}),
            "roots file:///srv/interop".to_owned(),
        ),
        (
            "sdk__count_progress",
            json!({"steps": 3}),
            "counted 3".to_owned(),
        ),
        (
            "sdk__chatty_echo",
            json!({"text": "several messages"}),
            "echo several messages".to_owned(),
        ),
    ]
}

/// Runs `client` in `mode` with every callback against the stack; what is wrong.
fn ask_everything(stack: &Asking, deps: &Deps, client: ScriptClient, mode: &str) -> Vec<String> {
    let model = match client {
        ScriptClient::Python => "py-client-model",
        ScriptClient::TypeScript => "ts-client-model",
    };
    let mut args: Vec<String> = [
        "--sample-text",
        SAMPLED,
        "--elicit",
        r#"{"name":"Grace","color":"blue","size":"l"}"#,
        "--roots",
        "file:///srv/interop",
        "--progress",
    ]
    .map(str::to_owned)
    .to_vec();
    let calls = answered_calls();
    for (name, arguments, _) in &calls {
        args.extend([
            "--call".to_owned(),
            (*name).to_owned(),
            arguments.to_string(),
        ]);
    }
    let label = format!("{client:?} mode={mode}");
    let report = match peers::script_client(deps, client, &stack.gateway.url, mode, &args) {
        Ok(r) => r,
        Err(e) => return vec![format!("{label}: {e}")],
    };
    let mut problems = Vec::new();
    for ((name, _, text), call) in calls
        .iter()
        .zip(report["calls"].as_array().into_iter().flatten())
    {
        let text = text.replace("{model}", model);
        if call["ok"] != true || call["isError"] == true || call["text"] != text.as_str() {
            problems.push(format!("{label}: {name}: expected {text:?}, got {call}"));
        }
    }
    let progress = |i: usize| report["calls"][i]["progress"].clone();
    let steps: Vec<Value> = progress(3).as_array().cloned().unwrap_or_default();
    let counted: Vec<f64> = steps
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    if counted != [1.0, 2.0, 3.0] || steps.iter().any(|p| p["total"].as_f64() != Some(3.0)) {
        problems.push(format!("{label}: count_progress: progress {steps:?}"));
    }
    // the progress sent in the same JSON body as the response, before it
    if progress(4).as_array().map(Vec::len) != Some(1) {
        problems.push(format!("{label}: chatty_echo: progress {}", progress(4)));
    }
    // the questions reached the client as the server asked them: the schema whole, defaults and enums
    let asked: Vec<&Value> = report["asked"].as_array().into_iter().flatten().collect();
    let methods: Vec<&str> = asked.iter().filter_map(|a| a["method"].as_str()).collect();
    if methods != ["sampling/createMessage", "elicitation/create", "roots/list"] {
        problems.push(format!("{label}: asked {methods:?}"));
    }
    let elicited = asked.iter().find(|a| a["method"] == "elicitation/create");
    if elicited.map(|a| &a["params"]["requestedSchema"]) != Some(&elicit_schema()) {
        problems.push(format!(
            "{label}: the elicitation reached the client as {elicited:?}"
        ));
    }
    if report["calls"].as_array().map(Vec::len) != Some(calls.len()) {
        problems.push(format!("{label}: {} calls reported", report["calls"]));
    }
    problems
}

/// The answers the server received were POSTed back under its own ids, with the 2026-07-28 header.
fn check_answers(stack: &Asking, deps: &Deps, asked: usize) -> Vec<String> {
    let seen = stack.answers_seen(ScriptClient::Python, deps, "2026-07-28");
    let mut problems = Vec::new();
    if seen.len() != asked {
        problems.push(format!(
            "{} answers reached the server, {asked} asked: {seen:?}",
            seen.len()
        ));
    }
    for answer in &seen {
        let id = answer["id"].as_str().unwrap_or_default();
        if !id.starts_with("srv-")
            || answer["protocolVersionHeader"] != "2026-07-28"
            || answer["body"]["result"].is_null()
        {
            problems.push(format!("answer {answer}"));
        }
    }
    problems
}

fn run_clients(mode: &str, test: &str) {
    let Some(deps) = peers::deps(test) else {
        return;
    };
    let stack = Asking::start(&deps, test);
    let mut problems = Vec::new();
    for client in [ScriptClient::Python, ScriptClient::TypeScript] {
        problems.extend(ask_everything(&stack, &deps, client, mode));
    }
    // three questions per client: sampling, elicitation, roots
    problems.extend(check_answers(&stack, &deps, 6));
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        stack.logs()
    );
}

#[test]
fn a_stateless_sdk_servers_questions_on_the_response_stream_reach_a_legacy_client() {
    run_clients(
        "legacy",
        "a_stateless_sdk_servers_questions_on_the_response_stream_reach_a_legacy_client",
    );
}

#[test]
fn a_stateless_sdk_servers_questions_on_the_response_stream_reach_a_2026_client() {
    run_clients(
        "2026-07-28",
        "a_stateless_sdk_servers_questions_on_the_response_stream_reach_a_2026_client",
    );
}

/// A client that declared none of the capabilities still sees the tools that need them; calling one says
/// which capability is missing: a legacy client gets a tool error (the backend's tool fails on the gateway's
/// -32021), a 2026-07-28 client the spec's -32021 error with `requiredCapabilities`. Nothing waits.
#[test]
fn a_client_that_cannot_answer_gets_an_error_naming_the_capability() {
    let test = "a_client_that_cannot_answer_gets_an_error_naming_the_capability";
    let Some(deps) = peers::deps(test) else {
        return;
    };
    let stack = Asking::start(&deps, test);
    let calls = [
        ("sdk__ask_sampling", json!({"prompt": "x"}), "sampling"),
        (
            "sdk__ask_elicitation",
            json!({"message": "x"}),
            "elicitation",
        ),
        (
            "ev__trigger-sampling-request",
            json!({"prompt": "x", "maxTokens": 5}),
            "sampling",
        ),
        ("ev__trigger-elicitation-request", json!({}), "elicitation"),
    ];
    let mut problems = Vec::new();
    for mode in ["legacy", "2026-07-28"] {
        let mut args = Vec::new();
        for (name, arguments, _) in &calls {
            args.extend([
                "--call".to_owned(),
                (*name).to_owned(),
                arguments.to_string(),
            ]);
        }
        let started = std::time::Instant::now();
        let report = match peers::script_client(
            &deps,
            ScriptClient::Python,
            &stack.gateway.url,
            mode,
            &args,
        ) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("mode={mode}: {e}"));
                continue;
            }
        };
        if started.elapsed() > std::time::Duration::from_secs(20) {
            problems.push(format!(
                "mode={mode}: the calls took {:?}",
                started.elapsed()
            ));
        }
        let tools: Vec<&str> = report["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for ((name, _, capability), call) in calls
            .iter()
            .zip(report["calls"].as_array().into_iter().flatten())
        {
            if !tools.contains(name) {
                problems.push(format!("mode={mode}: {name} is not listed"));
            }
            let said = format!("{capability} capability");
            let ok = match mode {
                "legacy" => {
                    call["isError"] == true
                        && call["text"]
                            .as_str()
                            .is_some_and(|t| t.contains("-32021") && t.contains(&said))
                }
                _ => {
                    call["ok"] == false && call["error"].as_str().is_some_and(|e| e.contains(&said))
                }
            };
            if !ok {
                problems.push(format!("mode={mode}: {name}: {call}"));
            }
        }
    }
    // the 2026-07-28 answer on the wire: -32021, HTTP 400, the capability under data.requiredCapabilities
    let reply = support::modern_request(
        &stack.gateway.url,
        "tools/call",
        json!({"name": "sdk__ask_sampling", "arguments": {"prompt": "x"}}),
        &[],
    );
    let error = &reply.json()["error"];
    if reply.status != 400
        || error["code"] != -32021
        || error["data"] != json!({"requiredCapabilities": {"sampling": {}}})
    {
        problems.push(format!(
            "2026-07-28 on the wire: HTTP {} {}",
            reply.status, reply.text
        ));
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        stack.logs()
    );
}

/// server-filesystem asks `roots/list` as soon as it is initialised, outside any client request: the gateway
/// answers with the roots configured for it (which then replace the directories on its command line), or with
/// none (it keeps its own), never with an error.
#[test]
fn roots_list_outside_any_request_gets_the_configured_roots_or_none() {
    let test = "roots_list_outside_any_request_gets_the_configured_roots_or_none";
    let Some(deps) = peers::deps(test) else {
        return;
    };
    let dir = TempDir::new("roots");
    let (own, configured) = (dir.0.join("own"), dir.0.join("configured"));
    for d in [&own, &configured] {
        std::fs::create_dir_all(d).unwrap();
    }
    let fs = |name: &str, roots: &str| {
        let cmd = [
            deps.node.display().to_string(),
            deps.filesystem.display().to_string(),
            own.display().to_string(),
        ];
        format!(
            "[[backend]]\nname = \"{name}\"\ncommand = {}\n{roots}\n",
            serde_json::to_string(&cmd).unwrap()
        )
    };
    let configured_uri = format!("file://{}", configured.display());
    let config = format!(
        "{}\n{}",
        fs("plain", ""),
        fs(
            "rooted",
            &format!(
                "roots = [{}]",
                serde_json::to_string(&configured_uri).unwrap()
            )
        )
    );
    let gateway = support::gateway(&config, &dir);
    peers::wait_for_tools(
        &gateway,
        &[
            "plain__list_allowed_directories",
            "rooted__list_allowed_directories",
        ],
    );
    let allowed = |tool: &str| {
        let reply = support::modern_request(
            &gateway.url,
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            &[],
        );
        reply.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // the server applies the roots it was answered with right after its initialisation: bounded wait
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let expected = format!("Allowed directories:\n{}", configured.display());
    let mut rooted = allowed("rooted__list_allowed_directories");
    while rooted != expected && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        rooted = allowed("rooted__list_allowed_directories");
    }
    let plain = allowed("plain__list_allowed_directories");
    let log: Vec<String> = gateway.log.try_iter().collect();
    let log = log.join("\n");
    let mut problems = Vec::new();
    if rooted != expected {
        problems.push(format!("with roots configured: {rooted:?}"));
    }
    if plain != format!("Allowed directories:\n{}", own.display()) {
        problems.push(format!("without roots: {plain:?}"));
    }
    if log.contains("Failed to request initial roots") {
        problems.push("a backend's roots/list was answered with an error".to_owned());
    }
    assert!(problems.is_empty(), "{}\n{log}", problems.join("\n"));
}
