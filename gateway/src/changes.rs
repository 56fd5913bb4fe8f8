//! What backends announce on their own, handled in one place: (re)connections and list changes rebuild the
//! catalog (merged when they come in bursts) and re-establish each backend's subscription; list changes and
//! resource updates then fan out to the clients that asked (see `subscriptions`), and log messages sent
//! outside a request to the legacy sessions that asked for logging.

use std::sync::Arc;
use std::time::Duration;

use handlers::{BackendEvent, ListenFilter};
use protocol::{Message, Method, Notification};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::listing::refresh;
use crate::request_stream::level_passes;
use crate::response::sse_event;
use crate::session::ShortId;
use crate::state::Gateway;

/// Catalog refreshes triggered close together are merged into one.
const REFRESH_DEBOUNCE: Duration = Duration::from_millis(250);

/// The shortest pause between two catalog refreshes caused by lists going stale (a backend that says
/// `ttlMs: 1` does not make the gateway list it a thousand times a second).
const MIN_STALE_REFRESH: Duration = Duration::from_secs(1);

/// Handles backend events until the channel closes. Also lists the backends again when a list the catalog
/// holds goes stale (its backends' `ttlMs` ran out), so that the gateway's own `ttlMs` stays truthful.
pub async fn watch(gw: Arc<Gateway>, mut events: mpsc::Receiver<BackendEvent>) {
    let mut refresh_at: Option<Instant> = None;
    let mut list_changes: Vec<Notification> = Vec::new();
    let mut stale_at = stale_refresh_at(&gw, Instant::now());
    loop {
        let wake_at = match (refresh_at, stale_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let event = match wake_at {
            Some(at) => tokio::select! {
                event = events.recv() => event,
                () = tokio::time::sleep_until(at) => {
                    let refreshed_at = Instant::now();
                    refresh(&gw).await;
                    for n in list_changes.drain(..) {
                        deliver(&gw, &n);
                    }
                    refresh_at = None;
                    stale_at = stale_refresh_at(&gw, refreshed_at + MIN_STALE_REFRESH);
                    continue;
                }
            },
            None => events.recv().await,
        };
        let Some(event) = event else { break };
        match event {
            BackendEvent::Ready { backend, .. } => {
                refresh_at.get_or_insert_with(|| Instant::now() + REFRESH_DEBOUNCE);
                sync_backend(&gw, &backend);
            }
            BackendEvent::Down { backend, reason } => {
                tracing::warn!(%backend, %reason, "backend down")
            }
            BackendEvent::Notification {
                backend,
                notification,
            } => match notification.known_method() {
                Some(
                    Method::NotificationsToolsListChanged
                    | Method::NotificationsPromptsListChanged
                    | Method::NotificationsResourcesListChanged,
                ) => {
                    if notification.known_method()
                        == Some(Method::NotificationsResourcesListChanged)
                    {
                        gw.resource_cache.clear();
                    }
                    refresh_at.get_or_insert_with(|| Instant::now() + REFRESH_DEBOUNCE);
                    if !list_changes.iter().any(|n| n.method == notification.method) {
                        list_changes.push(notification);
                    }
                }
                Some(Method::NotificationsMessage) => deliver_log(&gw, &backend, &notification),
                Some(Method::NotificationsResourcesUpdated) => {
                    if let Some(uri) = updated_uri(&notification) {
                        gw.resource_cache.invalidate(&uri);
                    }
                    deliver(&gw, &notification);
                }
                _ => {
                    tracing::debug!(%backend, method = %notification.method, "backend notification not tied to a request: dropped")
                }
            },
        }
    }
}

/// When the current catalog's first list goes stale, but not before `earliest`.
fn stale_refresh_at(gw: &Gateway, earliest: Instant) -> Option<Instant> {
    let expires = gw.catalog.snapshot().expires_at()?;
    Some(Instant::from_std(expires).max(earliest))
}

/// The URI of a `notifications/resources/updated`.
fn updated_uri(n: &Notification) -> Option<String> {
    let params = protocol::raw::RawObject::parse(n.params.as_deref()?)?;
    serde_json::from_str(params.get("uri")?.get()).ok()
}

/// Sends a notification to every client that asked for it; a session gone meanwhile loses its subscriptions.
pub fn deliver(gw: &Gateway, n: &Notification) {
    let recipients = gw.subscriptions.recipients(n);
    if recipients.all_sessions {
        let event = sse_event(&Message::Notification(n.clone()).to_bytes());
        for session in gw.sessions.all() {
            if session.handle.push(event.clone()).is_err() {
                tracing::debug!(session = %ShortId(&session.id), "notification dropped: the session's mailbox is full");
            }
        }
    }
    if !recipients.sessions.is_empty() {
        let event = sse_event(&Message::Notification(n.clone()).to_bytes());
        for id in recipients.sessions {
            match gw.sessions.peek(&id) {
                Some(session) => {
                    if session.handle.push(event.clone()).is_err() {
                        tracing::debug!(session = %ShortId(&id), "notification dropped: the session's mailbox is full");
                    }
                }
                None => gw.subscriptions.end_session(&id),
            }
        }
    }
    for (tx, message) in recipients.listens {
        if tx.try_send(message).is_err() {
            tracing::debug!("notification dropped: a subscription stream is full");
        }
    }
}

/// A log message a backend sent outside any request (process-wide): to every legacy session that asked for
/// logging (`logging/setLevel`) at or below its level, on its GET stream. 2026-07-28 clients ask per request
/// only, and log messages never go on their listen streams.
fn deliver_log(gw: &Gateway, backend: &str, n: &Notification) {
    let event = sse_event(&Message::Notification(n.clone()).to_bytes());
    let mut sent = 0usize;
    for session in gw.sessions.all() {
        if !level_passes(n, session.log_level()) {
            continue;
        }
        if session.handle.push(event.clone()).is_err() {
            tracing::debug!(session = %ShortId(&session.id), "log message dropped: the session's mailbox is full");
        } else {
            sent += 1;
        }
    }
    tracing::debug!(%backend, sent, "relayed a backend's log message sent outside a request");
}

/// Makes `backend`'s own subscription cover what clients want from it now: every list change (the gateway
/// refreshes its catalog on them) and the URIs subscribed through it.
pub fn sync_backend(gw: &Gateway, backend: &str) {
    let Some(handle) = gw.backends.get(backend) else {
        return;
    };
    let snapshot = gw.catalog.snapshot();
    let uris = gw.subscriptions.uris_of(backend, |uri| {
        snapshot.resource(uri).map(|r| r.backend.to_owned())
    });
    handle.listen(ListenFilter {
        tools_list_changed: true,
        prompts_list_changed: true,
        resources_list_changed: true,
        resource_subscriptions: uris.into_iter().collect(),
    });
}
