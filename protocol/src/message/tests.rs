use super::*;

fn single(text: &str) -> Result<Message, MessageError> {
    Message::parse(text.as_bytes())
}

#[test]
fn envelope_rules() {
    // (body, expected: Ok(kind) or Err(code, id raw))
    type Expected = Result<&'static str, (i64, Option<&'static str>)>;
    let table: &[(&str, Expected)] = &[
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, Ok("request")),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Ok("notification"),
        ),
        (r#"{"jsonrpc":"2.0","id":"a","result":{}}"#, Ok("response")),
        (
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            Ok("response"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            Ok("response"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#,
            Ok("request"),
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            Err((-32600, Some("1"))),
        ),
        (r#"{"id":7,"method":"ping"}"#, Err((-32600, Some("7")))),
        (
            r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#,
            Err((-32600, Some("1"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Err((-32600, None)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Err((-32600, None)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            Err((-32600, None)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            Err((-32600, Some("1"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            Err((-32600, Some("1"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            Err((-32600, Some("1"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
            Err((-32600, Some("1"))),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":""}}"#,
            Err((-32600, Some("1"))),
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, Err((-32600, Some("1")))),
        (r#"{"jsonrpc":"2.0"}"#, Err((-32600, None))),
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
            Err((-32600, None)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            Err((-32700, None)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
            Err((-32700, None)),
        ),
        ("", Err((-32700, None))),
        ("nul", Err((-32700, None))),
        ("42", Err((-32600, None))),
        ("\"str\"", Err((-32600, None))),
        ("[]", Err((-32600, None))),
    ];
    for (body, want) in table {
        let got = single(body);
        match (want, got) {
            (Ok(kind), Ok(m)) => {
                let k = match m {
                    Message::Request(_) => "request",
                    Message::Notification(_) => "notification",
                    Message::Response(_) => "response",
                };
                assert_eq!(*kind, k, "{body}");
            }
            (Err((code, id)), Err(e)) => {
                assert_eq!(e.error.code().code(), *code, "{body}: {e:?}");
                assert_eq!(e.id.as_ref().map(RequestId::raw), *id, "{body}");
            }
            (want, got) => panic!("{body}: wanted {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let e = Message::parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::ParseError);
}

#[test]
fn deep_nesting_is_refused_without_overflow() {
    let depth = 100_000;
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let e = Message::parse(body.as_bytes()).unwrap_err();
    assert_eq!(e.error.code(), ErrorCode::ParseError);
}

#[test]
fn batches_are_judged_per_entry() {
    let body = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5, {"jsonrpc":"2.0","method":"n"}]"#;
    let Parsed::Batch(items) = parse(body).unwrap() else {
        panic!("not a batch")
    };
    assert_eq!(items.len(), 3);
    assert!(matches!(items[0], Ok(Message::Request(_))));
    assert_eq!(
        items[1].as_ref().unwrap_err().error.code(),
        ErrorCode::InvalidRequest
    );
    assert!(matches!(items[2], Ok(Message::Notification(_))));
}

#[test]
fn messages_round_trip_exactly() {
    for text in [
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50,"big":99999999999999999999999}}}"#,
        r#"{"jsonrpc":"2.0","id":"\u00e9","result":{"content":[],"future":{"x":[1,2]}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"session gone","data":{"a":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#,
    ] {
        let m = single(text).unwrap();
        assert_eq!(String::from_utf8(m.to_bytes()).unwrap(), text);
    }
}

#[test]
fn params_decode() {
    let Message::Request(r) =
        single(r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#)
            .unwrap()
    else {
        panic!()
    };
    let p: crate::payload::SetLevelRequestParams = r.params_as().unwrap();
    assert_eq!(p.level, crate::payload::LoggingLevel::Info);
    let bad: Result<crate::payload::InitializeRequestParams, _> = r.params_as();
    assert_eq!(bad.unwrap_err().code(), ErrorCode::InvalidParams);
}
