//! The session actor: one per legacy session. It owns the idle timer (expiry removes the session from the
//! store) and the session's server-to-client stream (the GET stream, or the 2024-11-05 SSE stream every
//! response travels on). Requests never wait on it: pushes are `try_send` into a bounded channel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::ShortId;
use super::store::{Ending, Sessions};

/// How often the actor looks at the idle clock, as a fraction of the timeout.
const CHECKS_PER_TIMEOUT: u32 = 4;
/// The session actor's mailbox: events waiting to be put on the stream. A burst a client that reads
/// promptly keeps up with (1,000 notifications at once) fits, with the stream's own buffer behind it.
const MAILBOX: usize = 1024;

/// Messages the gateway could not put on a client's stream (full, or gone) since start, all streams.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Messages dropped so far (all streams): `/readyz` shows it.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Counts one message a client's stream could not take (`counted`: that stream's, or its session's, drops so
/// far), and says so: at warn for the 1st, 2nd, 4th, 8th… drop (a flood of drops does not become a flood of
/// log lines), at debug otherwise.
fn note_dropped(session: Option<&str>, counted: &AtomicU64, why: &str) {
    DROPPED.fetch_add(1, Ordering::Relaxed);
    let n = counted.fetch_add(1, Ordering::Relaxed) + 1;
    let session = session.map(|s| ShortId(s).to_string());
    let session = session.as_deref().unwrap_or("-");
    if n.is_power_of_two() {
        tracing::warn!(
            session,
            dropped = n,
            why,
            "messages dropped for a client's stream"
        );
    } else {
        tracing::debug!(
            session,
            dropped = n,
            why,
            "message dropped for a client's stream"
        );
    }
}

/// Counts one message a stream without a session could not take (a request's own stream, a
/// `subscriptions/listen` stream), and says so.
pub fn note_stream_dropped(why: &str) {
    static UNSESSIONED: AtomicU64 = AtomicU64::new(0);
    note_dropped(None, &UNSESSIONED, why);
}

/// How often an HTTP+SSE session looks whether its client closed its stream.
const STREAM_CHECK: Duration = Duration::from_secs(1);

/// The session's stream is gone or full; the message was not delivered.
#[derive(Debug, thiserror::Error)]
#[error("the session has no open stream that can take the message")]
pub struct StreamClosed;

pub(super) struct SessionActor {
    id: Arc<str>,
    store: Weak<Sessions>,
    /// 2024-11-05 HTTP+SSE: the session is its stream, and ends when the client closes it.
    ends_with_stream: bool,
    idle_timeout: Duration,
    stream: Option<mpsc::Sender<Bytes>>,
    /// Messages dropped for this session (shared with its handle).
    dropped: Arc<AtomicU64>,
}

impl Actor for SessionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX);
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
                store.idle_out(&act.id);
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
            // Not a slow consumer: a client that opened no GET stream does not listen (not counted).
            tracing::debug!(session = %ShortId(&self.id), "event not sent: the session has no open stream");
            return;
        };
        if stream.try_send(msg.0).is_err() {
            // Closing it closes its connection too (the stream's watchdog): nothing stays held for it.
            note_dropped(
                Some(&self.id),
                &self.dropped,
                "its stream is full or closed: closing it",
            );
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
    id: Arc<str>,
    dropped: Arc<AtomicU64>,
    /// The stream last attached, weakly (it does not keep the stream open): whether one is open now.
    stream: Arc<std::sync::Mutex<Option<mpsc::WeakSender<Bytes>>>>,
}

impl SessionHandle {
    pub(super) fn start(
        id: Arc<str>,
        store: Weak<Sessions>,
        idle_timeout: Duration,
        ends_with_stream: bool,
    ) -> SessionHandle {
        let dropped = Arc::new(AtomicU64::new(0));
        let handle_id = Arc::clone(&id);
        let addr = SessionActor {
            id,
            store,
            ends_with_stream,
            idle_timeout,
            stream: None,
            dropped: Arc::clone(&dropped),
        }
        .start();
        SessionHandle {
            addr,
            id: handle_id,
            dropped,
            stream: Arc::default(),
        }
    }

    /// Whether the session's stream is attached and open (such a session's actor is never rested).
    pub fn has_open_stream(&self) -> bool {
        let weak = match self.stream.lock() {
            Ok(w) => w.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        weak.and_then(|w| w.upgrade())
            .is_some_and(|tx| !tx.is_closed())
    }

    /// Makes `tx` the session's server-to-client stream (a new GET stream replaces the old one).
    pub fn attach_stream(&self, tx: mpsc::Sender<Bytes>) -> Result<(), StreamClosed> {
        let weak = tx.downgrade();
        match self.stream.lock() {
            Ok(mut w) => *w = Some(weak),
            Err(poisoned) => *poisoned.into_inner() = Some(weak),
        }
        self.addr
            .try_send(AttachStream(tx))
            .map_err(|_| StreamClosed)
    }

    /// Writes one event on the session's stream, in order with the others. Fails at once when the actor's
    /// mailbox is full or the actor is gone.
    pub fn push(&self, event: Bytes) -> Result<(), StreamClosed> {
        self.addr.try_send(Push(event)).map_err(|_| {
            note_dropped(
                Some(&self.id),
                &self.dropped,
                "the session's mailbox is full",
            );
            StreamClosed
        })
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
