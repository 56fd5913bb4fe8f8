//! JSON-RPC 2.0 messages: requests, notifications, responses (results and errors) and batches.
//!
//! Parsing is strict about the envelope (`jsonrpc` must be `"2.0"`, ids are strings or integers, a message is
//! a request, a notification or a response and never two of them) and lenient about everything inside it:
//! `params` and `result` are kept as the raw JSON text they arrived as, so nothing a peer sends is lost or
//! reformatted on the way through. Request ids are kept byte-exact ([`RequestId`]).

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::{Error, ErrorCode};
use crate::id::RequestId;
use crate::method::Method;

/// A request: it has an id and expects a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id, byte-exact.
    pub id: RequestId,
    /// The method name, as received.
    pub method: String,
    /// The params, as received (`null` params are treated as absent).
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, as received.
    pub method: String,
    /// The params, as received.
    pub params: Option<Box<RawValue>>,
}

/// A response: the answer to a request, a result or an error.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request it answers; `None` (sent as `null`) when the request's id could not be read.
    pub id: Option<RequestId>,
    /// The result's raw JSON, or the error.
    pub body: Result<Box<RawValue>, Error>,
}

/// One JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// What a body holds: one message, or a batch (a JSON array) whose entries are judged one by one.
#[derive(Debug)]
pub enum Parsed {
    /// A single message.
    Single(Message),
    /// A non-empty batch; each entry is a message or the error answering it.
    Batch(Vec<Result<Message, MessageError>>),
}

/// A body or batch entry that is not a valid message: the error to answer with, and the id if one was readable.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageError {
    /// The id of the offending request, when it could be read.
    pub id: Option<RequestId>,
    /// `ParseError` or `InvalidRequest`.
    pub error: Error,
}

impl MessageError {
    fn invalid(id: Option<RequestId>, why: impl Into<Cow<'static, str>>) -> MessageError {
        MessageError {
            id,
            error: Error::new(ErrorCode::InvalidRequest, why),
        }
    }

    fn parse(e: impl std::fmt::Display) -> MessageError {
        MessageError {
            id: None,
            error: Error::new(ErrorCode::ParseError, format!("parse error: {e}")),
        }
    }
}

/// Parses a body: one message or a batch. Invalid UTF-8 and malformed JSON are `ParseError`; valid JSON that
/// is not a JSON-RPC message is `InvalidRequest` (with the id when it could be read). Never panics.
pub fn parse(body: &[u8]) -> Result<Parsed, MessageError> {
    let text = std::str::from_utf8(body).map_err(MessageError::parse)?;
    check_depth(text.as_bytes())?;
    match text.trim_start().as_bytes().first() {
        Some(b'[') => {
            let entries: Vec<&RawValue> = serde_json::from_str(text).map_err(classify_top)?;
            if entries.is_empty() {
                return Err(MessageError::invalid(None, "invalid request: empty batch"));
            }
            Ok(Parsed::Batch(
                entries.into_iter().map(|e| parse_object(e.get())).collect(),
            ))
        }
        Some(b'{') => parse_object(text).map(Parsed::Single),
        _ => {
            // Valid JSON that is not an object or array is an invalid request; anything else a parse error.
            serde_json::from_str::<&RawValue>(text).map_err(MessageError::parse)?;
            Err(MessageError::invalid(
                None,
                "invalid request: a JSON-RPC message must be an object",
            ))
        }
    }
}

/// The deepest nesting of arrays and objects accepted, the same limit `serde_json` applies to `Value`.
pub const MAX_DEPTH: usize = 128;

/// Refuses nesting deeper than [`MAX_DEPTH`]: raw values are skipped without a recursion limit, and whoever
/// parses them later (a backend, this gateway's typed payloads) must not be handed a stack-breaking body.
fn check_depth(bytes: &[u8]) -> Result<(), MessageError> {
    // Fewer opening brackets than the limit, strings included, cannot nest deeper than it: one pass the
    // compiler vectorizes decides almost every message, and only the rest are walked.
    let opening = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if opening <= MAX_DEPTH {
        return Ok(());
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(MessageError::parse(format_args!(
                        "nesting deeper than {MAX_DEPTH} levels"
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn classify_top(e: serde_json::Error) -> MessageError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Data => MessageError::invalid(None, format!("invalid request: {e}")),
        _ => MessageError::parse(e),
    }
}

/// Deserializes a field that is present, including an explicit `null` (which `Option` would swallow).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

fn parse_object(text: &str) -> Result<Message, MessageError> {
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) => {
            return Err(match e.classify() {
                serde_json::error::Category::Data => {
                    MessageError::invalid(None, format!("invalid request: {e}"))
                }
                _ => MessageError::parse(e),
            });
        }
    };
    let is_null = |v: Option<&RawValue>| v.is_some_and(|r| r.get() == "null");
    // Read the id first, so that every later complaint can carry it.
    let id = match env.id {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => Some(
            RequestId::from_raw(raw)
                .map_err(|e| MessageError::invalid(None, format!("invalid request: {e}")))?,
        ),
    };
    match env
        .jsonrpc
        .map(|r| serde_json::from_str::<Cow<'_, str>>(r.get()))
    {
        Some(Ok(v)) if v == "2.0" => {}
        _ => {
            return Err(MessageError::invalid(
                id,
                "invalid request: \"jsonrpc\" must be \"2.0\"",
            ));
        }
    }
    if let Some(method) = env.method {
        let method: String = serde_json::from_str(method.get()).map_err(|_| {
            MessageError::invalid(id.clone(), "invalid request: \"method\" must be a string")
        })?;
        if env.result.is_some() || env.error.is_some() {
            return Err(MessageError::invalid(
                id,
                "invalid request: a message cannot be both a request and a response",
            ));
        }
        let params = match env.params {
            None => None,
            Some(p) if p.get() == "null" => None,
            Some(p) if matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => {
                Some(p.to_owned())
            }
            Some(_) => {
                return Err(MessageError::invalid(
                    id,
                    "invalid request: \"params\" must be an object or an array",
                ));
            }
        };
        return Ok(match (env.id, id) {
            (None, _) => Message::Notification(Notification { method, params }),
            (Some(_), Some(id)) => Message::Request(Request { id, method, params }),
            (Some(_), None) => {
                return Err(MessageError::invalid(
                    None,
                    "invalid request: request id must not be null",
                ));
            }
        });
    }
    if env.id.is_none() {
        return Err(MessageError::invalid(
            None,
            "invalid request: a message needs \"method\" or \"id\"",
        ));
    }
    let body = match (env.result, env.error) {
        (Some(result), None) => Ok(result.to_owned()),
        (None, Some(error)) if !is_null(Some(error)) => {
            let wire: WireError = serde_json::from_str(error.get()).map_err(|_| {
                MessageError::invalid(
                    id.clone(),
                    "invalid request: \"error\" needs an integer \"code\" and a string \"message\"",
                )
            })?;
            let mut err = Error::new(ErrorCode::from_code(wire.code), wire.message);
            if let Some(data) = wire.data {
                err = err.with_data(data);
            }
            Err(err)
        }
        _ => {
            return Err(MessageError::invalid(
                id,
                "invalid request: a response needs exactly one of \"result\" and \"error\"",
            ));
        }
    };
    Ok(Message::Response(Response { id, body }))
}

impl Message {
    /// Parses one message; a batch is refused as `InvalidRequest`.
    pub fn parse(body: &[u8]) -> Result<Message, MessageError> {
        match parse(body)? {
            Parsed::Single(m) => Ok(m),
            Parsed::Batch(_) => Err(MessageError::invalid(
                None,
                "invalid request: batches are not accepted here",
            )),
        }
    }

    /// The message as compact JSON bytes, as received (error codes unchanged).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

impl Request {
    /// A request with `params` given as a JSON value.
    pub fn new(id: RequestId, method: impl Into<String>, params: Option<&Value>) -> Request {
        Request {
            id,
            method: method.into(),
            params: params.map(raw_of),
        }
    }

    /// The known method, if the name is one.
    pub fn known_method(&self) -> Option<Method> {
        Method::parse(&self.method)
    }

    /// The params decoded as `T` (absent params decode from `{}`); a mismatch is `InvalidParams`.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode_params(self.params.as_deref())
    }
}

impl Notification {
    /// A notification with `params` given as a JSON value.
    pub fn new(method: impl Into<String>, params: Option<&Value>) -> Notification {
        Notification {
            method: method.into(),
            params: params.map(raw_of),
        }
    }

    /// The known method, if the name is one.
    pub fn known_method(&self) -> Option<Method> {
        Method::parse(&self.method)
    }

    /// The params decoded as `T`; a mismatch is `InvalidParams`.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode_params(self.params.as_deref())
    }
}

impl Response {
    /// A successful response carrying `result` (raw JSON, passed through as it is).
    pub fn result(id: impl Into<Option<RequestId>>, result: Box<RawValue>) -> Response {
        Response {
            id: id.into(),
            body: Ok(result),
        }
    }

    /// A successful response carrying a serializable result.
    pub fn result_of<T: Serialize>(id: impl Into<Option<RequestId>>, result: &T) -> Response {
        let raw = serde_json::value::to_raw_value(result)
            .unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("valid"));
        Response::result(id, raw)
    }

    /// An error response. The id is `null` when `None`.
    pub fn error(id: impl Into<Option<RequestId>>, err: Error) -> Response {
        Response {
            id: id.into(),
            body: Err(err),
        }
    }
}

impl From<&RequestId> for Option<RequestId> {
    fn from(id: &RequestId) -> Self {
        Some(id.clone())
    }
}

fn raw_of(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a Value always serializes")
}

fn decode_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, Error> {
    let text = params.map_or("{}", RawValue::get);
    serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorCode::InvalidParams, format!("invalid params: {e}")))
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(s),
            Message::Notification(n) => n.serialize(s),
            Message::Response(r) => r.serialize(s),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("method", &self.method)?;
        if let Some(p) = &self.params {
            m.serialize_entry("params", p)?;
        }
        m.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        m.serialize_entry("method", &self.method)?;
        if let Some(p) = &self.params {
            m.serialize_entry("params", p)?;
        }
        m.end()
    }
}

/// Serializes as received: error codes are not rewritten for any generation. What goes to a client is
/// shaped by [`crate::shape`] instead.
impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        m.serialize_entry("id", &self.id)?;
        match &self.body {
            Ok(result) => m.serialize_entry("result", result)?,
            Err(err) => m.serialize_entry("error", &crate::shape::error_object(err, None))?,
        }
        m.end()
    }
}

#[cfg(test)]
mod tests;
