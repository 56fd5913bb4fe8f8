//! Issue 38 §2, interceptors (SEP-2624): `[[interceptor]]` servers — `tests/fixtures/interceptors/server.py`,
//! an interceptor server written for the tests, over stdio — asked about `tools/call` through the gateway:
//! validators refuse (a tool error naming the interceptor) or pass (a warning, an audit-mode refusal),
//! mutators rewrite the arguments the backend gets and the result the client gets, in priority order; an
//! invocation that times out, is malformed or cannot reach its server refuses when it fails closed and
//! passes when it fails open. Driven by the Python and TypeScript SDK clients in both eras.

use serde_json::{Value, json};

use crate::interop::peers::{self, Deps};
use crate::support::{TempDir, call_tool, gateway, modern_request, repo_root};

const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

/// An `[[interceptor]]` table running the fixture server with `keys`.
fn interceptor(deps: &Deps, name: &str, keys: &str, log: Option<&std::path::Path>) -> String {
    let mut command = vec![
        deps.python.to_string_lossy().into_owned(),
        repo_root()
            .join("tests/fixtures/interceptors/server.py")
            .to_string_lossy()
            .into_owned(),
    ];
    if let Some(log) = log {
        command.extend(["--log".to_owned(), log.to_string_lossy().into_owned()]);
    }
    format!(
        "\n[[interceptor]]\nname = \"{name}\"\ncommand = {}\n{keys}\n",
        serde_json::to_string(&command).expect("JSON")
    )
}

#[test]
fn the_interceptor_pages_example_sets_what_the_tests_exercise() {
    let example = crate::support::doc_block("config-interceptor", "toml");
    for key in [
        "use = ",
        "events = ",
        "tools = ",
        "timeout_ms = ",
        "fail_open = ",
    ] {
        assert!(example.contains(key), "{key} in {example}");
    }
}

#[test]
fn validators_refuse_or_pass_and_mutators_rewrite_both_phases_for_sdk_clients_in_both_eras() {
    let Some(deps) = peers::deps("interceptors sdk clients") else {
        return;
    };
    let dir = TempDir::new("interceptors-sdk");
    let log = dir.0.join("invocations.jsonl");
    let config = format!(
        "{MOCK}{}",
        interceptor(
            &deps,
            "guard",
            "use = [\"no-forbidden\", \"warn-only\", \"audit-deny\", \"tag-arguments\", \"upper-arguments\", \"shout\"]",
            Some(&log),
        )
    );
    let gw = gateway(&config, &dir);
    let args = peers::call_args(&[
        ("m__echo", json!({"text": "hello"})),
        ("m__echo", json!({"text": "a forbidden word"})),
        ("m__echo", json!({"text": "meh"})),
    ]);
    for (client, mode) in peers::CLIENTS_AND_ERAS {
        let report = peers::script_client(&deps, client, &gw.url, mode, &args)
            .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}\n{}", gw.log_lines().join("\n")));
        let calls = report["calls"].as_array().expect("calls");
        // Upper-cased (priority 1), then tagged (priority 10) on the way in; shouted on the way out.
        assert_eq!(
            calls[0]["text"], "HELLO [TAGGED]",
            "{client:?} {mode}: {report}"
        );
        assert_eq!(calls[0]["isError"], false, "{client:?} {mode}: {report}");
        assert_eq!(calls[1]["isError"], true, "{client:?} {mode}: {report}");
        assert_eq!(
            calls[1]["text"], "refused by the gateway's interceptor guard/no-forbidden",
            "{client:?} {mode}: {report}"
        );
        // A warning, and an audit-mode refusal, never refuse.
        assert_eq!(
            calls[2]["text"], "MEH [TAGGED]",
            "{client:?} {mode}: {report}"
        );
    }
    // What the server was asked: the governed request's method and params (no `_meta`), who asks, when.
    let invoked: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the invocation log")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let first = invoked
        .iter()
        .find(|i| i["name"] == "no-forbidden")
        .expect("no-forbidden was invoked");
    assert_eq!(first["payload"]["method"], "tools/call", "{first}");
    assert_eq!(first["payload"]["params"]["name"], "m__echo", "{first}");
    assert!(first["payload"]["params"].get("_meta").is_none(), "{first}");
    assert_eq!(
        first["context"]["principal"]["type"], "anonymous",
        "{first}"
    );
    assert!(
        first["context"]["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let shout = invoked
        .iter()
        .find(|i| i["name"] == "shout")
        .expect("shout");
    assert_eq!(shout["phase"], "response");
    assert_eq!(
        shout["payload"]["content"][0]["text"], "HELLO [tagged]",
        "{shout}"
    );
}

#[test]
fn an_invocation_that_times_out_is_malformed_or_cannot_be_made_refuses_failing_closed_and_passes_failing_open()
 {
    let Some(deps) = peers::deps("interceptors failures") else {
        return;
    };
    let dir = TempDir::new("interceptors-failures");
    let unreachable = |name: &str, fail_open: bool, tool: &str| {
        format!(
            "\n[[interceptor]]\nname = \"{name}\"\ncommand = [\"/nonexistent/interceptor\"]\nuse = [\"no-forbidden\"]\ntools = [\"{tool}\"]\nevents = [\"tools/call\"]\nfail_open = {fail_open}\n"
        )
    };
    let config = format!(
        "{MOCK}{}{}{}{}{}{}",
        interceptor(
            &deps,
            "closed",
            "use = [\"slow\"]\ntools = [\"m__echo\"]\nevents = [\"tools/call\"]\ntimeout_ms = 500",
            None
        ),
        interceptor(
            &deps,
            "open",
            "use = [\"slow\"]\ntools = [\"m__add\"]\nevents = [\"tools/call\"]\ntimeout_ms = 500\nfail_open = true",
            None
        ),
        interceptor(
            &deps,
            "malformed",
            "use = [\"broken\"]\ntools = [\"m__big\"]\nevents = [\"tools/call\"]",
            None
        ),
        interceptor(
            &deps,
            "audited",
            "use = [\"no-forbidden\"]\ntools = [\"m__tool_1\"]\nevents = [\"tools/call\"]\nmode = \"audit\"",
            None
        ),
        unreachable("away", false, "m__sleep"),
        unreachable("away-open", true, "m__tool_0"),
    );
    let gw = gateway(&config, &dir);
    let refused = |answer: &Value, by: &str| {
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!("refused by the gateway's interceptor {by}"),
            "{answer}"
        );
    };
    refused(
        &call_tool(&gw.url, "m__echo", json!({"text": "hi"})),
        "closed/slow",
    );
    let added = call_tool(&gw.url, "m__add", json!({"a": 2, "b": 40}));
    assert_eq!(added["result"]["structuredContent"]["sum"], 42, "{added}");
    refused(
        &call_tool(&gw.url, "m__big", json!({"bytes": 10})),
        "malformed/broken",
    );
    refused(
        &call_tool(&gw.url, "m__sleep", json!({"ms": 1})),
        "away/no-forbidden",
    );
    // The audit mode the gateway sets wins over the interceptor's own: logged, not refused.
    let audited = call_tool(&gw.url, "m__tool_1", json!({"text": "forbidden"}));
    assert!(audited["result"]["content"].is_array(), "{audited}");
    assert!(!audited.to_string().contains("refused by"), "{audited}");
    // A request no interceptor selects is not held up by any.
    let read = modern_request(
        &gw.url,
        "resources/read",
        json!({"uri": "mock://mock-backend/readme"}),
        &[],
    )
    .json();
    assert!(
        read["result"]["contents"].is_array(),
        "{read}\n{}",
        gw.log_to_end(std::time::Duration::from_millis(300))
            .join("\n")
    );
    // The same through the SDK clients, in both eras: the timed-out fail-closed call refused, the
    // fail-open one answered.
    let args = peers::call_args(&[
        ("m__echo", json!({"text": "hi"})),
        ("m__add", json!({"a": 1, "b": 2})),
    ]);
    for (client, mode) in peers::CLIENTS_AND_ERAS {
        let report = peers::script_client(&deps, client, &gw.url, mode, &args)
            .unwrap_or_else(|e| panic!("{client:?} {mode}: {e}"));
        let calls = report["calls"].as_array().expect("calls");
        assert_eq!(calls[0]["isError"], true, "{client:?} {mode}: {report}");
        assert_eq!(
            calls[0]["text"], "refused by the gateway's interceptor closed/slow",
            "{client:?} {mode}"
        );
        assert_eq!(calls[1]["isError"], false, "{client:?} {mode}: {report}");
    }
    let lines = gw.log_to_end(std::time::Duration::from_millis(300));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("an interceptor's invocation failed")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("forbidden word")),
        "an interceptor's messages are not logged above debug"
    );
}
