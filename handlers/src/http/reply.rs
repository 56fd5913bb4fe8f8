//! Reading a backend's answer: a bounded body, the JSON-RPC response to one request in a JSON body or an
//! event stream (every other message on the way handed to `inbound`), and why it could not be read. What a
//! body held never goes into an error (a client or `/readyz` would see it): it is logged at debug.

use protocol::message::Parsed;
use reqwest::header::CONTENT_TYPE;
use serde_json::value::RawValue;
use tracing::{debug, warn};

use super::MAX_ERROR_BODY;
use super::event_stream::{EventStream, StreamError};
use super::response::BackendResponse;
use crate::inbound::Inbound;
use crate::link::context::LinkContext;
use crate::pending::Reply;
use protocol::shape::Failure;

/// What a backend's answer may hold ([`crate::BackendConfig::max_message_bytes`], `max_stream_bytes`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SizeLimits {
    /// One message (a JSON body, one event's data).
    pub(crate) message: usize,
    /// A request's response stream in all.
    pub(crate) stream: Option<usize>,
}

impl SizeLimits {
    /// The limits of `ctx`'s backend.
    pub(crate) fn of(ctx: &LinkContext) -> SizeLimits {
        SizeLimits {
            message: ctx.config.max_message_bytes,
            stream: ctx.config.max_stream_bytes,
        }
    }
}

/// Reads a body up to `max` bytes.
async fn read_body(response: BackendResponse, max: usize) -> Result<Vec<u8>, ReadError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadError::TooLarge(max));
    }
    let mut body = Vec::new();
    let mut response = response;
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Io)? {
        if body.len() + chunk.len() > max {
            return Err(ReadError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error body, for the JSON-RPC error it may carry (empty when unreadable).
pub(crate) async fn error_body(response: impl Into<BackendResponse>) -> Vec<u8> {
    read_body(response.into(), MAX_ERROR_BODY)
        .await
        .unwrap_or_default()
}

/// Why the response to a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("the backend's response stream ended before the response")]
    Ended(Option<Resume>),
    #[error("reading the backend's response failed: {0}")]
    Io(String),
    #[error("the backend's response exceeds {0} bytes")]
    TooLarge(usize),
    #[error("the backend's response stream exceeds {0} bytes in all")]
    StreamTooLarge(usize),
    /// What the body held is logged at debug only: it never reaches a client or `/readyz`.
    #[error("the backend's response is not the json-rpc response expected")]
    Unrecognised,
    #[error("the backend answered with content type {0:?}")]
    ContentType(String),
}

impl ReadError {
    pub(super) fn into_failure(self, ctx: &LinkContext) -> Failure {
        match self {
            ReadError::Ended(_) => Failure::Crashed {
                backend: ctx.name().to_owned(),
                reason: self.to_string(),
            },
            ReadError::TooLarge(limit) => Failure::TooLarge {
                backend: ctx.name().to_owned(),
                limit,
                per: "message",
            },
            ReadError::StreamTooLarge(limit) => Failure::TooLarge {
                backend: ctx.name().to_owned(),
                limit,
                per: "stream",
            },
            other => ctx.unavailable(other.to_string()),
        }
    }
}

impl From<StreamError> for ReadError {
    fn from(e: StreamError) -> ReadError {
        match e {
            StreamError::TooLarge(n) => ReadError::TooLarge(n),
            StreamError::Io(e) => ReadError::Io(e),
        }
    }
}

/// Where an event stream that ended early can be resumed (2025-11-25 Streamable HTTP, SEP-1699): GET the
/// endpoint with `Last-Event-ID` after `retry_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resume {
    pub(crate) last_event_id: String,
    pub(crate) retry_ms: Option<u64>,
}

/// Reads the JSON-RPC response to request `id` from a 200 answer: a JSON body (one object, a batch, or
/// several messages one after the other, as some SDK servers send notifications before the response), or an
/// event stream read until the response with that id (other messages on it go to `inbound`).
pub(crate) async fn read_reply(
    response: impl Into<BackendResponse>,
    id: i64,
    inbound: &Inbound,
    limits: SizeLimits,
) -> Result<Reply, ReadError> {
    let response = response.into();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("text/event-stream") {
        // Boxed: a stream's reader holds its parser's state, which a plain JSON answer has no use for.
        let stream = EventStream::new(response, limits.message);
        return Box::pin(read_stream_reply(stream, id, inbound, limits.stream)).await;
    }
    if !content_type.starts_with("application/json") && !content_type.is_empty() {
        return Err(ReadError::ContentType(content_type));
    }
    let body = read_body(response, limits.message).await?;
    json_reply(&body, id, inbound).ok_or_else(|| {
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]);
        debug!(id, body = %shown, "the backend's answer holds no response to the request");
        ReadError::Unrecognised
    })
}

/// The reply to `id` in a JSON body; every other message in it goes to `inbound`, in order. One message is
/// parsed once; a body that is not one message is read as a sequence of JSON values (any whitespace,
/// newlines included, between them), each dispatched as it comes.
fn json_reply(body: &[u8], id: i64, inbound: &Inbound) -> Option<Reply> {
    use protocol::message::parse;
    let body = body.trim_ascii();
    if let Ok(parsed) = parse(body) {
        return reply_in(parsed, body, id, inbound);
    }
    let mut reply = None;
    for value in serde_json::Deserializer::from_slice(body).into_iter::<&RawValue>() {
        let Ok(value) = value else {
            // Not JSON from here on: shown once, and nothing after it is read.
            inbound.text(body);
            break;
        };
        let bytes = value.get().as_bytes();
        match (parse(bytes), &reply) {
            (Ok(parsed), None) => reply = reply_in(parsed, bytes, id, inbound),
            (Ok(parsed), Some(_)) => {
                let _ = reply_in(parsed, bytes, id, inbound);
            }
            (Err(_), _) => inbound.text(bytes),
        }
    }
    reply
}

/// Reads an event stream until the response to `id`; other messages go to `inbound`. A stream that ends
/// first says where it could be resumed, if its events had ids.
pub(crate) async fn read_stream_reply(
    mut events: EventStream,
    id: i64,
    inbound: &Inbound,
    total: Option<usize>,
) -> Result<Reply, ReadError> {
    let mut read = 0usize;
    while let Some(event) = events.next().await {
        let event = event?;
        read = read.saturating_add(event.data.len());
        if let Some(total) = total.filter(|t| read > *t) {
            return Err(ReadError::StreamTooLarge(total));
        }
        if !event.is_message() {
            continue;
        }
        if let Some(reply) = reply_for(event.data.as_bytes(), id, inbound) {
            return Ok(reply);
        }
    }
    let resume = events
        .resume_point()
        .map(|(last_event_id, retry_ms)| Resume {
            last_event_id,
            retry_ms,
        });
    Err(ReadError::Ended(resume))
}

/// The reply to `id` if `bytes` is that response; anything else is dispatched to `inbound`.
fn reply_for(bytes: &[u8], id: i64, inbound: &Inbound) -> Option<Reply> {
    match protocol::message::parse(bytes.trim_ascii()) {
        Ok(parsed) => reply_in(parsed, bytes, id, inbound),
        Err(_) => {
            inbound.text(bytes);
            None
        }
    }
}

/// The reply to `id` in a parsed message or batch (`bytes` its text); every other message goes to
/// `inbound`.
fn reply_in(parsed: Parsed, bytes: &[u8], id: i64, inbound: &Inbound) -> Option<Reply> {
    match parsed {
        Parsed::Single(protocol::Message::Response(r)) if is_reply_id(&r, id) => Some(r.body),
        Parsed::Single(other) => {
            inbound.message(other);
            None
        }
        Parsed::Batch(entries) => {
            let mut reply = None;
            for entry in entries {
                match entry {
                    Ok(protocol::Message::Response(r))
                        if reply.is_none() && is_reply_id(&r, id) =>
                    {
                        reply = Some(r.body);
                    }
                    Ok(m) => inbound.message(m),
                    Err(e) => {
                        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
                        warn!(why = %e.error, "skipping a batch entry that is not JSON-RPC");
                        debug!(batch = %shown, "the batch with an entry that is not JSON-RPC");
                    }
                }
            }
            reply
        }
    }
}

fn is_reply_id(r: &protocol::Response, id: i64) -> bool {
    r.id.as_ref().and_then(protocol::RequestId::as_i64) == Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callers::Callers;
    use crate::events::Notifier;

    fn response(content_type: &str, body: String) -> BackendResponse {
        let r = http::Response::builder()
            .status(200)
            .header("content-type", content_type)
            .body(body)
            .expect("a response");
        BackendResponse::from(reqwest::Response::from(r))
    }

    fn reply(n: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{}"}}}}"#,
            "x".repeat(n)
        )
    }

    /// `count` progress notifications of about `size` bytes each, then the response, as SSE.
    fn stream(count: usize, size: usize) -> String {
        let mut body = String::new();
        for i in 0..count {
            body.push_str(&format!(
                "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{i},\"message\":\"{}\"}}}}\n\n",
                "p".repeat(size)
            ));
        }
        body.push_str(&format!("data: {}\n\n", reply(10)));
        body
    }

    #[actix_rt::test]
    async fn an_answer_beyond_the_backends_bounds_is_too_large_per_message_and_per_stream() {
        let (tx, _rx) = tokio::sync::mpsc::channel(64);
        let inbound = Inbound::new(Notifier::start("b", Callers::new(&[]), tx), None, None);
        let limits = SizeLimits {
            message: 1024,
            stream: Some(4096),
        };
        let cases: [(&str, String, Result<(), ReadError>); 6] = [
            ("application/json", reply(100), Ok(())),
            (
                "application/json",
                reply(2000),
                Err(ReadError::TooLarge(1024)),
            ),
            ("text/event-stream", stream(3, 800), Ok(())),
            (
                "text/event-stream",
                stream(1, 2000),
                Err(ReadError::TooLarge(1024)),
            ),
            (
                "text/event-stream",
                stream(6, 800),
                Err(ReadError::StreamTooLarge(4096)),
            ),
            // No total: only the deadline bounds a stream.
            ("text/event-stream", stream(60, 800), Ok(())),
        ];
        for (i, (content_type, body, expected)) in cases.into_iter().enumerate() {
            let limits = if i == 5 {
                SizeLimits {
                    stream: None,
                    ..limits
                }
            } else {
                limits
            };
            let got = read_reply(response(content_type, body), 1, &inbound, limits)
                .await
                .map(|r| assert!(r.is_ok(), "case {i}: {r:?}"));
            assert_eq!(got, expected, "case {i}");
        }
    }
}
