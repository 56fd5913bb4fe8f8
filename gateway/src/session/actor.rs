//! The session actor: one per legacy session. It owns the idle timer (expiry removes the session from the
//! store) and the session's server-to-client stream (the GET stream, or the 2024-11-05 SSE stream every
//! response travels on). Requests never wait on it: pushes are `try_send` into a bounded channel.

use std::sync::Weak;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::{Ending, Sessions, ShortId};

/// How often the actor looks at the idle clock, as a fraction of the timeout.
const CHECKS_PER_TIMEOUT: u32 = 4;
/// How often an HTTP+SSE session looks whether its client closed its stream.
const STREAM_CHECK: Duration = Duration::from_secs(1);

/// The session's stream is gone or full; the message was not delivered.
#[derive(Debug, thiserror::Error)]
#[error("the session has no open stream that can take the message")]
pub struct StreamClosed;

pub(super) struct SessionActor {
    id: String,
    store: Weak<Sessions>,
    /// 2024-11-05 HTTP+SSE: the session is its stream, and ends when the client closes it.
    ends_with_stream: bool,
    idle_timeout: Duration,
    stream: Option<mpsc::Sender<Bytes>>,
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let every = (self.idle_timeout / CHECKS_PER_TIMEOUT).max(Duration::from_millis(50));
        ctx.run_interval(every, |act, ctx| {
            let Some(store) = act.store.upgrade() else {
                ctx.stop();
                return;
            };
            let expired = match store.map.get(&act.id) {
                Some(s) => s.idle_for() >= act.idle_timeout,
                None => true,
            };
            if expired {
                store.end(&act.id, Ending::Idle);
                ctx.stop();
            }
        });
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct AttachStream(mpsc::Sender<Bytes>);

impl Handler<AttachStream> for SessionActor {
    // A plain state write: nothing to await.
    type Result = ();
    fn handle(&mut self, msg: AttachStream, ctx: &mut Self::Context) {
        if self.ends_with_stream && self.stream.is_none() {
            // Looked at every second (holding a sender clone to await `closed` would keep the stream open).
            ctx.run_interval(STREAM_CHECK, |act, ctx| {
                if act.stream.as_ref().is_none_or(mpsc::Sender::is_closed) {
                    if let Some(store) = act.store.upgrade() {
                        store.end(&act.id, Ending::StreamClosed);
                    }
                    ctx.stop();
                }
            });
        }
        self.stream = Some(msg.0);
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Push(Bytes);

impl Handler<Push> for SessionActor {
    // Synchronous: a try_send into the bounded stream channel. Events leave in mailbox order. A client too
    // slow to drain its stream loses the stream (it is closed; the client reconnects), never the gateway's
    // memory.
    type Result = ();
    fn handle(&mut self, msg: Push, _: &mut Self::Context) {
        let Some(stream) = self.stream.as_ref() else {
            tracing::debug!(session = %ShortId(&self.id), "event dropped: the session has no open stream");
            return;
        };
        if stream.try_send(msg.0).is_err() {
            tracing::warn!(session = %ShortId(&self.id), "session stream full or closed; closing it");
            self.stream = None;
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct End;

impl Handler<End> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: End, ctx: &mut Self::Context) {
        self.stream = None;
        ctx.stop();
    }
}

/// The session actor's handle. Every send is a `try_send` (bounded mailbox): a full mailbox is reported, not
/// queued without bound.
#[derive(Debug, Clone)]
pub struct SessionHandle {
    addr: Addr<SessionActor>,
}

impl SessionHandle {
    pub(super) fn start(
        id: String,
        store: Weak<Sessions>,
        idle_timeout: Duration,
        ends_with_stream: bool,
    ) -> SessionHandle {
        let addr = SessionActor {
            id,
            store,
            ends_with_stream,
            idle_timeout,
            stream: None,
        }
        .start();
        SessionHandle { addr }
    }

    /// Makes `tx` the session's server-to-client stream (a new GET stream replaces the old one).
    pub fn attach_stream(&self, tx: mpsc::Sender<Bytes>) -> Result<(), StreamClosed> {
        self.addr
            .try_send(AttachStream(tx))
            .map_err(|_| StreamClosed)
    }

    /// Writes one event on the session's stream, in order with the others. Fails at once when the actor's
    /// mailbox is full or the actor is gone.
    pub fn push(&self, event: Bytes) -> Result<(), StreamClosed> {
        self.addr.try_send(Push(event)).map_err(|_| StreamClosed)
    }

    /// Stops the actor (its stream closes).
    pub fn end(&self) {
        let _ = self.addr.try_send(End);
    }
}

impl std::fmt::Debug for SessionActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionActor")
            .field("id", &self.id)
            .finish()
    }
}
