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

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::message::Response;
use crate::meta::{GATEWAY_ERROR, SERVER_INFO};
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

/// Why a handler could not answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The backend answered with a JSON-RPC error (its code already named with [`ErrorCode::from_peer`]).
    Backend {
        /// The backend's configured name.
        backend: String,
        /// Its error.
        error: Error,
    },
    /// The backend did not answer within its deadline.
    Timeout {
        /// The backend's configured name.
        backend: String,
        /// The deadline that passed, in milliseconds.
        after_ms: u64,
    },
    /// The backend cannot be reached (down, restarting, circuit open, connection refused).
    Unavailable {
        /// The backend's configured name.
        backend: String,
        /// Why.
        reason: String,
    },
    /// The backend died while the request was in flight.
    Crashed {
        /// The backend's configured name.
        backend: String,
        /// What is known of the exit.
        reason: String,
    },
    /// Too many requests in flight for this backend; answered at once instead of queued.
    Overloaded {
        /// The backend's configured name.
        backend: String,
    },
    /// A failure inside the gateway or an in-process handler.
    Internal {
        /// What failed.
        reason: String,
    },
}

impl Failure {
    /// A short machine-readable name of the failure kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Backend { .. } => "backend_error",
            Failure::Timeout { .. } => "timeout",
            Failure::Unavailable { .. } => "unavailable",
            Failure::Crashed { .. } => "crashed",
            Failure::Overloaded { .. } => "overloaded",
            Failure::Internal { .. } => "internal",
        }
    }

    /// The backend the request was routed to, if any.
    pub fn backend(&self) -> Option<&str> {
        match self {
            Failure::Backend { backend, .. }
            | Failure::Timeout { backend, .. }
            | Failure::Unavailable { backend, .. }
            | Failure::Crashed { backend, .. }
            | Failure::Overloaded { backend } => Some(backend),
            Failure::Internal { .. } => None,
        }
    }

    /// The failure as a JSON-RPC error: a backend's own error as it is, anything else an internal error.
    pub fn to_error(&self) -> Error {
        match self {
            Failure::Backend { error, .. } => error.clone(),
            other => Error::new(ErrorCode::InternalError, other.to_string()).with_data(
                serde_json::json!({
                    "backend": other.backend(),
                    "kind": other.kind(),
                }),
            ),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Backend { backend, error } => {
                write!(f, "backend {backend} failed: {}", error.message())
            }
            Failure::Timeout { backend, after_ms } => {
                write!(f, "backend {backend} did not answer within {after_ms} ms")
            }
            Failure::Unavailable { backend, reason } => {
                write!(f, "backend {backend} is unavailable: {reason}")
            }
            Failure::Crashed { backend, reason } => {
                write!(
                    f,
                    "backend {backend} stopped while handling the request: {reason}"
                )
            }
            Failure::Overloaded { backend } => {
                write!(
                    f,
                    "backend {backend} is at its concurrency limit; try again shortly"
                )
            }
            Failure::Internal { reason } => write!(f, "internal error: {reason}"),
        }
    }
}

/// Who may reuse a cacheable 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client, and shared caches.
    Public,
    /// Only the same authorization context.
    Private,
}

impl CacheScope {
    fn as_json(self) -> &'static str {
        match self {
            CacheScope::Public => "\"public\"",
            CacheScope::Private => "\"private\"",
        }
    }
}

/// What the gateway says about caching a result when the backend said nothing valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope`.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// Not cacheable: `ttlMs: 0`, `cacheScope: "private"` (also for results of `input_required` retries).
    pub const NONE: CachePolicy = CachePolicy {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };
}

/// What the gateway stamps on every 2026-07-28 result.
#[derive(Debug, Clone)]
pub struct Stamp {
    server_info: Box<RawValue>,
    /// The cache fields for cacheable results that carry none (or invalid ones).
    pub cache: CachePolicy,
}

impl Stamp {
    /// A stamp naming the gateway (its `Implementation`, serialized once here).
    pub fn new(server_info: &crate::payload::Implementation, cache: CachePolicy) -> Stamp {
        let server_info =
            serde_json::value::to_raw_value(server_info).expect("Implementation serializes");
        Stamp { server_info, cache }
    }
}

/// A shaped response: HTTP status and the JSON-RPC response bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shaped {
    /// The HTTP status for a plain JSON response.
    pub status: u16,
    /// The JSON-RPC response message.
    pub body: Vec<u8>,
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
            Ok(body) => return Shaped { status: 200, body },
            Err(f) => f,
        },
        Err(f) => f.clone(),
    };
    if kind == HandlerKind::Tool {
        let body = tool_error(id, &failure, generation, stamp);
        return Shaped { status: 200, body };
    }
    let err = failure.to_error();
    let status = if generation.is_modern() && err.code().is_modern_http_400() {
        400
    } else {
        200
    };
    Shaped {
        status,
        body: response_bytes(&Response::error(id, err), generation),
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

fn envelope(
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
fn tool_error(id: &RequestId, failure: &Failure, g: Generation, stamp: &Stamp) -> Vec<u8> {
    let code = match failure {
        Failure::Backend { error, .. } => Some(error.code().wire_code(g)),
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

/// A JSON object read only one level deep: keys in order, values raw.
struct RawObject<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some((k, val)) = map.next_entry::<String, &'de RawValue>()? {
                    v.push((k, val));
                }
                Ok(RawObject(v))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawObject<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// Top-level keys that only 2026-07-28 results carry.
const MODERN_ONLY_KEYS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

fn write_result(
    id: &RequestId,
    result: &RawValue,
    method: Method,
    g: Generation,
    stamp: &Stamp,
) -> Result<Vec<u8>, Failure> {
    let obj: RawObject<'_> = serde_json::from_str(result.get()).map_err(|_| Failure::Internal {
        reason: format!("the {method} result is not a JSON object"),
    })?;
    let result_type = obj
        .get("resultType")
        .and_then(|r| serde_json::from_str::<&str>(r.get()).ok());
    let input_required = result_type == Some("input_required");
    if input_required && !g.is_modern() {
        return Err(Failure::Internal {
            reason: format!(
                "the server asked for client input, which cannot be relayed to a {g} client here"
            ),
        });
    }
    let mut out = Vec::with_capacity(result.get().len() + 160);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.raw().as_bytes());
    out.extend_from_slice(b",\"result\":{");
    let mut first = true;
    let mut field = |out: &mut Vec<u8>, key: &str, value: &[u8]| {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut *out, key).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(value);
    };
    let cacheable = g.has_cache_fields() && method.is_cacheable() && !input_required;
    let legacy_tool = !g.is_modern() && method == Method::ToolsCall;
    let mut saw_meta = false;
    let mut saw_ttl = false;
    let mut saw_scope = false;
    // A legacy client whose generation cannot carry the structured content still gets it, as text, when the
    // result has no other content.
    let structured_as_text = if legacy_tool {
        obj.get("structuredContent")
            .filter(|v| !(g.has_structured_output() && v.get().starts_with('{')))
            .filter(|_| obj.get("content").is_none_or(|c| c.get().trim() == "[]"))
            .map(|v| serde_json::json!([{ "type": "text", "text": v.get() }]).to_string())
    } else {
        None
    };
    for (key, value) in &obj.0 {
        match key.as_str() {
            k if !g.is_modern() && MODERN_ONLY_KEYS.contains(&k) => {}
            "resultType" => {
                if result_type.is_some() {
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "ttlMs" if !cacheable => {}
            "cacheScope" if !cacheable => {}
            "ttlMs" => {
                if serde_json::from_str::<u64>(value.get()).is_ok() {
                    saw_ttl = true;
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "cacheScope" => {
                if matches!(value.get(), "\"public\"" | "\"private\"") {
                    saw_scope = true;
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            "_meta" => {
                saw_meta = true;
                if let Some(meta) = meta_for(value, g, stamp) {
                    field(&mut out, key, &meta);
                }
            }
            "content" if legacy_tool => match &structured_as_text {
                Some(text) => field(&mut out, key, text.as_bytes()),
                None => field(&mut out, key, &content_for(value, g)),
            },
            "structuredContent" if legacy_tool => {
                if g.has_structured_output() && value.get().starts_with('{') {
                    field(&mut out, key, value.get().as_bytes());
                }
            }
            _ => field(&mut out, key, value.get().as_bytes()),
        }
    }
    if method == Method::ToolsCall && obj.get("content").is_none() {
        // `content` is required on every generation: repair a result that left it out, keeping any
        // structured content readable as text, as the spec recommends.
        let text = structured_as_text.or_else(|| {
            obj.get("structuredContent")
                .map(|v| serde_json::json!([{ "type": "text", "text": v.get() }]).to_string())
        });
        field(
            &mut out,
            "content",
            text.as_deref().unwrap_or("[]").as_bytes(),
        );
    }
    if g.has_result_type() {
        if result_type.is_none() {
            field(&mut out, "resultType", b"\"complete\"");
        }
        if !saw_meta {
            let mut meta = Vec::with_capacity(stamp.server_info.get().len() + 48);
            meta.extend_from_slice(b"{\"");
            meta.extend_from_slice(SERVER_INFO.as_bytes());
            meta.extend_from_slice(b"\":");
            meta.extend_from_slice(stamp.server_info.get().as_bytes());
            meta.push(b'}');
            field(&mut out, "_meta", &meta);
        }
    }
    if cacheable {
        if !saw_ttl {
            field(&mut out, "ttlMs", stamp.cache.ttl_ms.to_string().as_bytes());
        }
        if !saw_scope {
            field(
                &mut out,
                "cacheScope",
                stamp.cache.scope.as_json().as_bytes(),
            );
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// The result `_meta` for the client: the gateway's serverInfo on 2026-07-28, none of it before. `None`
/// when nothing is left to send.
fn meta_for(meta: &RawValue, g: Generation, stamp: &Stamp) -> Option<Vec<u8>> {
    let obj: RawObject<'_> = serde_json::from_str(meta.get()).ok()?;
    let mut out = Vec::with_capacity(meta.get().len() + 64);
    out.push(b'{');
    let mut first = true;
    for (k, v) in obj.0.iter().filter(|(k, _)| k != SERVER_INFO) {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, k).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(v.get().as_bytes());
    }
    if g.is_modern() {
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, SERVER_INFO).expect("writing to a Vec cannot fail");
        out.push(b':');
        out.extend_from_slice(stamp.server_info.get().as_bytes());
    }
    out.push(b'}');
    (!first).then_some(out)
}

#[derive(Deserialize)]
struct BlockKind<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a str>,
}

/// Tool-result content for a legacy client: blocks its generation lacks become text blocks saying what they were.
fn content_for(content: &RawValue, g: Generation) -> Vec<u8> {
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(content.get()) else {
        return content.get().as_bytes().to_vec();
    };
    let mut out = Vec::with_capacity(content.get().len());
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let kind = serde_json::from_str::<BlockKind<'_>>(block.get())
            .ok()
            .and_then(|b| b.kind);
        let allowed = match kind {
            Some("text" | "image" | "resource") => true,
            Some("audio") => g.has_audio_content(),
            Some("resource_link") => g.has_structured_output(),
            _ => false,
        };
        if allowed {
            out.extend_from_slice(block.get().as_bytes());
        } else {
            let text = match serde_json::from_str::<Value>(block.get()) {
                Ok(Value::Object(b)) if kind == Some("resource_link") => format!(
                    "[resource link: {}]",
                    b.get("uri").and_then(Value::as_str).unwrap_or("?")
                ),
                _ => format!(
                    "[{} content not supported by {g}]",
                    kind.unwrap_or("unknown")
                ),
            };
            let block = serde_json::json!({ "type": "text", "text": text });
            serde_json::to_writer(&mut out, &block).expect("writing to a Vec cannot fail");
        }
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests;
