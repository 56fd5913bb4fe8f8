//! `/healthz` (the process serves HTTP) and `/readyz` (the catalog is built and every configured backend is
//! connected; 503 with the list of backends that are not).

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::Worker;

pub(super) async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

pub(super) async fn readyz(worker: web::Data<Worker>) -> HttpResponse {
    let gw = &worker.gw;
    let not_ready: Vec<&str> = gw
        .backends
        .values()
        .filter(|b| b.description().is_none())
        .map(|b| b.name())
        .collect();
    let body = json!({
        "ready": not_ready.is_empty(),
        "backends": gw.backends.len(),
        "not_ready": not_ready,
        "sessions": gw.sessions.len(),
        "catalog_version": gw.catalog.snapshot().version(),
    });
    if not_ready.is_empty() {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
