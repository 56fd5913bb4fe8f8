//! One operation of the document as an MCP tool (name, title, description, `inputSchema`, `outputSchema`,
//! annotations), and what a call of it needs: where each argument goes, the body's media type, how the
//! answer is shaped. It must not guess: what it cannot translate faithfully (a cookie, a header the tool
//! never sets, an object in a query, a body that is not JSON and required) refuses the operation, saying why.

use crate::refs::{self, Refusal};
use crate::schema::{self, Inliner};
use http::{HeaderValue, Method};
use serde_json::{Map, Value, json};

mod parameter;

pub(crate) use parameter::{Join, Location, Param, Primitive, template_names};

/// The operations of a path item, in this order.
pub(crate) const METHODS: [(&str, Method); 8] = [
    ("get", Method::GET),
    ("put", Method::PUT),
    ("post", Method::POST),
    ("delete", Method::DELETE),
    ("options", Method::OPTIONS),
    ("head", Method::HEAD),
    ("patch", Method::PATCH),
    ("trace", Method::TRACE),
];

/// The longest tool name (MCP's advice).
const MAX_NAME: usize = 128;

/// One operation as a tool, and how a call of it becomes an HTTP request.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The MCP `Tool` object.
    pub tool: Value,
    /// The tool's name (also `tool["name"]`).
    pub name: String,
    pub method: Method,
    /// The path template, e.g. `/items/{id}`.
    pub path: String,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Option<Body>,
    pub(crate) output: Output,
    /// A 2xx answer is JSON: the request says `Accept: application/json`.
    pub(crate) json_answer: bool,
}

/// The JSON request body: the argument `body`.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) required: bool,
    pub(crate) content_type: HeaderValue,
}

/// How a 2xx JSON answer becomes `structuredContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// No `outputSchema`: an object as it is, anything else as `{"result": ...}`.
    Free,
    /// An object `outputSchema`: an object as it is, anything else only as text.
    Object,
    /// `outputSchema` wraps the answer's schema: always `{"result": ...}`.
    Wrapped,
}

/// Where an operation is.
#[derive(Debug)]
pub(crate) struct Site<'d> {
    pub(crate) root: &'d Value,
    pub(crate) v30: bool,
    pub(crate) path: &'d str,
    pub(crate) item: &'d Map<String, Value>,
    /// What the document's operations may still inline, all together.
    pub(crate) budget: &'d schema::DocumentBudget,
}

/// The tool name: `operationId` (characters outside `[A-Za-z0-9_.-]` replaced by `_`), else method and path
/// (`get_items_id` for `GET /items/{id}`); at most 128 characters.
pub(crate) fn tool_name(op: &Value, method: &str, path: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if let Some(id) = op.get("operationId").and_then(Value::as_str)
        && !id.is_empty()
    {
        return id
            .chars()
            .map(|c| if allowed(c) { c } else { '_' })
            .take(MAX_NAME)
            .collect();
    }
    let mut name = String::new();
    for c in format!("{method}_{path}").chars() {
        let c = if allowed(c) { c } else { '_' };
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    name.trim_matches('_').chars().take(MAX_NAME).collect()
}

/// The operation as a tool, or why not.
pub(crate) fn translate<'d>(
    site: &Site<'d>,
    method: Method,
    op: &'d Value,
    name: String,
) -> Result<Operation, Refusal> {
    let Value::Object(op) = op else {
        return Err("the operation is not an object".into());
    };
    if !site.path.starts_with('/') {
        return Err("its path does not start with `/`".into());
    }
    let mut inliner = Inliner::new(site.root, site.v30, site.budget);
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params: Vec<Param> = Vec::new();
    for declared in parameter::declared(site, op)? {
        let Some((param, schema)) = parameter::parameter(&mut inliner, declared)? else {
            continue;
        };
        if let Some(first) = params.iter().find(|p| p.name == param.name) {
            return Err(format!(
                "parameter `{}` is both a {} and a {} parameter (one argument cannot be both)",
                param.name,
                first.location.as_str(),
                param.location.as_str()
            ));
        }
        if param.required {
            required.push(json!(param.name));
        }
        properties.insert(param.name.clone(), schema);
        params.push(param);
    }
    parameter::check_template(site.path, &params)?;
    let body = match request_body(&mut inliner, site.root, op)? {
        Some((body, schema)) => {
            if properties.contains_key("body") {
                return Err("parameter `body` collides with the request body, which the tool takes as its `body` argument".into());
            }
            if body.required {
                required.push(json!("body"));
            }
            properties.insert("body".into(), schema);
            Some(body)
        }
        None => None,
    };
    let (output, output_schema, json_answer) = output(&mut inliner, site.root, op)?;

    let text = |key: &str| {
        op.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let mut description = match (text("summary"), text("description")) {
        (Some(summary), Some(description)) => format!("{summary}\n\n{description}"),
        (Some(one), None) | (None, Some(one)) => one.to_owned(),
        (None, None) => format!("{method} {}", site.path),
    };
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        description.push_str("\n\nDeprecated.");
    }
    let mut tool = json!({
        "name": &name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        },
        "annotations": annotations(&method),
    });
    if let Some(summary) = text("summary") {
        tool["title"] = json!(summary);
    }
    if let Some(output_schema) = output_schema {
        tool["outputSchema"] = output_schema;
    }
    Ok(Operation {
        tool,
        name,
        method,
        path: site.path.to_owned(),
        params,
        body,
        output,
        json_answer,
    })
}

/// What the method says of a call: GET and HEAD only read, PUT and DELETE may be repeated.
fn annotations(method: &Method) -> Value {
    match *method {
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE => {
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true})
        }
        Method::PUT => json!({"readOnlyHint": false, "idempotentHint": true}),
        Method::DELETE => {
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true})
        }
        _ => json!({"readOnlyHint": false, "idempotentHint": false}),
    }
}

/// The media type of a JSON request body or answer: `application/json` first, then `*/*+json`; for a
/// request body, `*/*` and `application/*` too (JSON is one of what they accept).
fn json_media(content: &Map<String, Value>, wildcards: bool) -> Option<(&str, &Value)> {
    let essence = |key: &str| {
        key.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let ranks: [&dyn Fn(&str) -> bool; 3] = [
        &|e: &str| e == "application/json",
        &|e: &str| e.ends_with("+json"),
        &|e: &str| wildcards && (e == "*/*" || e == "application/*"),
    ];
    ranks.iter().find_map(|rank| {
        content
            .iter()
            .find(|(key, _)| rank(essence(key).as_str()))
            .map(|(key, media)| (key.as_str(), media))
    })
}

/// The JSON request body and its schema; `None` when there is none, or only an optional non-JSON one.
fn request_body(
    inliner: &mut Inliner<'_>,
    root: &Value,
    op: &Map<String, Value>,
) -> Result<Option<(Body, Value)>, Refusal> {
    let Some(declared) = op.get("requestBody") else {
        return Ok(None);
    };
    let declared = refs::component(root, declared).map_err(|why| format!("request body: {why}"))?;
    let required = declared.get("required") == Some(&Value::Bool(true));
    let Some(content) = declared.get("content").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some((media_type, media)) = json_media(content, true) else {
        if required && !content.is_empty() {
            let types: Vec<&str> = content.keys().map(String::as_str).collect();
            return Err(format!(
                "its request body is {} only, and required (only JSON request bodies are sent)",
                types.join(", ")
            ));
        }
        return Ok(None);
    };
    let any = json!({});
    let mut schema = inliner
        .schema(media.get("schema").unwrap_or(&any))
        .map_err(|why| format!("request body: {why}"))?;
    if let (Value::Object(annotated), Some(description)) =
        (&mut schema, declared.get("description"))
        && description.is_string()
        && !annotated.contains_key("description")
    {
        annotated.insert("description".into(), description.clone());
    }
    let content_type = if media_type.contains('*') {
        HeaderValue::from_static("application/json")
    } else {
        HeaderValue::from_str(media_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/json"))
    };
    Ok(Some((
        Body {
            required,
            content_type,
        },
        schema,
    )))
}

/// How the answer is shaped, the `outputSchema` (from the first 2xx response with JSON content: 200, 201,
/// ..., then `2XX`; `default` is not used), and whether a 2xx answer is JSON.
fn output(
    inliner: &mut Inliner<'_>,
    root: &Value,
    op: &Map<String, Value>,
) -> Result<(Output, Option<Value>, bool), Refusal> {
    let Some(Value::Object(responses)) = op.get("responses") else {
        return Ok((Output::Free, None, false));
    };
    let mut codes: Vec<&String> = responses
        .keys()
        .filter(|c| c.len() == 3 && c.starts_with('2') && c.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    codes.sort();
    codes.extend(responses.keys().filter(|c| c.eq_ignore_ascii_case("2XX")));
    for code in codes {
        let response = refs::component(root, &responses[code.as_str()])
            .map_err(|why| format!("response {code}: {why}"))?;
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            continue;
        };
        let Some((_, media)) = json_media(content, false) else {
            continue;
        };
        let Some(declared) = media.get("schema") else {
            return Ok((Output::Free, None, true));
        };
        let answer = inliner
            .schema(declared)
            .map_err(|why| format!("response {code}: {why}"))?;
        return Ok(if schema::is_object(&answer) {
            (Output::Object, Some(answer), true)
        } else {
            let wrapped = json!({
                "type": "object",
                "properties": {"result": answer},
                "required": ["result"],
            });
            (Output::Wrapped, Some(wrapped), true)
        });
    }
    Ok((Output::Free, None, false))
}

#[cfg(test)]
mod tests;
