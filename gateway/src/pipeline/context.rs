//! One request's context, built once. A front accepts a request and says what it knows of it
//! ([`Accepted`]: the session it names, who is asking, from where, how, at which endpoint); routing adds what
//! validation resolved (the view it was validated against, the generation); [`RequestContext`] holds both,
//! and everything downstream — the middleware chain ([`super::MwContext`] is a view of it), the dispatch, a
//! streamed answer, the shaping — borrows it. Nothing downstream derives these facts again.
//!
//! It must not hold anything a request does not own alone (the gateway, the worker's chain): those are
//! passed beside it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use handlers::Caller;
use protocol::Generation;

use crate::auth::Principal;
use crate::auth_context::AuthContext;
use crate::catalog::CatalogSnapshot;
use crate::endpoint::Endpoint;
use crate::session::{Reader, Session, Transport};
use crate::state::Gateway;
use crate::telemetry::spans::Arrival;

/// What a front knows of a request when it accepts it, before its body is validated.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The legacy session its `Mcp-Session-Id` names (found, and bound to its principal), if any.
    pub session: Option<Arc<Session>>,
    /// Who is asking, digested (sealed states are bound to it, private cache entries keyed by it).
    pub auth: AuthContext,
    /// The principal authentication established (`None`: authentication off, or stdio).
    pub principal: Option<Arc<Principal>>,
    /// The client's IP address (HTTP, behind trusted proxies the client they name; `None` on stdio, where
    /// the host is the only client).
    pub client: Option<IpAddr>,
    /// How the request arrived.
    pub transport: Transport,
    /// The endpoint it arrived at (`/mcp`, or an `[[endpoint]]`).
    pub endpoint: Arc<Endpoint>,
    /// The request headers middlewares may read (`Builder::read_header`), as received; empty unless a
    /// library user named some.
    pub headers: Vec<(String, String)>,
}

impl Accepted {
    /// What a session this request starts is bound to, and what a session it names must be bound to: its
    /// principal (with `[auth]` on), within its endpoint.
    pub fn binding(&self, gw: &Gateway) -> Option<[u8; 16]> {
        self.endpoint
            .bind(gw.binding(self.principal.as_deref(), self.auth))
    }

    /// Who a request counts against for a backend's per-caller share and a stream's per-caller bounds: the
    /// principal when authentication established one (however many sessions it holds), else the legacy
    /// session, else the client's address.
    pub fn caller(&self) -> Option<Caller> {
        if let Some(p) = &self.principal {
            return Some(Caller::new("principal", p.id().as_bytes()));
        }
        if let Some(s) = &self.session {
            return Some(s.caller());
        }
        self.client.map(|ip| match ip {
            IpAddr::V4(v4) => Caller::new("address", &v4.octets()),
            IpAddr::V6(v6) => Caller::new("address", &v6.octets()),
        })
    }
}

/// One JSON-RPC request (or batch) as the pipeline answers it: what the front accepted and what validation
/// resolved. Built once, in `pipeline::deliver`, after routing; borrowed by everything downstream.
#[derive(Debug)]
pub struct RequestContext {
    accepted: Arc<Accepted>,
    /// The catalog as this request may see it: its endpoint's view, within that its principal's (a
    /// `[[policy]]`), as a searching view with `[catalog] search`. Names were validated against it, and every
    /// output of the request is shaped from it.
    view: Arc<CatalogSnapshot>,
    generation: Generation,
    /// Whether the transport can carry the request's own messages before its response.
    can_stream: bool,
    /// When the request was accepted (its duration is counted from here).
    arrived: Instant,
    /// With `[traces]`: when routing began and ended, and the parent the client's headers name.
    trace: Option<Arrival>,
    caller: Option<Caller>,
}

impl RequestContext {
    /// The context of a request `accepted` and validated against `view`.
    pub(crate) fn new(
        accepted: Arc<Accepted>,
        view: Arc<CatalogSnapshot>,
        generation: Generation,
        can_stream: bool,
        arrived: Instant,
        trace: Option<Arrival>,
    ) -> RequestContext {
        let caller = accepted.caller();
        RequestContext {
            accepted,
            view,
            generation,
            can_stream,
            arrived,
            trace,
            caller,
        }
    }

    /// The legacy session, if any.
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.accepted.session.as_ref()
    }

    /// Who is asking, digested.
    pub fn auth(&self) -> AuthContext {
        self.accepted.auth
    }

    /// The principal authentication established.
    pub fn principal(&self) -> Option<&Arc<Principal>> {
        self.accepted.principal.as_ref()
    }

    /// The client's IP address (`None` on stdio).
    pub fn client(&self) -> Option<IpAddr> {
        self.accepted.client
    }

    /// How the request arrived.
    pub fn transport(&self) -> Transport {
        self.accepted.transport
    }

    /// The endpoint it arrived at.
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.accepted.endpoint
    }

    /// The catalog as this request may see it (what it was validated against).
    pub fn view(&self) -> &Arc<CatalogSnapshot> {
        &self.view
    }

    /// The generation the client speaks.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// Whether the transport can carry the request's own messages before its response.
    pub fn can_stream(&self) -> bool {
        self.can_stream
    }

    /// When the request was accepted.
    pub fn arrived(&self) -> Instant {
        self.arrived
    }

    /// With `[traces]`: the request's arrival.
    pub fn trace(&self) -> Option<&Arrival> {
        self.trace.as_ref()
    }

    /// Who it counts against (see [`Accepted::caller`]).
    pub fn caller(&self) -> Option<Caller> {
        self.caller
    }

    /// Who reads what is sent outside this request (a listen stream's notifications, a session's): whose
    /// view `notify` judges it by.
    pub fn reader(&self) -> Reader {
        Reader::new(self.endpoint().index, self.principal().map(|p| &**p))
    }

    /// A request header middlewares may read (`name` in lower case), when it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.accepted
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// What the front accepted.
    pub fn accepted(&self) -> &Accepted {
        &self.accepted
    }

    /// Sets the headers middlewares may read (tests).
    #[cfg(test)]
    pub(crate) fn keep_headers_for_tests(&mut self, headers: Vec<(String, String)>) {
        if let Some(accepted) = Arc::get_mut(&mut self.accepted) {
            accepted.headers = headers;
        }
    }

    /// A context for tests of what borrows one (the middleware chain): a 2026-07-28-or-other request over
    /// Streamable HTTP at `/mcp`, nobody authenticated, the empty catalog.
    #[cfg(test)]
    pub(crate) fn for_tests(generation: Generation) -> RequestContext {
        RequestContext::new(
            Arc::new(Accepted {
                session: None,
                auth: AuthContext::ANONYMOUS,
                principal: None,
                client: None,
                transport: Transport::StreamableHttp,
                endpoint: Arc::new(Endpoint::default_for_tests()),
                headers: Vec::new(),
            }),
            Arc::new(CatalogSnapshot::empty()),
            generation,
            false,
            Instant::now(),
            None,
        )
    }
}
