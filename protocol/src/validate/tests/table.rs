//! The design error table, row by row, for every generation.

use super::*;

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
        "initialize is gone on 2026-07-28".into(),
        Req::modern(
            "initialize",
            json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
        ),
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
