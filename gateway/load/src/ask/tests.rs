//! Whole runs with `ask` in the mix against a fake server (`fake`): the questions of both eras answered as
//! they should be and counted; an answer refused, a server that never answers and one that asks forever
//! each counted as an error within the request deadline.

pub(crate) mod fake;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::args::tests::parse;
use crate::{AskReport, Report, execute};

/// `execute` against `url` with `ask` in the mix of `--ask-tool tool` and these flags.
fn run(url: &str, tool: &str, flags: &[&str]) -> Report {
    let mut words = vec![
        "--url",
        url,
        "--no-progress",
        "--threads",
        "2",
        "--ask-tool",
        tool,
        "--ask-args",
        r#"{"greeting":"hi"}"#,
    ];
    words.extend_from_slice(flags);
    execute(&parse(&words), url, false).unwrap()
}

fn asks(r: &Report) -> AskReport {
    r.operations["ask"]
        .asks
        .unwrap_or_else(|| panic!("no ask counts\n{}", r.table()))
}

#[test]
fn legacy_questions_are_answered_on_the_calls_stream() {
    let (url, seen) = fake::start();
    let flags = [
        "--era",
        "legacy",
        "--sessions",
        "2",
        "--requests",
        "6",
        "--mix",
        "tools/call=1,ask=2",
    ];
    let r = run(&url, "asks", &flags);
    let ask = &r.operations["ask"];
    assert_eq!(
        (ask.requests, ask.outcomes.ok, r.errors),
        (4, 4, 0),
        "{}",
        r.table()
    );
    assert_eq!(r.operations["tools/call"].outcomes.ok, 2, "{}", r.table());
    let a = asks(&r);
    assert_eq!(
        (
            a.questions_answered,
            a.questions_declined,
            a.answers_refused
        ),
        (4, 4, 0)
    );
    assert_eq!(a.by_era.legacy.requests, 4);
    assert_eq!(a.by_era.legacy.ok, 4);
    assert_eq!(a.by_era.modern.requests, 0);
    assert_eq!(r.ask_tool.as_deref(), Some("asks"));
    // The answers: each elicitation's by its id, the form filled; each ping declined with -32601; all with
    // the session's headers.
    let answers = seen.answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 8);
    let (pings, elicitations): (Vec<_>, Vec<_>) = answers
        .iter()
        .partition(|(body, _, _)| body["id"].as_str().is_some_and(|i| i.starts_with("ping-")));
    assert_eq!((pings.len(), elicitations.len()), (4, 4));
    for (body, session, _) in &pings {
        assert_eq!(body["error"]["code"], -32601, "{body}");
        assert_eq!(session.as_deref(), Some(fake::SESSION));
    }
    for (body, session, version) in &elicitations {
        assert!(
            body["id"].as_str().is_some_and(|i| i.starts_with("q-")),
            "{body}"
        );
        assert_eq!(
            body["result"],
            json!({"action": "accept", "content": {"name": "mcpgw load", "age": 1}})
        );
        assert_eq!(session.as_deref(), Some(fake::SESSION));
        assert_eq!(version.as_deref(), Some("2025-11-25"));
    }
    // The sessions said they can answer; the call carried --ask-args.
    let posts = seen.posts.lock().unwrap().clone();
    let init = posts.iter().find(|p| p["method"] == "initialize").unwrap();
    assert_eq!(
        init["params"]["capabilities"],
        json!({"elicitation": {}, "sampling": {}, "roots": {}})
    );
    assert_eq!(
        seen.calls_of("asks")[0]["params"]["arguments"],
        json!({"greeting": "hi"})
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["operations"]["ask"]["questions_answered"], 4);
    assert_eq!(json["operations"]["ask"]["by_era"]["legacy"]["ok"], 4);
    assert!(
        json["operations"]["tools/call"]
            .get("questions_answered")
            .is_none()
    );
    assert!(
        r.table()
            .contains("asks        questions answered 4 (legacy 4 in 4 asks"),
        "{}",
        r.table()
    );
}

#[test]
fn modern_questions_are_answered_through_input_required() {
    let (url, seen) = fake::start();
    let r = run(
        &url,
        "asks",
        &[
            "--era",
            "modern",
            "--sessions",
            "1",
            "--requests",
            "3",
            "--mix",
            "ask",
        ],
    );
    let a = asks(&r);
    assert_eq!(
        (r.requests, r.outcomes.ok, r.errors),
        (3, 3, 0),
        "{}",
        r.table()
    );
    let m = a.by_era.modern;
    assert_eq!(
        (
            m.requests,
            m.ok,
            m.questions_answered,
            m.input_required_rounds
        ),
        (3, 3, 9, 3)
    );
    assert_eq!(a.by_era.legacy.requests, 0);
    // Each ask: the call, then its retry with a new id, the answers under their keys and the state.
    let calls = seen.calls_of("asks");
    assert_eq!(calls.len(), 6);
    let retries: Vec<&Value> = calls
        .iter()
        .filter(|c| c["params"].get("inputResponses").is_some())
        .collect();
    assert_eq!(retries.len(), 3);
    for c in &calls {
        let caps = &c["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(
            caps,
            &json!({"elicitation": {}, "sampling": {}, "roots": {}}),
            "{c}"
        );
        assert_eq!(c["params"]["arguments"], json!({"greeting": "hi"}));
    }
    let ids: std::collections::HashSet<String> =
        calls.iter().map(|c| c["id"].to_string()).collect();
    assert_eq!(ids.len(), 6, "every request of the session has its own id");
    assert_eq!(retries[0]["params"]["requestState"], "st-1");
}

#[test]
fn a_refused_answer_ends_the_ask_as_an_error_at_once() {
    let (url, _) = fake::start();
    let r = run(
        &url,
        "refused",
        &[
            "--era",
            "legacy",
            "--sessions",
            "1",
            "--requests",
            "2",
            "--mix",
            "ask",
        ],
    );
    let ask = &r.operations["ask"];
    assert_eq!(
        (ask.requests, ask.outcomes.http_error),
        (2, 2),
        "{}",
        r.table()
    );
    assert_eq!(
        ask.outcomes.by_http_status.get(&403),
        Some(&2),
        "{}",
        r.table()
    );
    let a = asks(&r);
    assert_eq!((a.questions_answered, a.answers_refused), (0, 2));
    assert!(
        ask.latency_ms.max < 2_000.0,
        "not the deadline: {}",
        r.table()
    );
}

#[test]
fn a_server_that_never_answers_is_a_timeout_by_the_deadline() {
    let (url, _) = fake::start();
    for era in ["legacy", "modern"] {
        let started = Instant::now();
        let flags = [
            "--era",
            era,
            "--sessions",
            "1",
            "--requests",
            "2",
            "--mix",
            "ask",
            "--timeout",
            "400ms",
        ];
        let r = run(&url, "silent", &flags);
        let ask = &r.operations["ask"];
        assert_eq!(
            (ask.requests, ask.outcomes.timeout),
            (2, 2),
            "{era}: {}",
            r.table()
        );
        let l = ask.latency_ms;
        assert!(l.min >= 400.0 && l.max < 1_500.0, "{era}: {l:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "{era}");
        // The question was answered (accepted, or the retry sent); what never came is the result.
        assert_eq!(
            asks(&r).questions_answered,
            if era == "legacy" { 2 } else { 6 },
            "{era}"
        );
    }
}

#[test]
fn a_server_that_asks_forever_is_followed_up_a_bounded_number_of_times() {
    let (url, seen) = fake::start();
    let r = run(
        &url,
        "forever",
        &[
            "--era",
            "modern",
            "--sessions",
            "1",
            "--requests",
            "1",
            "--mix",
            "ask",
        ],
    );
    let ask = &r.operations["ask"];
    assert_eq!(
        (ask.requests, ask.outcomes.incomplete),
        (1, 1),
        "{}",
        r.table()
    );
    let m = asks(&r).by_era.modern;
    assert_eq!(
        (m.input_required_rounds, m.questions_answered, m.ok),
        (super::MAX_ROUNDS, 3 * super::MAX_ROUNDS, 0)
    );
    assert_eq!(seen.calls_of("forever").len() as u64, super::MAX_ROUNDS + 1);
}

#[test]
fn what_a_2026_client_cannot_answer_breaks_the_protocol_at_once() {
    let (url, _) = fake::start();
    for (tool, why) in [
        ("odd", "an input request of an unknown method"),
        ("streams", "a server request on a 2026-07-28 stream"),
    ] {
        let flags = [
            "--era",
            "modern",
            "--sessions",
            "1",
            "--requests",
            "1",
            "--mix",
            "ask",
        ];
        let r = run(&url, tool, &flags);
        let ask = &r.operations["ask"];
        assert_eq!(
            ask.outcomes.invalid_reasons.get(why),
            Some(&1),
            "{tool}: {}",
            r.table()
        );
        assert!(
            ask.latency_ms.max < 2_000.0,
            "{tool}: not the deadline: {}",
            r.table()
        );
        assert_eq!(asks(&r).questions_answered, 0, "{tool}");
    }
}
