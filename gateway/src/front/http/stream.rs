//! SSE response bodies that stay open: events from a bounded channel, and a keep-alive comment whenever the
//! stream is quiet, so that intermediaries do not cut it. The body ends when the channel's senders are gone,
//! or when a shutdown closes the listener: then with an SSE `retry` field ([`RETRY`]), so that the client
//! reconnects — to another replica, since this one no longer accepts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::{mpsc, watch};

use super::connections::Connection;
use crate::drain::Phase;
use crate::session::ShortId;

/// The last chunk of a stream a shutdown ends: a comment saying why, and the reconnection delay.
pub(super) const RETRY: &[u8] = b": gateway shutting down\nretry: 1000\n\n";

/// How often a quiet stream gets a keep-alive comment.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A stream of SSE chunks: `first` (if any), then whatever arrives on `rx`, with keep-alives in between;
/// [`RETRY`] and the end once `phase` reaches [`Phase::Closing`].
pub(super) fn sse_body(
    first: Option<Bytes>,
    rx: mpsc::Receiver<Bytes>,
    keep_alive: Duration,
    phase: watch::Receiver<Phase>,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> + 'static {
    let mut interval = tokio::time::interval(keep_alive);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    struct State {
        first: Option<Bytes>,
        rx: mpsc::Receiver<Bytes>,
        interval: tokio::time::Interval,
        fresh: bool,
        phase: watch::Receiver<Phase>,
        ended: bool,
    }
    let state = State {
        first,
        rx,
        interval,
        fresh: true,
        phase,
        ended: false,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        if s.ended {
            return None;
        }
        if let Some(event) = s.first.take() {
            return Some((Ok(event), s));
        }
        if s.fresh {
            // The first tick of an interval fires at once; skip it so keep-alives start after a quiet period.
            s.interval.tick().await;
            s.fresh = false;
        }
        let mut phase = s.phase.clone();
        tokio::select! {
            event = s.rx.recv() => event.map(|e| (Ok(e), s)),
            _ = s.interval.tick() => Some((Ok(Bytes::from_static(b": keep-alive\n\n")), s)),
            _ = phase.wait_for(|p| *p >= Phase::Closing) => {
                s.ended = true;
                Some((Ok(Bytes::from_static(RETRY)), s))
            }
        }
    })
}

/// A stream of SSE `message` events, one per JSON-RPC message from `rx`; ends when `rx` closes, with
/// [`RETRY`] when a shutdown ended it (a `subscriptions/listen` stream ends when the listener closes).
/// Dropping the body (the client went away) closes `rx`, which the sender takes as cancellation.
pub(super) fn messages_body(
    rx: mpsc::Receiver<Vec<u8>>,
    phase: watch::Receiver<Phase>,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> + 'static {
    futures_util::stream::unfold(Some((rx, phase)), |state| async move {
        let (mut rx, phase) = state?;
        let Some(message) = rx.recv().await else {
            let closing = *phase.borrow() >= Phase::Closing;
            return closing.then(|| (Ok(Bytes::from_static(RETRY)), None));
        };
        if message.is_empty() {
            // An empty message is a keep-alive: an SSE comment.
            return Some((
                Ok(Bytes::from_static(b": keep-alive\n\n")),
                Some((rx, phase)),
            ));
        }
        Some((Ok(crate::session::sse_event(&message)), Some((rx, phase))))
    })
}

/// `[server] stream_write_timeout_ms`.
pub(super) fn write_timeout(gw: &crate::state::Gateway) -> Duration {
    Duration::from_millis(gw.config.server.stream_write_timeout_ms)
}

/// How a long-lived stream is watched for a client that stopped reading it (see [`watched`]).
pub(super) struct Watch {
    /// The connection the stream is written on (`None`: nothing to close; the stream is only ended).
    pub connection: Option<Arc<Connection>>,
    /// How long a written event may wait for the client to take it (`stream_write_timeout_ms`).
    pub write_timeout: Duration,
    /// The session the stream belongs to, for the log line.
    pub session: Option<String>,
    /// The sending side of the stream's channel, if the gateway may close it (a session's stream closed
    /// because it is full): once it is gone, an event still waiting means the client cannot be given even
    /// the stream's end, and the connection is closed at once.
    pub abandoned: Option<mpsc::WeakSender<Bytes>>,
    /// Counts the stream as open while it lives, and the bytes written on it.
    pub open: crate::metrics::OpenStream,
}

/// What the body and its watchdog share: when the body last gave actix-web an event that actix-web has not
/// come back for (0: none waiting), and whether the body ended.
#[derive(Default)]
struct Progress {
    waiting_since_ms: AtomicU64,
    ended: AtomicBool,
}

/// `body`, watched: actix-web polls a body again as soon as it has buffered what it got, unless the
/// connection cannot take more (the client does not read). An event given and not come back for within
/// the write timeout — or at all, once the gateway closed the stream — closes the connection
/// ([`Connection::abort`]): the stream's memory and the kernel's send buffer are freed, and the client
/// sees the connection reset and reconnects. A quiet stream is never closed (nothing waits).
pub(super) fn watched<S>(
    body: S,
    watch: Watch,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> + 'static
where
    S: Stream<Item = Result<Bytes, actix_web::Error>> + 'static,
{
    let progress = Arc::new(Progress::default());
    let epoch = Instant::now();
    let now_ms = move || {
        u64::try_from(epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    };
    if watch.connection.is_some() {
        let progress = Arc::clone(&progress);
        actix_rt::spawn(async move {
            let every =
                (watch.write_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
            let timeout_ms = u64::try_from(watch.write_timeout.as_millis()).unwrap_or(u64::MAX);
            loop {
                tokio::time::sleep(every).await;
                if progress.ended.load(Ordering::Acquire) {
                    return;
                }
                let since = progress.waiting_since_ms.load(Ordering::Acquire);
                if since == 0 {
                    continue;
                }
                let waited = now_ms().saturating_sub(since);
                let abandoned = watch
                    .abandoned
                    .as_ref()
                    .is_some_and(|w| w.upgrade().is_none());
                if waited >= timeout_ms || abandoned {
                    let session = watch.session.as_deref().map(|s| ShortId(s).to_string());
                    tracing::warn!(
                        session = session.as_deref().unwrap_or("-"),
                        waited_ms = waited,
                        "closing a stream's connection: its client stopped reading"
                    );
                    if let Some(c) = &watch.connection {
                        c.abort();
                    }
                    return;
                }
            }
        });
    }
    let mut body = Box::pin(body);
    let ended = Ended(Arc::clone(&progress));
    let open = watch.open;
    futures_util::stream::poll_fn(move |cx| {
        let _ended = &ended;
        progress.waiting_since_ms.store(0, Ordering::Release);
        let next = body.as_mut().poll_next(cx);
        match &next {
            Poll::Ready(Some(chunk)) => {
                if let Ok(chunk) = chunk {
                    open.sent(chunk.len());
                }
                progress.waiting_since_ms.store(now_ms(), Ordering::Release);
            }
            Poll::Ready(None) => progress.ended.store(true, Ordering::Release),
            Poll::Pending => {}
        }
        next
    })
}

/// Marks the body ended when it is dropped (the client went away): the watchdog stops.
struct Ended(Arc<Progress>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::Release);
    }
}
