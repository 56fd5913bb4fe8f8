//! The documents the unit tests translate (written for them, in `testdata/`), and lookups in what they
//! become. Test code only.

use crate::{Document, Operation, Translation};
use serde_json::{Value, json};
use std::path::PathBuf;

/// OpenAPI 3.0, JSON: every kind of `$ref`, parameters of every location, and the operations refused.
pub(crate) const PETSTORE: &str = include_str!("../testdata/petstore-3.0.json");
/// OpenAPI 3.1, YAML.
pub(crate) const SHOP: &str = include_str!("../testdata/shop-3.1.yaml");

/// Every operation of the document, translated.
pub(crate) fn translate(text: &str) -> Translation {
    Document::parse(text)
        .expect("the document parses")
        .tools(&|_| true)
        .expect("the document translates")
}

/// The operation of this tool name.
pub(crate) fn operation<'t>(translation: &'t Translation, name: &str) -> &'t Operation {
    translation
        .operations
        .iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("no tool {name}; refused: {:?}", translation.refused))
}

/// A validator for definition `def` of the MCP schema of `version` (from `../shared/spec/schema`, or
/// `MCPGW_SCHEMA_DIR`).
pub(crate) fn spec_validator(version: &str, def: &str) -> jsonschema::Validator {
    let dir = std::env::var_os("MCPGW_SCHEMA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/schema")
        });
    let path = dir.join(version).join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut schema: Value = serde_json::from_str(&text).expect("the MCP schema is JSON");
    assert!(schema["$defs"].get(def).is_some(), "{version} has no {def}");
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    jsonschema::validator_for(&schema).expect("the MCP schema compiles")
}
