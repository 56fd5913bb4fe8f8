//! `GET /metrics`: the gateway's metrics for Prometheus, in the text format 0.0.4, or OpenMetrics 1.0 when
//! the `Accept` header asks for it. The counted series come from `Gateway::metrics`; the states (backends,
//! sessions, requests in flight, messages dropped) are read here, at scrape time, from their sources.
//!
//! It must not serve anything but the metrics (no session ids, no principals). It is served by the admin
//! listener only (`front::admin`, through [`respond`], behind its guard): the series name every backend,
//! which a `[[policy]]` may hide from clients, so the front door never serves them.

use std::sync::Arc;

use actix_web::http::header::{ACCEPT, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse};
use handlers::BackendState;

use crate::metrics::{BackendGauges, Format, State, encode};
use crate::state::Gateway;

/// The scrape of `gw` as an HTTP response, in the format `req`'s `Accept` header asks for.
pub fn respond(req: &HttpRequest, gw: &Arc<Gateway>) -> HttpResponse {
    let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::from_accept(accept);
    let body = encode(&gw.metrics, state(gw), format);
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, format.content_type()))
        .body(body)
}

/// What the scrape reads from the gateway's sources of truth: each backend's status
/// (`BackendHandle::status`) and its share of the current catalog, the live sessions, the requests in
/// flight, the messages lost to slow consumers.
pub fn state(gw: &Gateway) -> State {
    let snapshot = gw.catalog.snapshot();
    let live = gw.live();
    let backends = live
        .backends
        .iter()
        .map(|(name, handle)| {
            let s = handle.status();
            BackendGauges {
                name: name.clone(),
                up: s.state == BackendState::Ready,
                state: s.state.label(),
                transport: s.transport.label(),
                generation: s.generation,
                in_flight: s.in_flight as u64,
                max_in_flight: s.max_in_flight as u64,
                restarts: s.restarts,
                circuit: s.circuit.label(),
                catalog: snapshot.counts_of(name),
            }
        })
        .collect();
    State {
        backends,
        sessions: gw.sessions.live_by_generation(),
        in_flight: gw.drain.in_flight() as u64,
        messages_dropped: crate::session::dropped() + handlers::notifications_dropped(),
    }
}
