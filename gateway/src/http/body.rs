//! Reading a request body with a limit: past `max` bytes reading stops and the request is answered 413 with a
//! JSON-RPC error, before anything else is parsed.

use actix_web::web;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use protocol::validate::Rejection;
use protocol::{Error, ErrorCode};

/// Reads the whole body, refusing more than `max` bytes.
pub(super) async fn read_body(
    headers: &actix_web::http::header::HeaderMap,
    mut payload: web::Payload,
    max: usize,
) -> Result<Bytes, Rejection> {
    let declared = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(too_large(max));
    }
    let mut body = BytesMut::with_capacity(declared.unwrap_or(1024).min(max));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| Rejection {
            status: 400,
            id: None,
            error: Error::new(
                ErrorCode::InvalidRequest,
                format!("bad request: the body could not be read: {e}"),
            ),
            generation: None,
            allow: None,
        })?;
        if body.len() + chunk.len() > max {
            return Err(too_large(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn too_large(max: usize) -> Rejection {
    Rejection {
        status: 413,
        id: None,
        error: Error::new(
            ErrorCode::InvalidRequest,
            format!("request body exceeds the limit of {max} bytes"),
        ),
        generation: None,
        allow: None,
    }
}
