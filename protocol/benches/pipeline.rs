//! parse → validate → shape for a 2026-07-28 `tools/call` request and its result, against the baseline of
//! `serde_json::from_slice` into a `Value` of the same bytes (the request and the result), measured in the
//! same run. Prints the ratio at the end. Run: `cargo bench -p protocol --bench pipeline`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group};
use protocol::headers::{ParamHeader, ParamKind};
use protocol::payload::Implementation;
use protocol::shape::{CachePolicy, Stamp, shape};
use protocol::validate::{
    Catalog, Config, HttpMethod, HttpRequest, RouteKey, ToolRoute, ValidKind, validate,
};
use serde_json::Value;
use serde_json::value::RawValue;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":"call-tool-example-41","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"progressToken":"p-41"},"name":"weather__get_weather","arguments":{"location":"New York","units":"metric","days":3}}}"#;
const RESULT: &str = r#"{"content":[{"type":"text","text":"Current weather in New York: temperature 22°C, partly cloudy, humidity 65%, wind 10 km/h NW."}],"structuredContent":{"temperature":22,"conditions":"partly cloudy","humidity":65},"isError":false}"#;

struct OneTool(Vec<ParamHeader>);

impl Catalog for OneTool {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        (name == "weather__get_weather").then_some(ToolRoute {
            key: RouteKey(0),
            header_params: &self.0,
            required_capabilities: None,
        })
    }
    fn resource(&self, _: &str) -> Option<RouteKey> {
        (false).then_some(RouteKey(0))
    }
    fn prompt(&self, _: &str) -> Option<RouteKey> {
        (false).then_some(RouteKey(0))
    }
}

fn headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("host", "127.0.0.1:7800"),
        ("user-agent", "bench/1"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("content-length", "420"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "weather__get_weather"),
        ("mcp-param-location", "New York"),
    ]
}

fn bench(c: &mut Criterion) {
    let catalog = OneTool(vec![ParamHeader {
        header: "Location".into(),
        path: vec!["location".into()],
        kind: ParamKind::String,
    }]);
    let config = Config::default();
    let headers = headers();
    let info = Implementation {
        name: "mcpgw".into(),
        version: "0.1.0".into(),
        ..Implementation::default()
    };
    let stamp = Stamp::new(&info, CachePolicy::NONE);
    let result: Box<RawValue> = serde_json::from_str(RESULT).unwrap();

    let mut g = c.benchmark_group("tools_call");
    g.bench_function("baseline_from_slice", |b| {
        b.iter(|| {
            let req: Value = serde_json::from_slice(black_box(REQUEST.as_bytes())).unwrap();
            let res: Value = serde_json::from_slice(black_box(RESULT.as_bytes())).unwrap();
            (req, res)
        })
    });
    g.bench_function("parse_validate_shape", |b| {
        b.iter(|| {
            let req = HttpRequest {
                method: HttpMethod::Post,
                headers: &headers,
                body: black_box(REQUEST.as_bytes()),
            };
            let valid = validate(&req, &config, &catalog, None).unwrap();
            let generation = valid.generation();
            let ValidKind::Call(call) = valid.into_kind() else {
                unreachable!()
            };
            // The result arrives from the backend as bytes, as it would off the wire.
            let raw: Box<RawValue> = serde_json::from_slice(black_box(RESULT.as_bytes())).unwrap();
            shape(
                &call.request().id,
                call.method(),
                generation,
                Ok(&raw),
                &stamp,
            )
        })
    });
    g.bench_function("validate_only", |b| {
        b.iter(|| {
            let req = HttpRequest {
                method: HttpMethod::Post,
                headers: &headers,
                body: black_box(REQUEST.as_bytes()),
            };
            validate(&req, &config, &catalog, None).unwrap()
        })
    });
    g.bench_function("shape_only", |b| {
        let id = protocol::RequestId::string("call-tool-example-41");
        b.iter(|| {
            shape(
                &id,
                protocol::Method::ToolsCall,
                protocol::Generation::V2026_07_28,
                Ok(black_box(&result)),
                &stamp,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);

/// Reads criterion's point estimate (mean, ns) for one benchmark of this run.
fn mean_ns(name: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = dir
        .join("criterion/tools_call")
        .join(name)
        .join("new/estimates.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if let (Some(base), Some(pipe)) = (
        mean_ns("baseline_from_slice"),
        mean_ns("parse_validate_shape"),
    ) {
        let ratio = pipe / base;
        println!();
        println!(
            "tools/call parse+validate+shape: {:.2} µs per request",
            pipe / 1000.0
        );
        println!(
            "baseline serde_json::from_slice (request + result into Value): {:.2} µs",
            base / 1000.0
        );
        println!(
            "ratio: {ratio:.2}x the bare parse (goal <= 3x: {}); absolute goal <= 5 µs: {}",
            if ratio <= 3.0 { "met" } else { "MISSED" },
            if pipe <= 5000.0 { "met" } else { "MISSED" }
        );
    }
}
