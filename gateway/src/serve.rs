//! `mcpgw serve`: binds the front door, starts the backends, serves at once while the first catalog is built
//! (requests wait for it, at most `list_timeout_ms` and a second), keeps the catalog fresh as backends
//! (re)connect, go down or announce list changes, and serves HTTP (or stdio) until stopped.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::{App, HttpServer};
use handlers::BackendEvent;

use crate::state::start::start_backends;
use tokio::sync::mpsc;

use crate::catalog::CatalogError;
use crate::config::Config;
use crate::state::Gateway;

mod additions;
mod announce;
pub(crate) mod builder;
mod command_line;
/// Driving the pipeline with no socket: for the tests and `cargo bench -p gateway --bench pipeline` only.
#[cfg(any(test, feature = "internals"))]
pub mod in_process;
mod stop;

pub(crate) use additions::Additions;

/// Backend events waiting to be handled; beyond it events are dropped (with a warning) rather than queued.
const EVENTS: usize = 1024;

/// Why serving stopped or could not start. Each message holds its cause (none is a `source` as well, which
/// would print it twice).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Two backends expose the same name.
    #[error("catalog: {0}")]
    Catalog(CatalogError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// Serving failed.
    #[error("serving failed: {0}")]
    Io(std::io::Error),
    /// The front door's TLS files do not load.
    #[error("tls: {0}")]
    Tls(crate::tls::TlsError),
    /// The key ring does not load.
    #[error("{0}")]
    Keys(#[from] crate::cluster::KeysError),
    /// `[auth]` cannot be set up (a secret or key file), `[server] strict` refuses the settings, or no
    /// `[[policy]]` rule can apply to stdio's requests.
    #[error("{0}")]
    Auth(String),
    /// The config names a server or middleware this binary was not built with, or a library user's
    /// addition is refused (a header a middleware may not read).
    #[error("{0}")]
    Additions(String),
}

impl From<CatalogError> for ServeError {
    fn from(e: CatalogError) -> ServeError {
        ServeError::Catalog(e)
    }
}

impl From<crate::tls::TlsError> for ServeError {
    fn from(e: crate::tls::TlsError) -> ServeError {
        ServeError::Tls(e)
    }
}

/// How the config is reloaded while serving HTTP.
#[derive(Debug, Clone, Default)]
pub struct Reloading {
    /// The file the config came from, read again by SIGHUP, `POST /admin/reload` and `watch`; `None` (the
    /// demo config): only the other parts (certificates, key ring) reload.
    pub source: Option<crate::reload::config::ConfigSource>,
    /// Reload when the file changes (`--watch`).
    pub watch: bool,
}

/// Runs the gateway until it is stopped (Ctrl-C or SIGTERM for HTTP; end of standard input for stdio), with
/// the config reloaded from its file as `reloading` says and what a library user `added`.
pub(crate) fn run_with(
    config: Config,
    stdio: bool,
    reloading: Reloading,
    added: Additions,
) -> Result<(), ServeError> {
    crate::front::limits::raise_open_files_logged(config.server.max_connections);
    actix_rt::System::new().block_on(start(config, stdio, reloading, added))
}

async fn start(
    config: Config,
    stdio: bool,
    reloading: Reloading,
    added: Additions,
) -> Result<(), ServeError> {
    // A config for another binary (a server or middleware this one was not built with) does not start.
    added.check(&config)?;
    if stdio {
        // Stdio carries no credential: only `principal = "*"` rules apply to its requests.
        crate::config::validate_reach(&config.policies, false, "over stdio")
            .map_err(|e| ServeError::Auth(e.to_string()))?;
    } else {
        config
            .validate_strict()
            .map_err(|e| ServeError::Auth(e.to_string()))?;
    }
    if !stdio {
        for warning in crate::check::warnings(&config) {
            tracing::warn!(setting = warning.setting, "{}", warning.text);
        }
    }
    let auth = crate::auth::Authenticator::from_config(
        &config.auth,
        &Arc::new(crate::egress::Egress::from_config(&config.egress)),
    )
    .map_err(ServeError::Auth)?;
    announce::announce_auth(&config, auth.as_ref(), stdio);
    // The front door first: an address in use (or TLS files that do not load) stops start-up before any
    // backend is started.
    let front = if stdio {
        None
    } else {
        Some(FrontDoor::open(&config)?)
    };
    // The admin listener too (HTTP only: `--stdio` has no listener of its own).
    let admin = match config.admin.listen {
        Some(addr) if !stdio => Some(
            std::net::TcpListener::bind(addr).map_err(|error| ServeError::Bind { addr, error })?,
        ),
        Some(_) => {
            tracing::info!("[admin] listen is not served with --stdio");
            None
        }
        None => None,
    };
    let keys = Arc::new(crate::cluster::ClusterKeys::load(&config.cluster)?);
    announce::announce_keys(&keys, &config);
    let (events_tx, events_rx) = mpsc::channel(EVENTS);
    let credentials = crate::auth::backend::prepare(&config)
        .await
        .map_err(ServeError::Auth)?;
    let backends = start_backends(&config, events_tx.clone(), &credentials, &added.servers);
    let exchanges = crate::auth::exchange::exchangers(&config).map_err(ServeError::Auth)?;
    // The interceptor servers, started as backends are, with their own credentials.
    let mut reached = config.clone();
    reached.backends = config
        .interceptors
        .iter()
        .filter_map(|i| i.as_backend().ok())
        .collect();
    let interceptor_credentials = crate::auth::backend::prepare(&reached)
        .await
        .map_err(ServeError::Auth)?;
    let interceptors = crate::intercept::Interceptors::start(&config, &interceptor_credentials);
    let gw = Gateway::new(config, backends, keys.clone())
        .with_additions(added.servers.clone(), added.middleware_names(), added.headers.clone())
        .with_interceptors(interceptors)
        .with_auth(auth)
        .with_exchanges(exchanges)
        .with_events(events_tx);
    let oauth = crate::oauth::Authorizations::new(
        &gw.config,
        keys,
        gw.redis.clone(),
        &credentials,
        gw.auth.clone(),
    )
    .map_err(ServeError::Auth)?;
    let gw = Arc::new(gw.with_oauth(oauth));
    keep_listers(&gw);
    if let Some(auth) = &gw.auth {
        auth.start();
    }
    share_sessions(&gw);
    // The front door serves at once; requests wait for the first catalog (`/readyz` says "starting").
    let first = first_catalog(gw.clone(), events_rx);
    let result = match front {
        None => match first.await {
            Ok(()) => crate::front::stdio::run(gw.clone(), added.middlewares)
                .await
                .map_err(ServeError::Io),
            Err(e) => Err(e),
        },
        Some(front) => {
            serve_http(gw.clone(), front, admin, first, reloading, added.middlewares).await
        }
    };
    // The backends stop last, after every request is answered, each with its grace period (never
    // restarted: a shut-down backend stays down). The stdio front's end (its client closed standard input)
    // is a shutdown too: its backends going down are no news.
    gw.drain.advance(crate::drain::Phase::CutOff);
    for b in gw.live().backends.values() {
        b.shutdown();
    }
    if let Some(interceptors) = &gw.interceptors {
        interceptors.shutdown();
    }
    if !handlers::processes_ended(handlers::STOP_BOUND).await {
        tracing::warn!("a backend process did not end in time: it is killed as the gateway exits");
    }
    result
}

/// Keeps the tokens per-user backends are listed with fresh, and has a backend connect at once when its
/// first user's consent gave it one.
fn keep_listers(gw: &Arc<Gateway>) {
    let Some(oauth) = gw.oauth.clone() else {
        return;
    };
    let (weak, weak_too) = (Arc::downgrade(gw), Arc::downgrade(gw));
    let nudge = move |backend: &str| {
        if let Some(gw) = weak.upgrade()
            && let Some(handle) = gw.live().backend(backend)
        {
            handle.connect_now();
        }
    };
    // Down on a 401 or 403: the token it is listed with is refused.
    let refused = move |backend: &str| {
        weak_too
            .upgrade()
            .and_then(|gw| gw.live().backend(backend).and_then(|h| h.down_reason()))
            .is_some_and(|r| r.contains("HTTP 401") || r.contains("HTTP 403"))
    };
    actix_rt::spawn(oauth.keep_listers(nudge, refused));
}

/// With Redis: other replicas' events applied here, the kept DELETEs published when it is back, and the
/// last uses of sessions published every `session::touch_every(session_idle_secs)`. Bounded: the events wait in a channel of 1,024
/// (the listener waits when it is full; Redis buffers the rest for the subscriber, within its own limits).
fn share_sessions(gw: &Arc<Gateway>) {
    let Some(link) = gw.redis.clone() else {
        return;
    };
    tracing::info!(replica = link.replica(), "sessions shared through redis");
    let (tx, mut rx) = mpsc::channel(1024);
    let listening = link.clone();
    actix_rt::spawn(async move { listening.listen(tx).await });
    let applying = gw.clone();
    actix_rt::spawn(async move {
        while let Some(event) = rx.recv().await {
            applying.sessions.apply(event);
        }
    });
    let touching = gw.clone();
    actix_rt::spawn(async move {
        let idle = std::time::Duration::from_secs(touching.config.server.session_idle_secs);
        let mut every = tokio::time::interval(crate::session::touch_every(idle));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            touching.sessions.publish_uses().await;
            if link.pending() > 0 {
                link.flush_pending().await;
            }
        }
    });
}

/// Builds the first catalog (every backend gets `list_timeout_ms` to connect and list), names the backends
/// left out on a start-up line, and keeps the catalog fresh from then on.
async fn first_catalog(
    gw: Arc<Gateway>,
    events: mpsc::Receiver<BackendEvent>,
) -> Result<(), ServeError> {
    let snapshot = crate::notify::listing::first_catalog(&gw).await?;
    // The backends left out are named (a list, not its debug form), and only when there are some.
    let missing = snapshot.backends_missing().join(",");
    if missing.is_empty() {
        tracing::info!(backends = gw.live().backends.len(), "catalog built");
    } else {
        tracing::info!(backends = gw.live().backends.len(), %missing, "catalog built");
    }
    gw.catalog.replace(Arc::new(snapshot));
    for report in gw.ledger.report(std::time::Instant::now()) {
        if let Some(reason) = report.standing.reason() {
            // Named on a start-up line: the gateway serves without it and adds it when it comes up.
            crate::telemetry::logs::announce(
                tracing::Level::WARN,
                &format!(
                    "mcpgw: backend {} is down at start ({reason}); serving without it until it comes up",
                    report.name
                ),
                serde_json::json!({"backend": report.name, "reason": reason}),
            );
        }
    }
    for name in gw.live().backends.keys() {
        crate::notify::changes::sync_backend(&gw, name);
    }
    actix_rt::spawn(crate::notify::changes::watch(gw, events));
    Ok(())
}

/// The front door's socket, bound at start, and its TLS.
struct FrontDoor {
    listener: std::net::TcpListener,
    tls: Option<crate::tls::ServerTls>,
}

impl FrontDoor {
    fn open(config: &Config) -> Result<FrontDoor, ServeError> {
        let addr = config.server.listen;
        let tls = crate::config::server_files(&config.server)
            .map(crate::tls::ServerTls::load)
            .transpose()?;
        let listener =
            std::net::TcpListener::bind(addr).map_err(|error| ServeError::Bind { addr, error })?;
        Ok(FrontDoor { listener, tls })
    }
}

async fn serve_http(
    gw: Arc<Gateway>,
    front: FrontDoor,
    admin: Option<std::net::TcpListener>,
    first_catalog: impl std::future::Future<Output = Result<(), ServeError>>,
    reloading: Reloading,
    added: crate::pipeline::Added,
) -> Result<(), ServeError> {
    let workers = gw.config.server.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let factory_gw = gw.clone();
    let factory_added = added.clone();
    let connections =
        crate::front::http::connections::ConnectionLimit::new(gw.config.server.max_connections)
            .with_max_streams(
                gw.config
                    .server
                    .h2_max_concurrent_streams
                    .unwrap_or(crate::config::DEFAULT_H2_MAX_CONCURRENT_STREAMS),
            );
    let server = HttpServer::new(move || {
        let (gw, added) = (factory_gw.clone(), factory_added.clone());
        // The guard wraps every route: the earliest point of a request the gateway controls.
        App::new()
            .wrap(actix_web::middleware::from_fn(
                crate::front::http::guard::middleware,
            ))
            .configure(move |cfg| crate::front::http::configure(cfg, gw, added))
    })
    .workers(workers)
    // One hook (actix-web keeps only the last one set): the connection bound first, then the guard's mark.
    .on_connect({
        let admit = connections.hook();
        move |io: &dyn std::any::Any, data: &mut actix_web::dev::Extensions| {
            admit(io, data);
            crate::front::http::guard::on_connect(io, data);
        }
    })
    .max_connections(connections.per_worker())
    // Stopping is the drain's (`stop`): actix-web's own signal handling would close the listener at once.
    .disable_signals()
    .shutdown_timeout(stop::shutdown_timeout(&gw));
    let addr = front
        .listener
        .local_addr()
        .unwrap_or(gw.config.server.listen);
    // The drain closes the listening socket itself (see `stop`): a duplicate of it.
    let listener = match front.listener.try_clone() {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(error = %e, "no duplicate of the listener: a drain closes it only when the server stops");
            None
        }
    };
    let bound = |error| ServeError::Bind { addr, error };
    let (server, scheme) = match &front.tls {
        Some(tls) => (
            server
                .listen_rustls_0_23(front.listener, tls.server_config())
                .map_err(bound)?,
            "https",
        ),
        None => (server.listen(front.listener).map_err(bound)?, "http"),
    };
    // The admin listener serves the same certificate beyond loopback (reloaded with the front door's).
    let front_tls = front.tls.clone();
    let mut reloadable: Vec<Arc<dyn crate::reload::Reload>> = front
        .tls
        .into_iter()
        .map(|t| Arc::new(t) as Arc<dyn crate::reload::Reload>)
        .collect();
    reloadable.push(gw.sessions.keys().clone());
    if let Some(keys) = gw.auth.as_ref().and_then(|a| a.key_set()) {
        reloadable.push(keys.clone());
    }
    let config_reload = reloading
        .source
        .map(|source| crate::reload::config::ConfigReload::new(gw.clone(), source));
    let reloader = crate::reload::Reloader::new(config_reload, reloadable);
    reloader.on_sighup().map_err(ServeError::Io)?;
    if reloading.watch {
        reloader.watch(std::time::Duration::from_secs(1));
    }
    let admin = admin
        .map(|listener| start_admin(&gw, reloader.clone(), listener, front_tls.as_ref(), added))
        .transpose()?;
    for addr in server.addrs() {
        // The one line a user needs: where to point a client. On stderr with the logs; stdout stays clean.
        let backends = gw.live().backends.len();
        crate::telemetry::logs::announce(
            tracing::Level::INFO,
            &format!(
                "mcpgw listening on {scheme}://{addr}/mcp ({backends} backends, {workers} workers)"
            ),
            serde_json::json!({"url": format!("{scheme}://{addr}/mcp"), "backends": backends,
                "workers": workers}),
        );
        for endpoint in gw.endpoints.all().iter().skip(1) {
            crate::telemetry::logs::announce(
                tracing::Level::INFO,
                &format!(
                    "  endpoint {:?} on {scheme}://{addr}{}",
                    endpoint.server_info.name, endpoint.path
                ),
                serde_json::json!({"endpoint": endpoint.server_info.name,
                    "url": format!("{scheme}://{addr}{}", endpoint.path)}),
            );
        }
    }
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn({
        let (gw, handle, connections) = (gw.clone(), handle.clone(), connections.clone());
        async move {
            if let Err(e) = stop::on_signal(gw, handle, connections, listener).await {
                tracing::error!(error = %e, "cannot wait for SIGTERM or SIGINT");
            }
        }
    });
    let mut server = std::pin::pin!(server);
    tokio::select! {
        served = &mut server => {
            stop::linger(&gw, &connections).await;
            stop::admin(admin).await;
            return served.map_err(ServeError::Io);
        }
        first = first_catalog => {
            if let Err(e) = first {
                // A collision in the first catalog: nothing can be routed; stop serving and say why. The
                // stop is carried out by the server's own future, awaited next.
                drop(handle.stop(false));
                let _stopped = server.await;
                stop::admin(admin).await;
                return Err(e);
            }
        }
    }
    let served = server.await.map_err(ServeError::Io);
    stop::linger(&gw, &connections).await;
    stop::admin(admin).await;
    served
}

/// Starts the admin view's server on its listener (bound at start), running on the current system until
/// `stop::admin`.
fn start_admin(
    gw: &Arc<Gateway>,
    reload: crate::reload::Reloader,
    listener: std::net::TcpListener,
    front_tls: Option<&crate::tls::ServerTls>,
    added: crate::pipeline::Added,
) -> Result<actix_web::dev::ServerHandle, ServeError> {
    let addr = listener.local_addr().map_err(|error| ServeError::Bind {
        addr: gw.config.admin.listen.unwrap_or(gw.config.server.listen),
        error,
    })?;
    let admin = crate::front::admin::Admin {
        gw: gw.clone(),
        reload,
        addr,
        tls: crate::front::admin::tls_for(addr, front_tls),
        added,
    };
    let scheme = admin.scheme();
    let server = crate::front::admin::server(admin, listener)
        .map_err(|error| ServeError::Bind { addr, error })?;
    crate::telemetry::logs::announce(
        tracing::Level::INFO,
        &format!("mcpgw admin view on {scheme}://{addr}/admin/"),
        serde_json::json!({"admin": format!("{scheme}://{addr}/admin/")}),
    );
    let handle = server.handle();
    actix_rt::spawn(async move {
        if let Err(e) = server.await {
            tracing::warn!(error = %e, "the admin view stopped");
        }
    });
    Ok(handle)
}
