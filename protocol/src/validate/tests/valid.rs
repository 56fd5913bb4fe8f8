//! Requests that pass validation: per era, batches, `initialize` and byte-exact ids.

use super::*;

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
    assert_eq!(
        call.target,
        Some(Target::Tool {
            name: "get_weather".into(),
            route: RouteKey(0)
        })
    );
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
fn a_batch_over_max_batch_is_refused_naming_the_limit() {
    let entry = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    // (entries, max_batch, accepted)
    let table = [(3, 3, true), (4, 3, false), (1, 1, true), (101, 100, false)];
    for (entries, max, ok) in table {
        let mut req = Req::legacy(Generation::V2025_03_26, "x", json!({}));
        req.config.max_batch = max;
        req.body = format!("[{}]", vec![entry; entries].join(",")).into_bytes();
        match req.run() {
            Ok(v) => assert!(ok, "{entries} of {max}: accepted {v:?}"),
            Err(r) => {
                assert!(!ok, "{entries} of {max}: refused {r:?}");
                assert_eq!(r.error.code(), ErrorCode::InvalidRequest);
                assert!(
                    r.error.message().contains(&format!("limit of {max}")),
                    "{}",
                    r.error.message()
                );
            }
        }
    }
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

#[test]
fn stdio_has_no_header_layer_and_the_process_is_the_session() {
    let catalog = TestCatalog::new();
    let config = Config::default();
    let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"regional","arguments":{"region":"us"}}}"#;
    let v =
        validate_stdio(modern, &config, &catalog, None).expect("modern request without headers");
    assert_eq!(v.generation(), MODERN);
    let missing_meta = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"get_weather"}}"#;
    let r = validate_stdio(missing_meta, &config, &catalog, None).unwrap_err();
    assert_eq!(r.error.code(), ErrorCode::InvalidParams);
    let legacy = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let r = validate_stdio(legacy, &config, &catalog, None).unwrap_err();
    assert_eq!(
        r.error.code(),
        ErrorCode::InvalidRequest,
        "legacy before initialize"
    );
    let caps = json!({});
    let session = Session {
        generation: Generation::V2025_03_26,
        client_capabilities: &caps,
    };
    let v =
        validate_stdio(legacy, &config, &catalog, Some(&session)).expect("legacy after initialize");
    assert_eq!(v.generation(), Generation::V2025_03_26);
    let batch = br#"[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    assert!(matches!(
        validate_stdio(batch, &config, &catalog, Some(&session))
            .unwrap()
            .kind(),
        ValidKind::Batch(_)
    ));
    let garbage = b"not json";
    let r = validate_stdio(garbage, &config, &catalog, Some(&session)).unwrap_err();
    assert_eq!(r.error.code(), ErrorCode::ParseError);
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    assert_eq!(
        validate_stdio(init, &config, &catalog, None)
            .unwrap()
            .generation(),
        Generation::V2025_06_18
    );
}
