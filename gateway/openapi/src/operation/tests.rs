use super::*;
use crate::fixtures::{PETSTORE, SHOP, operation, translate};

fn owner() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {
            "city": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "string"}}
        }}
    }})
}

/// `Pet` of the 3.0 document once inlined and made JSON Schema.
fn pet() -> Value {
    json!({
        "type": "object",
        "required": ["id", "name"],
        "properties": {
            "id": {"type": "integer", "format": "int64", "exclusiveMinimum": 0, "readOnly": true},
            "name": {"type": "string"},
            "tag": {"type": ["string", "null"], "enum": ["cat", "dog", null]},
            "owner": {"anyOf": [{"allOf": [owner()]}, {"type": "null"}]},
            "vet": owner(),
            "aliases": {"type": "array", "items": {"type": "string"}}
        }
    })
}

#[test]
fn an_openapi_3_0_operation_becomes_a_whole_tool() {
    let translation = translate(PETSTORE);
    let list = operation(&translation, "listPets");
    assert_eq!((&list.method, list.path.as_str()), (&Method::GET, "/pets"));
    assert_eq!(
        list.tool,
        json!({
            "name": "listPets",
            "title": "List pets",
            "description": "List pets\n\nPets, a page at a time.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "ids": {"type": "array", "items": {"type": "integer"}},
                    "X-Request-Id": {"type": "string", "description": "Echoed back"}
                },
                "required": ["X-Request-Id"],
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "array", "items": pet()}},
                "required": ["result"]
            },
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true}
        })
    );
    assert_eq!(list.output, Output::Wrapped);

    let create = operation(&translation, "createPet");
    let mut body = pet();
    body["description"] = json!("The pet to add");
    assert_eq!(
        create.tool,
        json!({
            "name": "createPet",
            "title": "Create a pet",
            "description": "Create a pet",
            "inputSchema": {
                "type": "object",
                "properties": {"body": body},
                "required": ["body"],
                "additionalProperties": false
            },
            "outputSchema": pet(),
            "annotations": {"readOnlyHint": false, "idempotentHint": false}
        })
    );
    assert_eq!(create.output, Output::Object);
}

#[test]
fn each_tool_has_its_parameters_body_and_output() {
    let translation = translate(PETSTORE);
    let pet_id_string = json!({"type": "string"});
    let verbose = json!({"type": "boolean"});
    // (tool, its input properties, required, outputSchema, annotations' readOnlyHint)
    let cases = [
        (
            "get_pet_",
            // The operation's `petId` replaces the path item's; the path item's `verbose` stays.
            json!({"petId": {"type": "integer", "format": "int64", "description": "The pet's id"}, "verbose": verbose}),
            json!(["petId"]),
            Some(pet()),
            true,
        ),
        (
            // An optional form body: translated without it.
            "updatePet",
            json!({"petId": pet_id_string, "verbose": verbose}),
            json!(["petId"]),
            Some(pet()),
            false,
        ),
        (
            "delete_pets_petId",
            json!({"petId": pet_id_string, "verbose": verbose}),
            json!(["petId"]),
            None,
            false,
        ),
        (
            // `discriminator` dropped, the references inlined; the `anyOf` answer wrapped.
            "drawShape",
            json!({"body": {"oneOf": [
                {"type": "object", "properties": {"kind": {"type": "string", "enum": ["circle"]}, "radius": {"type": "number"}}},
                {"type": "object", "properties": {"kind": {"type": "string", "enum": ["square"]}, "side": {"type": "number"}}}
            ]}}),
            json!(["body"]),
            Some(
                json!({"type": "object", "required": ["result"], "properties": {"result": {"anyOf": [
                    {"type": "object", "properties": {"kind": {"type": "string", "enum": ["circle"]}, "radius": {"type": "number"}}},
                    {"type": "object", "properties": {"kind": {"type": "string", "enum": ["square"]}, "side": {"type": "number"}}}
                ]}}}),
            ),
            false,
        ),
        ("report", json!({}), json!([]), None, true),
        // `Authorization` (like `Accept` and `Content-Type`) is ignored, as OpenAPI says.
        ("withAuthorization", json!({}), json!([]), None, true),
    ];
    for (name, properties, required, output, read_only) in cases {
        let tool = &operation(&translation, name).tool;
        assert_eq!(tool["inputSchema"]["properties"], properties, "{name}");
        assert_eq!(tool["inputSchema"]["required"], required, "{name}");
        assert_eq!(tool.get("outputSchema"), output.as_ref(), "{name}");
        assert_eq!(tool["annotations"]["readOnlyHint"], read_only, "{name}");
    }
    let delete = &operation(&translation, "delete_pets_petId").tool;
    assert_eq!(delete["description"], "DELETE /pets/{petId}\n\nDeprecated.");
    assert_eq!(delete["annotations"]["destructiveHint"], true);
    assert!(delete.get("title").is_none());
    assert_eq!(
        operation(&translation, "get_pet_").tool["description"],
        "One pet."
    );
    assert!(!operation(&translation, "report").json_answer);
    assert!(operation(&translation, "get_pet_").json_answer);
}

#[test]
fn an_openapi_3_1_yaml_document_passes_its_json_schema_through() {
    let translation = translate(SHOP);
    let item = json!({"type": "object", "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}}});
    let order = json!({
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "kind": {"const": "order"},
            "status": {"type": ["string", "null"], "enum": ["open", "closed", null]},
            "total": {"type": "number", "exclusiveMinimum": 0},
            // A `$ref`'s annotating sibling is merged into the target.
            "note": {"type": "string", "maxLength": 200, "description": "A note on the order"},
            "items": {"type": "array", "items": item},
            // Any other sibling is combined with it.
            "payment": {"required": ["method"], "allOf": [{"oneOf": [
                {"type": "object", "properties": {"method": {"const": "card"}, "last4": {"type": "string"}}},
                {"type": "object", "properties": {"method": {"const": "cash"}}}
            ]}]}
        }
    });
    let list = operation(&translation, "listOrders");
    assert_eq!(
        list.tool["inputSchema"]["properties"],
        json!({"status": {"type": "array", "items": {"type": "string"}}, "q": {"type": ["string", "null"]}})
    );
    // The `2XX` response, an array: wrapped.
    assert_eq!(
        list.tool["outputSchema"],
        json!({"type": "object", "properties": {"result": {"type": "array", "items": order}}, "required": ["result"]})
    );
    let create = operation(&translation, "createOrder");
    assert_eq!(create.tool["inputSchema"]["properties"]["body"], order);
    assert_eq!(
        create.body.as_ref().map(|b| b.content_type.clone()),
        Some(HeaderValue::from_static("application/vnd.shop+json"))
    );
    // `[object, null]` is not an object only: wrapped.
    assert_eq!(create.output, Output::Wrapped);
    // A response code YAML reads as an integer.
    let item_tool = operation(&translation, "getOrderItem");
    assert_eq!(item_tool.tool["outputSchema"], item);
    assert_eq!(item_tool.output, Output::Object);
}

#[test]
fn tool_names_come_from_the_operation_id_or_the_method_and_path() {
    let long = "x".repeat(200);
    let long_path = format!("/{long}");
    let cases = [
        (
            json!({"operationId": "getItem"}),
            "get",
            "/items/{id}",
            "getItem".to_owned(),
        ),
        (
            json!({"operationId": "a b/c:d.e-f_g"}),
            "get",
            "/",
            "a_b_c_d.e-f_g".into(),
        ),
        (json!({"operationId": "é"}), "get", "/", "_".into()),
        (
            json!({"operationId": ""}),
            "get",
            "/items/{id}",
            "get_items_id".into(),
        ),
        (json!({}), "get", "/items/{id}", "get_items_id".into()),
        (
            json!({}),
            "delete",
            "/a/{b}/c-d.e/",
            "delete_a_b_c-d.e".into(),
        ),
        (json!({}), "get", "/", "get".into()),
        (json!({"operationId": long}), "get", "/", "x".repeat(128)),
        (
            json!({}),
            "post",
            long_path.as_str(),
            format!("post_{}", "x".repeat(123)),
        ),
    ];
    for (op, method, path, expected) in cases {
        assert_eq!(
            tool_name(&op, method, path),
            expected,
            "{op} {method} {path}"
        );
    }
}

#[test]
fn path_templates_are_read_or_refused() {
    let cases: [(&str, Result<Vec<&str>, ()>); 7] = [
        ("/items", Ok(vec![])),
        ("/items/{id}", Ok(vec!["id"])),
        ("/a/{x}/b/{y}.json", Ok(vec!["x", "y"])),
        ("/a/{}", Err(())),
        ("/a/{x", Err(())),
        ("/a/x}", Err(())),
        ("/a/{x{y}}", Err(())),
    ];
    for (path, expected) in cases {
        assert_eq!(template_names(path).map_err(|_| ()), expected, "{path}");
    }
}

#[test]
fn parameters_that_cannot_be_sent_faithfully_refuse_the_operation() {
    let refused = |parameters: Value, path: &str| {
        let document = json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {path: {"get": {"operationId": "op", "parameters": parameters, "responses": {}}}}
        });
        let translation = translate(&document.to_string());
        translation.refused.first().map(|r| r.why.clone())
    };
    let cases = [
        (
            json!([{"name": "id", "in": "path", "style": "matrix", "schema": {"type": "string"}}]),
            "/{id}",
            Some("parameter `id` has style `matrix`, which is not supported in a path parameter"),
        ),
        (
            json!([{"name": "ids", "in": "query", "style": "deepObject", "schema": {"type": "array"}}]),
            "/",
            Some(
                "parameter `ids` has style `deepObject`, which is not supported in a query parameter",
            ),
        ),
        (
            json!([{"name": "m", "in": "query", "schema": {"type": "array", "items": {"type": "object"}}}]),
            "/",
            Some(
                "parameter `m` is an array of objects (only arrays of strings, numbers or booleans are supported)",
            ),
        ),
        (
            json!([{"name": "j", "in": "query", "content": {"application/json": {}}}]),
            "/",
            Some(
                "parameter `j` is described by `content` (a serialized media type), not by a schema",
            ),
        ),
        (
            json!([{"name": "X-A", "in": "header"}, {"name": "x-a", "in": "header", "schema": {"type": "integer"}}]),
            "/",
            None,
        ),
        (
            json!([{"name": "Proxy-Authorization", "in": "header"}]),
            "/",
            Some(
                "header parameter `Proxy-Authorization` is a header the tool never sets (Host, Cookie, hop-by-hop, Proxy-* and Mcp-* headers)",
            ),
        ),
        (
            json!([{"name": "Transfer-Encoding", "in": "header"}]),
            "/",
            Some(
                "header parameter `Transfer-Encoding` is a header the tool never sets (Host, Cookie, hop-by-hop, Proxy-* and Mcp-* headers)",
            ),
        ),
        (
            json!([{"name": "bad header", "in": "header"}]),
            "/",
            Some("header parameter `bad header` is not a valid header name"),
        ),
        (
            json!([{"name": "x", "in": "body"}]),
            "/",
            Some("parameter `x` is in `body` (not path, query, header or cookie)"),
        ),
        (
            json!([]),
            "/{id}",
            Some("its path names `{id}` but no path parameter declares it"),
        ),
        (
            json!([{"name": "id", "in": "path"}]),
            "/",
            Some("path parameter `id` is not in the path template"),
        ),
        (
            json!([{"$ref": "#/components/parameters/none"}]),
            "/",
            Some(
                "a parameter: reference `#/components/parameters/none` points at nothing in the document",
            ),
        ),
        (
            json!([{"name": "id"}]),
            "/",
            Some("a parameter has no `name` or no `in`"),
        ),
    ];
    for (parameters, path, expected) in cases {
        assert_eq!(
            refused(parameters.clone(), path).as_deref(),
            expected,
            "{parameters}"
        );
    }
}
