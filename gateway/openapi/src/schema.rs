//! A schema of the document made a self-contained JSON Schema for a tool: local `$ref`s inlined (a cycle
//! refused, naming the chain), OpenAPI 3.0's dialect turned into JSON Schema (`nullable`, boolean
//! `exclusiveMinimum`/`exclusiveMaximum`), OpenAPI-only keywords dropped (`discriminator`, `xml`,
//! `externalDocs`, `example`, `x-*`). It must not follow external references, and it bounds what one
//! operation may inline ([`MAX_DEPTH`] levels, [`MAX_VALUES`] JSON values) and what all of a document's
//! operations may inline together ([`MAX_DOCUMENT_VALUES`], a [`DocumentBudget`]: many operations each
//! referring to one large schema would otherwise fan out past memory), so a pathological document cannot
//! exhaust memory or the stack.

use std::cell::Cell;

use crate::refs::{self, Refusal};
use serde_json::{Map, Value, json};

/// How deep schemas may nest once references are inlined.
pub(crate) const MAX_DEPTH: usize = 64;
/// How many JSON values one operation's schemas (input and output) may hold once inlined.
pub(crate) const MAX_VALUES: usize = 65_536;
/// How many JSON values all of a document's operations may inline together (an operation refused for its
/// own bound counts what it spent); a document over it is refused.
pub const MAX_DOCUMENT_VALUES: usize = 4_000_000;

/// What the operations of one document may still inline, all together; once spent, the document is refused
/// (not just the operation that spent the last of it).
#[derive(Debug)]
pub(crate) struct DocumentBudget {
    left: Cell<usize>,
    exhausted: Cell<bool>,
}

impl DocumentBudget {
    pub(crate) fn new() -> Self {
        Self {
            left: Cell::new(MAX_DOCUMENT_VALUES),
            exhausted: Cell::new(false),
        }
    }

    /// Whether an operation found it spent.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    fn spend(&self, values: usize) -> Result<(), Refusal> {
        match self.left.get().checked_sub(values) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.exhausted.set(true);
                Err(format!(
                    "the document's operations inline more than {MAX_DOCUMENT_VALUES} values in all"
                ))
            }
        }
    }
}

/// Keywords of OpenAPI's schema object that JSON Schema does not know, or that only describe other formats.
const DROPPED: [&str; 4] = ["discriminator", "xml", "externalDocs", "example"];
/// Keywords whose values are schemas.
const SCHEMA_VALUED: [&str; 11] = [
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
];
/// Keywords whose values are maps of schemas.
const SCHEMA_MAPS: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];
/// Keywords whose values are lists of schemas.
const SCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords beside a `$ref` that only annotate it: merged into the target rather than combined with it.
const ANNOTATIONS: [&str; 7] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Inlines the schemas of one operation; its budget of values is shared by all of them, and spent from the
/// document's too.
#[derive(Debug)]
pub(crate) struct Inliner<'d> {
    root: &'d Value,
    v30: bool,
    left: usize,
    document: &'d DocumentBudget,
    chain: Vec<String>,
}

impl<'d> Inliner<'d> {
    pub(crate) fn new(root: &'d Value, v30: bool, document: &'d DocumentBudget) -> Self {
        Self {
            root,
            v30,
            left: MAX_VALUES,
            document,
            chain: Vec::new(),
        }
    }

    /// The schema, self-contained.
    pub(crate) fn schema(&mut self, schema: &Value) -> Result<Value, Refusal> {
        self.walk(schema, 0)
    }

    fn spend(&mut self, values: usize) -> Result<(), Refusal> {
        self.left = self.left.checked_sub(values).ok_or_else(|| {
            format!("its schemas hold more than {MAX_VALUES} values once references are inlined")
        })?;
        self.document.spend(values)
    }

    fn walk(&mut self, schema: &Value, depth: usize) -> Result<Value, Refusal> {
        if depth > MAX_DEPTH {
            return Err(format!("a schema nests deeper than {MAX_DEPTH} levels"));
        }
        self.spend(1)?;
        let Value::Object(map) = schema else {
            // `true`/`false` (3.1), or something that is no schema: kept as it is.
            return Ok(schema.clone());
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.reference(reference, map, depth);
        }
        let mut out = Map::new();
        for (key, value) in map {
            let key = key.as_str();
            if DROPPED.contains(&key)
                || key.starts_with("x-")
                || key == "$defs"
                || key == "definitions"
            {
                // `$defs` are reached through the references, which are inlined.
                continue;
            }
            let converted = if SCHEMA_VALUED.contains(&key) {
                self.walk(value, depth + 1)?
            } else if SCHEMA_MAPS.contains(&key) {
                self.map_of(value, depth)?
            } else if SCHEMA_LISTS.contains(&key) || (key == "items" && value.is_array()) {
                self.list_of(value, depth)?
            } else if key == "items" {
                self.walk(value, depth + 1)?
            } else {
                // Data (`enum`, `const`, `default`, ...) or a plain keyword: a `$ref` in it is no reference.
                self.spend(count(value))?;
                value.clone()
            };
            out.insert(key.to_owned(), converted);
        }
        if self.v30 {
            return Ok(dialect_30(out));
        }
        Ok(Value::Object(out))
    }

    fn map_of(&mut self, value: &Value, depth: usize) -> Result<Value, Refusal> {
        let Value::Object(map) = value else {
            return Ok(value.clone());
        };
        let mut out = Map::new();
        for (name, schema) in map {
            out.insert(name.clone(), self.walk(schema, depth + 1)?);
        }
        Ok(Value::Object(out))
    }

    fn list_of(&mut self, value: &Value, depth: usize) -> Result<Value, Refusal> {
        let Value::Array(list) = value else {
            return Ok(value.clone());
        };
        list.iter()
            .map(|schema| self.walk(schema, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// A `$ref`, inlined; its siblings merged when they only annotate it, else combined with `allOf`.
    fn reference(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, Refusal> {
        if let Some(start) = self.chain.iter().position(|r| r == reference) {
            let mut cycle = self.chain[start..].to_vec();
            cycle.push(reference.to_owned());
            return Err(format!(
                "its schemas refer to themselves: {}",
                cycle.join(" -> ")
            ));
        }
        let target = refs::target(self.root, reference)?;
        self.chain.push(reference.to_owned());
        let resolved = self.walk(target, depth);
        self.chain.pop();
        let resolved = resolved?;

        let mut rest: Map<String, Value> = map
            .iter()
            .filter(|(key, _)| *key != "$ref")
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let nullable = self.v30 && rest.remove("nullable") == Some(Value::Bool(true));
        let rest = match self.walk(&Value::Object(rest), depth + 1)? {
            Value::Object(rest) => rest,
            _ => Map::new(),
        };
        let merged = match resolved {
            Value::Object(mut target) if rest.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) => {
                target.extend(rest);
                Value::Object(target)
            }
            resolved if rest.is_empty() => resolved,
            resolved => {
                let mut all = rest;
                all.insert("allOf".into(), json!([resolved]));
                Value::Object(all)
            }
        };
        Ok(if nullable { or_null(merged) } else { merged })
    }
}

/// How many JSON values `value` holds.
fn count(value: &Value) -> usize {
    match value {
        Value::Array(list) => 1 + list.iter().map(count).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count).sum::<usize>(),
        _ => 1,
    }
}

/// OpenAPI 3.0's schema keywords that mean something else in JSON Schema, rewritten.
fn dialect_30(mut schema: Map<String, Value>) -> Value {
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(is)) = schema.get(exclusive) {
            let is = *is;
            schema.remove(exclusive);
            if is && let Some(value) = schema.remove(bound) {
                schema.insert(exclusive.into(), value);
            }
        }
    }
    match schema.remove("nullable") {
        Some(Value::Bool(true)) => or_null(Value::Object(schema)),
        _ => Value::Object(schema),
    }
}

/// The schema, `null` allowed too: added to its `type` (and `enum`), else `anyOf` with `{"type": "null"}`.
fn or_null(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    match map.get_mut("type") {
        Some(Value::String(one)) => {
            let one = std::mem::take(one);
            map.insert("type".into(), json!([one, "null"]));
        }
        Some(Value::Array(several)) => {
            if !several.contains(&json!("null")) {
                several.push(json!("null"));
            }
        }
        _ => {
            let composed = ["allOf", "anyOf", "oneOf", "enum", "const", "not"]
                .iter()
                .any(|k| map.contains_key(*k));
            return if composed {
                json!({"anyOf": [Value::Object(map), {"type": "null"}]})
            } else {
                // No type: null is allowed already.
                Value::Object(map)
            };
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(map)
}

/// Whether a schema describes an object only (`outputSchema` as it is); anything else is wrapped.
pub(crate) fn is_object(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("object"))
}

/// The JSON type a schema's `type` names alone, `null` aside (`[T, "null"]` is T).
pub(crate) fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(one) => Some(one),
        Value::Array(several) => {
            let mut named = several
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            let first = named.next()?;
            named.next().is_none().then_some(first)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
