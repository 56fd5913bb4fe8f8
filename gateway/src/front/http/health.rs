//! `/healthz` (the process serves HTTP) and `/readyz` on the front door: answered to any `Host` (kubelet
//! probes and the image's `HEALTHCHECK` name the pod's address or 127.0.0.1), so they say nothing but the
//! status. `/readyz` is 503 while the gateway is starting (no catalog yet) and from the moment it begins to
//! shut down (`"status": "draining"`), otherwise 200: one shared backend going down must not take every
//! replica out of a load balancer.
//!
//! The detail — each backend's name and standing (up, stale, down) and why, sessions, Redis — is
//! [`detail`], served by the admin listener (`front::admin`, behind its guard) only: backend names are what
//! a `[[policy]]` hides from clients, and a failure's reason may name an internal address.

use std::time::Instant;

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};

use super::Worker;
use crate::state::Gateway;

pub(super) async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// The front door's `/readyz`: the status and its code, nothing else.
pub(super) async fn readyz(worker: web::Data<Worker>) -> HttpResponse {
    let (ready, status) = readiness(&worker.gw);
    let body = json!({ "ready": ready, "status": status });
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

/// Whether the gateway takes requests, and its status word: `ready`, `starting` or `draining`.
fn readiness(gw: &Gateway) -> (bool, &'static str) {
    let draining = gw.drain.is_draining();
    let ready = gw.catalog.is_built() && !draining;
    let status = if draining {
        "draining"
    } else if ready {
        "ready"
    } else {
        "starting"
    };
    (ready, status)
}

/// The readiness with its detail (the admin listener's `/readyz`): each backend's standing and why, the
/// sessions, the requests in flight, what was dropped, Redis; with the status code of the front door's.
pub fn detail(gw: &Gateway) -> HttpResponse {
    let (ready, status) = readiness(gw);
    let live = gw.live();
    let backends: Vec<Value> = gw
        .ledger
        .report(Instant::now())
        .into_iter()
        .map(|r| {
            let mut b = json!({ "name": r.name, "state": r.standing.label() });
            if let Some(h) = live.backend(r.name.as_str()) {
                b["circuit"] = Value::from(h.circuit().label());
            }
            if let Some(reason) = r.standing.reason() {
                b["reason"] = Value::from(reason);
            }
            if let Some(age) = r.catalog_age {
                b["catalog_age_ms"] =
                    Value::from(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
            }
            b
        })
        .collect();
    // Redis (`[cluster] redis`): what this replica sent it, what failed, the DELETEs waiting for it. Its
    // being down never makes the replica unready: established sessions go on without it.
    let redis = gw.redis.as_ref().map(|link| {
        json!({
            "commands": link.commands(),
            "failures": link.failures(),
            "deletes_pending": link.pending(),
        })
    });
    let body = json!({
        "ready": ready,
        "status": status,
        "backends": backends,
        "sessions": gw.sessions.len(),
        "session_records": gw.sessions.records(),
        "sessions_resumed": gw.sessions.resumed(),
        "sessions_rested": gw.sessions.rested(),
        "session_records_pruned_early": gw.sessions.records_pruned_early(),
        "in_flight": gw.drain.in_flight(),
        "messages_dropped": crate::session::dropped() + handlers::notifications_dropped(),
        "log_lines_dropped": crate::telemetry::logs::dropped_lines(),
        "catalog_version": gw.catalog.snapshot().version(),
        "redis": redis,
    });
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
