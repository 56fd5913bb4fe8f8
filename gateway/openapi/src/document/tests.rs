use super::*;
use crate::fixtures::{PETSTORE, SHOP, spec_validator, translate};
use serde_json::json;

#[test]
fn documents_are_json_or_yaml_of_openapi_3_0_or_3_1() {
    let petstore = Document::parse(PETSTORE).expect("3.0 JSON");
    assert_eq!(
        (petstore.title(), petstore.version()),
        ("Petstore", "1.2.3")
    );
    assert!(petstore.v30);
    let shop = Document::parse(SHOP).expect("3.1 YAML");
    assert_eq!((shop.title(), shop.version()), ("Shop", "2.1"));
    assert!(!shop.v30);
    // By content, not by name: JSON with leading blanks, YAML that starts with a comment.
    let json = "\n  {\"openapi\": \"3.1.1\", \"info\": {\"title\": \"t\", \"version\": \"1\"}}";
    assert_eq!(Document::parse(json).expect("JSON").title(), "t");
    let yaml = "# c\nopenapi: '3.0.0'\ninfo: {title: y, version: '0'}\n";
    assert_eq!(Document::parse(yaml).expect("YAML").title(), "y");

    let info = r#""info": {"title": "t", "version": "1"}"#;
    let cases: [(String, OpenApiError); 9] = [
        (
            format!(r#"{{"swagger": "2.0", {info}}}"#),
            OpenApiError::Swagger("2.0".into()),
        ),
        (
            "swagger: '2.0'\ninfo: {title: t, version: '1'}\n".into(),
            OpenApiError::Swagger("2.0".into()),
        ),
        (
            format!(r#"{{"openapi": "3.2.0", {info}}}"#),
            OpenApiError::Version("3.2.0".into()),
        ),
        (
            format!(r#"{{"openapi": "2.0", {info}}}"#),
            OpenApiError::Version("2.0".into()),
        ),
        (
            format!(r#"{{"openapi": "3.0.x", {info}}}"#),
            OpenApiError::Version("3.0.x".into()),
        ),
        (format!(r#"{{{info}}}"#), OpenApiError::NoVersion),
        (
            r#"{"openapi": "3.0.0", "info": {"version": "1"}}"#.into(),
            OpenApiError::Info("title"),
        ),
        (
            r#"{"openapi": "3.1.0", "info": {"title": "t", "version": 1}}"#.into(),
            OpenApiError::Info("version"),
        ),
        ("- a list\n".into(), OpenApiError::NotAnObject),
    ];
    for (text, expected) in cases {
        assert_eq!(Document::parse(&text).expect_err(&text), expected, "{text}");
    }
    assert!(matches!(
        Document::parse("{\"openapi\": "),
        Err(OpenApiError::Json(_))
    ));
    assert!(matches!(
        Document::parse("openapi: [unclosed"),
        Err(OpenApiError::Yaml(_))
    ));
    assert_eq!(
        OpenApiError::Swagger("2.0".into()).to_string(),
        "swagger 2.0 documents are not supported: only OpenAPI 3.0.x and 3.1.x (convert it to OpenAPI 3 first)"
    );
}

#[test]
fn every_operation_becomes_a_tool_or_is_refused_with_its_reason() {
    let translation = translate(PETSTORE);
    let names: Vec<&str> = translation
        .operations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "withAuthorization",
            "dup",
            "listPets",
            "createPet",
            "get_pet_",
            "updatePet",
            "delete_pets_petId",
            "report",
            "drawShape",
        ]
    );
    let refused = [
        (
            "indirect (GET /ab)",
            "response 200: its schemas refer to themselves: #/components/schemas/A -> #/components/schemas/B -> #/components/schemas/A",
        ),
        (
            "bodyCollide (POST /bodyCollide)",
            "parameter `body` collides with the request body",
        ),
        (
            "collide (GET /collide/{id})",
            "parameter `id` is both a path and a query parameter",
        ),
        (
            "withCookie (GET /cookie)",
            "parameter `session` is a cookie (the tool never sets cookies)",
        ),
        (
            "dup (GET /dup2)",
            "the tool name `dup` is taken by GET /dup1",
        ),
        (
            "external (GET /external)",
            "parameter `q`: external reference `common.yaml#/components/schemas/Query`",
        ),
        ("filter (GET /filter)", "parameter `where` is an object"),
        (
            "withHost (GET /host)",
            "header parameter `Host` is a header the tool never sets",
        ),
        (
            "withMcpHeader (GET /mcp)",
            "header parameter `Mcp-Session-Id` is a header the tool never sets",
        ),
        (
            "tree (GET /tree)",
            "response 200: its schemas refer to themselves: #/components/schemas/Node -> #/components/schemas/Node",
        ),
        (
            "upload (POST /upload)",
            "its request body is multipart/form-data only, and required",
        ),
    ];
    assert_eq!(
        translation.refused.len(),
        refused.len(),
        "{:?}",
        translation.refused
    );
    for (got, (operation, why)) in translation.refused.iter().zip(refused) {
        assert_eq!(got.operation, operation);
        assert!(got.why.starts_with(why), "{operation}: {}", got.why);
    }

    let shop = translate(SHOP);
    let names: Vec<&str> = shop.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["listOrders", "createOrder", "getOrderItem"]);
    assert!(shop.refused.is_empty(), "{:?}", shop.refused);
}

#[test]
fn the_selection_sees_each_tool_name_and_keeps_only_the_selected() {
    let document = Document::parse(PETSTORE).expect("parses");
    let seen = std::cell::RefCell::new(Vec::new());
    let translation = document
        .tools(&|name| {
            seen.borrow_mut().push(name.to_owned());
            name.ends_with("Pet") || name == "tree"
        })
        .expect("translates");
    let names: Vec<&str> = translation
        .operations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, ["createPet", "updatePet"]);
    // An operation left out by the selection is not translated, so not refused either.
    let refused: Vec<&str> = translation
        .refused
        .iter()
        .map(|r| r.operation.as_str())
        .collect();
    assert_eq!(refused, ["tree (GET /tree)"]);
    assert_eq!(seen.borrow().len(), 20);
}

#[test]
fn the_tools_are_valid_mcp_tools_with_valid_schemas() {
    let validator = spec_validator("2025-11-25", "Tool");
    for text in [PETSTORE, SHOP] {
        for operation in translate(text).operations {
            let tool = &operation.tool;
            let errors: Vec<String> = validator.iter_errors(tool).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {errors:?}", operation.name);
            assert_eq!(tool["name"], json!(operation.name));
            jsonschema::meta::validate(&tool["inputSchema"]).expect("a valid JSON Schema");
            if let Some(output) = tool.get("outputSchema") {
                jsonschema::meta::validate(output).expect("a valid JSON Schema");
                assert_eq!(output["type"], "object", "{}", operation.name);
            }
            for required in tool["inputSchema"]["required"]
                .as_array()
                .expect("required")
            {
                let name = required.as_str().expect("a name");
                assert!(
                    tool["inputSchema"]["properties"].get(name).is_some(),
                    "{name}"
                );
            }
        }
    }
}

#[test]
fn document_level_problems_are_errors() {
    let head = r#""openapi": "3.0.0", "info": {"title": "t", "version": "1"}"#;
    let cases = [
        (format!(r#"{{{head}, "paths": []}}"#), OpenApiError::Paths),
        (
            format!(r##"{{{head}, "paths": {{"/a": {{"$ref": "other.json#/paths/~1a"}}}}}}"##),
            OpenApiError::PathItem {
                path: "/a".into(),
                why: "external reference `other.json#/paths/~1a` (only local `#/...` references are resolved)".into(),
            },
        ),
        (
            format!(r##"{{{head}, "paths": {{"/a": {{"$ref": "#/nowhere"}}}}}}"##),
            OpenApiError::PathItem {
                path: "/a".into(),
                why: "reference `#/nowhere` points at nothing in the document".into(),
            },
        ),
        (
            format!(r#"{{{head}, "paths": {{"/a": 7}}}}"#),
            OpenApiError::PathItem {
                path: "/a".into(),
                why: "the path item is not an object".into(),
            },
        ),
    ];
    for (text, expected) in cases {
        let document = Document::parse(&text).expect(&text);
        assert_eq!(document.tools(&|_| true).expect_err(&text), expected);
    }
    // No paths (a 3.1 document of webhooks only): no tools, no error.
    let document = Document::parse(&format!("{{{head}}}")).expect("parses");
    let translation = document.tools(&|_| true).expect("translates");
    assert!(translation.operations.is_empty() && translation.refused.is_empty());
    // A local path item reference is followed.
    let text = format!(
        r##"{{{head}, "paths": {{"/a": {{"$ref": "#/x-items/a"}}, "x-ext": 1}}, "x-items": {{"a": {{"get": {{"responses": {{}}}}}}}}}}"##
    );
    let translation = Document::parse(&text)
        .expect("parses")
        .tools(&|_| true)
        .expect("ok");
    assert_eq!(translation.operations[0].name, "get_a");
}

#[test]
fn a_pathological_document_is_refused_within_bounds() {
    // 24 levels, each holding the next twice: 2^24 schemas once inlined, unless bounded.
    let mut schemas = serde_json::Map::new();
    for level in 0..24 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", level + 1)});
        schemas.insert(
            format!("S{level}"),
            json!({"type": "object", "properties": {"left": next, "right": next}}),
        );
    }
    schemas.insert("S24".into(), json!({"type": "string"}));
    // 70 schemas, each the only property of the one before: deeper than 64.
    for level in 0..70 {
        let next = json!({"$ref": format!("#/components/schemas/D{}", level + 1)});
        schemas.insert(format!("D{level}"), json!({"type": "array", "items": next}));
    }
    schemas.insert("D70".into(), json!({"type": "string"}));
    let answer = |schema: &str| json!({"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}}});
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "bomb", "version": "1"},
        "paths": {
            "/wide": {"get": {"operationId": "wide", "responses": answer("S0")}},
            "/deep": {"get": {"operationId": "deep", "responses": answer("D0")}},
            "/fine": {"get": {"operationId": "fine", "responses": answer("S20")}}
        },
        "components": {"schemas": schemas}
    });
    let translation = translate(&document.to_string());
    let names: Vec<&str> = translation
        .operations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, ["fine"]);
    let why: Vec<(&str, &str)> = translation
        .refused
        .iter()
        .map(|r| (r.operation.as_str(), r.why.as_str()))
        .collect();
    assert_eq!(
        why,
        [
            (
                "deep (GET /deep)",
                "response 200: a schema nests deeper than 64 levels"
            ),
            (
                "wide (GET /wide)",
                "response 200: its schemas hold more than 65536 values once references are inlined"
            ),
        ]
    );
}
