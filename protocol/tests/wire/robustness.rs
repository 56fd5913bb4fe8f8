//! Property tests: arbitrary bytes, mutated official examples, arbitrary header values and arbitrary result
//! JSON never panic the parser, the validator or the shaper, and every answer they produce is JSON. Request
//! ids of any content and size come back byte-exact.

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use protocol::headers::{ParamHeader, ParamKind};
use protocol::message::{Parsed, parse};
use protocol::payload::Implementation;
use protocol::shape::{CachePolicy, Stamp, shape};
use protocol::validate::{
    Catalog, Config, HttpMethod, HttpRequest, RouteKey, Session, ToolRoute, ValidKind, validate,
};
use protocol::{Generation, Method, RequestId};
use serde_json::Value;
use serde_json::value::RawValue;

struct Fixed {
    headers: Vec<ParamHeader>,
    caps: Value,
}

impl Catalog for Fixed {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        (!name.starts_with('x')).then_some(ToolRoute {
            key: RouteKey(0),
            header_params: &self.headers,
            required_capabilities: Some(&self.caps),
        })
    }
    fn resource(&self, uri: &str) -> Option<RouteKey> {
        (uri.len() % 2 == 0).then_some(RouteKey(0))
    }
    fn prompt(&self, name: &str) -> Option<RouteKey> {
        (!name.is_empty()).then_some(RouteKey(0))
    }
}

fn catalog() -> Fixed {
    Fixed {
        headers: vec![
            ParamHeader {
                header: "Region".into(),
                path: vec!["location".into()],
                kind: ParamKind::String,
            },
            ParamHeader {
                header: "N".into(),
                path: vec!["n".into()],
                kind: ParamKind::Integer,
            },
        ],
        caps: serde_json::json!({"sampling": {}}),
    }
}

/// Official example requests, as bytes, to mutate.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/spec/schema/2026-07-28/examples");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            for file in std::fs::read_dir(entry.unwrap().path()).unwrap() {
                let bytes = std::fs::read(file.unwrap().path()).unwrap();
                if bytes.windows(9).any(|w| w == b"\"jsonrpc\"") {
                    out.push(bytes);
                }
            }
        }
        out.sort();
        assert!(!out.is_empty());
        out
    })
}

fn headers_for(version: &[u8], method: &[u8], name: &[u8], extra: &[u8]) -> Vec<(String, Vec<u8>)> {
    vec![
        ("Content-Type".into(), b"application/json".to_vec()),
        ("MCP-Protocol-Version".into(), version.to_vec()),
        ("Mcp-Method".into(), method.to_vec()),
        ("Mcp-Name".into(), name.to_vec()),
        ("Mcp-Param-Region".into(), extra.to_vec()),
        ("Accept".into(), extra.to_vec()),
    ]
}

/// Runs the validator every way a request can arrive and checks that every rejection renders as JSON.
fn exercise(body: &[u8], headers: &[(String, Vec<u8>)]) {
    let cat = catalog();
    let caps = serde_json::json!({});
    let config = Config::default();
    for method in [HttpMethod::Post, HttpMethod::Get, HttpMethod::Delete] {
        for g in [
            None,
            Some(Generation::V2025_03_26),
            Some(Generation::V2025_11_25),
        ] {
            let session = g.map(|generation| Session {
                generation,
                client_capabilities: &caps,
            });
            let mut h = headers.to_vec();
            if session.is_some() {
                h.push(("Mcp-Session-Id".into(), b"s".to_vec()));
            }
            let req = HttpRequest {
                method,
                headers: &h,
                body,
            };
            match validate(&req, &config, &cat, session.as_ref()) {
                Ok(v) => {
                    if let ValidKind::Batch(items) = v.kind() {
                        for item in items.iter().filter_map(|i| i.as_ref().err()) {
                            serde_json::from_slice::<Value>(&item.body())
                                .expect("batch entry rejection is JSON");
                        }
                    }
                }
                Err(r) => {
                    let v: Value =
                        serde_json::from_slice(&r.body()).expect("rejection body is JSON");
                    assert!(v["error"]["code"].is_i64());
                    assert!((400..600).contains(&r.status) || r.status == 200);
                }
            }
        }
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("text"),
            Just("audio"),
            Just("resource_link"),
            Just("complete"),
            Just("input_required")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("content".to_owned()),
                    Just("type".to_owned()),
                    Just("resultType".to_owned()),
                    Just("_meta".to_owned()),
                    Just("structuredContent".to_owned()),
                    Just("ttlMs".to_owned()),
                    Just("cacheScope".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..1024),
                                   version in prop::collection::vec(any::<u8>(), 0..16)) {
        let _ = parse(&body);
        exercise(&body, &headers_for(&version, b"tools/call", b"get_weather", b"*/*"));
    }

    #[test]
    fn mutated_examples_never_panic(seed in any::<prop::sample::Index>(),
                                    edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)) {
        let seeds = seeds();
        let mut body = seeds[seed.index(seeds.len())].clone();
        for (at, byte, op) in edits {
            if body.is_empty() { break; }
            let i = at.index(body.len());
            match op {
                0 => body[i] = byte,
                1 => { body.remove(i); }
                _ => body.insert(i, byte),
            }
        }
        exercise(&body, &headers_for(b"2026-07-28", b"tools/call", b"get_weather", b"application/json"));
    }

    #[test]
    fn arbitrary_header_values_never_panic(seed in any::<prop::sample::Index>(),
                                           version in prop::collection::vec(any::<u8>(), 0..24),
                                           method in prop::collection::vec(any::<u8>(), 0..24),
                                           name in prop::collection::vec(any::<u8>(), 0..40),
                                           extra in prop::collection::vec(any::<u8>(), 0..40)) {
        let seeds = seeds();
        let body = seeds[seed.index(seeds.len())].clone();
        exercise(&body, &headers_for(&version, &method, &name, &extra));
    }

    #[test]
    fn arbitrary_results_shape_to_json(result in arb_json(), method in 0usize..6, g in 0usize..5) {
        let methods = [Method::ToolsCall, Method::ToolsList, Method::ResourcesRead, Method::PromptsGet, Method::ServerDiscover, Method::Initialize];
        let info = Implementation { name: "mcpgw".into(), version: "0".into(), ..Implementation::default() };
        let stamp = Stamp::new(&info, CachePolicy::NONE);
        let raw: Box<RawValue> = serde_json::value::to_raw_value(&result).unwrap();
        let out = shape(&RequestId::number(1), methods[method], Generation::ALL[g], Ok(&raw), &stamp);
        let v: Value = serde_json::from_slice(&out.body).expect("shaped body is JSON");
        prop_assert!(v.get("result").is_some() || v.get("error").is_some());
    }

    #[test]
    fn request_ids_come_back_byte_exact(s in ".{0,40}", digits in "-?[1-9][0-9]{0,60}", use_string in any::<bool>()) {
        let id_text = if use_string { serde_json::to_string(&s).unwrap() } else { digits };
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id_text},"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"xyz"}}}}"#);
        let h = headers_for(b"2026-07-28", b"tools/call", b"xyz", b"*/*");
        let h: Vec<_> = h.into_iter().filter(|(n, _)| n != "Mcp-Param-Region").collect();
        let req = HttpRequest { method: HttpMethod::Post, headers: &h, body: body.as_bytes() };
        let rej = validate(&req, &Config::default(), &catalog(), None).unwrap_err();
        let text = String::from_utf8(rej.body()).unwrap();
        let needle = format!("\"id\":{id_text}");
        prop_assert!(text.contains(&needle), "{} not in {}", needle, text);
        if let Ok(Parsed::Single(m)) = parse(body.as_bytes()) {
            let back = String::from_utf8(m.to_bytes()).unwrap();
            prop_assert!(back.contains(&needle));
        }
    }
}
