//! Each direction to each SDK client in each mode: the call ends with the backend's answer for that user,
//! after the client opened the link its URL elicitation callback was given, the way the client's generation
//! says it (a -32042, an `elicitation/create` request, an `input_required` result).

use serde_json::Value;

use super::{setup, the_call};
use crate::interop::peers::ScriptClient;

/// What one run must show: the tool's text, and how the link reached the client.
struct Expect<'a> {
    text: String,
    via: &'a str,
}

/// Checks a report against `want`; `what` names the run.
fn check(report: &Value, want: &Expect<'_>, what: &str) {
    let call = the_call(report);
    assert_eq!(call["ok"], true, "{what}: {report}");
    assert_eq!(call["isError"], false, "{what}: {report}");
    assert_eq!(call["text"], want.text.as_str(), "{what}: {report}");
    let asked = report["urlElicitations"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {report}"));
    let first = asked
        .first()
        .unwrap_or_else(|| panic!("{what}: no URL was asked: {report}"));
    assert_eq!(first["via"], want.via, "{what}: {report}");
    assert_eq!(first["opened"], true, "{what}: {report}");
    assert_eq!(first["status"], 200, "{what}: {report}");
    let url = first["url"].as_str().unwrap();
    assert!(
        url.contains("/consent/"),
        "{what}: the backend's own link: {url}"
    );
}

/// The text of a report's one call, which must be a tool error; `what` names the run.
fn tool_error_text(report: &Value, what: &str) -> String {
    assert_eq!(the_call(report)["isError"], true, "{what}: {report}");
    the_call(report)["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn legacy_directions(client: ScriptClient, tag: &str) {
    let Some(s) = setup(&format!("url-legacy-{tag}")) else {
        return;
    };
    // (tool, who, how it reaches a 2025-11-25 client)
    let runs = [
        ("lu__url_required", "error"),
        ("lu__url_ask", "request"),
        ("mu__url_required", "request"),
    ];
    for (tool, via) in runs {
        let sub = format!("{tag}-legacy-{tool}");
        let report = s.run(client, "legacy", &sub, &["--url-elicit"], tool);
        let text = if tool.ends_with("ask") {
            format!("asked and consented as {sub}")
        } else {
            format!("consented as {sub}")
        };
        check(
            &report,
            &Expect { text, via },
            &format!("{client:?} legacy {tool}"),
        );
        let first = &report["urlElicitations"][0];
        match tool {
            // The -32042 as the backend sent it: the client retried after opening its link.
            "lu__url_required" => {
                // Its completion, from the principal's own backend session's GET stream (opened for it).
                let id = first["elicitationId"].as_str().unwrap_or_default();
                let completions = report["completions"].as_array().unwrap();
                assert!(
                    completions.iter().any(|c| c == id),
                    "{client:?}: the backend's completion of {id}: {report}"
                );
                let retried = the_call(&report)["retriedAfter"]
                    .as_str()
                    .unwrap_or_default();
                assert!(
                    !retried.is_empty(),
                    "{client:?}: the -32042 first: {report}"
                );
            }
            // A 2026-07-28 backend's URL input request: an elicitationId mcpgw gave it, completed by mcpgw
            // once the backend's retry was answered.
            "mu__url_required" => {
                let id = first["elicitationId"].as_str().unwrap_or_default();
                assert!(id.starts_with("mcpgw-"), "{client:?}: mcpgw's id: {report}");
                let completions = report["completions"].as_array().unwrap();
                assert!(
                    completions.iter().any(|c| c == id),
                    "{client:?}: mcpgw completed {id}: {report}"
                );
            }
            _ => {}
        }
    }
}

fn modern_directions(client: ScriptClient, tag: &str) {
    let Some(s) = setup(&format!("url-modern-{tag}")) else {
        return;
    };
    for tool in ["lu__url_required", "lu__url_ask", "mu__url_required"] {
        let sub = format!("{tag}-modern-{tool}");
        let report = s.run(client, "2026-07-28", &sub, &["--url-elicit"], tool);
        let text = if tool.ends_with("ask") {
            format!("asked and consented as {sub}")
        } else {
            format!("consented as {sub}")
        };
        let via = "input_required";
        check(
            &report,
            &Expect { text, via },
            &format!("{client:?} 2026-07-28 {tool}"),
        );
        let first = &report["urlElicitations"][0];
        assert!(
            first["elicitationId"].is_null(),
            "no elicitationId on 2026-07-28: {report}"
        );
    }
}

#[test]
fn the_python_client_in_legacy_mode_opens_every_kind_of_url_elicitation() {
    legacy_directions(ScriptClient::Python, "py");
}

#[test]
fn the_typescript_client_in_legacy_mode_opens_every_kind_of_url_elicitation() {
    legacy_directions(ScriptClient::TypeScript, "ts");
}

#[test]
fn the_python_client_in_2026_07_28_mode_opens_every_kind_of_url_elicitation() {
    modern_directions(ScriptClient::Python, "py");
}

#[test]
fn the_typescript_client_in_2026_07_28_mode_opens_every_kind_of_url_elicitation() {
    modern_directions(ScriptClient::TypeScript, "ts");
}

#[test]
fn declining_clients_clients_that_cannot_be_asked_and_a_backend_that_cannot_tell_users_apart() {
    let Some(s) = setup("url-refusals") else {
        return;
    };
    for client in [ScriptClient::Python, ScriptClient::TypeScript] {
        // Declined on 2025-11-25: the -32042 is the call's answer (nothing retried).
        let report = s.run(
            client,
            "legacy",
            "decliner",
            &["--url-decline"],
            "lu__url_required",
        );
        let call = the_call(&report);
        assert_eq!(call["ok"], false, "{client:?}: {report}");
        let error = call["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("32042") || error.contains("URL elicitation required"),
            "{client:?}: {report}"
        );
        // Declined on 2026-07-28: mcpgw answers the retry itself, as a tool error.
        let report = s.run(
            client,
            "2026-07-28",
            "decliner",
            &["--url-decline"],
            "lu__url_required",
        );
        let call = the_call(&report);
        assert_eq!(call["isError"], true, "{client:?}: {report}");
        assert!(
            call["text"].as_str().unwrap().contains("declined"),
            "{client:?}: {report}"
        );

        // A client that did not declare elicitation.url reads the link in a tool error.
        for mode in ["legacy", "2026-07-28"] {
            let report = s.run(client, mode, "no-url", &[], "lu__url_required");
            let text = tool_error_text(&report, &format!("{client:?} {mode}"));
            assert!(
                text.contains("/consent/") && text.contains("elicitation.url"),
                "{client:?} {mode}: {text}"
            );
        }

        // The same server on the gateway's one session and credential, as a legacy and as a 2026-07-28
        // backend: not passed on, no link shown.
        let runs = [
            ("legacy", "one__url_required"),
            ("2026-07-28", "one__url_required"),
            ("legacy", "mone__url_required"),
            ("2026-07-28", "mone__url_required"),
        ];
        for (mode, tool) in runs {
            let report = s.run(client, mode, "anyone", &["--url-elicit"], tool);
            let text = tool_error_text(&report, &format!("{client:?} {mode} {tool}"));
            assert!(
                text.contains("did not pass on"),
                "{client:?} {mode} {tool}: {text}"
            );
            assert!(
                !text.contains("/consent/"),
                "{client:?} {mode} {tool}: {text}"
            );
            assert!(
                report["urlElicitations"]
                    .as_array()
                    .is_none_or(Vec::is_empty),
                "{client:?} {mode} {tool}: nothing asked: {report}"
            );
        }
    }
    // Nobody consented to anything.
    assert!(
        s.consents().iter().all(|(_, done)| !done),
        "{:?}",
        s.consents()
    );
}

/// `mcpgw serve --stdio` has one client: a backend on one session and one credential may ask it, since no
/// other user can ride on the consent. The -32042 reaches it, then the backend's completion (sent on its
/// session's GET stream, routed to the one session it was relayed to), then the retried call succeeds.
#[test]
fn the_one_client_of_a_stdio_gateway_is_asked_by_a_backend_on_one_session() {
    let Some(deps) = crate::interop::peers::deps("url-stdio") else {
        return;
    };
    let server = crate::interop::peers::python_fixture(
        &deps,
        "url_server.py",
        &[],
        "url_server listening on ",
    );
    let dir = crate::support::TempDir::new("url-stdio");
    let config = dir.file(
        "mcpgw.toml",
        &format!(
            "[[backend]]\nname = \"lu\"\nurl = \"{}\"\nera = \"legacy\"\n",
            server.url
        ),
    );
    let mut gw = crate::support::StdioGateway::start(&config);
    let wait = std::time::Duration::from_secs(30);
    let init = gw.ask(
        &serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
        "clientInfo": {"name": "stdio", "version": "1"}}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    gw.tell(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "lu__url_required", "arguments": {}}});
    // The answer to `id`, past what comes before it (the backend may be listed meanwhile).
    let answer_to = |gw: &mut crate::support::StdioGateway, body: &Value| -> Value {
        gw.tell(body);
        loop {
            let m = gw.next(wait).expect("an answer within 30 s");
            if m["id"] == body["id"] {
                return m;
            }
        }
    };
    let deadline = std::time::Instant::now() + wait;
    let first = loop {
        let m = answer_to(&mut gw, &call);
        let unknown = m["error"]["code"] == -32601 || m["error"]["code"] == -32602;
        if !unknown || std::time::Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(first["error"]["code"], -32042, "{first}");
    let elicitation = &first["error"]["data"]["elicitations"][0];
    let link = elicitation["url"].as_str().unwrap();
    let status = crate::support::client().get(link).send().unwrap().status();
    assert_eq!(status.as_u16(), 200);
    let complete = gw.next(wait).expect("the completion within 30 s");
    assert_eq!(
        complete["method"], "notifications/elicitation/complete",
        "{complete}"
    );
    assert_eq!(
        complete["params"]["elicitationId"],
        elicitation["elicitationId"]
    );
    let again = answer_to(
        &mut gw,
        &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "lu__url_required", "arguments": {}}}),
    );
    let text = again["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("consented as "), "{again}");
}
