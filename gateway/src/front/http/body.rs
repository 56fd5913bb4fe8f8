//! Reading a request body with bounds: past `max_body_bytes` reading stops and the request is answered 413
//! with a JSON-RPC error, before anything else is parsed; a body that stalls (no byte for
//! `body_idle_timeout_ms`) or drags on (not whole after `body_timeout_ms`) is answered 408 and its connection
//! closed — the rest of that body may still come, so the connection cannot carry another request. A body
//! refused for its size is first read to its end and dropped when that is at most 16 MiB, within 2 s, so that
//! the client reads the 413 rather than a reset connection.

use std::time::Duration;

use actix_web::http::ConnectionType;
use actix_web::{HttpResponse, web};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use protocol::validate::Rejection;
use tokio::time::{Instant, timeout_at};

use super::rejection_response;
use crate::config::ServerConfig;

/// The bounds of one request body.
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyLimits {
    /// The largest body, in bytes.
    pub max: usize,
    /// The longest wait for the next byte.
    pub idle: Duration,
    /// The longest wait for the whole body.
    pub total: Duration,
}

impl BodyLimits {
    /// The bounds a (validated) server config sets.
    pub fn from_config(server: &ServerConfig) -> BodyLimits {
        BodyLimits {
            max: server.max_body_bytes,
            idle: Duration::from_millis(server.body_idle_timeout_ms),
            total: Duration::from_millis(server.body_timeout_ms),
        }
    }
}

/// How long the rest of a refused request's body is read and dropped, at most (a lingering close, as nginx
/// does): the client, still sending it, then reads the answer instead of meeting a closed connection.
const LINGER: Duration = Duration::from_secs(2);
/// How much of it, at most.
pub(super) const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Reads and drops the rest of a body, bounded by [`LINGER`] and [`LINGER_BYTES`]; nothing when the client
/// waits for `100 Continue` (it has sent nothing yet, and is answered at once).
pub(super) async fn drain<E>(
    headers: &actix_web::http::header::HeaderMap,
    mut payload: impl futures_util::Stream<Item = Result<Bytes, E>> + Unpin,
) {
    let waits = headers
        .get("expect")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if waits {
        return;
    }
    let drained = async {
        let mut read = 0;
        while let Some(Ok(chunk)) = payload.next().await {
            read += chunk.len();
            if read > LINGER_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drained).await;
}

/// Reads the whole body within `limits`; what goes back instead when it cannot.
pub(super) async fn read_body(
    headers: &actix_web::http::header::HeaderMap,
    mut payload: web::Payload,
    limits: BodyLimits,
) -> Result<Bytes, HttpResponse> {
    let max = limits.max;
    let declared = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = declared.filter(|n| *n > max) {
        // A body we may read to its end is, so that the client reads the 413.
        if n <= LINGER_BYTES {
            drain(headers, payload).await;
        }
        return Err(rejection_response(&Rejection::body_too_large(max)));
    }
    let whole_by = Instant::now() + limits.total;
    let mut body = BytesMut::with_capacity(declared.unwrap_or(1024).min(max));
    loop {
        let next_by = whole_by.min(Instant::now() + limits.idle);
        let chunk = match timeout_at(next_by, payload.next()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(_) => return Err(timed_out(&limits, next_by == whole_by)),
        };
        let chunk = chunk.map_err(|e| rejection_response(&Rejection::bad_body(&e.to_string())))?;
        if body.len() + chunk.len() > max {
            drain(headers, payload).await;
            return Err(rejection_response(&Rejection::body_too_large(max)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// 408, and the connection closed: the client may still be sending the body, which no request can follow.
fn timed_out(limits: &BodyLimits, whole: bool) -> HttpResponse {
    let why = if whole {
        format!(
            "request timeout: the body was not whole within {} ms (body_timeout_ms)",
            limits.total.as_millis()
        )
    } else {
        format!(
            "request timeout: no byte of the body for {} ms (body_idle_timeout_ms)",
            limits.idle.as_millis()
        )
    };
    let mut resp = rejection_response(&Rejection::body_timeout(why));
    resp.head_mut().set_connection_type(ConnectionType::Close);
    resp
}
