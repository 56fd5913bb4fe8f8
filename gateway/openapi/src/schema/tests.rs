use super::*;

fn root() -> Value {
    json!({"components": {"schemas": {
        "Id": {"type": "string", "format": "uuid"},
        "Tagged": {"type": "object", "properties": {"id": {"$ref": "#/components/schemas/Id"}}},
        "Self": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Self"}}},
        "Ping": {"oneOf": [{"$ref": "#/components/schemas/Pong"}, {"type": "null"}]},
        "Pong": {"type": "array", "items": {"$ref": "#/components/schemas/Ping"}}
    }}})
}

#[test]
fn openapi_3_0_schemas_become_json_schema() {
    let root = root();
    let cases = [
        (
            json!({"type": "string", "nullable": true}),
            json!({"type": ["string", "null"]}),
        ),
        (
            json!({"type": "string", "nullable": false}),
            json!({"type": "string"}),
        ),
        (
            json!({"type": "string", "nullable": true, "enum": ["a"]}),
            json!({"type": ["string", "null"], "enum": ["a", null]}),
        ),
        (json!({"nullable": true}), json!({})),
        (
            json!({"oneOf": [{"type": "integer"}], "nullable": true}),
            json!({"anyOf": [{"oneOf": [{"type": "integer"}]}, {"type": "null"}]}),
        ),
        (
            json!({"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}),
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 9}),
        ),
        (
            json!({"type": "object", "discriminator": {"propertyName": "k"}, "xml": {}, "externalDocs": {},
                   "example": {}, "x-vendor": 1, "readOnly": true, "deprecated": true}),
            json!({"type": "object", "readOnly": true, "deprecated": true}),
        ),
        // A `$ref` beside `nullable` (a common 3.0 idiom): the target, null allowed.
        (
            json!({"$ref": "#/components/schemas/Id", "nullable": true, "description": "the id"}),
            json!({"type": ["string", "null"], "format": "uuid", "description": "the id"}),
        ),
        // Nested: items, additionalProperties, properties.
        (
            json!({"type": "object", "additionalProperties": {"type": "integer", "nullable": true},
                   "properties": {"list": {"type": "array", "items": {"$ref": "#/components/schemas/Tagged"}}}}),
            json!({"type": "object", "additionalProperties": {"type": ["integer", "null"]},
                   "properties": {"list": {"type": "array", "items": {"type": "object", "properties": {
                       "id": {"type": "string", "format": "uuid"}}}}}}),
        ),
    ];
    for (schema, expected) in cases {
        let got = Inliner::new(&root, true, &DocumentBudget::new()).schema(&schema);
        assert_eq!(got, Ok(expected), "{schema}");
    }
}

#[test]
fn openapi_3_1_schemas_pass_through_with_references_inlined() {
    let root = root();
    let cases = [
        (json!(true), json!(true)),
        (
            json!({"type": ["string", "null"], "const": "x"}),
            json!({"type": ["string", "null"], "const": "x"}),
        ),
        (
            json!({"type": "number", "exclusiveMinimum": 0}),
            json!({"type": "number", "exclusiveMinimum": 0}),
        ),
        // `nullable` is no 3.1 keyword: left as it is.
        (
            json!({"type": "string", "nullable": true}),
            json!({"type": "string", "nullable": true}),
        ),
        // Data is data: a `$ref` in `default`, `enum`, `examples` or `const` is no reference.
        (
            json!({"default": {"$ref": "#/x"}, "enum": [{"$ref": "#/x"}], "examples": [{"$ref": "#/y"}], "const": {"$ref": 1}}),
            json!({"default": {"$ref": "#/x"}, "enum": [{"$ref": "#/x"}], "examples": [{"$ref": "#/y"}], "const": {"$ref": 1}}),
        ),
        // A property named `$ref` is a property.
        (
            json!({"properties": {"$ref": {"type": "string"}}}),
            json!({"properties": {"$ref": {"type": "string"}}}),
        ),
        (
            json!({"$ref": "#/components/schemas/Id", "minLength": 1}),
            json!({"minLength": 1, "allOf": [{"type": "string", "format": "uuid"}]}),
        ),
        (
            json!({"$defs": {"unused": {"$ref": "#/components/schemas/Self"}}, "type": "string"}),
            json!({"type": "string"}),
        ),
        (
            json!({"not": {"$ref": "#/components/schemas/Id"}, "prefixItems": [{"$ref": "#/components/schemas/Id"}]}),
            json!({"not": {"type": "string", "format": "uuid"}, "prefixItems": [{"type": "string", "format": "uuid"}]}),
        ),
    ];
    for (schema, expected) in cases {
        let got = Inliner::new(&root, false, &DocumentBudget::new()).schema(&schema);
        assert_eq!(got, Ok(expected), "{schema}");
    }
}

#[test]
fn cycles_are_refused_naming_the_chain() {
    let root = root();
    let cases = [
        (
            json!({"$ref": "#/components/schemas/Self"}),
            "its schemas refer to themselves: #/components/schemas/Self -> #/components/schemas/Self",
        ),
        (
            json!({"type": "array", "items": {"$ref": "#/components/schemas/Ping"}}),
            "its schemas refer to themselves: #/components/schemas/Ping -> #/components/schemas/Pong -> #/components/schemas/Ping",
        ),
        (
            json!({"properties": {"a": {"$ref": "#/components/schemas/Id"}, "b": {"$ref": "#/components/schemas/Nope"}}}),
            "reference `#/components/schemas/Nope` points at nothing in the document",
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            Inliner::new(&root, false, &DocumentBudget::new()).schema(&schema),
            Err(expected.to_owned()),
            "{schema}"
        );
    }
    // The same schema twice, side by side, is no cycle.
    let twice = json!({"properties": {"a": {"$ref": "#/components/schemas/Tagged"}, "b": {"$ref": "#/components/schemas/Tagged"}}});
    assert!(
        Inliner::new(&root, false, &DocumentBudget::new())
            .schema(&twice)
            .is_ok()
    );
}

#[test]
fn types_are_read_for_arguments_and_answers() {
    let cases = [
        (json!({"type": "string"}), Some("string"), false),
        (json!({"type": ["integer", "null"]}), Some("integer"), false),
        (json!({"type": ["integer", "string"]}), None, false),
        (json!({"type": "object"}), Some("object"), true),
        (json!({"type": ["object", "null"]}), Some("object"), false),
        (json!({"properties": {}}), None, false),
        (json!(true), None, false),
    ];
    for (schema, single, object) in cases {
        assert_eq!(single_type(&schema), single, "{schema}");
        assert_eq!(is_object(&schema), object, "{schema}");
    }
}
