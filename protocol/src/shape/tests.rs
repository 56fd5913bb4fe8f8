//! Shaping tests: every message the shaper emits, for every generation, validates against that
//! generation's official schema; plus the rules of DESIGN §1 (tool failures are `isError` results, resource
//! and prompt failures JSON-RPC errors) and the per-generation stamping.

use serde_json::{Value, json};

use super::*;
use crate::payload::Implementation;
use crate::schema_check::check_response;

fn stamp() -> Stamp {
    let info = Implementation {
        name: "mcpgw".into(),
        version: "0.1.0".into(),
        ..Implementation::default()
    };
    Stamp::new(
        &info,
        CachePolicy {
            ttl_ms: 0,
            scope: CacheScope::Private,
        },
    )
}

fn raw(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap()
}

fn shaped(method: Method, g: Generation, outcome: Result<&Value, &Failure>) -> (u16, Value) {
    let id = RequestId::number(1);
    let raw_result = outcome.ok().map(raw);
    let out = match (&raw_result, outcome) {
        (Some(r), _) => shape(&id, method, g, Ok(r), &stamp()),
        (None, Err(f)) => shape(&id, method, g, Err(f), &stamp()),
        (None, Ok(_)) => unreachable!(),
    };
    let v: Value = serde_json::from_slice(&out.body).expect("shaped body is JSON");
    if let Err(e) = check_response(g, Some(method), &v) {
        panic!("{method} on {g}: {e}\n{v:#}");
    }
    (out.status, v)
}

/// Results as backends of either era send them (the modern ones carry 2026-only fields).
fn backend_results() -> Vec<(Method, Value)> {
    let server_meta = json!({"io.modelcontextprotocol/serverInfo": {"name": "backend", "version": "9"}, "x.y/keep": 1});
    vec![
        (
            Method::ToolsCall,
            json!({"content": [{"type": "text", "text": "sunny"}]}),
        ),
        (
            Method::ToolsCall,
            json!({"content": [{"type": "text", "text": "sunny"}], "isError": false, "resultType": "complete", "_meta": server_meta}),
        ),
        (
            Method::ToolsCall,
            json!({"content": [
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "b"}}
            ], "structuredContent": {"temp": 21}}),
        ),
        (
            Method::ToolsCall,
            json!({"content": [], "structuredContent": [1, 2, 3]}),
        ),
        (
            Method::ToolsCall,
            json!({"structuredContent": {"big": u64::MAX}}),
        ),
        (
            Method::ToolsList,
            json!({"tools": [{"name": "a__t", "inputSchema": {"type": "object"}}], "nextCursor": "c2"}),
        ),
        (
            Method::ToolsList,
            json!({"tools": [], "resultType": "complete", "ttlMs": 60000, "cacheScope": "public"}),
        ),
        (
            Method::ToolsList,
            json!({"tools": [], "ttlMs": -5, "cacheScope": "everyone"}),
        ),
        (
            Method::ResourcesList,
            json!({"resources": [{"uri": "file:///a", "name": "a"}]}),
        ),
        (
            Method::ResourcesTemplatesList,
            json!({"resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "files"}]}),
        ),
        (
            Method::ResourcesRead,
            json!({"contents": [{"uri": "file:///a", "text": "hello", "mimeType": "text/plain"}]}),
        ),
        (
            Method::PromptsList,
            json!({"prompts": [{"name": "greet", "arguments": [{"name": "who", "required": true}]}]}),
        ),
        (
            Method::PromptsGet,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "description": "d"}),
        ),
        (
            Method::CompletionComplete,
            json!({"completion": {"values": ["a", "b"], "total": 2, "hasMore": false}}),
        ),
    ]
}

#[test]
fn every_shaped_result_validates_for_every_generation() {
    for g in Generation::ALL {
        for (method, result) in backend_results() {
            let (status, v) = shaped(method, g, Ok(&result));
            assert_eq!(status, 200);
            let r = &v["result"];
            if g.is_modern() {
                assert_eq!(r["resultType"], "complete", "{method} {g}");
                assert_eq!(
                    r["_meta"][crate::meta::SERVER_INFO]["name"],
                    "mcpgw",
                    "{method} {g}"
                );
                if method.is_cacheable() {
                    assert!(
                        r["ttlMs"].is_u64() && r["cacheScope"].is_string(),
                        "{method} {g}: {r}"
                    );
                } else {
                    assert!(r.get("ttlMs").is_none(), "{method} {g}");
                }
            } else {
                for key in ["resultType", "ttlMs", "cacheScope"] {
                    assert!(r.get(key).is_none(), "{key} leaked to {g}: {r}");
                }
                assert!(
                    r["_meta"].get(crate::meta::SERVER_INFO).is_none(),
                    "serverInfo leaked to {g}"
                );
            }
        }
    }
}

#[test]
fn backend_cache_fields_are_kept_when_valid_and_repaired_when_not() {
    let g = Generation::V2026_07_28;
    let (_, v) = shaped(
        Method::ToolsList,
        g,
        Ok(&json!({"tools": [], "ttlMs": 60000, "cacheScope": "public"})),
    );
    assert_eq!(
        (
            v["result"]["ttlMs"].clone(),
            v["result"]["cacheScope"].clone()
        ),
        (json!(60000), json!("public"))
    );
    let (_, v) = shaped(
        Method::ToolsList,
        g,
        Ok(&json!({"tools": [], "ttlMs": -5, "cacheScope": "everyone"})),
    );
    assert_eq!(
        (
            v["result"]["ttlMs"].clone(),
            v["result"]["cacheScope"].clone()
        ),
        (json!(0), json!("private"))
    );
}

#[test]
fn unknown_fields_and_big_numbers_pass_through_untouched() {
    let id = RequestId::number(1);
    let text = r#"{"content":[],"structuredContent":{"big":123456789012345678901234567890,"f":1.50},"future":{"x":1}}"#;
    let r: Box<RawValue> = serde_json::from_str(text).unwrap();
    for g in [Generation::V2025_06_18, Generation::V2026_07_28] {
        let out =
            String::from_utf8(shape(&id, Method::ToolsCall, g, Ok(&r), &stamp()).body).unwrap();
        assert!(
            out.contains(r#""structuredContent":{"big":123456789012345678901234567890,"f":1.50}"#),
            "{out}"
        );
        assert!(out.contains(r#""future":{"x":1}"#), "{out}");
    }
}

#[test]
fn content_is_downgraded_to_what_the_generation_has() {
    let result = json!({"content": [
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
        {"type": "text", "text": "t"}
    ], "structuredContent": {"temp": 21}});
    // (generation, kinds after shaping, structuredContent kept)
    let table = [
        (Generation::V2024_11_05, ["text", "text", "text"], false),
        (Generation::V2025_03_26, ["audio", "text", "text"], false),
        (
            Generation::V2025_06_18,
            ["audio", "resource_link", "text"],
            true,
        ),
        (
            Generation::V2026_07_28,
            ["audio", "resource_link", "text"],
            true,
        ),
    ];
    for (g, kinds, structured) in table {
        let (_, v) = shaped(Method::ToolsCall, g, Ok(&result));
        let got: Vec<&str> = v["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(got, kinds, "{g}");
        assert_eq!(
            v["result"].get("structuredContent").is_some(),
            structured,
            "{g}"
        );
    }
    // structured content a generation cannot carry is kept readable when there is no other content
    let (_, v) = shaped(
        Method::ToolsCall,
        Generation::V2025_03_26,
        Ok(&json!({"content": [], "structuredContent": {"temp": 21}})),
    );
    assert_eq!(v["result"]["content"][0]["text"], r#"{"temp":21}"#);
    let (_, v) = shaped(
        Method::ToolsCall,
        Generation::V2025_06_18,
        Ok(&json!({"structuredContent": [1, 2]})),
    );
    assert_eq!(v["result"]["content"][0]["text"], "[1,2]");
    assert!(v["result"].get("structuredContent").is_none());
}

fn failures() -> Vec<Failure> {
    vec![
        Failure::Backend {
            backend: "weather".into(),
            error: Error::new(ErrorCode::InvalidParams, "bad city"),
        },
        Failure::Backend {
            backend: "weather".into(),
            error: Error::new(ErrorCode::Other(-32001), "session gone"),
        },
        Failure::Timeout {
            backend: "weather".into(),
            after_ms: 30_000,
        },
        Failure::Unavailable {
            backend: "weather".into(),
            reason: "connection refused".into(),
        },
        Failure::Crashed {
            backend: "weather".into(),
            reason: "exit status 1".into(),
        },
        Failure::Overloaded {
            backend: "weather".into(),
        },
        Failure::OverShare {
            backend: "weather".into(),
            share: 16,
        },
        Failure::CircuitOpen {
            backend: "weather".into(),
            retry_in_ms: 2500,
        },
        Failure::Internal {
            reason: "in-process tool failed".into(),
        },
        Failure::ShuttingDown,
    ]
}

#[test]
fn tool_failures_become_tool_errors_on_every_generation() {
    for g in Generation::ALL {
        for f in failures() {
            let (status, v) = shaped(Method::ToolsCall, g, Err(&f));
            assert_eq!(status, 200, "{f:?} {g}");
            let r = &v["result"];
            assert_eq!(r["isError"], true, "{f:?} {g}");
            assert_eq!(r["content"][0]["type"], "text");
            assert!(
                r["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("weather")
                    || f.backend().is_none()
            );
            let meta = &r["_meta"][crate::meta::GATEWAY_ERROR];
            assert_eq!(meta["kind"], f.kind(), "{g}");
            assert_eq!(meta["backend"].as_str(), f.backend());
            if let Failure::Backend { error, .. } = &f {
                assert_eq!(meta["code"], error.code().code());
            }
        }
    }
}

#[test]
fn resource_and_prompt_failures_become_json_rpc_errors() {
    for g in Generation::ALL {
        for method in [
            Method::ResourcesRead,
            Method::PromptsGet,
            Method::ToolsList,
            Method::ResourcesList,
        ] {
            for f in failures() {
                let (status, v) = shaped(method, g, Err(&f));
                assert!(v.get("result").is_none(), "{method} {g} {f:?}");
                assert_eq!(status, 200);
                let want = match &f {
                    Failure::Backend { error, .. } => error.code().code(),
                    _ => -32603,
                };
                assert_eq!(v["error"]["code"], want, "{method} {g}");
            }
        }
    }
}

#[test]
fn resource_not_found_follows_the_client_generation() {
    for (peer, peer_code) in [
        (Generation::V2025_06_18, -32002),
        (Generation::V2026_07_28, -32602),
    ] {
        let code = ErrorCode::from_peer(peer_code, peer, Some(Method::ResourcesRead));
        let f = Failure::Backend {
            backend: "files".into(),
            error: Error::new(code, "no such file").with_data(json!({"uri": "file:///x"})),
        };
        for g in Generation::ALL {
            let (_, v) = shaped(Method::ResourcesRead, g, Err(&f));
            assert_eq!(
                v["error"]["code"],
                g.resource_not_found_code(),
                "peer {peer} → client {g}"
            );
            assert_eq!(v["error"]["data"]["uri"], "file:///x");
        }
    }
}

#[test]
fn modern_status_codes_follow_the_transport() {
    let f = Failure::Backend {
        backend: "b".into(),
        error: Error::new(ErrorCode::MissingRequiredClientCapability, "needs sampling")
            .with_data(json!({"requiredCapabilities": {"sampling": {}}})),
    };
    let (status, _) = shaped(Method::PromptsGet, Generation::V2026_07_28, Err(&f));
    assert_eq!(status, 400);
    let (status, _) = shaped(Method::PromptsGet, Generation::V2025_11_25, Err(&f));
    assert_eq!(status, 200);
}

#[test]
fn input_required_passes_to_modern_clients_only() {
    let ir = json!({"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}}}, "requestState": "abc"});
    let (_, v) = shaped(Method::ToolsCall, Generation::V2026_07_28, Ok(&ir));
    assert_eq!(v["result"]["resultType"], "input_required");
    assert_eq!(v["result"]["requestState"], "abc");
    assert!(v["result"].get("ttlMs").is_none());
    let (_, v) = shaped(Method::ResourcesRead, Generation::V2026_07_28, Ok(&ir));
    assert!(
        v["result"].get("ttlMs").is_none(),
        "input_required is never cacheable"
    );
    // a legacy client cannot receive it: a tool error for tools, a JSON-RPC error otherwise
    let (_, v) = shaped(Method::ToolsCall, Generation::V2025_06_18, Ok(&ir));
    assert_eq!(v["result"]["isError"], true);
    let (_, v) = shaped(Method::PromptsGet, Generation::V2025_06_18, Ok(&ir));
    assert_eq!(v["error"]["code"], -32603);
}

#[test]
fn non_object_results_are_failures_shaped_by_kind() {
    let (_, v) = shaped(Method::ToolsCall, Generation::V2026_07_28, Ok(&json!([1])));
    assert_eq!(v["result"]["isError"], true);
    let (_, v) = shaped(
        Method::ResourcesRead,
        Generation::V2024_11_05,
        Ok(&json!("x")),
    );
    assert_eq!(v["error"]["code"], -32603);
}

#[test]
fn gateway_built_results_validate() {
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "mcpgw", "version": "0.1.0"}, "instructions": "hi"});
    for g in [
        Generation::V2024_11_05,
        Generation::V2025_03_26,
        Generation::V2025_06_18,
        Generation::V2025_11_25,
    ] {
        let mut init = init.clone();
        init["protocolVersion"] = json!(g.as_str());
        shaped(Method::Initialize, g, Ok(&init));
        shaped(Method::Ping, g, Ok(&json!({})));
    }
    let discover =
        json!({"supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}}});
    let (_, v) = shaped(
        Method::ServerDiscover,
        Generation::V2026_07_28,
        Ok(&discover),
    );
    assert_eq!(v["result"]["cacheScope"], "private");
}

#[test]
fn error_responses_validate_and_keep_unknown_codes() {
    for g in Generation::ALL {
        for err in [
            Error::new(ErrorCode::InvalidParams, "bad"),
            Error::new(ErrorCode::Other(-32001), "session gone").with_data(json!({"a": 1})),
            Error::resource_not_found("file:///x"),
            Error::unsupported_version(&["2026-07-28"], "1999-01-01"),
        ] {
            let bytes = response_bytes(&Response::error(RequestId::string("r-1"), err.clone()), g);
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            check_response(g, None, &v).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(v["error"]["code"], err.code().wire_code(g));
            assert_eq!(v["id"], "r-1");
        }
    }
}

/// Found by the fuzzer: `1e999` is valid JSON that `serde_json::Value` cannot hold; it must pass through
/// shaping untouched and the output must stay valid JSON text.
#[test]
fn huge_exponent_numbers_pass_through_shaping() {
    let r: Box<RawValue> =
        serde_json::from_str(r#"{"content":[],"structuredContent":{"x":1e999}}"#).unwrap();
    for g in Generation::ALL {
        let out = shape(
            &RequestId::number(1),
            Method::ToolsCall,
            g,
            Ok(&r),
            &stamp(),
        );
        serde_json::from_slice::<Box<RawValue>>(&out.body).expect("valid JSON text");
        if g.has_structured_output() {
            assert!(
                String::from_utf8(out.body).unwrap().contains("1e999"),
                "{g}"
            );
        }
    }
}

#[test]
fn a_backends_missing_capability_stays_a_json_rpc_error_even_for_tools() {
    let f = Failure::Backend {
        backend: "b".into(),
        error: Error::new(ErrorCode::MissingRequiredClientCapability, "needs sampling")
            .with_data(json!({"requiredCapabilities": {"sampling": {}}})),
    };
    for g in Generation::ALL {
        let (status, v) = shaped(Method::ToolsCall, g, Err(&f));
        assert!(v.get("result").is_none(), "{g}: {v}");
        let (want_code, want_status) = if g.is_modern() {
            (-32021, 400)
        } else {
            (-32602, 200)
        };
        assert_eq!(
            (v["error"]["code"].as_i64(), status),
            (Some(want_code), want_status),
            "{g}"
        );
        assert_eq!(
            v["error"]["data"]["requiredCapabilities"],
            json!({"sampling": {}})
        );
    }
}

#[test]
fn refusals_are_shaped_per_method_and_generation() {
    let id = RequestId::number(7);
    let limited = Refusal::ToolError {
        message: "rate limited: retry after 3 s".into(),
        meta: Some(json!({ "retryAfterMs": 3000 })),
    };
    let unauthorized = Refusal::Status {
        status: 401,
        error: Error::new(ErrorCode::InvalidRequest, "unauthorized"),
        headers: vec![("www-authenticate", "Bearer".into())],
    };
    // (refusal, method, status, a tool error result, the JSON-RPC error code if not)
    let table: [(&Refusal, Method, u16, bool, Option<i64>); 4] = [
        (&limited, Method::ToolsCall, 200, true, None),
        (&limited, Method::PromptsGet, 200, false, Some(-32603)),
        (&unauthorized, Method::ToolsCall, 401, false, Some(-32600)),
        (
            &unauthorized,
            Method::ResourcesRead,
            401,
            false,
            Some(-32600),
        ),
    ];
    for g in Generation::ALL {
        for (refused, method, status, tool_error, code) in table.iter().cloned() {
            let out = refusal(&id, method, g, refused, &stamp());
            let v: Value = serde_json::from_slice(&out.body).expect("JSON");
            if let Err(e) = check_response(g, Some(method), &v) {
                panic!("{method} on {g}: {e}\n{v:#}");
            }
            assert_eq!(out.status, status, "{method} on {g}");
            assert_eq!(v["id"], json!(7));
            assert_eq!(v["result"]["isError"] == json!(true), tool_error, "{v}");
            assert_eq!(v["error"]["code"].as_i64(), code, "{method} on {g}: {v}");
            if tool_error {
                assert_eq!(v["result"]["_meta"]["retryAfterMs"], json!(3000));
                assert_eq!(
                    v["result"]["content"][0]["text"],
                    json!("rate limited: retry after 3 s")
                );
            }
            let expected_headers = match refused {
                Refusal::Status { headers, .. } => headers.clone(),
                Refusal::ToolError { .. } => Vec::new(),
            };
            assert_eq!(out.headers, expected_headers);
        }
    }
}

#[test]
fn an_overload_rejection_is_503_with_retry_after() {
    for g in [
        None,
        Some(Generation::V2024_11_05),
        Some(Generation::V2026_07_28),
    ] {
        let out = Rejection::overloaded("no room", g).shaped();
        assert_eq!(out.status, 503);
        assert_eq!(out.headers, vec![("retry-after", "1".to_owned())]);
        let v: Value = serde_json::from_slice(&out.body).expect("JSON");
        assert_eq!(v["error"]["code"], json!(-32603));
        assert_eq!(v["error"]["message"], json!("service unavailable: no room"));
    }
}

#[test]
fn transport_refusals_have_their_status_and_an_error_body() {
    // (rejection, status, JSON-RPC code)
    let table = [
        (Rejection::body_too_large(1024), 413, -32600),
        (
            Rejection::body_timeout("request timeout".into()),
            408,
            -32600,
        ),
        (Rejection::bad_body("eof"), 400, -32600),
        (
            Rejection::bad_framing("content-length with transfer-encoding"),
            400,
            -32600,
        ),
        (Rejection::bad_host("two Host headers"), 400, -32600),
        (Rejection::forbidden_origin("origin"), 403, -32600),
        (Rejection::unknown_session("initialize first"), 404, -32600),
        (Rejection::already_initialized(), 400, -32600),
        (Rejection::line_too_long(10), 200, -32700),
        (Rejection::overloaded("no room", None), 503, -32603),
    ];
    for (r, status, code) in table {
        let out = r.shaped();
        assert_eq!(out.status, status, "{r:?}");
        let v: Value = serde_json::from_slice(&out.body).expect("JSON");
        assert_eq!(v["error"]["code"], json!(code), "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        assert_eq!(out.headers.is_empty(), status != 503, "{r:?}");
    }
}

#[test]
fn a_method_refused_by_a_middleware_looks_like_an_unknown_one() {
    for g in Generation::ALL {
        let Refusal::Status { status, error, .. } = Refusal::unknown_method("tools/call", g) else {
            panic!("a status refusal")
        };
        assert_eq!(error.code(), ErrorCode::MethodNotFound);
        assert_eq!(error.message(), "method not found: tools/call");
        assert_eq!(status, if g.is_modern() { 404 } else { 200 }, "{g}");
    }
}

#[test]
fn a_batch_is_one_json_array_in_order() {
    let out = batch(&[br#"{"a":1}"#.to_vec(), br#"{"b":2}"#.to_vec()]);
    assert_eq!(out.status, 200);
    assert_eq!(out.body, br#"[{"a":1},{"b":2}]"#.to_vec());
}
