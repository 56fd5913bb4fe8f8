//! The authenticate phase on HTTP: every request to `/mcp`, `/sse` and `/messages` is authenticated from
//! its headers before its body is read, before validation, routing, any session lookup or any look at the
//! catalog. No acceptable credential: 401 with a `WWW-Authenticate: Bearer …` challenge (RFC 6750; with
//! `resource_metadata` when the OAuth resource server is on), the same whatever the request names. The
//! principal goes on in the request's extensions ([`Authenticated`]). CORS preflights pass (they carry no
//! credential by definition); `/healthz`, `/readyz` and the metadata document are not behind it. A refused
//! request's body is read and dropped first (bounded: 2 s, 16 MiB), so that a client still sending it reads
//! the 401 rather than a reset connection.

use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use serde_json::json;

use super::Worker;
use crate::auth::Principal;
use crate::auth::metadata::document;

/// The principal a request was authenticated as.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Arc<Principal>);

/// The principal of an authenticated request (`None` when authentication is off).
pub fn principal_of(req: &actix_web::HttpRequest) -> Option<Arc<Principal>> {
    req.extensions().get::<Authenticated>().map(|a| a.0.clone())
}

/// The middleware (on the MCP endpoints).
pub async fn middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let auth = req
        .app_data::<web::Data<Worker>>()
        .and_then(|w| w.gw.auth.clone());
    let Some(auth) = auth.filter(|_| req.method() != Method::OPTIONS) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    };
    match auth.authenticate(req.headers()).await {
        Ok(principal) => {
            req.extensions_mut()
                .insert(Authenticated(Arc::new(principal)));
            next.call(req)
                .await
                .map(ServiceResponse::map_into_left_body)
        }
        Err(reason) => {
            tracing::debug!(
                reason = reason.describe(),
                path = req.path(),
                "refused: not authenticated"
            );
            // What the client still sends of the body is read first, so that it reads the 401.
            let payload = req.take_payload();
            super::body::drain(req.headers(), payload).await;
            let body = json!({
                "error": if reason == crate::auth::Reason::Missing { "unauthorized" } else { "invalid_token" },
                "error_description": reason.describe(),
            });
            let response = HttpResponse::Unauthorized()
                .insert_header(("WWW-Authenticate", auth.challenge(reason)))
                .insert_header(("Cache-Control", "no-store"))
                .json(body);
            Ok(req.into_response(response).map_into_right_body())
        }
    }
}

/// `GET /.well-known/oauth-protected-resource[/path]`: the RFC 9728 document.
pub(super) async fn protected_resource(worker: web::Data<Worker>) -> HttpResponse {
    let Some(auth) = &worker.gw.auth else {
        return HttpResponse::NotFound().finish();
    };
    let Some(oauth) = auth.oauth() else {
        return HttpResponse::NotFound().finish();
    };
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .insert_header(("Access-Control-Allow-Origin", "*"))
        .json(document(oauth, &auth.scopes.all()))
}
