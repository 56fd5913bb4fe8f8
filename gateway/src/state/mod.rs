//! The gateway's shared state: configuration, the backends (by name), the current catalog, the legacy session
//! store, and what the gateway says about itself. One `Arc<Gateway>` is shared by every worker. What a config
//! reload replaces is in `live`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use handlers::BackendHandle;
use protocol::GenerationSet;
use protocol::payload::Implementation;
use serde_json::{Value, json};

use crate::bridge::parked::ParkedCalls;
use crate::bridge::sealed_state::StateSealer;
use crate::cache::ResourceCache;
use crate::catalog::CatalogSnapshot;
use crate::catalog::ledger::Ledger;
use crate::cluster::ClusterKeys;
use crate::config::{Config, UnknownToolCode};

pub mod builtins;
pub mod live;
pub mod start;
pub use builtins::Builtins;
use crate::session::subscriptions::Subscriptions;
use crate::session::{PendingStreams, SessionStore, StoreLimits};
pub use live::{Live, LiveStore};

/// Everything a request may need, shared by all workers.
#[derive(Debug)]
pub struct Gateway {
    /// The configuration it was started with (what a reload changes is in [`Gateway::live`]).
    pub config: Config,
    /// Validation settings derived from the configuration.
    pub validation: protocol::validate::Config,
    /// What a config reload replaces: the config in effect, backends, policy, limits (see [`Live`]).
    pub live: LiveStore,
    /// The current catalog.
    pub catalog: CatalogStore,
    /// Each backend's last good listing and standing (up, stale, down).
    pub ledger: Ledger,
    /// Legacy sessions.
    pub sessions: SessionStore,
    /// 2024-11-05 HTTP+SSE streams waiting for their `initialize`.
    pub sse_connections: PendingStreams,
    /// The gateway's own `Implementation`.
    pub server_info: Implementation,
    /// `/mcp` and the `[[endpoint]]` virtual servers.
    pub endpoints: crate::endpoint::Endpoints,
    /// Seals and opens the `requestState` of `input_required` results.
    pub sealer: Arc<StateSealer>,
    /// Resource subscriptions and listen streams.
    pub subscriptions: Arc<Subscriptions>,
    /// Shared `resources/read` results.
    pub resource_cache: ResourceCache,
    /// Legacy backends' requests held open for a 2026-07-28 client's answer.
    pub parked: Arc<ParkedCalls>,
    /// Where the completions of URL elicitations relayed to legacy sessions go.
    pub url_completions: Arc<crate::bridge::url::Completions>,
    /// The shutdown's phase and the requests in flight it waits for.
    pub drain: crate::drain::Drain,
    /// Redis, when replicas share one (`[cluster] redis`).
    pub redis: Option<Arc<crate::cluster::redis::RedisLink>>,
    /// Who is asking (`[auth]`); `None` when authentication is off.
    pub auth: Option<Arc<crate::auth::Authenticator>>,
    /// Each user's own authorization to the backends that take it (`grant = "authorization_code"`).
    pub oauth: Option<Arc<crate::oauth::Authorizations>>,
    /// Whose `Forwarded` / `X-Forwarded-For` is believed (`[server] trusted_proxies`).
    pub proxies: crate::auth::proxies::TrustedProxies,
    /// Backend events (what each backend's actor reports), for the backends a reload starts.
    pub events: Option<tokio::sync::mpsc::Sender<handlers::BackendEvent>>,
    /// What `GET /metrics` reports that is counted on the request path.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The servers built into this binary (`builtin = [NAME]`): the mock's and a library user's.
    pub builtins: Builtins,
    /// The request headers middlewares may read (`MwContext::header`), lower-case; none unless a library
    /// user named some (`Builder::read_header`).
    pub readable_headers: Arc<[http::HeaderName]>,
    /// `[[interceptor]]` servers, started; `None` without any (set by `with_interceptors`).
    pub interceptors: Option<Arc<crate::intercept::Interceptors>>,
    /// The names of the middlewares a library user added (a `[[middleware]] kind = "library"` names one).
    pub added_middlewares: Arc<[String]>,
}

impl Gateway {
    /// Shared state for a configuration, its started backends, and the key ring read from its `[cluster]`.
    pub fn new(
        config: Config,
        backends: BTreeMap<String, BackendHandle>,
        keys: Arc<ClusterKeys>,
    ) -> Gateway {
        let server_info = server_info();
        let validation = protocol::validate::Config {
            served: GenerationSet::ALL,
            unknown_tool: match config.server.unknown_tool_code {
                UnknownToolCode::MethodNotFound => {
                    protocol::validate::UnknownToolCode::MethodNotFound
                }
                UnknownToolCode::InvalidParams => {
                    protocol::validate::UnknownToolCode::InvalidParams
                }
            },
            max_body_bytes: config.server.max_body_bytes,
            max_batch: config.server.max_batch,
        };
        let subscriptions = Arc::new(Subscriptions::default());
        let limits = StoreLimits {
            max: config.server.max_sessions,
            idle: Duration::from_secs(config.server.session_idle_secs),
            lifetime: Duration::from_secs(config.server.session_max_lifetime_secs),
        };
        let redis = config.cluster.redis.as_deref().and_then(|url| {
            match crate::cluster::redis::RedisLink::open(url, crate::cluster::replica()) {
                Ok(link) => Some(Arc::new(link)),
                Err(e) => {
                    // The URL was checked at start (`[cluster] redis`); what remains is the client's own refusal.
                    tracing::error!(error = %e, "redis is not used: its URL is refused");
                    None
                }
            }
        });
        let sessions =
            SessionStore::with_keys(limits, subscriptions.clone(), keys.clone(), redis.clone());
        let sse_connections = PendingStreams::new(config.server.max_sessions);
        let ledger = Ledger::new(
            config.backends.iter().map(|b| b.name.as_str()),
            Duration::from_millis(config.server.down_grace_ms),
        )
        .reserving(crate::catalog::reserved(config.catalog.search));
        let live = Live {
            version: 0,
            config: Arc::new(config.clone()),
            backends,
            tool_timeouts: Live::tool_timeouts(&config),
            policy: crate::policy::Policy::new(&config.policies),
            limits: crate::limit::Limits::new(&config.rate_limits, redis.clone()),
            exchanges: BTreeMap::new(),
            redaction: Live::redaction(&config),
        };
        let metrics = Arc::new(crate::metrics::Metrics::new(
            config.backends.iter().map(|b| b.name.as_str()),
            config.telemetry.per_tool_metrics,
            sessions.counters().clone(),
        )
        .with_redaction_labels(crate::redaction::labels()));
        Gateway {
            metrics,
            validation,
            live: LiveStore::new(live),
            catalog: CatalogStore::default(),
            ledger,
            sessions,
            sse_connections,
            endpoints: crate::endpoint::Endpoints::new(&config, &server_info),
            server_info,
            sealer: Arc::new(StateSealer::new(keys)),
            redis: redis.clone(),
            subscriptions,
            resource_cache: ResourceCache::new(
                crate::cache::MAX_ENTRIES,
                config.server.cache_max_bytes,
            ),
            parked: Arc::default(),
            url_completions: Arc::default(),
            drain: crate::drain::Drain::default(),
            auth: None,
            oauth: None,
            proxies: crate::auth::proxies::TrustedProxies::new(&config.server.trusted_proxies)
                .with_header(config.server.forwarded_header.unwrap_or_default()),
            events: None,
            builtins: Builtins::default(),
            readable_headers: Arc::new([]),
            added_middlewares: Arc::new([]),
            interceptors: None,
            config,
        }
    }

    /// The same state, asking these interceptor servers (`[[interceptor]]`).
    pub fn with_interceptors(
        mut self,
        interceptors: Option<Arc<crate::intercept::Interceptors>>,
    ) -> Gateway {
        self.interceptors = interceptors;
        self
    }

    /// The same state, with a library user's servers built in (for the backends a reload starts), the
    /// names of its middlewares and the headers they may read.
    pub fn with_additions(
        mut self,
        builtins: Builtins,
        middlewares: Arc<[String]>,
        headers: Arc<[http::HeaderName]>,
    ) -> Gateway {
        self.builtins = builtins;
        self.added_middlewares = middlewares;
        self.readable_headers = headers;
        self
    }

    /// The same state, exchanging client tokens for these backends.
    pub fn with_exchanges(
        self,
        exchanges: BTreeMap<String, Arc<crate::auth::exchange::Exchanger>>,
    ) -> Gateway {
        let live = self.live.load();
        self.live.store(Arc::new(Live {
            version: live.version,
            config: live.config.clone(),
            backends: live.backends.clone(),
            tool_timeouts: live.tool_timeouts.clone(),
            policy: live.policy.clone(),
            limits: live.limits.clone(),
            exchanges,
            redaction: live.redaction.clone(),
        }));
        self
    }

    /// The same state, starting the backends a reload adds with this event channel.
    pub fn with_events(
        mut self,
        events: tokio::sync::mpsc::Sender<handlers::BackendEvent>,
    ) -> Gateway {
        self.events = Some(events);
        self
    }

    /// What a reload replaces, as it is now (keep it for the request's length).
    pub fn live(&self) -> Arc<Live> {
        self.live.load()
    }

    /// The same state, asking users for their own authorization to these backends.
    pub fn with_oauth(mut self, oauth: Option<Arc<crate::oauth::Authorizations>>) -> Gateway {
        self.oauth = oauth;
        self
    }

    /// The same state, authenticating requests with `auth`.
    pub fn with_auth(mut self, auth: Option<crate::auth::Authenticator>) -> Gateway {
        self.auth = auth.map(Arc::new);
        self
    }

    /// What a legacy session or HTTP+SSE stream of a request from `principal` is bound to: the principal's
    /// context with `[auth]` on, nothing otherwise.
    pub fn binding(
        &self,
        principal: Option<&crate::auth::Principal>,
        auth: crate::auth_context::AuthContext,
    ) -> Option<[u8; 16]> {
        principal
            .filter(|_| self.auth.is_some())
            .map(|_| auth.binding())
    }

    /// The authorization context of a request from `principal` whose `Authorization` header is
    /// `authorization`: the principal's when authentication is on, else the header's digest.
    pub fn auth_context(
        &self,
        principal: Option<&crate::auth::Principal>,
        authorization: Option<&[u8]>,
    ) -> crate::auth_context::AuthContext {
        match (self.auth.is_some(), principal) {
            (true, Some(p)) => crate::auth_context::AuthContext::of_principal(&p.id()),
            _ => crate::auth_context::AuthContext::from_authorization(authorization),
        }
    }

    /// The capabilities the gateway declares, to legacy clients at `initialize` and to modern ones in
    /// `server/discover`: what it serves for every client (tools, prompts, resources with subscriptions,
    /// completions, and list changes, which it relays from its backends and its own catalog refreshes).
    pub fn capabilities(&self) -> Value {
        json!({
            "tools": { "listChanged": true },
            "prompts": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "completions": {},
        })
    }

    /// Instructions for the model: the backends' own instructions, each under its backend's name — of the
    /// backends the catalog `seen` (a principal's view, under a `[[policy]]`) may name.
    pub fn instructions(&self, seen: &CatalogSnapshot) -> Option<String> {
        let live = self.live();
        let parts: Vec<String> = live
            .backends
            .values()
            .filter(|b| seen.shows_backend(b.name()))
            .filter_map(|b| {
                let d = b.description()?;
                let text = d.instructions.as_deref()?.trim();
                (!text.is_empty()).then(|| format!("[{}] {text}", b.name()))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

/// The gateway's `Implementation`.
pub fn server_info() -> Implementation {
    Implementation {
        name: "mcpgw".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: Some("mcpgw MCP gateway".into()),
        ..Implementation::default()
    }
}

/// The current catalog snapshot, swapped whole on refresh. Readers clone the `Arc` and release the lock at
/// once: it is never held across an `.await`. Until the first catalog is in, requests wait for it
/// ([`CatalogStore::first`]).
#[derive(Debug)]
pub struct CatalogStore {
    /// The current snapshot, and its way to the routing actors: each holds a receiver and takes every new
    /// snapshot as it is published (a watch: the newest wins, nothing queues).
    current: tokio::sync::watch::Sender<Arc<CatalogSnapshot>>,
    /// Set once the first catalog is in (the fast path of [`CatalogStore::first`]).
    built: AtomicBool,
    first: tokio::sync::watch::Sender<bool>,
}

impl Default for CatalogStore {
    fn default() -> Self {
        CatalogStore {
            current: tokio::sync::watch::Sender::new(Arc::new(CatalogSnapshot::empty())),
            built: AtomicBool::new(false),
            first: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl CatalogStore {
    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.current.borrow().clone()
    }

    /// Every snapshot from now on, as it is published (what a routing actor holds).
    pub fn updates(&self) -> tokio::sync::watch::Receiver<Arc<CatalogSnapshot>> {
        self.current.subscribe()
    }

    /// Replaces the snapshot and pushes it to every routing actor (the first one also lets waiting
    /// requests through).
    pub fn replace(&self, next: Arc<CatalogSnapshot>) {
        self.current.send_replace(next);
        if !self.built.swap(true, Ordering::AcqRel) {
            self.first.send_replace(true);
        }
    }

    /// Whether the first catalog is in (the gateway is past starting).
    pub fn is_built(&self) -> bool {
        self.built.load(Ordering::Acquire)
    }

    /// Waits until the first catalog is in, at most `within`; whether it is.
    pub async fn first(&self, within: Duration) -> bool {
        if self.is_built() {
            return true;
        }
        let mut rx = self.first.subscribe();
        matches!(
            tokio::time::timeout(within, rx.wait_for(|built| *built)).await,
            Ok(Ok(_))
        )
    }
}
