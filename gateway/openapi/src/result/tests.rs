use super::*;
use crate::fixtures::{PETSTORE, SHOP, operation, spec_validator, translate};

/// The operation, the answer's status, content type and body, the expected result.
type Case<'a> = (&'a Operation, u16, Option<&'a str>, &'a [u8], Value);

#[test]
fn answers_become_call_tool_results() {
    let petstore = translate(PETSTORE);
    let shop = translate(SHOP);
    let get = operation(&petstore, "get_pet_"); // an object outputSchema
    let list = operation(&petstore, "listPets"); // an array, wrapped
    let report = operation(&petstore, "report"); // no outputSchema
    let json_type = Some("application/json");
    let pet = br#"{"id": 1, "name": "Rex"}"#;
    let cases: [Case; 12] = [
        (
            get,
            200,
            Some("application/json; charset=utf-8"),
            pet,
            json!({"content": [{"type": "text", "text": r#"{"id":1,"name":"Rex"}"#}],
                   "structuredContent": {"id": 1, "name": "Rex"}}),
        ),
        (
            list,
            200,
            json_type,
            br#"[{"id": 1, "name": "Rex"}]"#,
            json!({"content": [{"type": "text", "text": r#"{"result":[{"id":1,"name":"Rex"}]}"#}],
                   "structuredContent": {"result": [{"id": 1, "name": "Rex"}]}}),
        ),
        (
            // Any `+json` type is JSON; no outputSchema: an object as it is.
            report,
            200,
            Some("application/problem+json"),
            br#"{"a": [1]}"#,
            json!({"content": [{"type": "text", "text": r#"{"a":[1]}"#}],
                   "structuredContent": {"a": [1]}}),
        ),
        (
            // No outputSchema: an object as it is, a non-object wrapped.
            report,
            200,
            json_type,
            b"\"done\"",
            json!({"content": [{"type": "text", "text": r#"{"result":"done"}"#}],
                   "structuredContent": {"result": "done"}}),
        ),
        (
            // An object schema but another answer: text only, never structured content the schema refuses.
            get,
            200,
            json_type,
            b"[1]",
            json!({"content": [{"type": "text", "text": "[1]"}]}),
        ),
        (
            // Not JSON after all: text.
            get,
            200,
            json_type,
            b"not json",
            json!({"content": [{"type": "text", "text": "not json"}]}),
        ),
        (
            report,
            200,
            Some("text/csv"),
            b"a,b\n1,2\n",
            json!({"content": [{"type": "text", "text": "a,b\n1,2\n"}]}),
        ),
        (
            report,
            200,
            Some("text/plain; charset=latin1"),
            b"caf\xe9",
            json!({"content": [{"type": "text", "text": "caf\u{fffd}"}]}),
        ),
        (
            report,
            200,
            Some("image/png"),
            b"\x89PNG\r\n\x1a\n\0\0",
            json!({"content": [{"type": "text", "text": "a binary answer: image/png, 10 bytes"}]}),
        ),
        (
            report,
            204,
            None,
            b"",
            json!({"content": [{"type": "text", "text": "HTTP 204 No Content"}]}),
        ),
        (
            get,
            404,
            json_type,
            br#"{"detail": "Not Found"}"#,
            json!({"content": [{"type": "text", "text": r#"HTTP 404 Not Found: {"detail": "Not Found"}"#}],
                   "isError": true}),
        ),
        (
            operation(&shop, "listOrders"),
            503,
            None,
            b"",
            json!({"content": [{"type": "text", "text": "HTTP 503 Service Unavailable"}], "isError": true}),
        ),
    ];
    let validator = spec_validator("2025-11-25", "CallToolResult");
    for (operation, status, content_type, body, expected) in cases {
        let result = operation.result(status, content_type, body);
        assert_eq!(
            result, expected,
            "{} {status} {content_type:?}",
            operation.name
        );
        let errors: Vec<String> = validator
            .iter_errors(&result)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        if let (Some(schema), Some(structured)) = (
            operation.tool.get("outputSchema"),
            result.get("structuredContent"),
        ) {
            assert!(
                jsonschema::is_valid(schema, structured),
                "{}: {structured} against {schema}",
                operation.name
            );
        }
    }
}

#[test]
fn an_error_carries_at_most_1024_bytes_of_the_body_cut_on_a_character() {
    let petstore = translate(PETSTORE);
    let get = operation(&petstore, "get_pet_");
    // 1,023 bytes of ASCII, then two-byte characters: the cut falls inside one.
    let body = format!("{}{}", "x".repeat(1023), "é".repeat(600));
    let result = get.result(500, Some("text/plain"), body.as_bytes());
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
    let text = result["content"][0]["text"].as_str().expect("text");
    let prefix = "HTTP 500 Internal Server Error: ";
    let excerpt = text.strip_prefix(prefix).expect("the status first");
    let excerpt = excerpt.strip_suffix('…').expect("said to be cut");
    assert!(excerpt.len() <= MAX_EXCERPT, "{}", excerpt.len());
    assert_eq!(excerpt, "x".repeat(1023));
    // Exactly at the bound: whole, not said to be cut.
    let body = "y".repeat(MAX_EXCERPT);
    let result = get.result(400, None, body.as_bytes());
    assert_eq!(
        result["content"][0]["text"],
        format!("HTTP 400 Bad Request: {body}")
    );
    // A binary error body: its note, not its bytes; an unknown status: its number.
    let result = get.result(599, Some("application/octet-stream"), &[0, 159, 146, 150]);
    assert_eq!(
        result["content"][0]["text"],
        "HTTP 599: a binary answer: application/octet-stream, 4 bytes"
    );
    // A redirect that was not followed is no success either.
    assert_eq!(get.result(302, None, b"")["isError"], true);
}
