//! An HTTP answer as the tool call's `CallToolResult`: a 2xx JSON answer as `structuredContent` and its text,
//! another 2xx as text (a binary one as a note of its type and size), anything else a tool error carrying the
//! status and a bounded excerpt of the body. It must not put response headers in the result, nor more than
//! [`MAX_EXCERPT`] bytes of an error's body.

use crate::operation::{Operation, Output};
use serde_json::{Value, json};

/// The most of an error answer's body a tool error carries, in bytes.
pub(crate) const MAX_EXCERPT: usize = 1024;

impl Operation {
    /// The `CallToolResult` for an HTTP answer (the body as bounded by the caller).
    pub fn result(&self, status: u16, content_type: Option<&str>, body: &[u8]) -> Value {
        if !(200..300).contains(&status) {
            let mut text = status_line(status);
            let excerpt = excerpt(content_type, body);
            if !excerpt.is_empty() {
                text.push_str(": ");
                text.push_str(&excerpt);
            }
            return json!({"content": [{"type": "text", "text": text}], "isError": true});
        }
        if body.is_empty() {
            return text_result(status_line(status));
        }
        if content_type.is_some_and(is_json)
            && let Ok(answer) = serde_json::from_slice::<Value>(body)
        {
            let structured = match (self.output, answer) {
                (Output::Wrapped, answer) => Some(json!({ "result": answer })),
                (Output::Free | Output::Object, answer @ Value::Object(_)) => Some(answer),
                (Output::Free, answer) => Some(json!({ "result": answer })),
                // The answer does not match the object `outputSchema`: text only.
                (Output::Object, _) => None,
            };
            if let Some(structured) = structured {
                return json!({
                    "content": [{"type": "text", "text": structured.to_string()}],
                    "structuredContent": structured,
                });
            }
        }
        text_result(as_text(content_type, body))
    }
}

fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// `HTTP 404 Not Found`.
fn status_line(status: u16) -> String {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// `application/json` or `*/*+json`, parameters aside.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// A body that is text as text (UTF-8, invalid sequences replaced), another as a note of its type and size.
fn as_text(content_type: Option<&str>, body: &[u8]) -> String {
    let texty = content_type.is_some_and(|t| {
        let t = t.trim().to_ascii_lowercase();
        t.starts_with("text/") || t.contains("json") || t.contains("xml") || t.contains("charset=")
    });
    match std::str::from_utf8(body) {
        Ok(text) if !text.contains('\0') => text.to_owned(),
        _ if texty => String::from_utf8_lossy(body).into_owned(),
        _ => format!(
            "a binary answer: {}, {} bytes",
            content_type.unwrap_or("no content type"),
            body.len()
        ),
    }
}

/// At most [`MAX_EXCERPT`] bytes of the body's text, cut on a character boundary (`…` said when cut).
fn excerpt(content_type: Option<&str>, body: &[u8]) -> String {
    let text = as_text(content_type, body);
    let text = text.trim();
    if text.len() <= MAX_EXCERPT {
        return text.to_owned();
    }
    let mut end = MAX_EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests;
