//! The HTTP front door (actix-web): `POST/GET/DELETE /mcp` for both eras side by side, the 2024-11-05
//! HTTP+SSE transport on `GET /sse` + `POST /messages`, and the probes `/healthz` and a status-only
//! `/readyz`; CORS on the MCP endpoints when origins are configured. `/metrics` and the readiness detail are
//! the admin listener's (`front::admin`), never the front door's.

mod body;
pub mod connections;
mod consent;
pub mod cors;
pub mod gate;
pub mod guard;
pub(crate) mod health;
mod hint;
mod http_sse;
mod mcp;
pub mod metrics;
mod origin;
mod stream;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod health_tests;
#[cfg(test)]
mod streams_tests;

pub use cors::CorsPolicy;
pub use origin::OriginPolicy;

use std::sync::Arc;

use actix_web::middleware::from_fn;
use actix_web::{HttpResponse, web};
use protocol::shape::Shaped;
use protocol::validate::{Accepts, Rejection};

use crate::pipeline::Added;
#[cfg(any(test, feature = "internals"))]
pub use crate::pipeline::routing::HeaderSource;
use crate::pipeline::routing::RoutingHandle;
use crate::session::sse_event;
use crate::state::Gateway;

/// The per-worker actors and the shared gateway, as app data of one worker.
#[derive(Debug, Clone)]
pub struct Worker {
    /// The shared gateway.
    pub gw: Arc<Gateway>,
    /// This worker's routing actor.
    pub routing: RoutingHandle,
    /// Host and Origin checks.
    pub origin: OriginPolicy,
    /// CORS for browser pages.
    pub cors: CorsPolicy,
}

impl Worker {
    /// Starts this worker's actors on its arbiter, with the configured chain (rebuilt after a reload) and
    /// the middlewares a library user `added`.
    pub fn start(gw: Arc<Gateway>, added: Added) -> Worker {
        let routing =
            RoutingHandle::start(gw.clone(), gw.config.server.max_in_flight_per_worker, added);
        let origin = OriginPolicy::from_config(&gw.config.server);
        let cors = CorsPolicy::from_config(&gw.config.server);
        Worker {
            gw,
            routing,
            origin,
            cors,
        }
    }
}

/// Registers every route, with the configured middleware chain and the middlewares a library user
/// `added`. Call inside the `HttpServer::new` factory (per worker).
pub fn configure(cfg: &mut web::ServiceConfig, gw: Arc<Gateway>, added: Added) {
    let worker = Worker::start(gw, added);
    routes(cfg, worker);
}

fn routes(cfg: &mut web::ServiceConfig, worker: Worker) {
    let gw = worker.gw.clone();
    // The OAuth resource server's metadata document, open to all, at both of RFC 9728's places.
    if let Some(oauth) = gw.auth.as_ref().and_then(|a| a.oauth()) {
        let suffixed = format!(
            "{}{}",
            crate::auth::metadata::WELL_KNOWN,
            oauth.resource_path()
        );
        cfg.service(
            web::resource(crate::auth::metadata::WELL_KNOWN)
                .route(web::get().to(gate::protected_resource)),
        );
        if suffixed != crate::auth::metadata::WELL_KNOWN {
            cfg.service(web::resource(suffixed).route(web::get().to(gate::protected_resource)));
        }
    }
    // Middlewares wrap in reverse: CORS is outermost (a 401 carries its headers), then authentication.
    cfg.app_data(web::Data::new(worker));
    // `/mcp` and every `[[endpoint]]`: the same handlers, each resource knowing its endpoint.
    for endpoint in gw.endpoints.all() {
        cfg.service(
            web::resource(endpoint.path.as_str())
                .app_data(mcp::At(endpoint.clone()))
                .wrap(from_fn(gate::middleware))
                .wrap(from_fn(cors::middleware))
                .route(web::post().to(mcp::post))
                .route(web::get().to(mcp::get))
                .route(web::delete().to(mcp::delete))
                .default_service(web::to(mcp::other)),
        );
    }
    cfg.service(
        web::resource("/sse")
            .wrap(from_fn(gate::middleware))
            .wrap(from_fn(cors::middleware))
            .route(web::get().to(http_sse::open)),
    )
    .service(
        web::resource("/messages")
            .wrap(from_fn(gate::middleware))
            .wrap(from_fn(cors::middleware))
            .route(web::post().to(http_sse::post)),
    )
    .service(web::resource("/oauth/connect/{link}").route(web::get().to(consent::connect)))
    .service(web::resource("/oauth/callback").route(web::get().to(consent::callback)))
    .service(web::resource("/oauth/client").route(web::get().to(consent::client)))
    .service(web::resource("/healthz").to(health::healthz))
    // Where the MCP endpoint is (after the endpoints: an `[[endpoint]]` at `/` keeps its path).
    .service(web::resource("/").route(web::get().to(hint::root)))
    .service(web::resource("/readyz").to(health::readyz));
    // No `/metrics` here: backend names, states and counts are operators' data, served by the admin
    // listener (`[admin] listen`) behind its guard.
}

/// The client's IP address: the socket's peer, or behind a trusted proxy the client it names
/// (`[server] trusted_proxies`): what a request without a session counts against for a backend's
/// per-caller share, and what the rate limits' per-address buckets are kept by, the same on every replica.
pub(crate) fn client_ip(req: &actix_web::HttpRequest, gw: &Gateway) -> Option<std::net::IpAddr> {
    Some(gw.proxies.client(req.peer_addr()?.ip(), req.headers()))
}

/// A rejection as an HTTP response.
pub(crate) fn rejection_response(r: &Rejection) -> HttpResponse {
    message_response(r.shaped(), Accepts::JSON)
}

/// One JSON-RPC message as the client accepts it: a JSON body, or one SSE event when it takes only SSE;
/// with the status and headers shaping chose.
pub(crate) fn message_response(shaped: Shaped, accepts: Accepts) -> HttpResponse {
    let Shaped {
        status: code,
        headers,
        body,
    } = shaped;
    let mut resp = HttpResponse::build(status(code));
    for header in headers {
        resp.insert_header(header);
    }
    if accepts.json {
        resp.content_type("application/json").body(body)
    } else {
        sse_headers(&mut resp).body(sse_event(&body))
    }
}

/// A 200 response whose body is an SSE stream.
pub(crate) fn event_stream() -> actix_web::HttpResponseBuilder {
    let mut resp = HttpResponse::Ok();
    sse_headers(&mut resp);
    resp
}

/// What every SSE response says: its type, no caching, no buffering by a proxy (nginx).
fn sse_headers(resp: &mut actix_web::HttpResponseBuilder) -> &mut actix_web::HttpResponseBuilder {
    resp.content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
}

fn status(code: u16) -> actix_web::http::StatusCode {
    actix_web::http::StatusCode::from_u16(code)
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR)
}
