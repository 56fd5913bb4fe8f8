//! The validation table: one row per row of DESIGN §1's error table and per 2026-07-28 header rule, each
//! asserting the HTTP status and the wire JSON (code, `data`, id) for every generation it applies to.

use serde_json::{Value, json};

use super::*;
use crate::generation::GenerationSet;
use crate::headers::{ParamHeader, ParamKind};
use crate::method::Method;

mod table;
mod valid;

struct TestCatalog {
    region_headers: Vec<ParamHeader>,
    sampling: Value,
}

impl TestCatalog {
    fn new() -> TestCatalog {
        TestCatalog {
            region_headers: vec![
                ParamHeader {
                    header: "Region".into(),
                    path: vec!["region".into()],
                    kind: ParamKind::String,
                },
                ParamHeader {
                    header: "Count".into(),
                    path: vec!["count".into()],
                    kind: ParamKind::Integer,
                },
            ],
            sampling: json!({"sampling": {}}),
        }
    }
}

impl Catalog for TestCatalog {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        match name {
            "get_weather" => Some(ToolRoute::default()),
            "regional" => Some(ToolRoute {
                key: RouteKey(0),
                header_params: &self.region_headers,
                required_capabilities: None,
            }),
            "summarize" => Some(ToolRoute {
                key: RouteKey(0),
                header_params: &[],
                required_capabilities: Some(&self.sampling),
            }),
            _ => None,
        }
    }
    fn resource(&self, uri: &str) -> Option<RouteKey> {
        (uri == "file:///known.txt").then_some(RouteKey(0))
    }
    fn prompt(&self, name: &str) -> Option<RouteKey> {
        (name == "greet").then_some(RouteKey(0))
    }
}

const LEGACY: [Generation; 4] = [
    Generation::V2024_11_05,
    Generation::V2025_03_26,
    Generation::V2025_06_18,
    Generation::V2025_11_25,
];
const MODERN: Generation = Generation::V2026_07_28;

/// One request as a test sends it.
#[derive(Clone)]
struct Req {
    method: HttpMethod,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    session: Option<Generation>,
    caps: Value,
    config: Config,
}

impl Req {
    fn post(body: impl Into<Vec<u8>>) -> Req {
        Req {
            method: HttpMethod::Post,
            headers: vec![
                ("Content-Type".into(), b"application/json".to_vec()),
                (
                    "Accept".into(),
                    b"application/json, text/event-stream".to_vec(),
                ),
            ],
            body: body.into(),
            session: None,
            caps: json!({}),
            config: Config::default(),
        }
    }

    /// A 2026-07-28 request with `_meta` and every header a correct client sends.
    fn modern(method: &str, params: Value) -> Req {
        let mut params = params;
        let obj = params.as_object_mut().expect("params object");
        obj.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
            }),
        );
        let name = obj
            .get("name")
            .or_else(|| obj.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut r = Req::post(body.to_string())
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method);
        if let Some(name) = name {
            r = r.header("Mcp-Name", &crate::headers::encode_value(&name));
        }
        r
    }

    /// A legacy request inside a session of generation `g`.
    fn legacy(g: Generation, method: &str, params: Value) -> Req {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut r = Req::post(body.to_string()).header("Mcp-Session-Id", "s-1");
        if g.has_protocol_version_header() {
            r = r.header("MCP-Protocol-Version", g.as_str());
        }
        r.session = Some(g);
        r
    }

    fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.into(), value.as_bytes().to_vec()));
        self
    }

    fn without(mut self, name: &str) -> Req {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    fn replace(self, name: &str, value: &str) -> Req {
        self.without(name).header(name, value)
    }

    fn edit_meta(mut self, f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Req {
        let mut body: Value = serde_json::from_slice(&self.body).unwrap();
        f(body["params"]["_meta"].as_object_mut().unwrap());
        self.body = body.to_string().into_bytes();
        self
    }

    fn run(&self) -> Result<ValidRequest, Rejection> {
        let catalog = TestCatalog::new();
        let session = self.session.map(|generation| Session {
            generation,
            client_capabilities: &self.caps,
        });
        let req = HttpRequest {
            method: self.method,
            headers: &self.headers,
            body: &self.body,
        };
        validate(&req, &self.config, &catalog, session.as_ref())
    }
}

/// What a rejection must look like on the wire.
#[derive(Debug)]
struct Want {
    status: u16,
    code: i64,
    data: Option<Value>,
    id: Value,
}

fn want(status: u16, code: i64) -> Want {
    Want {
        status,
        code,
        data: None,
        id: json!(7),
    }
}

impl Want {
    fn data(mut self, d: Value) -> Want {
        self.data = Some(d);
        self
    }
    fn id(mut self, id: Value) -> Want {
        self.id = id;
        self
    }
}

fn assert_rejected(name: &str, req: &Req, want: &Want) {
    let rej = match req.run() {
        Ok(v) => panic!("{name}: accepted as {:?}, wanted {want:?}", v.kind()),
        Err(r) => r,
    };
    assert_eq!(rej.status, want.status, "{name}: status ({rej:?})");
    let body: Value = serde_json::from_slice(&rej.body()).expect("rejection body is JSON");
    assert_eq!(body["jsonrpc"], "2.0", "{name}");
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    assert_eq!(id, want.id, "{name}: id");
    assert_eq!(body["error"]["code"], want.code, "{name}: code ({body})");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{name}: message"
    );
    if let Some(data) = &want.data {
        assert_eq!(&body["error"]["data"], data, "{name}: data");
    }
    let generations: Vec<Generation> = match rej.generation {
        Some(g) => vec![g],
        // No generation known: JSON-RPC 2.0's `"id": null`, which the schemas before 2025-11-25 describe.
        None => LEGACY
            .iter()
            .copied()
            .filter(|g| !g.omits_unknown_error_id())
            .collect(),
    };
    for g in generations {
        crate::schema_check::check_response(g, None, &body)
            .unwrap_or_else(|e| panic!("{name}: {e}\n{body}"));
    }
}

fn accepted(name: &str, req: &Req) -> ValidRequest {
    req.run()
        .unwrap_or_else(|r| panic!("{name}: rejected: {r:?}"))
}
