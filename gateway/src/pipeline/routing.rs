//! The routing actor: one per HTTP worker (several, never one global queue). It validates a request through
//! `protocol::validate` against the current catalog snapshot — emitting every infrastructure error before any
//! handler runs — and hands back the valid request with the snapshot it was checked against, so the dispatch
//! that follows resolves names in the same catalog.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use protocol::validate::{HttpMethod, Rejection, ValidRequest, validate, validate_stdio};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::catalog::CatalogSnapshot;
use crate::pipeline::{Added, Chain};
use crate::pipeline::context::Accepted;
use crate::policy::views::{Seen, Views};

use crate::session::Session;
use crate::state::Gateway;
use crate::telemetry::spans::Arrival;

/// Request headers as `protocol::validate` reads them.
#[derive(Debug)]
pub struct HeaderSource<'a>(pub &'a HeaderMap);

impl protocol::validate::Headers for HeaderSource<'_> {
    fn for_each<'a>(&'a self, f: &mut dyn FnMut(&'a str, &'a [u8])) {
        for (name, value) in self.0.iter() {
            f(name.as_str(), value.as_bytes());
        }
    }
}

/// What routing resolved: the validated request, the view it was validated against, and its place in the
/// worker's bound (the request's context is built of this and what the front accepted).
#[derive(Debug)]
pub struct Routed {
    /// The request.
    pub valid: ValidRequest,
    /// The catalog as the request may see it: its names were checked in it.
    pub view: Arc<CatalogSnapshot>,
    /// Held until the request is answered (a streamed answer carries it to its end).
    pub permit: InFlight,
    /// With `[traces]`: when routing began and ended, and the parent the client's headers name.
    pub trace: Option<Arrival>,
    /// When the request was accepted (before validation): its duration is counted from here.
    pub arrived: std::time::Instant,
}

/// One request's place in its worker's bound of requests in flight (`max_in_flight_per_worker`), from
/// acceptance to its answer; released when dropped.
#[derive(Debug)]
pub struct InFlight(
    #[allow(dead_code)] OwnedSemaphorePermit,
    /// Counted in the gateway's drain, which waits for it.
    #[allow(dead_code)]
    crate::drain::Running,
);

/// Where a request came from.
#[derive(Debug)]
pub enum Origin {
    /// HTTP: method and headers.
    Http(HttpMethod, HeaderMap),
    /// One stdio line: no header layer.
    Stdio,
}

/// The routing actor of one worker: it owns the worker's catalog snapshot, which the catalog store pushes
/// to it (a watch channel: the newest wins, nothing queues) and which it takes up before the next
/// validation, so a request never meets an older catalog than the one published before it arrived. It owns
/// each endpoint's view of that catalog (the full one for `/mcp`) and, with a `[[policy]]`, the views of
/// those, one per audience: a request is validated against its principal's view of its endpoint's.
struct RoutingActor {
    gw: Arc<Gateway>,
    snapshot: Arc<CatalogSnapshot>,
    updates: watch::Receiver<Arc<CatalogSnapshot>>,
    /// Per endpoint (by index), made the first time it is asked for.
    served: HashMap<usize, Served>,
    /// With `[catalog] search`: the searching view of each view asked for (by the view's address, the view
    /// held so the address stays its own), dropped with the catalog; at most [`MAX_SEARCHING`].
    searching: HashMap<usize, (Arc<CatalogSnapshot>, Arc<CatalogSnapshot>)>,
    /// The `Live` version the policy views were made for: a reload that changes the policy replaces them.
    views_for: u64,
}

/// Searching views a worker keeps at most (past it, all are dropped and made again when asked for).
const MAX_SEARCHING: usize = 1024;

/// One endpoint's catalog in one worker.
struct Served {
    /// The full catalog `base` was made of.
    of: Arc<CatalogSnapshot>,
    /// The endpoint's view of it.
    base: Arc<CatalogSnapshot>,
    /// Its principals' views of `base`, with a `[[policy]]`.
    views: Option<Views>,
}

impl Actor for RoutingActor {
    type Context = Context<Self>;
}

impl RoutingActor {
    /// The worker's snapshot, the newest pushed one taken up first (one atomic read when none is new).
    fn current(&mut self) -> Arc<CatalogSnapshot> {
        if self.updates.has_changed().unwrap_or(false) {
            self.snapshot = self.updates.borrow_and_update().clone();
            self.searching.clear();
        }
        self.snapshot.clone()
    }

    /// The searching view of `view` (made once per view, catalog and config).
    fn searching(&mut self, view: &Arc<CatalogSnapshot>, private: bool) -> Arc<CatalogSnapshot> {
        let key = Arc::as_ptr(view) as usize;
        if let Some((_, searching)) = self.searching.get(&key) {
            return searching.clone();
        }
        if self.searching.len() >= MAX_SEARCHING {
            self.searching.clear();
        }
        let searching = Arc::new(view.searching(private));
        self.searching
            .insert(key, (view.clone(), searching.clone()));
        searching
    }
}

#[derive(Message)]
#[rtype(result = "Result<Validated, Rejection>")]
struct Route {
    origin: Origin,
    body: Bytes,
    /// What the front accepted (the session, principal and endpoint validation needs).
    accepted: Arc<Accepted>,
}

/// What the actor answers: the request and its snapshot (the handle adds the permit).
struct Validated {
    valid: ValidRequest,
    snapshot: Arc<CatalogSnapshot>,
}

impl Handler<Route> for RoutingActor {
    // Validation is pure CPU work on bytes already in memory (microseconds): answered synchronously, so the
    // actor never interleaves two validations and never awaits.
    type Result = Result<Validated, Rejection>;

    fn handle(&mut self, msg: Route, _: &mut Self::Context) -> Self::Result {
        let Route {
            mut origin,
            mut body,
            accepted,
        } = msg;
        let endpoint = &accepted.endpoint;
        let full = self.current();
        let live = self.gw.live.load();
        if live.version != self.views_for {
            self.views_for = live.version;
            // `[catalog]` may have changed who searches.
            self.searching.clear();
            for served in self.served.values_mut() {
                let same = match (&served.views, &live.policy) {
                    (Some(v), Some(p)) => v.is_of(p),
                    (None, None) => true,
                    _ => false,
                };
                if !same {
                    served.views = live.policy.clone().map(Views::new);
                }
            }
        }
        let served = self.served.entry(endpoint.index).or_insert_with(|| Served {
            of: full.clone(),
            base: endpoint.view(&full),
            views: live.policy.clone().map(Views::new),
        });
        if !Arc::ptr_eq(&served.of, &full) {
            served.base = endpoint.view(&full);
            served.of = full;
        }
        let base = served.base.clone();
        let principal = accepted.principal.as_deref();
        let mut view = served.views.as_mut().map(|v| v.view(&base, principal));
        let mut base = base;
        let searches = live.config.catalog.searches_for(
            principal.map(|p| (p.source.qualifier(), p.name.as_str(), p.groups.as_slice())),
        );
        if searches {
            // The principal's view (or the endpoint's) as a searching one; a `call_tool` in the body made
            // the call it names, validated against that view like any other.
            let catalog = &live.config.catalog;
            let private = !catalog.principals.is_empty() || !catalog.groups.is_empty();
            match &mut view {
                Some(view) => view.snapshot = self.searching(&view.snapshot, private),
                None => base = self.searching(&base, private),
            }
            let searched = view.as_ref().map_or(&base, |v| &v.snapshot);
            let headers = match &mut origin {
                Origin::Http(_, headers) => Some(headers),
                Origin::Stdio => None,
            };
            if let Some(unwrapped) = super::search::unwrap_call_tool(&body, headers, searched) {
                body = unwrapped;
            }
        }
        let seen = view.as_ref().map(|view| Seen {
            view,
            full: &base,
            principal,
        });
        let catalog: &dyn protocol::validate::Catalog = match &seen {
            Some(seen) => seen,
            None => base.as_ref(),
        };
        let session = accepted.session.as_deref().map(Session::validation_view);
        let valid = match &origin {
            Origin::Http(method, headers) => {
                let headers = HeaderSource(headers);
                let req = protocol::validate::HttpRequest {
                    method: *method,
                    headers: &headers,
                    body: &body,
                };
                validate(&req, &self.gw.validation, catalog, session.as_ref())?
            }
            Origin::Stdio => validate_stdio(&body, &self.gw.validation, catalog, session.as_ref())?,
        };
        let snapshot = match view {
            Some(view) => view.snapshot,
            None => base,
        };
        Ok(Validated { valid, snapshot })
    }
}

/// The routing actor's handle: a permit bounds the worker's requests from acceptance to their answer
/// ([`InFlight`], carried by [`Routed`]); none free, or no answer within the deadline, is answered at once
/// as overload (503 with `Retry-After`) instead of waiting.
#[derive(Clone)]
pub struct RoutingHandle {
    addr: Addr<RoutingActor>,
    /// The middleware chain this worker runs validated requests through.
    chain: ChainSource,
    gw: Arc<Gateway>,
    permits: Arc<Semaphore>,
    deadline: Duration,
    /// How long a request that arrives before the first catalog waits for it.
    starting: Duration,
}

impl std::fmt::Debug for RoutingHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutingHandle")
            .field("available", &self.permits.available_permits())
            .finish()
    }
}

impl RoutingHandle {
    /// Starts a routing actor on the current arbiter, with the configured chain (rebuilt after a reload),
    /// which places the middlewares a library user `added`.
    pub fn start(gw: Arc<Gateway>, max_queued: usize, added: Added) -> RoutingHandle {
        let live = gw.live();
        let chain = crate::pipeline::builtin::chain(&gw, &live, &added);
        RoutingHandle::start_from(
            gw,
            max_queued,
            ChainSource {
                added,
                built: Rc::new(RefCell::new((live.version, chain))),
            },
        )
    }

    fn start_from(gw: Arc<Gateway>, max_queued: usize, chain: ChainSource) -> RoutingHandle {
        // The first catalog is in within `list_timeout_ms` of the start (each backend connects and lists in
        // that time); a second more covers building it.
        let starting =
            Duration::from_millis(gw.config.server.list_timeout_ms) + Duration::from_secs(1);
        RoutingHandle {
            addr: {
                let mut updates = gw.catalog.updates();
                let snapshot = updates.borrow_and_update().clone();
                RoutingActor {
                    served: HashMap::new(),
                    searching: HashMap::new(),
                    views_for: gw.live().version,
                    gw: gw.clone(),
                    snapshot,
                    updates,
                }
                .start()
            },
            chain,
            gw,
            permits: Arc::new(Semaphore::new(max_queued)),
            deadline: Duration::from_secs(5),
            starting,
        }
    }

    /// The gateway this worker serves.
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gw
    }

    /// The middleware chain of this worker: the configured one is rebuilt (once per worker) after a reload
    /// (its rate limits and `[[middleware]]` tables may have changed).
    pub fn chain(&self) -> Chain {
        let live = self.gw.live.load();
        let mut slot = self.chain.built.borrow_mut();
        if slot.0 != live.version {
            *slot = (
                live.version,
                crate::pipeline::builtin::chain(&self.gw, &live, &self.chain.added),
            );
        }
        slot.1.clone()
    }

    /// Validates a request against the catalog as its principal may see it at its endpoint (one that arrives while the
    /// gateway is starting waits for the first catalog: it is never validated against an empty one and told
    /// a tool is unknown).
    pub async fn route(
        &self,
        origin: Origin,
        body: Bytes,
        accepted: Arc<Accepted>,
    ) -> Result<Routed, Rejection> {
        let arrived = std::time::Instant::now();
        if self.gw.drain.phase() >= crate::drain::Phase::CutOff {
            return Err(overloaded("the gateway is shutting down"));
        }
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return Err(overloaded(
                "the gateway is at its limit of requests in flight",
            ));
        };
        let running = self.gw.drain.track();
        if !self.gw.catalog.first(self.starting).await {
            return Err(overloaded("the gateway is starting: no catalog yet"));
        }
        let trace = Arrival::begin(|name| match &origin {
            Origin::Http(_, headers) => headers.get(name)?.to_str().ok(),
            Origin::Stdio => None,
        });
        let request = self.addr.send(Route {
            origin,
            body,
            accepted,
        });
        match tokio::time::timeout(self.deadline, request).await {
            Ok(Ok(result)) => result.map(|v| Routed {
                valid: v.valid,
                view: v.snapshot,
                permit: InFlight(permit, running),
                trace: trace.map(Arrival::routed),
                arrived,
            }),
            Ok(Err(_)) => Err(overloaded("the routing actor stopped")),
            Err(_) => Err(overloaded("validation did not finish in time")),
        }
    }
}

/// Where a worker's middleware chain comes from: the config in effect and what a library user added.
#[derive(Clone)]
struct ChainSource {
    added: Added,
    /// The chain and the `Live` version it was built for (one worker's: no other thread sees it).
    built: Rc<RefCell<(u64, Chain)>>,
}

fn overloaded(why: &str) -> Rejection {
    Rejection::overloaded(why, None)
}
