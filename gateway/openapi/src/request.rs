//! A tool call as the HTTP request it stands for: path arguments percent-encoded (every character but the
//! unreserved ones, so `a/b` stays one segment), query arguments encoded (arrays repeated or joined as the
//! parameter's style says), header arguments set, `body` serialized as JSON. It must not send anything, and
//! must not let an argument choose another path (`.`/`..` segments are refused), another host, or a header
//! the operation does not declare.

use crate::CallError;
use crate::operation::{Join, Location, Operation, Param, Primitive, template_names};
use http::{HeaderName, HeaderValue, Method, header};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};
use std::collections::HashMap;
use url::Url;

/// Every character but RFC 3986's unreserved ones (`A-Z a-z 0-9 - . _ ~`) is percent-encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// An HTTP request to send for a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: Method,
    pub url: Url,
    /// The header arguments, `Content-Type` with a body, `Accept` when the answer is JSON.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The JSON body.
    pub body: Option<Vec<u8>>,
}

fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

impl Operation {
    /// The HTTP request for a call with these `arguments`, `base_url` (which may have a path prefix) joined
    /// with the operation's path. A missing required argument, an unknown one or one of the wrong JSON type
    /// is a [`CallError`] naming it.
    pub fn request(
        &self,
        base_url: &Url,
        arguments: &Map<String, Value>,
    ) -> Result<HttpRequest, CallError> {
        if base_url.cannot_be_a_base() {
            return Err(CallError::new(format!(
                "the base url `{base_url}` cannot have a path"
            )));
        }
        if let Some(unknown) = arguments.keys().find(|key| {
            let a_parameter = self.params.iter().any(|p| p.name == **key);
            let the_body = *key == "body" && self.body.is_some();
            !(a_parameter || the_body)
        }) {
            return Err(CallError::new(format!("unknown argument `{unknown}`")));
        }
        let mut path_values: HashMap<&str, String> = HashMap::new();
        let mut query: Vec<String> = Vec::new();
        let mut headers = Vec::new();
        for param in &self.params {
            let Some(value) = arguments.get(&param.name).filter(|v| !v.is_null()) else {
                if param.required {
                    return Err(CallError::new(format!(
                        "missing required argument `{}`",
                        param.name
                    )));
                }
                continue;
            };
            let texts = texts(param, value)?;
            match param.location {
                Location::Path => {
                    let encoded: Vec<String> = texts.iter().map(|t| encode(t)).collect();
                    let segment = encoded.join(",");
                    if segment.is_empty() {
                        return Err(CallError::new(format!(
                            "argument `{}` is empty (a path parameter needs a value)",
                            param.name
                        )));
                    }
                    path_values.insert(param.name.as_str(), segment);
                }
                Location::Query if texts.is_empty() => {}
                Location::Query => {
                    let name = encode(&param.name);
                    match param.array.unwrap_or(Join::Repeat) {
                        Join::Repeat => {
                            query.extend(texts.iter().map(|t| format!("{name}={}", encode(t))));
                        }
                        Join::With(delimiter) => {
                            let encoded: Vec<String> = texts.iter().map(|t| encode(t)).collect();
                            query.push(format!("{name}={}", encoded.join(delimiter)));
                        }
                    }
                }
                Location::Header => {
                    let value = HeaderValue::from_str(&texts.join(",")).map_err(|_| {
                        CallError::new(format!(
                            "argument `{}` is not a valid header value (control characters)",
                            param.name
                        ))
                    })?;
                    if let Some(name) = &param.header {
                        headers.push((name.clone(), value));
                    }
                }
            }
        }

        let mut path = String::new();
        let mut rest = self.path.as_str();
        for name in template_names(&self.path).map_err(CallError::new)? {
            let placeholder = format!("{{{name}}}");
            let Some(at) = rest.find(&placeholder) else {
                break;
            };
            path.push_str(&rest[..at]);
            path.push_str(path_values.get(name).map_or("", String::as_str));
            rest = &rest[at + placeholder.len()..];
        }
        path.push_str(rest);
        if path.split('/').any(|segment| {
            let segment = segment.to_ascii_lowercase().replace("%2e", ".");
            segment == "." || segment == ".."
        }) {
            return Err(CallError::new(
                "the path would have a `.` or `..` segment (an argument cannot move the request elsewhere)",
            ));
        }

        let mut url = base_url.clone();
        url.set_path(&format!("{}{path}", base_url.path().trim_end_matches('/')));
        url.set_fragment(None);
        if !query.is_empty() {
            let ours = query.join("&");
            let joined = match base_url.query().filter(|q| !q.is_empty()) {
                Some(theirs) => format!("{theirs}&{ours}"),
                None => ours,
            };
            url.set_query(Some(&joined));
        }

        let body = match (&self.body, arguments.get("body").filter(|v| !v.is_null())) {
            (Some(body), Some(value)) => {
                headers.push((header::CONTENT_TYPE, body.content_type.clone()));
                Some(serde_json::to_vec(value).map_err(|e| CallError::new(e.to_string()))?)
            }
            (Some(body), None) if body.required => {
                return Err(CallError::new("missing required argument `body`"));
            }
            _ => None,
        };
        if self.json_answer {
            headers.push((header::ACCEPT, HeaderValue::from_static("application/json")));
        }
        Ok(HttpRequest {
            method: self.method.clone(),
            url,
            headers,
            body,
        })
    }
}

/// The argument as text: one for a scalar, one per item for an array; the JSON type checked.
fn texts(param: &Param, value: &Value) -> Result<Vec<String>, CallError> {
    let name = &param.name;
    if param.array.is_some() {
        let Value::Array(items) = value else {
            return Err(CallError::new(format!(
                "argument `{name}` must be an array, not {}",
                kind(value)
            )));
        };
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| scalar(item, param.primitive, &format!("`{name}` item {i}")))
            .collect();
    }
    Ok(vec![scalar(value, param.primitive, &format!("`{name}`"))?])
}

fn scalar(value: &Value, primitive: Option<Primitive>, what: &str) -> Result<String, CallError> {
    let text = match (value, primitive) {
        (Value::String(s), None | Some(Primitive::String)) => Some(s.clone()),
        (Value::Number(n), None | Some(Primitive::Number)) => Some(n.to_string()),
        (Value::Number(n), Some(Primitive::Integer)) if n.is_i64() || n.is_u64() => {
            Some(n.to_string())
        }
        (Value::Bool(b), None | Some(Primitive::Boolean)) => Some(b.to_string()),
        _ => None,
    };
    text.ok_or_else(|| {
        let expected = match primitive {
            Some(Primitive::String) => "a string",
            Some(Primitive::Integer) => "an integer",
            Some(Primitive::Number) => "a number",
            Some(Primitive::Boolean) => "a boolean",
            None => "a string, a number or a boolean",
        };
        CallError::new(format!(
            "argument {what} must be {expected}, not {}",
            kind(value)
        ))
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
