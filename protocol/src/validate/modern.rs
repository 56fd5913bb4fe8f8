//! Validation of a 2026-07-28 request: headers against the body, the version, the required `_meta` keys
//! and the method. Every error here carries the status the 2026-07-28 HTTP transport prescribes.

use super::{Call, Ctx, Facts, One, Rejection, ValidKind, routing};
use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::headers::decode_value;
use crate::message::Message;
use crate::meta::{CLIENT_CAPABILITIES, PROTOCOL_VERSION};
use crate::method::Method;

const MODERN: Generation = Generation::V2026_07_28;

pub(super) fn message(
    ctx: &Ctx<'_>,
    m: Message,
    facts: Facts,
) -> Result<(Generation, ValidKind), Rejection> {
    let request = match m {
        Message::Request(r) => r,
        // No client-to-server notification exists on 2026-07-28 HTTP: accepted and answered 202.
        Message::Notification(n) => return Ok((MODERN, ValidKind::Notification(n))),
        Message::Response(r) => {
            return Err(Rejection::new(
                400,
                r.id,
                Error::new(
                    ErrorCode::InvalidRequest,
                    "invalid request: 2026-07-28 clients do not send responses",
                ),
            )
            .for_generation(MODERN));
        }
    };
    let id = Some(request.id.clone());
    let reject =
        |status: u16, err: Error| Rejection::new(status, id.clone(), err).for_generation(MODERN);

    let meta = facts.meta.map_err(|e| reject(400, e))?;

    // MCP-Protocol-Version against _meta: a mismatch outranks an unsupported version.
    let header = match ctx.headers.protocol_version {
        One::Absent => None,
        One::Present(v) => Some(v),
        One::Repeated => {
            return Err(reject(
                400,
                Error::header_mismatch("header mismatch: MCP-Protocol-Version is given twice"),
            ));
        }
    };
    let Some(version) = meta.protocol_version.as_deref() else {
        return Err(reject(
            400,
            Error::new(
                ErrorCode::InvalidParams,
                format!("invalid params: _meta is missing required key {PROTOCOL_VERSION}"),
            ),
        ));
    };
    match header {
        None if ctx.stdio => {}
        None => {
            return Err(reject(
                400,
                Error::header_mismatch("header mismatch: missing MCP-Protocol-Version header"),
            ));
        }
        Some(h) if h != version.as_bytes() => {
            return Err(reject(
                400,
                Error::header_mismatch(format!(
                    "header mismatch: MCP-Protocol-Version header {:?} does not match _meta {version:?}",
                    String::from_utf8_lossy(h)
                )),
            ));
        }
        Some(_) => {}
    }
    let served = ctx.config.served;
    let generation = match Generation::parse(version) {
        Ok(g) if g.is_modern() && served.contains(g) => g,
        _ => {
            return Err(reject(
                400,
                Error::unsupported_version(&served.version_strings(), version),
            ));
        }
    };
    let declared = match &meta.client_capabilities {
        Some(c) => c.clone(),
        None => {
            return Err(reject(
                400,
                Error::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params: _meta is missing required key {CLIENT_CAPABILITIES}"),
                ),
            ));
        }
    };

    // Mcp-Method mirrors the method, byte for byte (values are case-sensitive).
    match ctx.headers.method {
        One::Absent if ctx.stdio => {}
        One::Present(h) if h == request.method.as_bytes() => {}
        One::Present(h) => {
            return Err(reject(
                400,
                Error::header_mismatch(format!(
                    "header mismatch: Mcp-Method header {:?} does not match method {:?}",
                    String::from_utf8_lossy(h),
                    request.method
                )),
            ));
        }
        One::Absent => {
            return Err(reject(
                400,
                Error::header_mismatch("header mismatch: missing Mcp-Method header"),
            ));
        }
        One::Repeated => {
            return Err(reject(
                400,
                Error::header_mismatch("header mismatch: Mcp-Method is given twice"),
            ));
        }
    }
    let method = match Method::parse(&request.method) {
        Some(m) if m.is_client_request() && m.exists_in(generation) => m,
        _ => {
            return Err(reject(
                404,
                Error::new(
                    ErrorCode::MethodNotFound,
                    format!("method not found: {}", request.method),
                ),
            ));
        }
    };

    // Mcp-Name mirrors params.name or params.uri.
    if let Some(field) = method.name_field() {
        let body = if field == "uri" {
            facts.uri.as_deref()
        } else {
            facts.name.as_deref()
        };
        let Some(body) = body else {
            return Err(reject(
                400,
                Error::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params: {method} needs a string \"{field}\""),
                ),
            ));
        };
        match ctx.headers.name {
            One::Absent if ctx.stdio => {}
            One::Present(raw) => match decode_value(raw) {
                Ok(h) if h == body => {}
                Ok(h) => {
                    return Err(reject(
                        400,
                        Error::header_mismatch(format!(
                            "header mismatch: Mcp-Name header value {h:?} does not match body value {body:?}"
                        )),
                    ));
                }
                Err(e) => {
                    return Err(reject(
                        400,
                        Error::header_mismatch(format!("header mismatch: Mcp-Name: {e}")),
                    ));
                }
            },
            One::Absent => {
                return Err(reject(
                    400,
                    Error::header_mismatch("header mismatch: missing Mcp-Name header"),
                ));
            }
            One::Repeated => {
                return Err(reject(
                    400,
                    Error::header_mismatch("header mismatch: Mcp-Name is given twice"),
                ));
            }
        }
    }

    let target = routing::target(
        ctx, generation, &request, method, facts.name, facts.uri, &declared,
    )?;
    Ok((
        generation,
        ValidKind::Call(Call {
            request,
            method,
            meta,
            target,
        }),
    ))
}
