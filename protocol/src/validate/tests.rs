//! The validation table: one row per row of DESIGN §1's error table and per 2026-07-28 header rule, each
//! asserting the HTTP status and the wire JSON (code, `data`, id) for every generation it applies to.

use serde_json::{Value, json};

use super::*;
use crate::headers::{ParamHeader, ParamKind};

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
                header_params: &self.region_headers,
                required_capabilities: None,
            }),
            "summarize" => Some(ToolRoute {
                header_params: &[],
                required_capabilities: Some(&self.sampling),
            }),
            _ => None,
        }
    }
    fn has_resource(&self, uri: &str) -> bool {
        uri == "file:///known.txt"
    }
    fn has_prompt(&self, name: &str) -> bool {
        name == "greet"
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

#[test]
fn design_error_table_per_generation() {
    let supported = json!([
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05"
    ]);
    let mut rows: Vec<(String, Req, Want)> = Vec::new();

    for g in LEGACY {
        rows.push((
            format!("{g}: unknown tool"),
            Req::legacy(g, "tools/call", json!({"name": "nope", "arguments": {}})),
            want(200, -32601).data(json!({"name": "nope"})),
        ));
        rows.push((
            format!("{g}: unmatched resource"),
            Req::legacy(g, "resources/read", json!({"uri": "file:///missing"})),
            want(200, -32002).data(json!({"uri": "file:///missing"})),
        ));
        rows.push((
            format!("{g}: unknown method"),
            Req::legacy(g, "tools/dance", json!({})),
            want(200, -32601),
        ));
        rows.push((
            format!("{g}: modern-only method"),
            Req::legacy(g, "server/discover", json!({})),
            want(200, -32601),
        ));
        rows.push((
            format!("{g}: missing client capability"),
            Req::legacy(g, "tools/call", json!({"name": "summarize"})),
            want(200, -32602).data(json!({"requiredCapabilities": {"sampling": {}}})),
        ));
        rows.push((
            format!("{g}: malformed JSON"),
            Req {
                body: b"{\"jsonrpc\":\"2.0\",".to_vec(),
                ..Req::legacy(g, "ping", json!({}))
            },
            want(200, -32700).id(Value::Null),
        ));
        rows.push((
            format!("{g}: not a JSON-RPC request"),
            Req {
                body: br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#.to_vec(),
                ..Req::legacy(g, "ping", json!({}))
            },
            want(200, -32600),
        ));
        rows.push((
            format!("{g}: unknown prompt"),
            Req::legacy(g, "prompts/get", json!({"name": "nope"})),
            want(200, -32602).data(json!({"name": "nope"})),
        ));
    }
    rows.push((
        "2025-06-18: session version header names an unsupported version".into(),
        Req::legacy(Generation::V2025_06_18, "tools/list", json!({}))
            .replace("MCP-Protocol-Version", "2099-01-01"),
        want(400, -32022).data(json!({"supported": supported, "requested": "2099-01-01"})),
    ));
    rows.push((
        "2025-06-18: session version header differs from the negotiated version".into(),
        Req::legacy(Generation::V2025_06_18, "tools/list", json!({}))
            .replace("MCP-Protocol-Version", "2025-11-25"),
        want(400, -32600),
    ));

    // 2026-07-28
    let call = || {
        Req::modern(
            "tools/call",
            json!({"name": "get_weather", "arguments": {"location": "NYC"}}),
        )
    };
    rows.push((
        "unknown tool".into(),
        Req::modern("tools/call", json!({"name": "nope"})),
        want(200, -32601).data(json!({"name": "nope"})),
    ));
    rows.push((
        "unknown tool with the spec's code selected".into(),
        Req {
            config: Config {
                unknown_tool: UnknownToolCode::InvalidParams,
                ..Config::default()
            },
            ..Req::modern("tools/call", json!({"name": "nope"}))
        },
        want(200, -32602),
    ));
    rows.push((
        "unmatched resource".into(),
        Req::modern("resources/read", json!({"uri": "file:///missing"})),
        want(200, -32602).data(json!({"uri": "file:///missing"})),
    ));
    rows.push((
        "malformed JSON".into(),
        Req {
            body: b"{oops".to_vec(),
            ..call()
        },
        want(200, -32700).id(Value::Null),
    ));
    rows.push((
        "invalid UTF-8".into(),
        Req {
            body: b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}".to_vec(),
            ..call()
        },
        want(200, -32700).id(Value::Null),
    ));
    rows.push((
        "not a JSON-RPC request".into(),
        Req {
            body: br#"{"jsonrpc":"2.0","id":7}"#.to_vec(),
            ..call()
        },
        want(200, -32600),
    ));
    rows.push((
        "missing _meta protocolVersion".into(),
        call().edit_meta(|m| {
            m.remove("io.modelcontextprotocol/protocolVersion");
        }),
        want(400, -32602),
    ));
    rows.push((
        "missing _meta clientCapabilities".into(),
        call().edit_meta(|m| {
            m.remove("io.modelcontextprotocol/clientCapabilities");
        }),
        want(400, -32602),
    ));
    rows.push((
        "no _meta at all, 2026 header".into(),
        Req {
            body: br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#.to_vec(),
            ..Req::modern("tools/list", json!({}))
        },
        want(400, -32602),
    ));
    rows.push((
        "_meta key of the wrong type".into(),
        call().edit_meta(|m| {
            m.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                json!("all"),
            );
        }),
        want(400, -32602),
    ));
    rows.push((
        "missing client capability".into(),
        Req::modern("tools/call", json!({"name": "summarize"})),
        want(400, -32021).data(json!({"requiredCapabilities": {"sampling": {}}})),
    ));
    rows.push((
        "unsupported version".into(),
        call()
            .edit_meta(|m| {
                m.insert(
                    "io.modelcontextprotocol/protocolVersion".into(),
                    json!("2099-01-01"),
                );
            })
            .replace("MCP-Protocol-Version", "2099-01-01"),
        want(400, -32022).data(json!({"supported": supported, "requested": "2099-01-01"})),
    ));
    rows.push((
        "legacy version in _meta without a session is declined".into(),
        call()
            .edit_meta(|m| {
                m.insert(
                    "io.modelcontextprotocol/protocolVersion".into(),
                    json!("2025-06-18"),
                );
            })
            .replace("MCP-Protocol-Version", "2025-06-18"),
        want(400, -32022).data(json!({"supported": supported, "requested": "2025-06-18"})),
    ));
    rows.push((
        "version mismatch outranks an unsupported version".into(),
        call().edit_meta(|m| {
            m.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!("2099-01-01"),
            );
        }),
        want(400, -32020),
    ));
    rows.push((
        "modern-only deployment: 2026 served alone, unsupported version lists only it".into(),
        Req {
            config: Config {
                served: GenerationSet::of(&[MODERN]),
                ..Config::default()
            },
            ..call()
                .edit_meta(|m| {
                    m.insert(
                        "io.modelcontextprotocol/protocolVersion".into(),
                        json!("2026-01-01"),
                    );
                })
                .replace("MCP-Protocol-Version", "2026-01-01")
        },
        want(400, -32022).data(json!({"supported": ["2026-07-28"], "requested": "2026-01-01"})),
    ));
    rows.push((
        "unknown method".into(),
        Req::modern("tools/dance", json!({})),
        want(404, -32601),
    ));
    rows.push((
        "legacy-only method".into(),
        Req::modern("ping", json!({})),
        want(404, -32601),
    ));
    rows.push((
        "logging/setLevel is gone".into(),
        Req::modern("logging/setLevel", json!({"level": "info"})),
        want(404, -32601),
    ));

    // 2026-07-28 header rules
    rows.push((
        "missing MCP-Protocol-Version".into(),
        call().without("MCP-Protocol-Version"),
        want(400, -32020),
    ));
    rows.push((
        "MCP-Protocol-Version given twice".into(),
        call().header("mcp-protocol-version", "2026-07-28"),
        want(400, -32020),
    ));
    rows.push((
        "missing Mcp-Method".into(),
        call().without("Mcp-Method"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Method differs".into(),
        call().replace("Mcp-Method", "tools/list"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Method values are case-sensitive".into(),
        call().replace("Mcp-Method", "TOOLS/CALL"),
        want(400, -32020),
    ));
    rows.push((
        "missing Mcp-Name on tools/call".into(),
        call().without("Mcp-Name"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Name differs".into(),
        call().replace("Mcp-Name", "get_weathe"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Name values are case-sensitive".into(),
        call().replace("Mcp-Name", "GET_WEATHER"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Name with bad base64".into(),
        call()
            .replace("Mcp-Name", "=?base64?***?=")
            .replace("Mcp-Name", "=?base64?***?="),
        want(400, -32020),
    ));
    rows.push((
        "missing Mcp-Name on resources/read".into(),
        Req::modern("resources/read", json!({"uri": "file:///known.txt"})).without("Mcp-Name"),
        want(400, -32020),
    ));
    rows.push((
        "missing Mcp-Name on prompts/get".into(),
        Req::modern("prompts/get", json!({"name": "greet"})).without("Mcp-Name"),
        want(400, -32020),
    ));
    rows.push((
        "tools/call without a name".into(),
        Req::modern("tools/call", json!({"arguments": {}})),
        want(400, -32602),
    ));
    let regional =
        |args: Value| Req::modern("tools/call", json!({"name": "regional", "arguments": args}));
    rows.push((
        "Mcp-Param missing while the argument is present".into(),
        regional(json!({"region": "us"})),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Param present while the argument is absent".into(),
        regional(json!({})).header("Mcp-Param-Region", "us"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Param differs".into(),
        regional(json!({"region": "us"})).header("Mcp-Param-Region", "eu"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Param integer differs".into(),
        regional(json!({"count": 3})).header("Mcp-Param-Count", "4"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Param with invalid characters".into(),
        regional(json!({"region": "us"})).header("Mcp-Param-Region", "u\u{7f}s"),
        want(400, -32020),
    ));
    rows.push((
        "Mcp-Param given twice".into(),
        regional(json!({"region": "us"}))
            .header("Mcp-Param-Region", "us")
            .header("mcp-param-region", "us"),
        want(400, -32020),
    ));

    // HTTP-level rules
    rows.push((
        "body over the limit".into(),
        Req {
            config: Config {
                max_body_bytes: 16,
                ..Config::default()
            },
            ..call()
        },
        want(413, -32600).id(Value::Null),
    ));
    rows.push((
        "wrong Content-Type".into(),
        call().replace("Content-Type", "text/plain"),
        want(415, -32600).id(Value::Null),
    ));
    rows.push((
        "Accept allows neither JSON nor SSE".into(),
        call().replace("Accept", "text/html"),
        want(406, -32600).id(Value::Null),
    ));
    rows.push((
        "GET without a session".into(),
        Req {
            method: HttpMethod::Get,
            body: vec![],
            ..Req::post("")
        },
        want(405, -32600).id(Value::Null),
    ));
    rows.push((
        "DELETE without a session".into(),
        Req {
            method: HttpMethod::Delete,
            body: vec![],
            ..Req::post("")
        },
        want(405, -32600).id(Value::Null),
    ));
    rows.push((
        "PUT".into(),
        Req {
            method: HttpMethod::Other,
            ..call()
        },
        want(405, -32600).id(Value::Null),
    ));
    rows.push((
        "GET with an unknown session".into(),
        Req {
            method: HttpMethod::Get,
            body: vec![],
            ..Req::post("").header("Mcp-Session-Id", "gone")
        },
        want(404, -32600).id(Value::Null),
    ));
    rows.push((
        "legacy request with an unknown session".into(),
        Req {
            session: None,
            ..Req::legacy(Generation::V2025_06_18, "tools/list", json!({}))
        },
        want(404, -32600),
    ));
    rows.push((
        "legacy request without a session".into(),
        Req::post(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
        want(400, -32600),
    ));
    rows.push((
        "a batch outside 2025-03-26".into(),
        Req {
            body: br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
            ..Req::legacy(Generation::V2025_06_18, "ping", json!({}))
        },
        want(200, -32600).id(Value::Null),
    ));
    rows.push((
        "a modern client sending a response".into(),
        Req {
            body: br#"{"jsonrpc":"2.0","id":7,"result":{}}"#.to_vec(),
            ..call()
        },
        want(400, -32600),
    ));

    for (name, req, want) in &rows {
        assert_rejected(name, req, want);
    }
    assert!(rows.len() > 60, "the table lost rows: {}", rows.len());
}

#[test]
fn valid_requests_per_era() {
    // 2026-07-28: a full tools/call, with Mcp-Param headers both ways and base64 names
    let v = accepted(
        "modern call",
        &Req::modern(
            "tools/call",
            json!({"name": "get_weather", "arguments": {}}),
        ),
    );
    assert_eq!(v.generation(), MODERN);
    let ValidKind::Call(call) = v.into_kind() else {
        panic!("not a call")
    };
    assert_eq!(call.method, Method::ToolsCall);
    assert_eq!(call.target, Some(Target::Tool("get_weather".into())));
    assert_eq!(call.meta.client_info.map(|c| c.name), Some("t".into()));

    let regional = Req::modern(
        "tools/call",
        json!({"name": "regional", "arguments": {"region": "été", "count": 42.0}}),
    )
    .header("Mcp-Param-Region", "=?base64?w6l0w6k=?=")
    .header("mcp-param-count", "42")
    .header("Mcp-Param-Unknown", "ignored");
    accepted("Mcp-Param both ways", &regional);
    accepted(
        "null argument needs no header",
        &Req::modern(
            "tools/call",
            json!({"name": "regional", "arguments": {"region": null}}),
        ),
    );
    accepted(
        "resource by URI",
        &Req::modern("resources/read", json!({"uri": "file:///known.txt"})),
    );
    accepted(
        "prompt",
        &Req::modern("prompts/get", json!({"name": "greet"})),
    );
    accepted("discover", &Req::modern("server/discover", json!({})));
    let with_caps = Req::modern("tools/call", json!({"name": "summarize"})).edit_meta(|m| {
        m.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            json!({"sampling": {}}),
        );
    });
    accepted("declared capability", &with_caps);
    let v = accepted(
        "stale session id is ignored by modern requests",
        &Req::modern("tools/list", json!({})).header("Mcp-Session-Id", "stale"),
    );
    assert_eq!(v.generation(), MODERN);
    let note = Req::post(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
    );
    let v = accepted("modern notification", &note);
    assert!(matches!(v.kind(), ValidKind::Notification(_)));
    assert_eq!(
        v.kind().immediate_status(),
        Some(202),
        "notifications are answered 202"
    );

    // legacy, every generation
    for g in LEGACY {
        let v = accepted(
            "legacy call",
            &Req::legacy(g, "tools/call", json!({"name": "get_weather"})),
        );
        assert_eq!(v.generation(), g);
        accepted("legacy ping", &Req::legacy(g, "ping", json!({})));
        let caps = Req {
            caps: json!({"sampling": {}}),
            ..Req::legacy(g, "tools/call", json!({"name": "summarize"}))
        };
        accepted("legacy declared capability", &caps);
        let mut note = Req::legacy(g, "x", json!({}));
        note.body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        let v = accepted("legacy notification", &note);
        assert!(matches!(v.kind(), ValidKind::Notification(_)));
        assert_eq!(v.kind().immediate_status(), Some(202));
        let mut answer = Req::legacy(g, "x", json!({}));
        answer.body = br#"{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}"#.to_vec();
        assert!(matches!(
            accepted("legacy client response", &answer).kind(),
            ValidKind::ClientResponse(_)
        ));
        let get = Req {
            method: HttpMethod::Get,
            body: vec![],
            ..Req::legacy(g, "x", json!({}))
        };
        assert!(matches!(
            accepted("GET stream", &get).kind(),
            ValidKind::OpenStream
        ));
        let delete = Req {
            method: HttpMethod::Delete,
            body: vec![],
            ..Req::legacy(g, "x", json!({}))
        };
        assert!(matches!(
            accepted("DELETE", &delete).kind(),
            ValidKind::EndSession
        ));
    }
    let no_header = Req::legacy(Generation::V2025_06_18, "tools/list", json!({}))
        .without("MCP-Protocol-Version");
    accepted(
        "legacy session request without the version header",
        &no_header,
    );
}

#[test]
fn batches_only_on_2025_03_26_and_judged_per_entry() {
    let mut req = Req::legacy(Generation::V2025_03_26, "x", json!({}));
    req.body = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}},7,{"jsonrpc":"2.0","method":"notifications/initialized"}]"#.to_vec();
    let ValidKind::Batch(items) = accepted("batch", &req).into_kind() else {
        panic!("not a batch")
    };
    assert_eq!(items.len(), 5);
    assert!(matches!(items[0], Ok(ValidKind::Call(_))));
    assert_eq!(
        items[1].as_ref().unwrap_err().error.code(),
        ErrorCode::MethodNotFound
    );
    assert_eq!(
        items[2].as_ref().unwrap_err().error.code(),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        items[3].as_ref().unwrap_err().error.code(),
        ErrorCode::InvalidRequest
    );
    assert!(matches!(items[4], Ok(ValidKind::Notification(_))));
    assert_eq!(
        ValidKind::Batch(items).immediate_status(),
        None,
        "a batch with requests needs a response"
    );
    let mut only_notes = Req::legacy(Generation::V2025_03_26, "x", json!({}));
    only_notes.body = br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"s1","result":{}}]"#.to_vec();
    assert_eq!(
        accepted("notes", &only_notes).kind().immediate_status(),
        Some(202)
    );
}

#[test]
fn initialize_echoes_or_counter_offers() {
    let init = |version: &str| {
        Req::post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
            }})
            .to_string(),
        )
    };
    // (requested, served, negotiated)
    let table = [
        ("2024-11-05", GenerationSet::ALL, Generation::V2024_11_05),
        ("2025-03-26", GenerationSet::ALL, Generation::V2025_03_26),
        ("2025-06-18", GenerationSet::ALL, Generation::V2025_06_18),
        ("2025-11-25", GenerationSet::ALL, Generation::V2025_11_25),
        ("2026-07-28", GenerationSet::ALL, Generation::V2025_11_25),
        ("1.0.0", GenerationSet::ALL, Generation::V2025_11_25),
        (
            "2024-11-05",
            GenerationSet::of(&[Generation::V2025_06_18, MODERN]),
            Generation::V2025_06_18,
        ),
    ];
    for (requested, served, negotiated) in table {
        let req = Req {
            config: Config {
                served,
                ..Config::default()
            },
            ..init(requested)
        };
        let v = accepted(requested, &req);
        assert_eq!(v.generation(), negotiated, "{requested}");
        assert!(matches!(v.kind(), ValidKind::Initialize { .. }));
    }
    let modern_only = Req {
        config: Config {
            served: GenerationSet::of(&[MODERN]),
            ..Config::default()
        },
        ..init("2025-06-18")
    };
    assert_rejected(
        "initialize on a modern-only deployment",
        &modern_only,
        &want(400, -32602)
            .id(json!(1))
            .data(json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})),
    );
    assert_rejected(
        "initialize without params",
        &Req::post(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#),
        &want(200, -32602).id(json!(1)),
    );
}

#[test]
fn request_ids_survive_validation_byte_exact() {
    let body = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"nope"}}"#;
    let req = Req::post(body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "nope");
    let rej = req.run().unwrap_err();
    let text = String::from_utf8(rej.body()).unwrap();
    assert!(
        text.contains(r#""id":123456789012345678901234567890"#),
        "{text}"
    );
}
