//! `[traces]`: the spans of a `tools/call` through mcpgw to an HTTP backend, as a collector receives them.
//! The collector is made here: an OTLP/HTTP receiver on a loopback port chosen at run time that decodes
//! the exported protobuf messages. The backend (the mock over HTTP) sits behind a recording proxy, so the
//! test sees the trace context the backend got: the gateway's backend-call span, never the client's.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::json;

use crate::backend_credentials::Recorder;
use crate::support::{
    JSON_HEADERS, LegacyClient, Running, TempDir, gateway_with, http_mock, post_raw,
};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const ARGUMENT: &str = "argument-text-never-in-a-span";

/// One exported span, as the test looks at it.
#[derive(Debug, Clone)]
struct Seen {
    trace: String,
    id: String,
    parent: String,
    name: String,
    /// 1 internal, 2 server, 3 client.
    kind: i32,
    attributes: HashMap<String, String>,
}

/// The OTLP/HTTP receiver: every span of every export, and the headers of the exports.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Seen>>>,
    headers: Arc<Mutex<Vec<String>>>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let (keep_spans, keep_headers) = (spans.clone(), headers.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (spans, headers) = (keep_spans.clone(), keep_headers.clone());
                std::thread::spawn(move || {
                    let mut write = conn.try_clone().unwrap();
                    let mut read = BufReader::new(conn);
                    // Requests one after another on a kept-alive connection.
                    loop {
                        let mut length = 0usize;
                        let mut line = String::new();
                        loop {
                            line.clear();
                            if read.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            let l = line.trim_end().to_ascii_lowercase();
                            if l.is_empty() {
                                break;
                            }
                            if let Some(v) = l.strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                            headers.lock().unwrap().push(l);
                        }
                        let mut body = vec![0u8; length];
                        if read.read_exact(&mut body).is_err() {
                            return;
                        }
                        let export = ExportTraceServiceRequest::decode(body.as_slice())
                            .expect("an OTLP protobuf export");
                        let mut seen = spans.lock().unwrap();
                        for span in export
                            .resource_spans
                            .iter()
                            .flat_map(|r| &r.scope_spans)
                            .flat_map(|s| &s.spans)
                        {
                            let attributes = span
                                .attributes
                                .iter()
                                .map(|kv| {
                                    let value =
                                        match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                            Some(Any::StringValue(s)) => s.clone(),
                                            Some(other) => format!("{other:?}"),
                                            None => String::new(),
                                        };
                                    (kv.key.clone(), value)
                                })
                                .collect();
                            seen.push(Seen {
                                trace: hex(&span.trace_id),
                                id: hex(&span.span_id),
                                parent: hex(&span.parent_span_id),
                                name: span.name.clone(),
                                kind: span.kind,
                                attributes,
                            });
                        }
                        drop(seen);
                        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                        if write.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Collector {
            url,
            spans,
            headers,
        }
    }

    /// The spans of `trace` once its request span and its children (route, backend call, shape) are in;
    /// fails after a bounded wait.
    fn trace(&self, trace: &str) -> Vec<Seen> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let spans: Vec<Seen> = self
                .spans
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.trace == trace)
                .cloned()
                .collect();
            if spans.len() >= 4 {
                return spans;
            }
            assert!(
                Instant::now() < until,
                "the collector did not receive the trace's four spans: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A gateway exporting to `collector`, one HTTP mock backend `m` behind a recording proxy.
fn traced_gateway(collector: &Collector, dir: &TempDir) -> (Running, Running, Recorder) {
    let mock = http_mock(&["--name", "m"]);
    let recorder = Recorder::start(&mock.url);
    let config = format!(
        "[[backend]]\nname = \"m\"\nurl = \"{}\"\n\n[traces]\nendpoint = \"{}\"\nservice_name = \"mcpgw-it\"\n\
         headers = {{ x-collector-key = \"k-123\" }}\n",
        recorder.url, collector.url
    );
    let gw = gateway_with(&config, dir, |cmd| {
        // a short schedule: the spans are exported within ~50 ms of their end
        cmd.env("OTEL_BSP_SCHEDULE_DELAY", "50");
    });
    (gw, mock, recorder)
}

/// The request span (kind server) and its three children, checked for parentage; the backend-call span.
fn check_tree(spans: &[Seen], parent_span: &str) -> (Seen, Seen) {
    let request = spans
        .iter()
        .find(|s| s.kind == 2)
        .unwrap_or_else(|| panic!("no server span: {spans:#?}"))
        .clone();
    assert_eq!(request.name, "tools/call m__echo", "{request:?}");
    assert_eq!(
        request.parent, parent_span,
        "the request span's parent is the client's span"
    );
    let children: Vec<&Seen> = spans.iter().filter(|s| s.parent == request.id).collect();
    for name in ["mcpgw.route", "mcpgw.shape"] {
        assert!(
            children.iter().any(|s| s.name == name && s.kind == 1),
            "no {name} child of the request span: {spans:#?}"
        );
    }
    let backend = children
        .iter()
        .find(|s| s.kind == 3)
        .unwrap_or_else(|| panic!("no backend-call child of the request span: {spans:#?}"));
    assert_eq!(backend.name, "tools/call echo");
    assert_eq!(backend.attributes["mcpgw.backend"], "m");
    assert_eq!(backend.attributes["mcpgw.outcome"], "ok");
    assert_eq!(backend.attributes["mcp.method.name"], "tools/call");
    for s in spans {
        for (k, v) in &s.attributes {
            assert!(!v.contains(ARGUMENT), "{k} of {} holds an argument", s.name);
        }
    }
    ((*backend).clone(), request)
}

#[test]
fn a_tools_call_is_traced_under_the_clients_header_and_the_backend_gets_the_gateways_span() {
    let dir = TempDir::new("traces-header");
    let collector = Collector::start();
    let (gw, _mock, recorder) = traced_gateway(&collector, &dir);
    let client_parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let call = json!({"jsonrpc": "2.0", "id": "req-7", "method": "tools/call",
    "params": {"name": "m__echo", "arguments": {"text": ARGUMENT}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "traces-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut headers: Vec<(&str, &str)> = JSON_HEADERS.to_vec();
    headers.extend([
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "m__echo"),
        ("traceparent", &client_parent),
        ("tracestate", "client=1"),
    ]);
    let r = post_raw(&gw.url, &headers, call.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], ARGUMENT);

    let spans = collector.trace(CLIENT_TRACE);
    let (backend, request) = check_tree(&spans, CLIENT_SPAN);
    assert_eq!(request.attributes["mcp.method.name"], "tools/call");
    assert_eq!(request.attributes["jsonrpc.request.id"], "req-7");
    assert_eq!(request.attributes["mcp.protocol.version"], "2026-07-28");
    assert_eq!(request.attributes["gen_ai.tool.name"], "m__echo");
    assert_eq!(request.attributes["mcpgw.backend"], "m");
    assert_eq!(request.attributes.get("mcp.session.id"), None);

    // The backend got the gateway's backend-call span, in _meta and as headers; never the client's.
    let gateways = format!("00-{CLIENT_TRACE}-{}-01", backend.id);
    let sent = recorder.text();
    assert!(
        sent.lines()
            .any(|l| l == format!("traceparent: {gateways}")),
        "no traceparent header naming the backend-call span: {sent}"
    );
    assert!(
        sent.contains(&format!("\"traceparent\":\"{gateways}\"")),
        "no _meta.traceparent naming the backend-call span: {sent}"
    );
    assert!(
        sent.lines().any(|l| l == "tracestate: client=1"),
        "the trace's tracestate is propagated: {sent}"
    );
    assert!(
        !sent.contains(&client_parent),
        "the client's traceparent reached the backend"
    );
    // The collector got the configured headers.
    assert!(
        collector
            .headers
            .lock()
            .unwrap()
            .iter()
            .any(|h| h == "x-collector-key: k-123")
    );
}

#[test]
fn a_meta_traceparent_in_a_legacy_session_is_the_parent_and_the_session_is_named_by_its_prefix() {
    let dir = TempDir::new("traces-meta");
    let collector = Collector::start();
    let (gw, _mock, recorder) = traced_gateway(&collector, &dir);
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let span = "b7ad6b7169203331";
    let client_parent = format!("00-{trace}-{span}-01");
    let mut legacy = LegacyClient::connect(&gw.url, "2025-11-25");
    let r = legacy.request(
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": ARGUMENT},
            "_meta": {"traceparent": client_parent}}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], ARGUMENT);

    let spans = collector.trace(trace);
    let (backend, request) = check_tree(&spans, span);
    assert_eq!(request.attributes["mcp.protocol.version"], "2025-11-25");
    // As log lines name it (ShortId): the first 8 characters and an ellipsis, never the whole id.
    let short = &request.attributes["mcp.session.id"];
    assert_eq!(short, &format!("{}…", &legacy.session[..8]));
    assert!(legacy.session.len() > 8);

    let sent = recorder.text();
    assert!(
        sent.contains(&format!("\"traceparent\":\"00-{trace}-{}-01\"", backend.id)),
        "no _meta.traceparent naming the backend-call span: {sent}"
    );
    assert!(
        !sent.contains(&client_parent),
        "the client's traceparent reached the backend"
    );
}

#[test]
fn a_collector_that_never_answers_costs_only_dropped_spans() {
    let dir = TempDir::new("traces-stuck");
    // A collector that takes connections and never answers: each export waits out its timeout.
    let stuck = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", stuck.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for conn in stuck.incoming().flatten() {
            keep.lock().unwrap().push(conn);
        }
    });
    let mock = http_mock(&["--name", "m"]);
    let config = format!(
        "[[backend]]\nname = \"m\"\nurl = \"{}\"\n\n[traces]\nendpoint = \"{endpoint}\"\n\
         timeout_ms = 600000\nmax_queue = 4\n",
        mock.url
    );
    let gw = gateway_with(&config, &dir, |cmd| {
        cmd.env("OTEL_BSP_SCHEDULE_DELAY", "10");
    });
    let mut legacy = LegacyClient::connect(&gw.url, "2025-11-25");
    // Every call is answered while the exporter is stuck and its queue (4 spans) is full.
    for i in 0..10 {
        let r = legacy.request(
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": format!("call {i}")}}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.json()["result"]["content"][0]["text"],
            format!("call {i}")
        );
    }
    // The SDK says it dropped spans (once, until shutdown).
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains("dropped a Span due to queue full"))
    {
        assert!(
            Instant::now() < until,
            "no drop reported in the log: {seen:#?}"
        );
        seen.extend(gw.log_lines());
        std::thread::sleep(Duration::from_millis(50));
    }
}
