//! Documents built to exhaust memory: YAML aliases nested to expand a few kilobytes into millions of
//! values, and many operations each inlining one large schema. Each is refused naming the bound it broke,
//! while a document that stays under the bounds (aliases and a shared schema used a few times) still loads.

use super::*;
use serde_json::json;

/// A valid document whose `x-laughs` extension nests aliases three levels deep: `width` scalars, copied
/// 100 times, copied 100 times again.
fn laughs(width: usize) -> String {
    let scalars = vec!["lol"; width].join(", ");
    let a = vec!["*a"; 100].join(", ");
    let b = vec!["*b"; 100].join(", ");
    format!(
        "openapi: 3.0.3\ninfo: {{title: laughs, version: '1'}}\npaths: {{}}\nx-laughs:\n  a: &a [{scalars}]\n  b: &b [{a}]\n  c: [{b}]\n"
    )
}

#[test]
fn a_yaml_alias_bomb_of_a_few_kilobytes_is_refused_naming_the_bound() {
    let bomb = laughs(150);
    assert!(bomb.len() < 4096, "{} bytes", bomb.len());
    // 150 scalars copied 10,000 times: 1.5 million values from about 2 KB.
    match Document::parse(&bomb) {
        Err(e @ OpenApiError::YamlTooLarge(n)) => {
            assert_eq!(n, bomb.len() + crate::MAX_ALIAS_NODES);
            let said = e.to_string();
            assert!(said.contains("once its aliases are copied"), "{said}");
            assert!(said.contains(&n.to_string()), "{said}");
        }
        other => panic!("{other:?}"),
    }
    // The same shape, small: aliases within the bound are copied as YAML says.
    let fine = laughs(2);
    let document = Document::parse(&fine).expect("a small use of aliases loads");
    let c = &document.root["x-laughs"]["c"];
    assert_eq!(c.as_array().map(Vec::len), Some(100));
    assert_eq!(c[99][99], json!(["lol", "lol"]));
}

/// A document whose `count` operations each take, as their request body, a schema that inlines to about
/// 53,000 values (under one operation's own bound): 40 properties of 40 properties of a string, eight times.
fn fan_out(count: usize) -> String {
    let props = |n: usize, target: &str| {
        (0..n)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"$ref": format!("#/components/schemas/{target}")}),
                )
            })
            .collect::<serde_json::Map<_, _>>()
    };
    let paths: serde_json::Map<_, _> = (0..count)
        .map(|i| {
            let op = json!({"post": {"operationId": format!("op{i}"),
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L3"}}}},
                "responses": {"200": {"description": "ok"}}}});
            (format!("/op{i}"), op)
        })
        .collect();
    json!({
        "openapi": "3.1.0", "info": {"title": "fan", "version": "1"}, "paths": paths,
        "components": {"schemas": {
            "L0": {"type": "string"},
            "L1": {"type": "object", "properties": props(40, "L0")},
            "L2": {"type": "object", "properties": props(40, "L1")},
            "L3": {"type": "object", "properties": props(8, "L2")},
        }}
    })
    .to_string()
}

#[test]
fn a_ref_fan_out_bomb_is_refused_for_the_whole_document() {
    let bomb = fan_out(100);
    assert!(bomb.len() < 32 * 1024, "{} bytes", bomb.len());
    let document = Document::parse(&bomb).expect("it parses");
    match document.tools(&|_| true) {
        Err(e @ OpenApiError::TooManyInlined) => {
            let said = e.to_string();
            assert!(
                said.contains(&crate::MAX_DOCUMENT_VALUES.to_string()),
                "{said}"
            );
        }
        Ok(t) => panic!("translated {} operations", t.operations.len()),
        Err(other) => panic!("{other}"),
    }
    // A few operations sharing the same schema stay under the document's bound and load.
    let few = Document::parse(&fan_out(5)).expect("it parses");
    let translation = few.tools(&|_| true).expect("five operations load");
    assert_eq!(translation.operations.len(), 5, "{:?}", translation.refused);
}
