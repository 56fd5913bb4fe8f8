//! Per-user authorization seen and revoked by operators: `GET /admin/authorizations` lists which principals
//! connected which backends and when their tokens expire, and whose token each per-user backend is listed
//! with (never a token: `oauth::store::GrantSummary`); `POST /admin/authorizations/revoke` with
//! `{"principal": ID, "backend": NAME}` forgets one principal's token (their next call asks them again).

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use super::Admin;

/// `GET /admin/authorizations`.
pub(super) async fn list(admin: web::Data<Admin>) -> HttpResponse {
    let Some(oauth) = &admin.gw.oauth else {
        return HttpResponse::Ok().json(json!({ "backends": [], "grants": [] }));
    };
    let backends: Vec<_> = admin
        .gw
        .live()
        .config
        .backends
        .iter()
        .filter(|b| oauth.is_per_user(&b.name))
        .map(|b| json!({ "backend": b.name, "listed_as": oauth.lister_of(&b.name) }))
        .collect();
    match oauth.summaries().await {
        Ok(grants) => HttpResponse::Ok().json(json!({ "backends": backends, "grants": grants })),
        Err(e) => HttpResponse::ServiceUnavailable().json(json!({ "error": e.to_string() })),
    }
}

/// What to revoke.
#[derive(Deserialize)]
pub(super) struct Revoke {
    principal: String,
    backend: String,
}

/// `POST /admin/authorizations/revoke`.
pub(super) async fn revoke(admin: web::Data<Admin>, body: web::Json<Revoke>) -> HttpResponse {
    let Some(oauth) = &admin.gw.oauth else {
        return HttpResponse::NotFound()
            .json(json!({ "error": "no backend takes user authorization" }));
    };
    if !oauth.is_per_user(&body.backend) {
        return HttpResponse::NotFound().json(
            json!({ "error": format!("backend {} takes no user authorization", body.backend) }),
        );
    }
    match oauth.revoke(&body.principal, &body.backend).await {
        Ok(revoked) => {
            tracing::info!(backend = %body.backend, revoked, "admin: a user's authorization revoked");
            HttpResponse::Ok().json(json!({ "revoked": revoked }))
        }
        Err(e) => HttpResponse::ServiceUnavailable().json(json!({ "error": e.to_string() })),
    }
}
