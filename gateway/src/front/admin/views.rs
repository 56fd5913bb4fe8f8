//! The admin view's JSON: what the gateway holds at one moment, read from its stores (no backend is asked,
//! no session marked used), and `POST /admin/reload`.
//!
//! It must never show a secret: a session by its id's prefix only (`ShortId`) and its principal by name
//! (never a token or digest), the config through its redacting `Serialize` (`config::redact`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::Admin;
use crate::auth_context::AuthContext;
use crate::session::ShortId;
use crate::state::Gateway;

/// Sessions shown when `?limit=` is not given.
pub(super) const DEFAULT_LIMIT: usize = 100;
/// The most `?limit=` may ask for.
pub(super) const MAX_LIMIT: usize = 1000;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `GET /admin/summary`: the build, the state of the drain, counts.
pub(super) async fn summary(admin: web::Data<Admin>) -> HttpResponse {
    HttpResponse::Ok().json(summary_json(&admin.gw))
}

pub(super) fn summary_json(gw: &Gateway) -> Value {
    let catalog = gw.catalog.snapshot();
    json!({
        "server": { "name": gw.server_info.name, "version": gw.server_info.version },
        "status": if gw.drain.is_draining() {
            "draining"
        } else if gw.catalog.is_built() {
            "ready"
        } else {
            "starting"
        },
        "sessions": gw.sessions.len(),
        "listen_streams": gw.subscriptions.listen_streams(),
        "in_flight": gw.drain.in_flight(),
        "backends": gw.live().backends.len(),
        "catalog": {
            "version": format!("{:016x}", catalog.version()),
            "tools": catalog.tools().len(),
            "prompts": catalog.prompts().len(),
            "resources": catalog.resource_uris().count(),
            "resource_templates": catalog.resource_templates().count(),
            "missing": catalog.backends_missing(),
            "stale": catalog.backends_stale(),
        },
    })
}

/// `GET /admin/sessions[?limit=N]`: the live legacy sessions, the most recently used first.
pub(super) async fn sessions(admin: web::Data<Admin>, req: HttpRequest) -> HttpResponse {
    match limit_of(req.query_string()) {
        Ok(limit) => HttpResponse::Ok().json(sessions_json(&admin.gw, limit)),
        Err(why) => HttpResponse::BadRequest().json(json!({ "error": why })),
    }
}

/// The `limit` query parameter: absent, or 0 to [`MAX_LIMIT`].
pub(super) fn limit_of(query: &str) -> Result<usize, String> {
    let mut limit = DEFAULT_LIMIT;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "limit" {
            limit = value
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_LIMIT)
                .ok_or_else(|| format!("limit must be a number from 0 to {MAX_LIMIT}"))?;
        }
    }
    Ok(limit)
}

pub(super) fn sessions_json(gw: &Gateway, limit: usize) -> Value {
    let recent = gw.sessions.most_recent(limit);
    let principals = known_principals(gw);
    let sessions: Vec<Value> = recent
        .sessions
        .iter()
        .map(|s| {
            let principal = s
                .bound_to
                .and_then(|b| principals.get(&b).map(String::as_str));
            json!({
                "id": ShortId(&s.id).to_string(),
                "generation": s.generation.as_str(),
                "transport": s.transport.as_str(),
                "client": { "name": s.client_info.name, "version": s.client_info.version },
                "principal": principal,
                "bound": s.bound_to.is_some(),
                "initialized": s.is_initialized(),
                "age_ms": millis(gw.sessions.age(s)),
                "idle_ms": millis(s.idle_for()),
                "in_flight": s.in_flight().len(),
                "stream_open": s.handle.has_open_stream(),
                "subscriptions": gw.subscriptions.count_of(&s.id),
            })
        })
        .collect();
    json!({
        "total": recent.total,
        "shown": sessions.len(),
        "limit": limit,
        "listen_streams": gw.subscriptions.listen_streams(),
        "sessions": sessions,
    })
}

/// The principals whose names the config holds (API keys), by the binding their sessions carry; a token's
/// principal is not known here, and its sessions show no name.
fn known_principals(gw: &Gateway) -> BTreeMap<[u8; 16], String> {
    if gw.auth.is_none() {
        return BTreeMap::new();
    }
    gw.config
        .auth
        .api_keys
        .iter()
        .map(|k| {
            (
                AuthContext::of_principal(&crate::auth::Principal::api_key_id(&k.principal))
                    .binding(),
                k.principal.clone(),
            )
        })
        .collect()
}

/// `GET /admin/backends`: each backend's connection, load and standing in the catalog.
pub(super) async fn backends(admin: web::Data<Admin>) -> HttpResponse {
    HttpResponse::Ok().json(backends_json(&admin.gw))
}

pub(super) fn backends_json(gw: &Gateway) -> Value {
    let catalog = gw.catalog.snapshot();
    let mut counts: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for t in catalog.tools() {
        counts.entry(t.backend.as_str()).or_default()[0] += 1;
    }
    for p in catalog.prompts() {
        counts.entry(p.backend.as_str()).or_default()[1] += 1;
    }
    for (backend, _) in catalog.resource_uris() {
        counts.entry(backend).or_default()[2] += 1;
    }
    for (backend, _) in catalog.resource_templates() {
        counts.entry(backend).or_default()[3] += 1;
    }
    let standings: BTreeMap<String, _> = gw
        .ledger
        .report(Instant::now())
        .into_iter()
        .map(|r| (r.name.clone(), r))
        .collect();
    let live = gw.live();
    let backends: Vec<Value> = live
        .backends
        .iter()
        .map(|(name, handle)| {
            let status = handle.status();
            let [tools, prompts, resources, templates] =
                counts.get(name.as_str()).copied().unwrap_or_default();
            let standing = standings.get(name);
            json!({
                "name": name,
                "transport": status.transport.label(),
                "generation": status.generation.map(|g| g.as_str()),
                "era": status.generation.map(|g| if g.is_modern() { "modern" } else { "legacy" }),
                "state": status.state.label(),
                "standing": standing.map(|r| r.standing.label()),
                "standing_reason": standing.and_then(|r| r.standing.reason()),
                "catalog_age_ms": standing.and_then(|r| r.catalog_age).map(millis),
                "in_flight": status.in_flight,
                "max_in_flight": status.max_in_flight,
                "control_in_flight": status.control_in_flight,
                "restarts": status.restarts,
                "last_error": status.last_error,
                "circuit": status.circuit.label(),
                "tools": tools,
                "prompts": prompts,
                "resources": resources,
                "resource_templates": templates,
            })
        })
        .collect();
    json!({ "backends": backends })
}

/// `GET /admin/catalog`: the names clients see, each with its backend.
pub(super) async fn catalog(admin: web::Data<Admin>) -> HttpResponse {
    HttpResponse::Ok().json(catalog_json(&admin.gw))
}

pub(super) fn catalog_json(gw: &Gateway) -> Value {
    let c = gw.catalog.snapshot();
    let tools: Vec<Value> = c
        .tools()
        .iter()
        .map(|t| {
            json!({ "name": t.exposed_name, "backend": t.backend, "original_name": t.original_name,
                "description": t.tool.get("description"), "inputSchema": t.tool.get("inputSchema") })
        })
        .collect();
    let prompts: Vec<Value> = c
        .prompts()
        .iter()
        .map(|p| json!({ "name": p.exposed_name, "backend": p.backend, "original_name": p.original_name }))
        .collect();
    let resources: Vec<Value> = c
        .resource_uris()
        .map(|(backend, uri)| json!({ "uri": uri, "backend": backend }))
        .collect();
    let templates: Vec<Value> = c
        .resource_templates()
        .map(|(backend, t)| json!({ "uri_template": t, "backend": backend }))
        .collect();
    json!({
        "version": format!("{:016x}", c.version()),
        "missing": c.backends_missing(),
        "stale": c.backends_stale(),
        "tools": tools,
        "prompts": prompts,
        "resources": resources,
        "resource_templates": templates,
    })
}

/// `GET /admin/config`: the config in effect (the last reload's; `[server]`, `[cluster]` and `[auth]` as the
/// process started), secrets redacted.
pub(super) async fn config(admin: web::Data<Admin>) -> HttpResponse {
    match serde_json::to_value(&*admin.gw.live().config) {
        Ok(v) => HttpResponse::Ok().json(v),
        Err(e) => HttpResponse::InternalServerError().json(json!({ "error": e.to_string() })),
    }
}

/// `POST /admin/reload`: the gateway's one reload path (the config file, then every part SIGHUP reloads),
/// taken now; what it changed, and what failed and why.
pub(super) async fn reload(admin: web::Data<Admin>) -> HttpResponse {
    tracing::info!("admin: reloading");
    let report = admin.reload.reload().await;
    let reloaded: Vec<&str> = report
        .parts
        .iter()
        .filter(|o| o.error.is_none())
        .map(|o| o.part)
        .collect();
    let failed: Vec<Value> = report
        .parts
        .iter()
        .filter_map(|o| {
            o.error
                .as_ref()
                .map(|why| json!({ "part": o.part, "why": why }))
        })
        .collect();
    HttpResponse::Ok().json(json!({
        "config": report.config,
        "reloaded": reloaded,
        "failed": failed,
    }))
}
