//! Validation of legacy requests (2024-11-05 … 2025-11-25): `initialize` and its version negotiation, and
//! requests inside a session, judged against the session's negotiated generation.

use super::{Call, Ctx, Facts, One, Rejection, Session, ValidKind, routing};
use crate::error::{Error, ErrorCode};
use crate::generation::{Era, Generation};
use crate::message::{Message, Request};
use crate::method::Method;
use crate::payload::InitializeRequestParams;

/// `initialize`: echo a served legacy version, otherwise counter-offer the newest served legacy version.
pub(super) fn initialize(
    ctx: &Ctx<'_>,
    request: Request,
) -> Result<(Generation, ValidKind), Rejection> {
    let params: InitializeRequestParams = request
        .params_as()
        .map_err(|e| Rejection::new(200, Some(request.id.clone()), e))?;
    let served = ctx.config.served;
    let negotiated = match Generation::parse(&params.protocol_version) {
        Ok(g) if !g.is_modern() && served.contains(g) => g,
        _ => match served.latest_of(Era::Legacy) {
            Some(g) => g,
            None => {
                // A modern-only deployment names what it supports, in the legacy lifecycle's error shape.
                let supported = served.version_strings();
                return Err(Rejection::new(
                    400,
                    Some(request.id),
                    Error::new(ErrorCode::InvalidParams, "unsupported protocol version: this gateway serves no initialize-based version")
                        .with_data(serde_json::json!({ "supported": supported, "requested": params.protocol_version })),
                ));
            }
        },
    };
    Ok((
        negotiated,
        ValidKind::Initialize {
            id: request.id,
            params: Box::new(params),
        },
    ))
}

/// A message inside a legacy session.
pub(super) fn message(
    ctx: &Ctx<'_>,
    s: &Session<'_>,
    m: Message,
    facts: Facts,
) -> Result<ValidKind, Rejection> {
    let g = s.generation;
    let request = match m {
        Message::Request(r) => r,
        Message::Notification(n) => return Ok(ValidKind::Notification(n)),
        Message::Response(r) => return Ok(ValidKind::ClientResponse(r)),
    };
    let id = Some(request.id.clone());
    let reject =
        |status: u16, err: Error| Rejection::new(status, id.clone(), err).for_generation(g);

    if let One::Present(h) = ctx.headers.protocol_version {
        if h != g.as_str().as_bytes() {
            let named = std::str::from_utf8(h)
                .ok()
                .and_then(|v| Generation::parse(v).ok());
            let text = String::from_utf8_lossy(h);
            let err = match named {
                Some(named) if ctx.config.served.contains(named) => Error::new(
                    ErrorCode::InvalidRequest,
                    format!(
                        "bad request: MCP-Protocol-Version {text:?} differs from the session's negotiated {g}"
                    ),
                ),
                _ => Error::unsupported_version(&ctx.config.served.version_strings(), &text),
            };
            return Err(reject(400, err));
        }
    }
    let method = match Method::parse(&request.method) {
        Some(m) if m.is_client_request() && m.exists_in(g) && m != Method::Initialize => m,
        _ => {
            return Err(reject(
                200,
                Error::new(
                    ErrorCode::MethodNotFound,
                    format!("method not found: {}", request.method),
                ),
            ));
        }
    };
    let meta = facts.meta.map_err(|e| reject(200, e))?;
    let target = routing::target(
        ctx,
        g,
        &request,
        method,
        facts.name,
        facts.uri,
        s.client_capabilities,
    )?;
    Ok(ValidKind::Call(Call {
        request,
        method,
        meta,
        target,
    }))
}
