//! The backend actor: owns one backend's connection and everything that lives longer than a request: the
//! connect and handshake, the remembered era, the reconnect schedule, the renewal of expired legacy
//! sessions, and the shutdown. It publishes the current link in [`Shared`]; requests run on the task (and
//! worker thread) that asked, on that link, through [`crate::BackendHandle::call`]: a hop through an actor
//! there would carry no state.
//!
//! Messages come only from this crate's [`crate::BackendHandle`], which bounds them with its permits.

use std::sync::Arc;
use std::time::Duration;

use actix::fut::{self, ActorFutureExt, WrapFuture};
use actix::{
    Actor, AsyncContext, AtomicResponse, Context, Handler, Message, Running, SpawnHandle, WeakAddr,
};
use protocol::shape::Failure;
use tokio::time::Instant;
use tracing::{Instrument, Span, debug, info, info_span, warn};

use crate::backoff::Backoff;
use crate::config::{BackendConfig, Transport};
use crate::description::ServerDescription;
use crate::events::Notifier;
use crate::link::{
    self, ConnectFailure, Connected, Link, LinkContext, Renew, Verdict, VerdictUpdate,
};
use crate::listen::{self, RenewFactory};
use crate::shared::{Shared, State};

/// Mailbox room beyond the permits (actix does not bound `send` by it; the permits do).
const MAILBOX_SLACK: usize = 16;
/// The shortest wait before a failed connect attempt is made again (a lost connection is retried sooner:
/// the backoff alone, from 200 ms).
const CONNECT_RETRY_FLOOR: Duration = Duration::from_secs(1);

/// Renew the legacy session whose id got a 404.
#[derive(Message)]
#[rtype(result = "Result<(), Failure>")]
pub(crate) struct Reinitialize {
    stale: Option<String>,
}

/// The actor of one backend.
pub(crate) struct BackendActor {
    ctx: Arc<LinkContext>,
    shared: Arc<Shared>,
    http: Option<reqwest::Client>,
    link: Option<Link>,
    /// The era found by the last probe, remembered across reconnects.
    verdict: Option<Verdict>,
    /// Bumped by every connect attempt and by the shutdown: outcomes of older attempts are ignored.
    epoch: u64,
    backoff: Backoff,
    up_since: Option<Instant>,
    /// The subscription of the current connection (see [`crate::BackendHandle::listen`]).
    subscription: Option<SpawnHandle>,
    span: Span,
    /// Failed connect attempts in a row, and the reason last logged at warn (`mark_down`'s back-off).
    down_attempts: u64,
    down_logged: Option<String>,
}

impl std::fmt::Debug for BackendActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendActor")
            .field("backend", &self.ctx.name())
            .field("verdict", &self.verdict)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl BackendActor {
    pub(crate) fn new(config: BackendConfig, shared: Arc<Shared>, notifier: Notifier) -> Self {
        let span = info_span!("backend", backend = %config.name);
        let ctx = LinkContext::new(config, notifier);
        let http = match &ctx.config.transport {
            Transport::Http { .. } => match crate::http::client(&ctx) {
                Ok(client) => Some(client),
                Err(e) => {
                    warn!(parent: &span, error = %e, "no http client: the backend cannot connect");
                    None
                }
            },
            Transport::Stdio { .. } | Transport::InProcess(_) => None,
        };
        BackendActor {
            ctx,
            shared,
            http,
            link: None,
            verdict: None,
            epoch: 0,
            backoff: Backoff::default(),
            up_since: None,
            subscription: None,
            span,
            down_attempts: 0,
            down_logged: None,
        }
    }

    /// Starts a connect attempt. It runs as an actor future (`ctx.spawn`): it needs `&mut self` afterwards
    /// to install the link, and it must die with the actor, so that a late handshake never revives a stopped
    /// backend. Calls interleave with it and answer `Unavailable` meanwhile.
    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.epoch += 1;
        let epoch = self.epoch;
        let attempt = link::connect(Arc::clone(&self.ctx), self.http.clone(), self.verdict)
            .instrument(self.span.clone());
        ctx.spawn(
            attempt
                .into_actor(self)
                .map(move |outcome, act, ctx| act.connected(epoch, outcome, ctx)),
        );
    }

    fn connected(
        &mut self,
        epoch: u64,
        outcome: Result<Connected, ConnectFailure>,
        ctx: &mut Context<Self>,
    ) {
        if epoch != self.epoch {
            // Superseded (or shutting down): dropping the outcome closes its connection.
            return;
        }
        match outcome {
            Ok(connected) => {
                let Connected {
                    link,
                    description,
                    verdict,
                    lifeline,
                } = connected;
                info!(parent: &self.span, generation = %description.generation,
                    transport = ?description.transport, "backend ready");
                self.verdict = Some(verdict);
                self.shared.set_link(Some(link.clone()));
                self.link = Some(link);
                self.up_since = Some(Instant::now());
                (self.down_attempts, self.down_logged) = (0, None);
                self.shared.set(State::Ready(Arc::clone(&description)));
                self.listen(Arc::clone(&description), ctx);
                self.ctx.notifier.ready(description);
                ctx.spawn(
                    async move { lifeline.wait().await }
                        .into_actor(self)
                        .map(move |reason, act, ctx| act.link_lost(epoch, reason, ctx)),
                );
            }
            Err(failure) => {
                match failure.verdict {
                    VerdictUpdate::Keep => {}
                    VerdictUpdate::Learned(v) => self.verdict = Some(v),
                    VerdictUpdate::Forget => self.verdict = None,
                }
                self.mark_down(&failure.reason);
                // A backend that refuses to connect (an untrusted certificate, a closed port) is not asked
                // again sooner than a second later.
                self.retry_later(ctx, CONNECT_RETRY_FLOOR);
            }
        }
    }

    /// The connection of attempt `epoch` died: down, and reconnect later.
    fn link_lost(&mut self, epoch: u64, reason: String, ctx: &mut Context<Self>) {
        if epoch != self.epoch || self.link.take().is_none() {
            return;
        }
        self.shared.set_link(None);
        self.stop_listening(ctx);
        if let Some(since) = self.up_since.take() {
            self.backoff.connection_lost_after(since.elapsed());
        }
        self.mark_down(&reason);
        self.retry_later(ctx, Duration::ZERO);
    }

    /// Records the outage; the `Down` event goes out once per outage, not once per failed reconnect.
    fn mark_down(&mut self, reason: &str) {
        let was_down = matches!(self.shared.state(), State::Down(_));
        self.down_attempts += 1;
        let attempts = self.down_attempts;
        match said(attempts, self.down_logged.as_deref(), reason) {
            Said::Down => warn!(parent: &self.span, %reason, attempts, "backend down"),
            Said::StillDown => warn!(parent: &self.span, %reason, attempts, "backend still down"),
            Said::Quietly => debug!(parent: &self.span, %reason, attempts, "backend still down"),
        }
        if self.down_logged.as_deref() != Some(reason) {
            self.down_logged = Some(reason.to_owned());
        }
        self.shared.set(State::Down(reason.to_owned()));
        if !was_down {
            self.ctx.notifier.down(reason);
        }
    }

    /// (Re)starts the subscription on the current connection: it follows the gateway's filter and dies
    /// with the connection (or the actor), so every new connection or session subscribes afresh.
    fn listen(&mut self, description: Arc<ServerDescription>, ctx: &mut Context<Self>) {
        self.stop_listening(ctx);
        let Some(link) = self.link.clone() else {
            return;
        };
        let renew = matches!(link, Link::Legacy(_)).then(|| {
            let addr = ctx.address().downgrade();
            let backend = self.ctx.name().to_owned();
            Box::new(move || renewer(addr.clone(), backend.clone())) as RenewFactory
        });
        let driver = listen::drive(
            link,
            Arc::clone(&self.ctx),
            description,
            Arc::clone(&self.shared),
            renew,
        )
        .instrument(info_span!(parent: &self.span, "subscription"));
        self.subscription = Some(ctx.spawn(driver.into_actor(self)));
    }

    /// Ends the subscription of the connection that is gone.
    fn stop_listening(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.subscription.take() {
            ctx.cancel_future(handle);
        }
        self.shared.set_listening(None);
    }

    /// Connects again after the backoff's next delay, and at least `floor`.
    fn retry_later(&mut self, ctx: &mut Context<Self>, floor: Duration) {
        let delay = self.backoff.next_delay().max(floor);
        debug!(parent: &self.span, delay_ms = delay.as_millis() as u64, "reconnecting later");
        let shared = Arc::clone(&self.shared);
        let first = floor.max(Duration::from_secs(1)).min(delay);
        let wait = async move {
            tokio::time::sleep(first).await;
            tokio::select! {
                () = tokio::time::sleep(delay - first) => {}
                () = shared.connect_now.notified() => {}
            }
        };
        ctx.spawn(actix::fut::wrap_future::<_, Self>(wait).map(|(), act, ctx| act.connect(ctx)));
    }
}

impl Actor for BackendActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.shared.start_actor(ctx, MAILBOX_SLACK);
        self.connect(ctx);
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        self.epoch += 1;
        self.stop_listening(ctx);
        self.shared.set(State::Stopped);
        self.shared.set_link(None);
        if let Some(link) = self.link.take() {
            link.close();
        }
        info!(parent: &self.span, "backend shut down");
        self.ctx.notifier.down("the backend was shut down");
        Running::Stop
    }
}

/// How a legacy request asks this actor to renew an expired session.
pub(crate) fn renewer(addr: WeakAddr<BackendActor>, backend: String) -> Renew {
    Box::new(move |stale| {
        Box::pin(async move {
            let gone = || Failure::Unavailable {
                backend: backend.clone(),
                reason: "the backend was shut down".to_owned(),
            };
            let Some(addr) = addr.upgrade() else {
                return Err(gone());
            };
            // Bounded: only a request holding a permit gets here.
            addr.send(Reinitialize { stale })
                .await
                .unwrap_or_else(|_| Err(gone()))
        })
    })
}

impl Handler<Reinitialize> for BackendActor {
    /// `AtomicResponse`: renewing a session is ordering-critical. While `initialize` runs the actor takes
    /// no other message, so no request goes out on a half-made session, and a burst of 404s costs one
    /// `initialize`: the `Reinitialize` messages queued behind it find the session already renewed.
    type Result = AtomicResponse<Self, Result<(), Failure>>;

    fn handle(&mut self, msg: Reinitialize, _ctx: &mut Context<Self>) -> Self::Result {
        let link = match &self.link {
            Some(Link::Legacy(l)) if l.session_id() == msg.stale => l.clone(),
            Some(Link::Legacy(_)) => return AtomicResponse::new(Box::pin(fut::ready(Ok(())))),
            _ => {
                let failure = self.ctx.unavailable("the backend is not connected");
                return AtomicResponse::new(Box::pin(fut::ready(Err(failure))));
            }
        };
        let epoch = self.epoch;
        let renewal = async move { link.reinitialize().await }.instrument(self.span.clone());
        AtomicResponse::new(Box::pin(renewal.into_actor(self).map(
            move |outcome, act, ctx| match outcome {
                Ok(description) => {
                    // A renewed session is a reconnect (the backend most likely restarted): the gateway
                    // hears `Ready` again and re-lists what it serves, and the new session subscribes
                    // afresh.
                    if epoch == act.epoch {
                        act.shared.set(State::Ready(Arc::clone(&description)));
                        act.listen(Arc::clone(&description), ctx);
                        act.ctx.notifier.ready(description);
                    }
                    Ok(())
                }
                Err(reason) => {
                    let failure = act
                        .ctx
                        .unavailable(format!("renewing the session failed: {reason}"));
                    act.link_lost(epoch, reason, ctx);
                    Err(failure)
                }
            },
        )))
    }
}

/// How a failed connect attempt is logged (`BackendActor::mark_down`).
#[derive(Debug, PartialEq, Eq)]
enum Said {
    /// At warn: the first failure in a row, or a reason other than the one last said.
    Down,
    /// At warn with the count: the 2nd, 4th, 8th… failure for the same reason (a backend down for an hour
    /// is said about a dozen times).
    StillDown,
    /// At debug.
    Quietly,
}

fn said(attempts: u64, logged: Option<&str>, reason: &str) -> Said {
    if attempts == 1 || logged != Some(reason) {
        Said::Down
    } else if attempts.is_power_of_two() {
        Said::StillDown
    } else {
        Said::Quietly
    }
}

#[cfg(test)]
mod down_log_tests {
    use super::{Said, said};

    #[test]
    fn repeated_failures_are_said_less_and_less_often() {
        let warned: Vec<u64> = (2..=100)
            .filter(|&n| said(n, Some("refused"), "refused") == Said::StillDown)
            .collect();
        assert_eq!(warned, [2, 4, 8, 16, 32, 64]);
        assert_eq!(said(1, None, "refused"), Said::Down);
        assert_eq!(said(5, Some("refused"), "timed out"), Said::Down);
        assert_eq!(said(5, Some("refused"), "refused"), Said::Quietly);
    }
}
