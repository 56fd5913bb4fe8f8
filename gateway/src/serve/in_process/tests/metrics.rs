//! What `GET /metrics` counts, driven through the pipeline: each kind of answer — a result, a tool error, a
//! JSON-RPC error, a rejection by validation, an overload (the worker's, and a backend's), a timeout —
//! moves its own `mcpgw_requests_total` series by exactly one and no other; backend calls, sessions
//! created and deleted, and the scrape's text follow.

use std::time::Duration;

use protocol::{ErrorCode, Generation, Method};

use super::*;
use crate::metrics::{BackendOutcome, Code, MethodLabel, Outcome, Transport};

const MODERN: Option<Generation> = Some(Generation::V2026_07_28);
const HTTP: Transport = Transport::StreamableHttp;

fn calls(gw: &InProcessGateway, outcome: Outcome) -> u64 {
    gw.gateway()
        .metrics
        .requests(Method::ToolsCall.into(), MODERN, HTTP, outcome)
}

/// Sends one request and checks that the counters moved by exactly one, in `series` only.
async fn counted_once(
    gw: &InProcessGateway,
    id: i64,
    method: &str,
    params: Value,
    series: (MethodLabel, Option<Generation>, Outcome),
) -> Value {
    let m = &gw.gateway().metrics;
    let (label, generation, outcome) = series;
    let (before, total) = (
        m.requests(label, generation, HTTP, outcome),
        m.requests_total(),
    );
    let answer = modern(gw, id, method, params).await;
    assert_eq!(
        m.requests(label, generation, HTTP, outcome),
        before + 1,
        "{method} as {outcome:?}: {answer:?}"
    );
    assert_eq!(m.requests_total(), total + 1, "one series moved only");
    json_of(&answer)
}

#[actix_rt::test]
async fn each_kind_of_answer_moves_its_own_series_by_one() {
    let gw = gateway("").await;
    let call = MethodLabel::Spec(Method::ToolsCall);

    let v = counted_once(
        &gw,
        1,
        "tools/call",
        echo("hi"),
        (call, MODERN, Outcome::Ok),
    )
    .await;
    assert_eq!(v["result"]["content"][0]["text"], "hi", "{v}");

    let fail = json!({"name": "m__fail", "arguments": {"message": "no"}});
    let v = counted_once(
        &gw,
        2,
        "tools/call",
        fail,
        (call, MODERN, Outcome::ToolError),
    )
    .await;
    assert_eq!(v["result"]["isError"], true, "{v}");

    // A JSON-RPC error raised after validation: a cursor the gateway never issued.
    let list = MethodLabel::Spec(Method::ToolsList);
    let invalid = Outcome::JsonRpcError(Code::of(ErrorCode::InvalidParams));
    let v = counted_once(
        &gw,
        3,
        "tools/list",
        json!({"cursor": "nope"}),
        (list, MODERN, invalid),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");

    // Refused by validation: the method is read from the body again.
    let unknown = json!({"name": "m__no_such_tool", "arguments": {}});
    let rejected = Outcome::Rejection(Code::of(ErrorCode::MethodNotFound));
    let v = counted_once(&gw, 4, "tools/call", unknown, (call, MODERN, rejected)).await;
    assert_eq!(v["error"]["code"], -32601, "{v}");

    // A method outside the spec is `other`.
    let v = counted_once(
        &gw,
        5,
        "vendor/thing",
        json!({}),
        (MethodLabel::Other, MODERN, rejected),
    )
    .await;
    assert_eq!(v["error"]["code"], -32601, "{v}");

    // The backend saw the two calls that reached it, by outcome.
    let m = &gw.gateway().metrics;
    assert_eq!(m.backend_requests("m", BackendOutcome::OK), 1);
    assert_eq!(m.backend_requests("m", BackendOutcome::TOOL_ERROR), 1);

    // Past the drain's cut-off every request is refused at once: overloaded, before its generation is read.
    gw.gateway().drain.advance(crate::drain::Phase::CutOff);
    let v = counted_once(
        &gw,
        6,
        "tools/call",
        echo("late"),
        (call, None, Outcome::Overloaded),
    )
    .await;
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert_eq!(calls(&gw, Outcome::Ok), 1);
    gw.shutdown();
}

#[actix_rt::test]
async fn a_backend_at_its_bound_counts_overloaded_and_a_late_one_timeout() {
    let config = Config::from_toml_str(
        "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\nmax_in_flight = 1\ntimeout_ms = 300\n",
        Path::new("test.toml"),
    )
    .unwrap();
    let gw = InProcessGateway::start(config).await.unwrap();
    let handle = gw.gateway().live().backends["m"].clone();
    let slow = modern(
        &gw,
        1,
        "tools/call",
        json!({"name": "m__sleep", "arguments": {"ms": 30000}}),
    );
    let second = async {
        // Once the slow call holds the backend's one permit (bounded wait; not a timed assertion).
        for _ in 0..500 {
            if handle.status().in_flight == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(handle.status().in_flight, 1, "the slow call is in flight");
        modern(&gw, 2, "tools/call", echo("squeezed")).await
    };
    let (slow, second) = futures_util::join!(slow, second);
    assert_eq!(json_of(&second)["result"]["isError"], true, "{second:?}");
    assert_eq!(json_of(&slow)["result"]["isError"], true, "{slow:?}");
    assert_eq!(calls(&gw, Outcome::Overloaded), 1);
    assert_eq!(calls(&gw, Outcome::Timeout), 1);
    assert_eq!(gw.gateway().metrics.requests_total(), 2);
    let m = &gw.gateway().metrics;
    let kind = |f: protocol::shape::Failure| BackendOutcome::of_failure(&f);
    let overloaded = kind(protocol::shape::Failure::Overloaded {
        backend: "m".into(),
    });
    let timeout = kind(protocol::shape::Failure::Timeout {
        backend: "m".into(),
        after_ms: 0,
    });
    assert_eq!(m.backend_requests("m", overloaded), 1);
    assert_eq!(m.backend_requests("m", timeout), 1);
    gw.shutdown();
}

#[actix_rt::test]
async fn sessions_are_counted_created_and_deleted_and_the_scrape_shows_them() {
    let gw = gateway("").await;
    let legacy = Legacy::connect(&gw, "2025-06-18").await;
    let m = &gw.gateway().metrics;
    let g = Generation::V2025_06_18;
    let init = MethodLabel::Spec(Method::Initialize);
    assert_eq!(m.requests(init, Some(g), HTTP, Outcome::Ok), 1);
    let answer = legacy
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": echo("x")}))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        m.requests(Method::ToolsCall.into(), Some(g), HTTP, Outcome::Ok),
        1
    );
    let counters = gw.gateway().sessions.counters();
    assert_eq!(counters.created_of(g), 1);
    assert_eq!(gw.gateway().sessions.live_by_generation()[g as usize], 1);

    let text = crate::metrics::encode(
        &gw.gateway().metrics,
        crate::front::http::metrics::state(gw.gateway()),
        crate::metrics::Format::Prometheus,
    );
    for line in [
        r#"mcpgw_sessions{generation="2025-06-18"} 1"#,
        r#"mcpgw_sessions_created_total{generation="2025-06-18"} 1"#,
        r#"mcpgw_requests_total{method="tools/call",generation="2025-06-18",transport="streamable_http",outcome="ok"} 1"#,
        r#"mcpgw_backend_requests_total{backend="m",outcome="ok"} 1"#,
        r#"mcpgw_backend_up{backend="m"} 1"#,
        r#"mcpgw_backend_circuit_state{backend="m",state="closed"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let tools = text
        .lines()
        .find(|l| l.starts_with(r#"mcpgw_backend_catalog_items{backend="m",kind="tools"}"#))
        .expect("the catalog's tools");
    assert_ne!(tools.rsplit(' ').next(), Some("0"), "{tools}");

    gw.end_session(&legacy.session);
    assert_eq!(counters.ended_of(g, crate::metrics::SessionEnd::Deleted), 1);
    assert_eq!(gw.gateway().sessions.live_by_generation()[g as usize], 0);
    gw.shutdown();
}
