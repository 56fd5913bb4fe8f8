//! The request side of a backend's handler actor, one per backend per worker thread: requests run on the
//! arbiter of the worker that received them, never crossing to the thread of the backend's connection
//! actor and back (two thread hops and a context switch per request, otherwise).
//!
//! The backend actor (`actor`) keeps what outlives a request — the connection, the era, reconnects, session
//! renewal, the subscription — and publishes its current link in [`Shared`]. A [`WorkerActor`] is started
//! on each arbiter the first time a request for that backend arrives there; it runs each request on the
//! link the backend actor published, with this thread's HTTP client (see `http::thread_client`). It stops
//! when the backend is shut down. Messages come only from [`crate::BackendHandle`], which bounds them with
//! the backend's permits and puts the deadline on them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture, WeakAddr};
use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use crate::actor::{BackendActor, renewer};
use crate::link::Link;
use crate::request::BackendRequest;
use crate::shared::{Shared, State};

/// Mailbox room beyond the permits (actix does not bound `send` by it; the permits do).
const MAILBOX_SLACK: usize = 16;

/// One request (see [`crate::BackendHandle::call`]).
#[derive(Message)]
#[rtype(result = "Result<Box<RawValue>, Failure>")]
pub(crate) struct Call {
    pub(crate) request: BackendRequest,
    pub(crate) deadline: Instant,
    /// Cancelled when the caller stops waiting.
    pub(crate) cancel: CancellationToken,
    /// The caller's span (the gateway's request span): what the link logs about the request goes there.
    pub(crate) span: Span,
}

/// A backend's handler actor on one worker thread.
pub(crate) struct WorkerActor {
    shared: Arc<Shared>,
    /// The backend actor, which renews expired legacy sessions.
    backend: WeakAddr<BackendActor>,
}

impl std::fmt::Debug for WorkerActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerActor")
            .field("backend", &self.shared.name)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// This thread's worker actors, by backend (`Shared::id`).
    static WORKERS: RefCell<HashMap<u64, Addr<WorkerActor>>> = RefCell::default();
}

/// The worker actor of `shared`'s backend on the current arbiter, started on first use. Must be called
/// inside a running actix System.
pub(crate) fn local(shared: &Arc<Shared>, backend: &Addr<BackendActor>) -> Addr<WorkerActor> {
    let id = shared.id;
    let running = WORKERS.with(|w| w.borrow().get(&id).filter(|a| a.connected()).cloned());
    if let Some(addr) = running {
        return addr;
    }
    let addr = WorkerActor {
        shared: Arc::clone(shared),
        backend: backend.downgrade(),
    }
    .start();
    WORKERS.with(|w| w.borrow_mut().insert(id, addr.clone()));
    addr
}

impl Actor for WorkerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.shared.start_actor(ctx, MAILBOX_SLACK);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        let id = self.shared.id;
        // The thread may be ending (its thread-locals gone): then there is nothing to remove.
        let _ = WORKERS.try_with(|w| w.borrow_mut().remove(&id));
    }
}

impl Handler<Call> for WorkerActor {
    /// `ResponseFuture`: once the link is cloned out, a request needs no actor state, so it runs detached
    /// on this arbiter and any number of requests (up to the permits) share the backend at once. With
    /// `AtomicResponse` they would queue behind one another; `ResponseActFuture` would tie them to the
    /// actor's lifetime for nothing (the link answers them when it closes). The caller's token ends the
    /// future when the caller stops waiting, which cancels the backend request.
    type Result = ResponseFuture<Result<Box<RawValue>, Failure>>;

    fn handle(&mut self, msg: Call, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(link) = self.shared.link() else {
            let reason = match self.shared.state() {
                State::Down(reason) => format!("the backend is down: {reason}"),
                State::Stopped => "the backend was shut down".to_owned(),
                _ => "the backend is not connected".to_owned(),
            };
            let failure = Failure::Unavailable {
                backend: self.shared.name.clone(),
                reason,
            };
            return Box::pin(std::future::ready(Err(failure)));
        };
        let renew = matches!(link, Link::Legacy(_))
            .then(|| renewer(self.backend.clone(), self.shared.name.clone()));
        let Call {
            request,
            deadline,
            cancel,
            span,
        } = msg;
        Box::pin(
            async move {
                tokio::select! {
                    outcome = link.call(request, deadline, renew) => outcome,
                    () = cancel.cancelled() => Err(Failure::Internal {
                        reason: "the caller stopped waiting".to_owned(),
                    }),
                }
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use protocol::method::Method;
    use tokio::sync::{mpsc, oneshot};

    use super::*;
    use crate::{BackendConfig, BackendHandle, Transport};

    fn echo() -> BackendRequest {
        let params =
            serde_json::value::to_raw_value(&serde_json::json!({"name": "echo", "arguments": {}}))
                .ok();
        BackendRequest::new(Method::ToolsCall, params)
    }

    fn has_worker(backend: &BackendHandle) -> bool {
        WORKERS.with(|w| {
            w.borrow()
                .get(&backend.shared_id())
                .is_some_and(Addr::connected)
        })
    }

    #[actix_rt::test]
    async fn requests_run_in_the_worker_actor_of_the_arbiter_that_asked() {
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
        assert!(!has_worker(&backend), "started on first use only");
        assert!(backend.call(echo()).await.is_ok());
        assert!(has_worker(&backend), "this arbiter's worker actor ran it");

        let arbiter = actix_rt::Arbiter::new();
        let (tx, rx) = oneshot::channel();
        let there = backend.clone();
        assert!(arbiter.spawn(async move {
            let answered = there.call(echo()).await.is_ok();
            let _ = tx.send((answered, has_worker(&there), std::thread::current().id()));
        }));
        let (answered, worker_there, thread) = rx.await.unwrap();
        assert!(answered && worker_there);
        assert_ne!(thread, std::thread::current().id());

        // shutting the backend down stops its worker actors
        backend.shutdown();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!has_worker(&backend));
        arbiter.stop();
    }
}
