//! The label tables (each value maps to one slot and back), the outcome and code mapping, the bounds on
//! cardinality, and both encodings of a scrape.

use std::sync::Arc;
use std::time::Duration;

use protocol::shape::Failure;
use protocol::{Error, ErrorCode, Generation, Method};

use super::labels::{CODES, GENERATIONS, METHODS, OUTCOMES, generation_index, generation_label};
use super::*;

fn metrics(backends: &[&str], per_tool: bool) -> Arc<Metrics> {
    Arc::new(Metrics::new(
        backends.iter().copied(),
        per_tool,
        Arc::default(),
    ))
}

#[test]
fn method_labels_are_the_spec_names_other_or_none() {
    let table: &[(&str, &str)] = &[
        ("tools/call", "tools/call"),
        ("initialize", "initialize"),
        ("resources/read", "resources/read"),
        ("subscriptions/listen", "subscriptions/listen"),
        ("tools/cal", "other"),
        ("x-vendor/anything", "other"),
        ("", "other"),
    ];
    for (name, label) in table {
        assert_eq!(MethodLabel::of_name(name).as_str(), *label, "{name}");
    }
    assert_eq!(MethodLabel::None.as_str(), "none");
    // Every method has its own slot, and the slot gives the method back.
    for (i, m) in Method::ALL.iter().enumerate() {
        assert_eq!(MethodLabel::Spec(*m).index(), i);
        assert_eq!(MethodLabel::at(i), MethodLabel::Spec(*m));
    }
    assert_eq!(
        MethodLabel::at(MethodLabel::Other.index()),
        MethodLabel::Other
    );
    assert_eq!(
        MethodLabel::at(MethodLabel::None.index()),
        MethodLabel::None
    );
    assert_eq!(METHODS, Method::ALL.len() + 2);
}

#[test]
fn generation_labels_are_the_versions_or_none() {
    for g in Generation::ALL {
        assert_eq!(generation_label(generation_index(Some(g))), g.as_str());
    }
    assert_eq!(generation_label(generation_index(None)), "none");
    assert_eq!(GENERATIONS, 6);
}

#[test]
fn codes_are_the_known_ones_or_other() {
    let table: &[(ErrorCode, &str)] = &[
        (ErrorCode::ParseError, "-32700"),
        (ErrorCode::InvalidRequest, "-32600"),
        (ErrorCode::MethodNotFound, "-32601"),
        (ErrorCode::InvalidParams, "-32602"),
        (ErrorCode::InternalError, "-32603"),
        (ErrorCode::RESOURCE_NOT_FOUND, "-32002"),
        (ErrorCode::HeaderMismatch, "-32020"),
        (ErrorCode::MissingRequiredClientCapability, "-32021"),
        (ErrorCode::UnsupportedProtocolVersion, "-32022"),
        (ErrorCode::UrlElicitationRequiredError, "-32042"),
        (ErrorCode::Other(-32000), "other"),
        (ErrorCode::Other(42), "other"),
        (ErrorCode::Other(-32601), "-32601"),
    ];
    for (code, label) in table {
        assert_eq!(Code::of(*code).as_str(), *label, "{code:?}");
    }
}

#[test]
fn outcomes_map_failures_and_refusals() {
    let backend = || "b".to_owned();
    let table: Vec<(Method, Failure, (&str, &str))> = vec![
        (
            Method::ToolsCall,
            Failure::Timeout {
                backend: backend(),
                after_ms: 5,
            },
            ("timeout", ""),
        ),
        (
            Method::ResourcesRead,
            Failure::Timeout {
                backend: backend(),
                after_ms: 5,
            },
            ("timeout", ""),
        ),
        (
            Method::ToolsCall,
            Failure::Overloaded { backend: backend() },
            ("overloaded", ""),
        ),
        (
            Method::PromptsGet,
            Failure::OverShare {
                backend: backend(),
                share: 1,
            },
            ("overloaded", ""),
        ),
        (
            Method::ToolsCall,
            Failure::Crashed {
                backend: backend(),
                reason: "x".into(),
            },
            ("tool_error", ""),
        ),
        (
            Method::PromptsGet,
            Failure::Crashed {
                backend: backend(),
                reason: "x".into(),
            },
            ("jsonrpc_error", "-32603"),
        ),
        (
            Method::ResourcesRead,
            Failure::Backend {
                backend: backend(),
                error: Error::new(ErrorCode::RESOURCE_NOT_FOUND, "gone"),
            },
            ("jsonrpc_error", "-32002"),
        ),
        (
            Method::ResourcesRead,
            Failure::Backend {
                backend: backend(),
                error: Error::new(ErrorCode::Other(-32099), "odd"),
            },
            ("jsonrpc_error", "other"),
        ),
    ];
    for (method, failure, labels) in table {
        assert_eq!(
            Outcome::of_failure(method, &failure).labels(),
            labels,
            "{method} {failure:?}"
        );
    }
    assert_eq!(
        Outcome::of_refusal(503, ErrorCode::InternalError).labels(),
        ("overloaded", "")
    );
    assert_eq!(
        Outcome::of_refusal(429, ErrorCode::InvalidRequest).labels(),
        ("rejection", "-32600")
    );
    assert_eq!(
        Outcome::of_refusal(200, ErrorCode::MethodNotFound).labels(),
        ("rejection", "-32601")
    );
}

#[test]
fn every_outcome_has_one_slot() {
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..OUTCOMES {
        let o = Outcome::at(i);
        assert_eq!(o.index(), i, "{o:?}");
        assert!(seen.insert(o.labels()), "{:?} twice", o.labels());
    }
    assert_eq!(OUTCOMES, 4 + 2 * CODES);
}

#[test]
fn backend_outcomes_are_the_failure_kinds() {
    let f = Failure::CircuitOpen {
        backend: "b".into(),
        retry_in_ms: 0,
    };
    assert_eq!(
        BackendOutcome::label(BackendOutcome::of_failure(&f).index()),
        "circuit_open"
    );
    assert_eq!(
        BackendOutcome::label(BackendOutcome::of_failure(&Failure::ShuttingDown).index()),
        "shutting_down"
    );
    assert_eq!(BackendOutcome::label(BackendOutcome::OK.index()), "ok");
    let too_large = Failure::TooLarge {
        backend: "b".into(),
        limit: 1024,
        per: "stream",
    };
    assert_eq!(
        BackendOutcome::label(BackendOutcome::of_failure(&too_large).index()),
        "too_large"
    );
}

#[test]
fn counts_land_in_their_own_slot_only() {
    let m = metrics(&["a"], false);
    let answered = |method, outcome| Answered {
        method,
        generation: Some(Generation::V2025_06_18),
        transport: Transport::StreamableHttp,
        outcome,
        took: Some(Duration::from_millis(3)),
        in_backends: Duration::from_millis(2),
    };
    m.answered(answered(Method::ToolsCall.into(), Outcome::Ok));
    m.answered(answered(Method::ToolsCall.into(), Outcome::Ok));
    m.answered(answered(Method::ToolsCall.into(), Outcome::ToolError));
    let g = Some(Generation::V2025_06_18);
    let t = Transport::StreamableHttp;
    assert_eq!(m.requests(Method::ToolsCall.into(), g, t, Outcome::Ok), 2);
    assert_eq!(
        m.requests(Method::ToolsCall.into(), g, t, Outcome::ToolError),
        1
    );
    assert_eq!(
        m.requests(Method::ToolsCall.into(), None, t, Outcome::Ok),
        0
    );
    assert_eq!(m.requests_total(), 3);
    // An unconfigured backend is not counted (nor given a series).
    m.backend_call("a", None, BackendOutcome::OK, Duration::from_millis(1));
    m.backend_call("zz", None, BackendOutcome::OK, Duration::from_millis(1));
    assert_eq!(m.backend_requests("a", BackendOutcome::OK), 1);
    assert_eq!(m.backend_requests("zz", BackendOutcome::OK), 0);
}

#[test]
fn per_tool_series_are_off_by_default_and_bounded_when_on() {
    let off = metrics(&["a"], false);
    off.backend_call("a", Some("echo"), BackendOutcome::OK, Duration::ZERO);
    assert!(!encode(&off, State::default(), Format::Prometheus).contains("mcpgw_tool_calls"));

    let on = metrics(&["a"], true);
    for i in 0..tools::MAX_TOOL_SERIES + 5 {
        on.backend_call(
            "a",
            Some(&format!("t{i}")),
            BackendOutcome::OK,
            Duration::ZERO,
        );
    }
    on.backend_call("a", Some("t0"), BackendOutcome::OK, Duration::ZERO);
    let text = encode(&on, State::default(), Format::Prometheus);
    let series = text
        .lines()
        .filter(|l| l.starts_with("mcpgw_tool_calls_total{"))
        .count();
    assert_eq!(
        series,
        tools::MAX_TOOL_SERIES + 1,
        "the bound and one other"
    );
    assert!(text.contains(r#"mcpgw_tool_calls_total{backend="a",tool="t0",outcome="ok"} 2"#));
    assert!(text.contains(r#"mcpgw_tool_calls_total{backend="a",tool="other",outcome="ok"} 5"#));
}

#[test]
fn a_histogram_bucket_holds_values_up_to_its_bound() {
    let h = Histogram::default();
    h.observe(Duration::from_micros(100)); // exactly the first bound
    h.observe(Duration::from_micros(101));
    h.observe(Duration::from_secs(600)); // past every bound
    let (sum, count, buckets) = h.read();
    assert_eq!(count, 3);
    assert_eq!(buckets[0], (0.0001, 1));
    assert_eq!(buckets[1], (0.00025, 1));
    assert_eq!(buckets.last(), Some(&(f64::INFINITY, 1)));
    assert!((sum - 600.000201).abs() < 1e-6, "{sum}");
}

#[test]
fn the_accept_header_chooses_the_format() {
    let table: &[(Option<&str>, Format)] = &[
        (None, Format::Prometheus),
        (Some("*/*"), Format::Prometheus),
        (Some("text/plain;version=0.0.4"), Format::Prometheus),
        (
            Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            Format::OpenMetrics,
        ),
        (
            Some("text/plain;q=0.9, application/openmetrics-text; version=1.0.0; q=0.8"),
            Format::OpenMetrics,
        ),
        (Some("application/openmetrics-text;q=0"), Format::Prometheus),
    ];
    for (accept, format) in table {
        assert_eq!(Format::from_accept(*accept), *format, "{accept:?}");
    }
}

fn sample_state() -> State {
    State {
        backends: vec![BackendGauges {
            name: "m".into(),
            up: true,
            state: "ready",
            transport: "in_process",
            generation: Some(Generation::V2026_07_28),
            in_flight: 2,
            max_in_flight: 64,
            restarts: 1,
            circuit: "closed",
            catalog: [3, 1, 2, 0],
        }],
        sessions: [0, 0, 4, 0, 0],
        in_flight: 5,
        messages_dropped: 7,
    }
}

#[test]
fn the_text_format_0_0_4_names_counters_with_total_and_info_as_a_gauge() {
    let m = metrics(&["m"], false);
    m.answered(Answered {
        method: Method::ToolsCall.into(),
        generation: Some(Generation::V2026_07_28),
        transport: Transport::StreamableHttp,
        outcome: Outcome::JsonRpcError(Code::of(ErrorCode::InvalidParams)),
        took: Some(Duration::from_millis(1)),
        in_backends: Duration::ZERO,
    });
    m.sessions.created(Generation::V2025_06_18);
    let text = encode(&m, sample_state(), Format::Prometheus);
    for line in [
        "# TYPE mcpgw_requests_total counter",
        r#"mcpgw_requests_total{method="tools/call",generation="2026-07-28",transport="streamable_http",outcome="jsonrpc_error",code="-32602"} 1"#,
        "# TYPE mcpgw_request_duration_seconds histogram",
        r#"mcpgw_request_duration_seconds_bucket{method="tools/call",le="0.001"} 1"#,
        r#"mcpgw_request_duration_seconds_bucket{method="tools/call",le="+Inf"} 1"#,
        r#"mcpgw_request_duration_seconds_count{method="tools/call"} 1"#,
        "# TYPE mcpgw_build_info gauge",
        "# TYPE mcpgw_backend_info gauge",
        r#"mcpgw_backend_info{backend="m",state="ready",transport="in_process",era="modern",generation="2026-07-28"} 1"#,
        r#"mcpgw_backend_up{backend="m"} 1"#,
        r#"mcpgw_backend_in_flight{backend="m"} 2"#,
        r#"mcpgw_backend_restarts_total{backend="m"} 1"#,
        r#"mcpgw_backend_circuit_state{backend="m",state="closed"} 1"#,
        r#"mcpgw_backend_circuit_state{backend="m",state="open"} 0"#,
        r#"mcpgw_backend_catalog_items{backend="m",kind="tools"} 3"#,
        r#"mcpgw_sessions{generation="2025-06-18"} 4"#,
        r#"mcpgw_sessions_created_total{generation="2025-06-18"} 1"#,
        "mcpgw_requests_in_flight 5",
        "mcpgw_messages_dropped_total 7",
        "mcpgw_streams_open 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        );
    }
    assert!(
        text.contains(&format!(
            r#"mcpgw_build_info{{arch="{}",os="{}",version="{}"}} 1"#,
            std::env::consts::ARCH,
            std::env::consts::OS,
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(!text.contains("# EOF"));
    assert!(!text.contains("# UNIT"));
    // Every sample line names a declared family (name, or name plus a histogram suffix).
    let declared: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| declared.contains(f))
            .unwrap_or(name);
        assert!(declared.contains(&family), "{line} has no # TYPE");
    }
}

#[test]
fn openmetrics_ends_with_eof_and_declares_counters_without_total() {
    let m = metrics(&["m"], false);
    let text = encode(&m, sample_state(), Format::OpenMetrics);
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains("# TYPE mcpgw_requests counter"));
    assert!(text.contains("# TYPE mcpgw_build info"));
    assert!(text.contains("mcpgw_messages_dropped_total 7"));
}

#[test]
fn an_open_stream_counts_until_dropped() {
    let m = metrics(&[], false);
    let a = m.stream_opened(Transport::StreamableHttp);
    let b = m.stream_opened(Transport::HttpSse);
    a.sent(10);
    b.sent(5);
    let open = |m: &Arc<Metrics>| {
        encode(m, State::default(), Format::Prometheus)
            .lines()
            .find(|l| l.starts_with("mcpgw_streams_open "))
            .map(str::to_owned)
    };
    assert_eq!(open(&m).as_deref(), Some("mcpgw_streams_open 2"));
    drop(a);
    assert_eq!(open(&m).as_deref(), Some("mcpgw_streams_open 1"));
    let text = encode(&m, State::default(), Format::Prometheus);
    assert!(text.contains(r#"mcpgw_sent_bytes_total{transport="streamable_http"} 10"#));
    assert!(text.contains(r#"mcpgw_sent_bytes_total{transport="http_sse"} 5"#));
}
