//! [`Refusal`]: an answer given instead of a handler's — by a middleware (authentication, policy, rate
//! limits, a method allow-list) — and how [`refusal`] shapes it for the client's generation.
//!
//! A refusal either carries its own HTTP status and headers (401 with `WWW-Authenticate`, 403, 429 or 503
//! with `Retry-After`), answered as a JSON-RPC error, or is a tool error (`isError: true`) that a model can
//! read and act on, as the founding error model wants for anything a `tools/call` meets. A tool error asked
//! for another method is answered as a JSON-RPC error with the same text: only tools have tool errors.

use serde_json::{Map, Value, json};

use super::{Shaped, Stamp, envelope, gateway_error};
use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::meta::GATEWAY_ERROR;
use crate::method::{HandlerKind, Method};

/// An answer given instead of a handler's.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A JSON-RPC error with its own HTTP status and headers.
    Status {
        /// The HTTP status (401, 403, 429, 503, …).
        status: u16,
        /// The error.
        error: Error,
        /// Headers to send with it (lower-case names).
        headers: Vec<(&'static str, String)>,
    },
    /// A tool error for a `tools/call` (a JSON-RPC error for anything else).
    ToolError {
        /// What the model reads.
        message: String,
        /// Extra `_meta` of the result (for example `retryAfterMs`), an object.
        meta: Option<Value>,
    },
}

impl Refusal {
    /// What an unknown method gets (the founding table: -32601, 404 on 2026-07-28, 200 before): also what a
    /// method a middleware refuses gets, so that a hidden method and a missing one look the same.
    pub fn unknown_method(method: &str, generation: Generation) -> Refusal {
        Refusal::Status {
            status: if generation.is_modern() { 404 } else { 200 },
            error: Error::new(
                ErrorCode::MethodNotFound,
                format!("method not found: {method}"),
            ),
            headers: Vec::new(),
        }
    }

    /// Whether it is a tool error.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, Refusal::ToolError { .. })
    }
}

/// Shapes a refusal of a request (`id`, `method`) for a client of `generation`.
pub fn refusal(
    id: &RequestId,
    method: Method,
    generation: Generation,
    refused: &Refusal,
    stamp: &Stamp,
) -> Shaped {
    match refused {
        Refusal::Status {
            status,
            error,
            headers,
        } => Shaped {
            status: *status,
            headers: headers.clone(),
            body: envelope(Some(id), &Err(error.clone()), Some(generation)),
        },
        Refusal::ToolError { message, meta } if method.handler_kind() == HandlerKind::Tool => {
            let mut extra = match meta {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            extra.insert(GATEWAY_ERROR.to_owned(), json!({ "kind": "refused" }));
            let result = json!({
                "content": [{ "type": "text", "text": message }],
                "isError": true,
                "_meta": Value::Object(extra),
            });
            let raw = serde_json::value::to_raw_value(&result).expect("a Value serializes");
            match super::result::write_result(id, &raw, Method::ToolsCall, generation, stamp) {
                Ok(body) => Shaped::new(200, body),
                Err(f) => gateway_error(id, f.to_error(), generation),
            }
        }
        Refusal::ToolError { message, meta } => {
            let mut error = Error::new(ErrorCode::InternalError, message.clone());
            if let Some(meta) = meta {
                error = error.with_data(meta.clone());
            }
            gateway_error(id, error, generation)
        }
    }
}
