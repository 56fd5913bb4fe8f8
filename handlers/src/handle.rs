//! [`BackendHandle`]: the only way into a backend actor. It bounds the requests in flight with a semaphore
//! (`try_acquire`: a full backend answers `Overloaded` at once instead of queueing), answers `Unavailable`
//! at once while the backend is down, and puts a deadline on every request. On the data path the permits
//! are taken by the share rule (`crate::share`: a caller over its share takes one only while a share's
//! worth stays free) and the request passes through the backend's circuit breaker (`crate::circuit`),
//! recording its outcome.
//!
//! Two bulkheads, never shared: the data path (calls, reads, gets, completions) has the configured
//! `max_in_flight` permits; control traffic (the lists, discovery, ping, subscriptions:
//! [`Method::is_control`]) has [`CONTROL_PERMITS`] of its own, so a backend whose data path is saturated
//! still lists, and stays in the catalog.
//!
//! [`Method::is_control`]: protocol::method::Method::is_control

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix::{Actor, Addr};
use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::actor::{BackendActor, renewer};
use crate::callers::{Asker, Callers};
use crate::circuit::{Circuit, CircuitState};
use crate::config::BackendConfig;
use crate::description::{ServerDescription, TransportKind};
use crate::events::{BackendEvent, Notifier};
use crate::link::Link;
use crate::listen::ListenFilter;
use crate::related::ProgressRoutes;
use crate::request::BackendRequest;
use crate::share::Shares;
use crate::shared::{CONTROL_PERMITS, Shared, State};

/// How much longer than the request deadline the handle waits for the link's answer. The link's own
/// deadline answers first; this only guards against a link that cannot keep it.
const DELIVERY_SLACK: Duration = Duration::from_millis(250);

/// Where a backend stands, as [`BackendHandle::status`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendState {
    /// Its first connection (or a reconnect) is being made.
    Connecting,
    /// Handshake done: requests go through.
    Ready,
    /// Its last connect attempt failed or its connection was lost; it keeps reconnecting.
    Down,
    /// Shut down.
    Stopped,
}

impl BackendState {
    /// `"connecting"`, `"ready"`, `"down"` or `"stopped"`.
    pub fn label(self) -> &'static str {
        match self {
            BackendState::Connecting => "connecting",
            BackendState::Ready => "ready",
            BackendState::Down => "down",
            BackendState::Stopped => "stopped",
        }
    }
}

/// A backend as an operator sees it at one moment ([`BackendHandle::status`]).
#[derive(Debug, Clone)]
pub struct BackendStatus {
    /// Connecting, ready, down or stopped.
    pub state: BackendState,
    /// The transport found at the handshake, else the one configured (an HTTP backend counts as Streamable
    /// HTTP until its probe finds HTTP+SSE).
    pub transport: TransportKind,
    /// The generation it speaks, while ready.
    pub generation: Option<protocol::Generation>,
    /// Data-path requests in flight now (calls, reads, gets, completions).
    pub in_flight: usize,
    /// Its `max_in_flight`.
    pub max_in_flight: usize,
    /// Control requests in flight now (lists, discovery, ping, subscriptions).
    pub control_in_flight: usize,
    /// How many times it became ready again after its first connection (reconnects and restarts).
    pub restarts: u64,
    /// Why it last went down, kept after it is up again.
    pub last_error: Option<String>,
    /// Its circuit breaker.
    pub circuit: CircuitState,
}

/// A handle on one backend's actor. Cheap to clone; the actor's address never leaves this crate.
#[derive(Clone)]
pub struct BackendHandle {
    addr: Addr<BackendActor>,
    progress: Arc<ProgressRoutes>,
    callers: Arc<Callers>,
    shared: Arc<Shared>,
    /// The data path's bulkhead and each caller's share of it.
    shares: Arc<Shares>,
    /// Control traffic's own (see [`CONTROL_PERMITS`]).
    control: Arc<Semaphore>,
}

impl std::fmt::Debug for BackendHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendHandle")
            .field("name", &self.shared.name)
            .field("state", &*self.shared.state.borrow())
            .field("free_permits", &self.shares.free())
            .field("free_control_permits", &self.control.available_permits())
            .finish()
    }
}

impl BackendHandle {
    /// Starts the backend's actor on the current actix arbiter (must be called inside a running actix
    /// System) and begins connecting at once. Events go to `events` without ever blocking the backend.
    pub fn start(config: BackendConfig, events: mpsc::Sender<BackendEvent>) -> BackendHandle {
        let (state, _) = watch::channel(State::Connecting);
        let shared = Arc::new(Shared {
            name: config.name.clone(),
            request_timeout: config.request_timeout,
            max_in_flight: config.max_in_flight.max(1),
            link: RwLock::new(None),
            state,
            stop: CancellationToken::new(),
            filter: watch::Sender::new(ListenFilter::default()),
            honoured: watch::Sender::new(None),
            circuit: Circuit::new(&config.name, config.circuit),
            connects: AtomicU64::new(0),
            last_error: std::sync::Mutex::new(None),
            configured: match &config.transport {
                crate::config::Transport::Stdio { .. } => TransportKind::Stdio,
                crate::config::Transport::Http { .. } => TransportKind::StreamableHttp,
                crate::config::Transport::InProcess(_) => TransportKind::InProcess,
            },
            connect_now: tokio::sync::Notify::new(),
        });
        let shares = Arc::new(Shares::new(config.max_in_flight, config.share()));
        let notifier = Notifier::start(&config.name, Callers::new(&config.roots), events);
        let progress = Arc::clone(notifier.progress());
        let callers = Arc::clone(notifier.callers());
        let addr = BackendActor::new(config, Arc::clone(&shared), notifier).start();
        BackendHandle {
            addr,
            progress,
            callers,
            shared,
            shares,
            control: Arc::new(Semaphore::new(CONTROL_PERMITS)),
        }
    }

    /// The backend's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the backend said at its handshake; `None` while connecting or down.
    pub fn description(&self) -> Option<Arc<ServerDescription>> {
        match &*self.shared.state.borrow() {
            State::Ready(d) => Some(Arc::clone(d)),
            _ => None,
        }
    }

    /// Why the backend is down (its last connect attempt failed or its connection was lost); `None` while
    /// connecting, ready or shut down.
    pub fn down_reason(&self) -> Option<String> {
        match &*self.shared.state.borrow() {
            State::Down(reason) => Some(reason.clone()),
            _ => None,
        }
    }

    /// One request: takes a permit of its bulkhead (the data path's, or control traffic's for
    /// [`Method::is_control`] methods) without waiting (none free: `Overloaded` at once), answers
    /// `Unavailable` at once while the backend is down, and otherwise returns the backend's raw `result` or
    /// a failure within the request timeout. Dropping the future abandons the request: the backend is told
    /// (`notifications/cancelled`, or the response stream is dropped).
    ///
    /// While it is in flight, the backend's requests (sampling, elicitation, roots) that belong to it go to
    /// `request.related` as [`crate::Related::InputRequest`]: those on its own response stream (Streamable HTTP,
    /// either era), and on a multiplexed connection (stdio, HTTP+SSE) those that arrive while it is the only
    /// request in flight.
    ///
    /// [`Method::is_control`]: protocol::method::Method::is_control
    pub async fn call(&self, mut request: BackendRequest) -> Result<Box<RawValue>, Failure> {
        // The data path's permit, by the share rule (`crate::share`: a caller over its share takes one only
        // while a share's worth stays free); control traffic's from its own bulkhead.
        let (_control, _data) = if request.method.is_control() {
            let Ok(permit) = self.control.try_acquire() else {
                return Err(Failure::Overloaded {
                    backend: self.shared.name.clone(),
                });
            };
            (Some(permit), None)
        } else {
            (
                None,
                Some(self.shares.take(request.caller, &self.shared.name)?),
            )
        };
        if let Some(failure) = self.shared.refusal() {
            return Err(failure);
        }
        // Control traffic (listing) is never refused by the circuit: the catalog's own rule keeps a
        // failing backend's last good catalog, marked stale.
        let pass = if request.method.is_control() {
            None
        } else {
            Some(self.shared.circuit.pass(Instant::now())?)
        };
        // The client's progress token becomes one unique to this backend, routed back while the call lives.
        let (params, _progress_route) = self
            .progress
            .rewrite(request.params.take(), request.related.as_ref());
        request.params = params;
        let timeout = request.timeout.unwrap_or(self.shared.request_timeout);
        let deadline = Instant::now() + timeout;
        // In flight until the call ends: the backend's requests may be attributed to it. Control traffic
        // is the gateway's own (a listing, a ping): no client stands behind it, so a backend request that
        // arrives while only it is in flight is unattributed (configured roots, or none), never refused as
        // if a client had not declared a capability.
        let _caller = (!request.method.is_control()).then(|| {
            self.callers.register(Asker::new(
                request.related.clone(),
                deadline,
                request.client_capabilities.as_ref(),
            ))
        });
        // The request runs here, on the caller's task and thread: what it needs of the backend is the link
        // the backend actor published (shared state, cloned out), so a mailbox hop would carry nothing (the
        // design card: such a hop is a function call). Dropping this future cancels the backend request.
        let after_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let outcome = match self.shared.link() {
            None => Err(self.not_connected()),
            Some(link) => {
                let renew = matches!(link, Link::Legacy(_))
                    .then(|| renewer(self.addr.downgrade(), self.shared.name.clone()));
                // The link keeps `deadline` itself; this bound only guards against a link that cannot.
                // Boxed: the exchange's state lives on the heap once, and the futures above this one, which
                // are moved several times on their way to the runtime, stay small.
                match tokio::time::timeout_at(
                    deadline + DELIVERY_SLACK,
                    Box::pin(link.call(request, deadline, renew)),
                )
                .await
                {
                    // The link names the backend's own timeout; this request's may be a tool's.
                    Ok(outcome) => outcome.map_err(|f| match f {
                        Failure::Timeout { backend, .. } => Failure::Timeout { backend, after_ms },
                        f => f,
                    }),
                    Err(_) => Err(Failure::Timeout {
                        backend: self.shared.name.clone(),
                        after_ms,
                    }),
                }
            }
        };
        if let Some(pass) = pass {
            self.shared.circuit.record(
                pass,
                crate::circuit::counts_against(&outcome),
                Instant::now(),
            );
        }
        outcome
    }

    /// Why a request finds no connection to run on (the backend actor has withdrawn its link).
    fn not_connected(&self) -> Failure {
        let reason = match self.shared.state() {
            State::Down(reason) => format!("the backend is down: {reason}"),
            State::Stopped => "the backend was shut down".to_owned(),
            _ => "the backend is not connected".to_owned(),
        };
        Failure::Unavailable {
            backend: self.shared.name.clone(),
            reason,
        }
    }

    /// The deadline of one request to it.
    pub fn request_timeout(&self) -> Duration {
        self.shared.request_timeout
    }

    /// The state of the backend's circuit breaker.
    pub fn circuit(&self) -> CircuitState {
        self.shared.circuit.state()
    }

    /// What an operator sees of the backend now (metrics, the admin view): read from atomics and the state
    /// channel, no lock held by the data path.
    pub fn status(&self) -> BackendStatus {
        let (state, description) = match &*self.shared.state.borrow() {
            State::Connecting => (BackendState::Connecting, None),
            State::Ready(d) => (BackendState::Ready, Some(Arc::clone(d))),
            State::Down(_) => (BackendState::Down, None),
            State::Stopped => (BackendState::Stopped, None),
        };
        let connects = self.shared.connects.load(Ordering::Relaxed);
        BackendStatus {
            state,
            transport: description
                .as_ref()
                .map_or(self.shared.configured, |d| d.transport),
            generation: description.as_ref().map(|d| d.generation),
            in_flight: self.shares.in_flight(),
            max_in_flight: self.shared.max_in_flight,
            control_in_flight: CONTROL_PERMITS.saturating_sub(self.control.available_permits()),
            restarts: connects.saturating_sub(1),
            last_error: self
                .shared
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            circuit: self.shared.circuit.state(),
        }
    }

    /// Waits until the backend is ready (handshake done) or `within` passes.
    pub async fn wait_ready(&self, within: Duration) -> Option<Arc<ServerDescription>> {
        self.wait_until(within, |s| matches!(s, State::Ready(_) | State::Stopped))
            .await
    }

    /// Waits until the backend's first connect attempt settles — ready, or down (refused, failed, timed
    /// out: it keeps reconnecting in the background) — or `within` passes; its description if ready.
    pub async fn wait_settled(&self, within: Duration) -> Option<Arc<ServerDescription>> {
        self.wait_until(within, |s| !matches!(s, State::Connecting))
            .await
    }

    async fn wait_until(
        &self,
        within: Duration,
        done: impl FnMut(&State) -> bool,
    ) -> Option<Arc<ServerDescription>> {
        let mut rx = self.shared.state.subscribe();
        let ready = tokio::time::timeout(within, rx.wait_for(done)).await;
        match ready {
            Ok(Ok(state)) => match &*state {
                State::Ready(d) => Some(Arc::clone(d)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Keeps one long-lived subscription to the backend with this filter, replacing the previous filter; an
    /// empty filter ends it. Never blocks: the actor picks up the latest filter, now or once connected, and
    /// re-establishes the subscription after every reconnect, restart or session renewal.
    ///
    /// Modern backends get a `subscriptions/listen` request with the parts of the filter their capabilities
    /// support (HTTP: its SSE response stream kept open, dropped to end it; stdio: the request kept in
    /// flight, ended with `notifications/cancelled`), sent again with backoff when it drops. Legacy backends
    /// get `resources/subscribe` / `resources/unsubscribe` for the URIs added / removed; their list changes
    /// come unsolicited. Whatever the subscription delivers (`notifications/resources/updated`,
    /// `notifications/*/list_changed`) arrives as [`BackendEvent::Notification`], without the subscription
    /// id in `_meta`; the acknowledgement is consumed here (see [`BackendHandle::listening`]).
    pub fn listen(&self, filter: ListenFilter) {
        let filter = filter.normalized();
        self.shared.filter.send_if_modified(|current| {
            let changed = *current != filter;
            *current = filter;
            changed
        });
    }

    /// What the backend honours of the current filter: what it acknowledged (modern) or what it supports
    /// and accepted (legacy: `listChanged` capabilities, URIs subscribed). `None` before the first
    /// acknowledgement, while the backend is down or reconnecting, and when the filter is empty.
    pub fn listening(&self) -> Option<ListenFilter> {
        self.shared.honoured.borrow().clone()
    }

    /// A backend that is down tries to connect now instead of waiting out its reconnect delay (what it
    /// lacked — a credential — is there now); once, and never sooner than a second after its last attempt.
    pub fn connect_now(&self) {
        self.shared.connect_now.notify_one();
    }

    /// Stops the actor: in-flight requests are answered, a stdio child gets stdin closed, then SIGTERM
    /// after a grace period, then SIGKILL; a legacy HTTP session is deleted (best effort).
    pub fn shutdown(&self) {
        self.shared.set(State::Stopped);
        self.shared.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use protocol::method::Method;
    use tokio::sync::{mpsc, oneshot};

    use super::*;
    use crate::Transport;

    fn echo() -> BackendRequest {
        let params =
            serde_json::value::to_raw_value(&serde_json::json!({"name": "echo", "arguments": {}}))
                .ok();
        BackendRequest::new(Method::ToolsCall, params)
    }

    /// A request runs on its caller's task, whichever arbiter that is: no actor of the backend's stands in
    /// between (a handle taken to another arbiter answers there), and a shut-down backend answers at once.
    #[actix_rt::test]
    async fn a_request_runs_where_its_caller_is_and_a_shut_down_backend_answers_at_once() {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fake_mcp_server.py"
        );
        let (events, _rx) = mpsc::channel(64);
        let backend = BackendHandle::start(
            BackendConfig::new(
                "w",
                Transport::stdio(["python3", "-u", script, "--era", "modern"]),
            ),
            events,
        );
        assert!(backend.wait_ready(Duration::from_secs(20)).await.is_some());
        assert!(backend.call(echo()).await.is_ok());

        let arbiter = actix_rt::Arbiter::new();
        let (tx, rx) = oneshot::channel();
        let there = backend.clone();
        // The call's future stays on the arbiter that made it (it is not `Send`): started there.
        assert!(arbiter.spawn_fn(move || {
            actix_rt::spawn(async move {
                let answered = there.call(echo()).await.is_ok();
                let _ = tx.send((answered, std::thread::current().id()));
            });
        }));
        let (answered, thread) = rx.await.unwrap();
        assert!(answered);
        assert_ne!(thread, std::thread::current().id());

        backend.shutdown();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let refused = tokio::time::timeout(Duration::from_secs(1), backend.call(echo()))
            .await
            .expect("answered at once");
        assert!(
            matches!(refused, Err(Failure::Unavailable { .. })),
            "{refused:?}"
        );
        arbiter.stop();
    }
}
