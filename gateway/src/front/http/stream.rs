//! SSE response bodies that stay open: events from a bounded channel, and a keep-alive comment whenever the
//! stream is quiet, so that intermediaries do not cut it. The body ends when the channel's senders are gone,
//! or when a shutdown closes the listener: then with an SSE `retry` field ([`RETRY`]), so that the client
//! reconnects — to another replica, since this one no longer accepts.

use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::{mpsc, watch};

use crate::drain::Phase;

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
