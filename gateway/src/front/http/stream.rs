//! SSE response bodies that stay open: events from a bounded channel, and a keep-alive comment whenever the
//! stream is quiet, so that intermediaries do not cut it. The body ends when the channel's senders are gone.

use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;

/// How often a quiet stream gets a keep-alive comment.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A stream of SSE chunks: `first` (if any), then whatever arrives on `rx`, with keep-alives in between.
pub(super) fn sse_body(
    first: Option<Bytes>,
    rx: mpsc::Receiver<Bytes>,
    keep_alive: Duration,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> + 'static {
    let mut interval = tokio::time::interval(keep_alive);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    futures_util::stream::unfold(
        (first, rx, interval, true),
        |(first, mut rx, mut interval, fresh)| async move {
            if let Some(event) = first {
                return Some((Ok(event), (None, rx, interval, fresh)));
            }
            if fresh {
                // The first tick of an interval fires at once; skip it so keep-alives start after a quiet period.
                interval.tick().await;
            }
            tokio::select! {
                event = rx.recv() => event.map(|e| (Ok(e), (None, rx, interval, false))),
                _ = interval.tick() => Some((Ok(Bytes::from_static(b": keep-alive\n\n")), (None, rx, interval, false))),
            }
        },
    )
}

/// A stream of SSE `message` events, one per JSON-RPC message from `rx`; ends when `rx` closes. Dropping
/// the body (the client went away) closes `rx`, which the sender takes as cancellation.
pub(super) fn messages_body(
    rx: mpsc::Receiver<Vec<u8>>,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move {
        let message = rx.recv().await?;
        if message.is_empty() {
            // An empty message is a keep-alive: an SSE comment.
            return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), rx));
        }
        Some((Ok(crate::session::sse_event(&message)), rx))
    })
}
