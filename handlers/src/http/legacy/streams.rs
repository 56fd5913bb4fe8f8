//! The streams of a legacy Streamable HTTP session besides the POST responses: the session's GET stream
//! (unsolicited notifications and requests; reconnected with backoff) and the resumption of a response
//! stream that ended before its response (GET with `Last-Event-ID`, 2025-11-25 SEP-1699).

use std::sync::{Arc, Weak};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::super::event_stream::EventStream;
use super::super::{ReadError, Resume, read_stream_reply, thread_client};
use super::{Inner, LegacyLink, Session};
use crate::backoff::Backoff;
use crate::inbound::Inbound;
use crate::pending::Reply;

/// The most times one request's response stream is resumed after ending early.
const MAX_RESUMPTIONS: usize = 8;
/// The wait before resuming a response stream that gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry` honoured (the request's own deadline bounds the wait anyway).
const MAX_RETRY: Duration = Duration::from_secs(30);
/// The header naming the last event a client saw.
const LAST_EVENT_ID: &str = "last-event-id";

impl LegacyLink {
    /// Resumes a response stream that ended before the response (2025-11-25, SEP-1699: a server may close
    /// it and let the client poll): GET with `Last-Event-ID` after the stream's `retry`, read to the
    /// response or resumed again, at most [`MAX_RESUMPTIONS`] times. The caller's deadline bounds it all.
    pub(super) async fn resume(
        &self,
        session: &Session,
        id: i64,
        mut resume: Resume,
        inbound: &Inbound,
    ) -> Result<Reply, ReadError> {
        let inner = &*self.0;
        for _ in 0..MAX_RESUMPTIONS {
            let wait = resume
                .retry_ms
                .map_or(DEFAULT_RETRY, Duration::from_millis)
                .min(MAX_RETRY);
            tokio::time::sleep(wait).await;
            let Ok(last_event_id) = HeaderValue::from_str(&resume.last_event_id) else {
                return Err(ReadError::Ended(None));
            };
            let mut headers = session.headers();
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            headers.remove(CONTENT_TYPE);
            headers.insert(LAST_EVENT_ID, last_event_id);
            debug!(backend = %inner.ctx.name(), id, last_event_id = %resume.last_event_id,
                "resuming the backend's response stream");
            let response = thread_client(&inner.ctx, &inner.client)
                .get(inner.url.clone())
                .headers(headers)
                .send()
                .await
                .map_err(|e| ReadError::Io(super::super::chain(&e)))?;
            if response.status() != StatusCode::OK {
                debug!(backend = %inner.ctx.name(), status = %response.status(),
                    "the backend refused to resume its response stream");
                return Err(ReadError::Ended(None));
            }
            let config = &inner.ctx.config;
            let events = EventStream::new(response, config.max_message_bytes);
            match read_stream_reply(events, id, inbound, config.max_stream_bytes).await {
                Err(ReadError::Ended(Some(next))) => {
                    resume = Resume {
                        retry_ms: next.retry_ms.or(resume.retry_ms),
                        ..next
                    };
                }
                other => return other,
            }
        }
        Err(ReadError::Ended(None))
    }
}

/// Keeps the session's GET stream open for unsolicited notifications and requests; reconnects with backoff,
/// gives up on 405 (the backend offers none).
pub(super) async fn listen(link: Weak<Inner>, stop: CancellationToken, renewed: Arc<Notify>) {
    let mut backoff = Backoff::new(
        Duration::from_secs(1),
        Duration::from_secs(30),
        Duration::from_secs(60),
    );
    loop {
        let Some(inner) = link.upgrade() else { return };
        let mut headers = inner.session().headers();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.remove(CONTENT_TYPE);
        let request = inner.client.get(inner.url.clone()).headers(headers);
        let inbound = inner.inbound.clone();
        let backend = inner.ctx.name().to_owned();
        let max = inner.ctx.config.max_message_bytes;
        // Hold no strong reference while streaming: dropping the link must end this task.
        drop(inner);
        let started = Instant::now();
        let streamed = tokio::select! {
            () = stop.cancelled() => return,
            () = renewed.notified() => continue,
            r = stream_once(request, &inbound, max) => r,
        };
        match streamed {
            Err(status) if status == StatusCode::METHOD_NOT_ALLOWED => {
                debug!(%backend, "the backend offers no GET stream");
                return;
            }
            Err(status) => debug!(%backend, %status, "the GET stream was refused"),
            Ok(()) => backoff.connection_lost_after(started.elapsed()),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// One GET stream, read to its end; the refusing status when it was not opened.
async fn stream_once(
    request: reqwest::RequestBuilder,
    inbound: &Inbound,
    max: usize,
) -> Result<(), StatusCode> {
    let response = open_stream(request).await?;
    read_stream(response, inbound, max).await;
    Ok(())
}

/// A GET stream opened (200), or the refusing status.
pub(super) async fn open_stream(
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, StatusCode> {
    let response = request
        .send()
        .await
        .map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
    if response.status() != StatusCode::OK {
        return Err(response.status());
    }
    Ok(response)
}

/// An open GET stream's messages handed to `inbound`, to its end.
pub(super) async fn read_stream(response: reqwest::Response, inbound: &Inbound, max: usize) {
    let mut events = EventStream::new(response, max);
    while let Some(Ok(event)) = events.next().await {
        if event.is_message() {
            inbound.text(event.data.as_bytes());
        }
    }
}
