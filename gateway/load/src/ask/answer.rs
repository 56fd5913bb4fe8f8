//! What the load generator answers when a server asks, standing in for a host and its user: an elicitation is
//! accepted with a value for every property of the requested schema (a string "mcpgw load", a number 1 kept
//! within its bounds, `true`, an enum's first value), a sampling request gets an assistant text message, a
//! roots request no roots; any other method is refused with -32601 (method not found).

use bytes::Bytes;
use protocol::id::RequestId;
use serde_json::{Map, Value, json};

/// The text of every string answered.
pub(crate) const TEXT: &str = "mcpgw load";

/// The JSON-RPC code of a refused question.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// The answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// The result.
    Result(Value),
    /// A method this client does not answer.
    Unknown,
}

/// The answer to a question `method` with `params` (absent params read as `{}`).
pub(crate) fn reply(method: &str, params: Option<&Value>) -> Reply {
    let empty = Value::Object(Map::new());
    let params = params.unwrap_or(&empty);
    match method {
        "elicitation/create" => Reply::Result(elicited(params)),
        "sampling/createMessage" => Reply::Result(json!({
            "role": "assistant",
            "content": {"type": "text", "text": TEXT},
            "model": "mcpgw-load",
            "stopReason": "endTurn",
        })),
        "roots/list" => Reply::Result(json!({"roots": []})),
        _ => Reply::Unknown,
    }
}

/// The JSON-RPC response to the server's request `id` (its id byte for byte).
pub(crate) fn response(id: &RequestId, method: &str, reply: &Reply) -> Bytes {
    let body = match reply {
        Reply::Result(result) => {
            format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.raw())
        }
        Reply::Unknown => {
            let error = json!({
                "code": METHOD_NOT_FOUND,
                "message": format!("mcpgw load does not answer {method}"),
            });
            format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.raw())
        }
    };
    Bytes::from(body)
}

/// An elicitation accepted: a form's content from its `requestedSchema`; a URL-mode one (2025-11-25) without.
fn elicited(params: &Value) -> Value {
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return json!({"action": "accept"});
    }
    let content: Map<String, Value> = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| (name.clone(), value_of(schema)))
                .collect()
        })
        .unwrap_or_default();
    json!({"action": "accept", "content": content})
}

/// A value for one property of a requested schema (primitive, enum or multi-select enum).
fn value_of(schema: &Value) -> Value {
    if let Some(first) = first_choice(schema) {
        return first;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => number(schema, true),
        Some("number") => number(schema, false),
        Some("boolean") => Value::Bool(true),
        Some("array") => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(first_choice(items).into_iter().collect())
        }
        _ => Value::from(TEXT),
    }
}

/// An enum's first value: `enum` (untitled or legacy-titled), or `oneOf`/`anyOf` options' `const`.
fn first_choice(schema: &Value) -> Option<Value> {
    let listed = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first());
    if let Some(first) = listed {
        return Some(first.clone());
    }
    ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key)?.as_array()?.first()?.get("const").cloned())
}

/// 1, or the nearest value within `minimum`/`maximum` (whole for an integer).
fn number(schema: &Value, integer: bool) -> Value {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let mut x = 1.0f64;
    if let Some(min) = bound("minimum") {
        x = x.max(if integer { min.ceil() } else { min });
    }
    if let Some(max) = bound("maximum") {
        x = x.min(if integer { max.floor() } else { max });
    }
    if integer {
        Value::from(x as i64)
    } else {
        json!(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(props: Value) -> Value {
        json!({"message": "?", "requestedSchema": {"type": "object", "properties": props}})
    }

    #[test]
    fn elicitations_are_filled_from_the_schema() {
        for (property, want) in [
            (json!({"type": "string"}), json!(TEXT)),
            (json!({"type": "string", "format": "email"}), json!(TEXT)),
            (json!({"type": "integer"}), json!(1)),
            (json!({"type": "integer", "minimum": 2.5}), json!(3)),
            (json!({"type": "integer", "maximum": -4}), json!(-4)),
            (json!({"type": "number"}), json!(1.0)),
            (json!({"type": "number", "minimum": 1.5}), json!(1.5)),
            (json!({"type": "boolean"}), json!(true)),
            (
                json!({"type": "string", "enum": ["red", "green"]}),
                json!("red"),
            ),
            (
                json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}),
                json!("a"),
            ),
            (
                json!({"type": "string", "oneOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]}),
                json!("x"),
            ),
            (
                json!({"type": "array", "items": {"type": "string", "enum": ["p", "q"]}}),
                json!(["p"]),
            ),
            (
                json!({"type": "array", "items": {"anyOf": [{"const": "m", "title": "M"}]}}),
                json!(["m"]),
            ),
            (json!({"title": "no type"}), json!(TEXT)),
        ] {
            let got = reply(
                "elicitation/create",
                Some(&schema(json!({"field": property}))),
            );
            let want = Reply::Result(json!({"action": "accept", "content": {"field": want}}));
            assert_eq!(got, want, "{property}");
        }
    }

    #[test]
    fn every_property_is_answered_and_odd_requests_still_get_an_answer() {
        let two = schema(json!({"name": {"type": "string"}, "age": {"type": "integer"}}));
        assert_eq!(
            reply("elicitation/create", Some(&two)),
            Reply::Result(json!({"action": "accept", "content": {"name": TEXT, "age": 1}}))
        );
        for params in [None, Some(json!({})), Some(json!({"requestedSchema": 3}))] {
            assert_eq!(
                reply("elicitation/create", params.as_ref()),
                Reply::Result(json!({"action": "accept", "content": {}})),
                "{params:?}"
            );
        }
        let url = json!({"mode": "url", "url": "https://example.com", "message": "go"});
        assert_eq!(
            reply("elicitation/create", Some(&url)),
            Reply::Result(json!({"action": "accept"}))
        );
    }

    #[test]
    fn each_method_gets_its_answer() {
        for (method, want) in [
            (
                "sampling/createMessage",
                Reply::Result(
                    json!({"role": "assistant", "content": {"type": "text", "text": TEXT},
                    "model": "mcpgw-load", "stopReason": "endTurn"}),
                ),
            ),
            ("roots/list", Reply::Result(json!({"roots": []}))),
            ("ping", Reply::Unknown),
            ("tasks/get", Reply::Unknown),
            ("Elicitation/Create", Reply::Unknown),
        ] {
            assert_eq!(reply(method, None), want, "{method}");
        }
    }

    #[test]
    fn responses_keep_the_id_and_refuse_with_method_not_found() {
        for (id, method, r, want) in [
            (
                RequestId::string("mcpgw-ask-1"),
                "roots/list",
                reply("roots/list", None),
                json!({"jsonrpc": "2.0", "id": "mcpgw-ask-1", "result": {"roots": []}}),
            ),
            (
                RequestId::number(7),
                "ping",
                Reply::Unknown,
                json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601,
                    "message": "mcpgw load does not answer ping"}}),
            ),
        ] {
            let body = response(&id, method, &r);
            let got: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(got, want);
            let text = std::str::from_utf8(&body).unwrap();
            assert!(text.contains(&format!(r#""id":{}"#, id.raw())), "{text}");
        }
    }
}
