//! Response shaping: the one place where outcomes become wire JSON for the client's generation.
//!
//! - [`error_object`] is the only function that turns an [`Error`] into a JSON-RPC error object (it applies
//!   [`ErrorCode::wire_code`]); rejections, handler failures and pass-through responses all go through it.
//! - [`shape`] takes a handler's outcome, the method it answered (hence its [`HandlerKind`]) and the client's
//!   generation: tool failures become `isError: true` results, resource, prompt and other failures become
//!   JSON-RPC errors; 2026-07-28 results get `resultType`, `_meta["io.modelcontextprotocol/serverInfo"]` and,
//!   when cacheable, `ttlMs` and `cacheScope`; older generations never see those fields, nor content kinds
//!   their generation lacks.
//!
//! Results are handled as raw JSON: only the top-level keys are looked at and values pass through untouched,
//! so nothing a backend sent is reformatted or loses precision.

mod failure;
mod refusal;
mod result;
mod stamp;

pub use failure::Failure;
pub use refusal::{Refusal, refusal};
pub use stamp::{CachePolicy, CacheScope, Stamp};

use result::write_result;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::message::Response;
use crate::meta::GATEWAY_ERROR;
use crate::method::{HandlerKind, Method};
use crate::validate::Rejection;

/// A JSON-RPC error object as it goes on the wire.
#[derive(Debug, Serialize)]
pub struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

/// The one error-shaping function: the error object for a client of `generation`, or as received (`None`).
pub fn error_object(err: &Error, generation: Option<Generation>) -> ErrorObject<'_> {
    let code = match generation {
        Some(g) => err.code().wire_code(g),
        None => err.code().code(),
    };
    ErrorObject {
        code,
        message: err.message(),
        data: err.data(),
    }
}

/// A shaped response: HTTP status, the headers that go with it, and the JSON-RPC response bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped {
    /// The HTTP status for a plain JSON response.
    pub status: u16,
    /// Headers the answer needs besides the content type (`Allow`, `Retry-After`, `WWW-Authenticate`);
    /// empty for almost every answer (no allocation then).
    pub headers: Vec<(&'static str, String)>,
    /// The JSON-RPC response message.
    pub body: Vec<u8>,
}

impl Shaped {
    /// A status and a body, no extra header.
    pub fn new(status: u16, body: Vec<u8>) -> Shaped {
        Shaped {
            status,
            headers: Vec::new(),
            body,
        }
    }
}

/// Shapes a handler's outcome for the client: the single path from outcome to wire.
pub fn shape(
    id: &RequestId,
    method: Method,
    generation: Generation,
    outcome: Result<&RawValue, &Failure>,
    stamp: &Stamp,
) -> Shaped {
    let kind = method.handler_kind();
    let failure = match outcome {
        Ok(result) => match write_result(id, result, method, generation, stamp) {
            Ok(body) => return Shaped::new(200, body),
            Err(f) => f,
        },
        Err(f) => f.clone(),
    };
    let precondition = matches!(&failure, Failure::Backend { error, .. } if error.code().is_request_precondition());
    if kind == HandlerKind::Tool && !precondition {
        let body = tool_error(id, &failure, generation, stamp);
        return Shaped::new(200, body);
    }
    gateway_error(id, failure.to_error(), generation)
}

/// A gateway error raised while dispatching (an invalid cursor, an unsupported method): a JSON-RPC error,
/// 400 on 2026-07-28 for the codes that are the request's fault, 200 otherwise.
pub fn gateway_error(id: &RequestId, err: Error, generation: Generation) -> Shaped {
    let status = if generation.is_modern() && err.code().is_modern_http_400() {
        400
    } else {
        200
    };
    Shaped::new(
        status,
        response_bytes(&Response::error(id, err), generation),
    )
}

/// An error that is the request's own fault, found after validation (a `subscriptions/listen` filter the
/// gateway cannot honour): 400 on 2026-07-28, 200 with the error before.
pub fn request_error(id: &RequestId, err: Error, generation: Generation) -> Shaped {
    let status = if generation.is_modern() { 400 } else { 200 };
    Shaped::new(
        status,
        response_bytes(&Response::error(id, err), generation),
    )
}

/// 406: the method answers with a stream and the client does not accept `text/event-stream`.
pub fn stream_required(id: &RequestId, method: Method, generation: Generation) -> Shaped {
    let err = Error::new(
        ErrorCode::InvalidRequest,
        format!("not acceptable: {method} answers with a stream (Accept: text/event-stream)"),
    );
    Shaped::new(406, response_bytes(&Response::error(id, err), generation))
}

/// A batch's responses, in request order, as one JSON array (200).
pub fn batch(bodies: &[Vec<u8>]) -> Shaped {
    let mut out = Vec::with_capacity(bodies.iter().map(|b| b.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (i, b) in bodies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b);
    }
    out.push(b']');
    Shaped::new(200, out)
}

/// A rejection's whole answer: its status, `Allow` (405) and `Retry-After` (503) headers, and its body.
pub fn rejection(r: &Rejection) -> Shaped {
    let mut headers = Vec::new();
    if let Some(allow) = r.allow {
        headers.push(("allow", allow.to_owned()));
    }
    if let Some(secs) = r.retry_after_secs {
        headers.push(("retry-after", secs.to_string()));
    }
    Shaped {
        status: r.status,
        headers,
        body: rejection_body(r),
    }
}

/// A response message for a client of `generation`; results pass through as they are (use [`shape`] for
/// handler outcomes that need stamping).
pub fn response_bytes(response: &Response, generation: Generation) -> Vec<u8> {
    envelope(response.id.as_ref(), &response.body, Some(generation))
}

/// The body of a rejection.
pub(crate) fn rejection_body(r: &Rejection) -> Vec<u8> {
    let body: Result<Box<RawValue>, Error> = Err(r.error.clone());
    envelope(r.id.as_ref(), &body, r.generation)
}

pub(crate) fn envelope(
    id: Option<&RequestId>,
    body: &Result<Box<RawValue>, Error>,
    g: Option<Generation>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    match id {
        Some(id) => {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(id.raw().as_bytes());
        }
        // JSON-RPC 2.0 answers an unreadable id with null; 2025-11-25 and later leave the id out instead.
        None if g.is_some_and(Generation::omits_unknown_error_id) => {}
        None => out.extend_from_slice(b",\"id\":null"),
    }
    match body {
        Ok(result) => {
            out.extend_from_slice(b",\"result\":");
            out.extend_from_slice(result.get().as_bytes());
        }
        Err(err) => {
            out.extend_from_slice(b",\"error\":");
            serde_json::to_writer(&mut out, &error_object(err, g))
                .expect("writing to a Vec cannot fail");
        }
    }
    out.push(b'}');
    out
}

/// A tool failure as an `isError: true` result, with the code and backend kept in `_meta`.
pub(crate) fn tool_error(
    id: &RequestId,
    failure: &Failure,
    g: Generation,
    stamp: &Stamp,
) -> Vec<u8> {
    let code = match failure {
        Failure::Backend { error, .. } => Some(error_object(error, Some(g)).code),
        _ => None,
    };
    let result = serde_json::json!({
        "content": [{ "type": "text", "text": failure.to_string() }],
        "isError": true,
        "_meta": { GATEWAY_ERROR: { "code": code, "backend": failure.backend(), "kind": failure.kind() } },
    });
    let raw = serde_json::value::to_raw_value(&result).expect("a Value serializes");
    write_result(id, &raw, Method::ToolsCall, g, stamp).unwrap_or_else(|_| {
        // Cannot happen: the result above is an object with text content only.
        envelope(
            Some(id),
            &Err(Error::new(ErrorCode::InternalError, "internal error")),
            Some(g),
        )
    })
}

#[cfg(test)]
mod tests;
