//! What a backend's actor and its handles share ([`Shared`]): the backend's state as
//! every handle sees it, the connection the actor publishes, the listen filter, the circuit breaker; and
//! the control traffic's permits ([`CONTROL_PERMITS`]) every actor's mailbox is bounded by.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use protocol::shape::Failure;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::circuit::Circuit;
use crate::description::{ServerDescription, TransportKind};
use crate::link::Link;
use crate::listen::ListenFilter;

/// Control requests (see [`Method::is_control`]) in flight at once per backend, beside the data path's
/// permits. The gateway lists one backend one page at a time, so a few are plenty; beyond them a control
/// request is `Overloaded` too.
///
/// [`Method::is_control`]: protocol::method::Method::is_control
pub const CONTROL_PERMITS: usize = 4;

/// A backend's state as every handle sees it.
#[derive(Debug, Clone)]
pub(crate) enum State {
    Connecting,
    Ready(Arc<ServerDescription>),
    Down(String),
    Stopped,
}

/// What the actor and its handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) request_timeout: Duration,
    pub(crate) max_in_flight: usize,
    /// The current connection, published by the backend actor while it is up.
    pub(crate) link: RwLock<Option<Link>>,
    pub(crate) state: watch::Sender<State>,
    /// Cancelled by [`crate::BackendHandle::shutdown`]; the actor stops when it is.
    pub(crate) stop: CancellationToken,
    /// The filter the gateway wants ([`crate::BackendHandle::listen`]); the latest one wins, nothing queues.
    pub(crate) filter: watch::Sender<ListenFilter>,
    /// What the backend honours of it ([`crate::BackendHandle::listening`]), set by the actor's subscription.
    pub(crate) honoured: watch::Sender<Option<ListenFilter>>,
    /// The data path's circuit breaker.
    pub(crate) circuit: Circuit,
    /// How many times the backend became ready (its first connection, then every reconnect or restart).
    pub(crate) connects: AtomicU64,
    /// The last reason it went down, kept after it is up again (for operators; never a basis for decisions).
    pub(crate) last_error: std::sync::Mutex<Option<String>>,
    /// The transport as configured.
    pub(crate) configured: TransportKind,
    /// Wakes a backend waiting out its reconnect delay ([`crate::BackendHandle::connect_now`]).
    pub(crate) connect_now: tokio::sync::Notify,
}

impl Shared {
    /// Changes the state; a stopped backend stays stopped.
    pub(crate) fn set(&self, state: State) {
        match &state {
            State::Ready(_) => {
                self.connects.fetch_add(1, Ordering::Relaxed);
                // Before anyone sees it ready: its first request probes an open circuit at once.
                self.circuit.reconnected();
            }
            State::Down(reason) => {
                *self
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            }
            State::Connecting | State::Stopped => {}
        }
        self.state.send_if_modified(|current| {
            if matches!(current, State::Stopped) {
                return false;
            }
            *current = state;
            true
        });
    }

    pub(crate) fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// The current connection, if up (cloned out: the lock is released at once).
    pub(crate) fn link(&self) -> Option<Link> {
        self.link
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Publishes (or withdraws) the connection requests use.
    pub(crate) fn set_link(&self, link: Option<Link>) {
        *self.link.write().unwrap_or_else(PoisonError::into_inner) = link;
    }

    /// Follows the filter the gateway wants.
    pub(crate) fn desired_filter(&self) -> watch::Receiver<ListenFilter> {
        self.filter.subscribe()
    }

    /// Records what the backend honours (`None`: no subscription in place).
    pub(crate) fn set_listening(&self, honoured: Option<ListenFilter>) {
        self.honoured.send_if_modified(|current| {
            let changed = *current != honoured;
            *current = honoured;
            changed
        });
    }

    /// What every actor of the backend does when it starts: bound its mailbox to the permits of both
    /// bulkheads plus `slack` (actix does not bound `send`; the permits do) and stop when the backend is
    /// shut down.
    pub(crate) fn start_actor<A>(&self, ctx: &mut actix::Context<A>, slack: usize)
    where
        A: actix::Actor<Context = actix::Context<A>>,
    {
        use actix::{ActorContext, ActorFutureExt, AsyncContext};
        ctx.set_mailbox_capacity(
            self.max_in_flight
                .saturating_add(CONTROL_PERMITS)
                .saturating_add(slack),
        );
        let stopped = actix::fut::wrap_future::<_, A>(self.stop.clone().cancelled_owned());
        ctx.spawn(stopped.map(|(), _act, ctx: &mut actix::Context<A>| ctx.stop()));
    }

    /// Why a request cannot be sent now, if it cannot.
    pub(crate) fn refusal(&self) -> Option<Failure> {
        let reason = match &*self.state.borrow() {
            State::Ready(_) => return None,
            State::Connecting => "the backend is connecting".to_owned(),
            State::Down(reason) => format!("the backend is down: {reason}"),
            State::Stopped => "the backend was shut down".to_owned(),
        };
        Some(Failure::Unavailable {
            backend: self.name.clone(),
            reason,
        })
    }
}
