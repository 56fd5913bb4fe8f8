//! What backends announce on their own, handled in one place: (re)connections and list changes rebuild the
//! catalog (merged when they come in bursts) and re-establish each backend's subscription; list changes and
//! resource updates then fan out to the clients that asked (see `subscriptions`), and log messages sent
//! outside a request to the legacy sessions that asked for logging.

use std::sync::Arc;
use std::time::Duration;

use handlers::{BackendEvent, ListenFilter};
use protocol::payload::LoggingLevel;
use protocol::raw::RawObject;
use protocol::{Message, Method, Notification};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::notify::listing::{Scope, refresh};
use crate::session::sse_event;
use crate::session::subscriptions::updated_uri;
use crate::state::Gateway;

/// Catalog refreshes triggered close together are merged into one.
const REFRESH_DEBOUNCE: Duration = Duration::from_millis(250);

/// The shortest pause between two catalog refreshes caused by lists going stale (a backend that says
/// `ttlMs: 1` does not make the gateway list it a thousand times a second).
const MIN_STALE_REFRESH: Duration = Duration::from_secs(1);

/// The refresh waiting to run: when, for which backends.
#[derive(Debug, Default)]
struct Pending {
    at: Option<Instant>,
    scope: Option<Scope>,
}

impl Pending {
    /// Adds `scope` to the next refresh, due in [`REFRESH_DEBOUNCE`] unless one is due sooner.
    fn add(&mut self, scope: Scope) {
        self.at
            .get_or_insert_with(|| Instant::now() + REFRESH_DEBOUNCE);
        self.scope = Some(match self.scope.take() {
            Some(s) => s.and(scope),
            None => scope,
        });
    }

    fn one(backend: &str) -> Scope {
        Scope::Only(std::iter::once(backend.to_owned()).collect())
    }
}

/// Handles backend events until the channel closes: a backend that comes up, goes down or announces a list
/// change is listed again (merged when they come in bursts); so is every backend when a list the catalog
/// holds goes stale (its backends' `ttlMs` ran out), so that the gateway's own `ttlMs` stays truthful, and
/// each backend the ledger has due (a failed listing's retry, the end of a down backend's grace period).
pub async fn watch(gw: Arc<Gateway>, mut events: mpsc::Receiver<BackendEvent>) {
    let mut pending = Pending::default();
    let mut list_changes: Vec<Notification> = Vec::new();
    let mut listed_all_at = Instant::now();
    let mut stale_at = stale_refresh_at(&gw, listed_all_at);
    loop {
        let due_at = gw.ledger.next_due().map(Instant::from_std);
        let wake_at = [pending.at, stale_at, due_at].into_iter().flatten().min();
        let event = match wake_at {
            Some(at) => tokio::select! {
                event = events.recv() => event,
                () = gw.subscriptions.changed() => {
                    sync_all(&gw);
                    continue;
                }
                () = tokio::time::sleep_until(at) => {
                    let now = Instant::now();
                    let mut scope = None;
                    if pending.at.is_some_and(|p| p <= now) {
                        pending.at = None;
                        scope = pending.scope.take();
                    }
                    if stale_at.is_some_and(|s| s <= now) {
                        scope = Some(Scope::All);
                    }
                    let due = gw.ledger.take_due(now.into_std());
                    if !due.is_empty() {
                        let due = Scope::Only(due);
                        scope = Some(match scope {
                            Some(s) => s.and(due),
                            None => due,
                        });
                    }
                    if let Some(scope) = scope {
                        if scope == Scope::All {
                            listed_all_at = now;
                        }
                        refresh(&gw, &scope).await;
                        for n in list_changes.drain(..) {
                            deliver(&gw, None, &n);
                        }
                    }
                    // Every new catalog says when its lists go stale (none while a backend is degraded).
                    stale_at = stale_refresh_at(&gw, listed_all_at + MIN_STALE_REFRESH);
                    continue;
                }
            },
            None => tokio::select! {
                event = events.recv() => event,
                () = gw.subscriptions.changed() => {
                    sync_all(&gw);
                    continue;
                }
            },
        };
        let Some(event) = event else { break };
        match event {
            BackendEvent::Ready { backend, .. } => {
                pending.add(Pending::one(&backend));
                sync_backend(&gw, &backend);
            }
            BackendEvent::Down { backend, reason } => {
                tracing::warn!(%backend, %reason, "backend down");
                // Listed as stale at once; left out if it is not back within the grace period.
                pending.add(Pending::one(&backend));
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
                    pending.add(Pending::one(&backend));
                    if !list_changes.iter().any(|n| n.method == notification.method) {
                        list_changes.push(notification);
                    }
                }
                Some(Method::NotificationsMessage) => deliver_log(&gw, &backend, &notification),
                Some(Method::NotificationsResourcesUpdated) => {
                    if let Some(uri) = updated_uri(&notification) {
                        gw.resource_cache.invalidate(&uri);
                    }
                    deliver(&gw, Some(&backend), &notification);
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

/// Sends a notification (`backend`'s, for a resource update) to every client that asked for it; a session
/// gone meanwhile loses its subscriptions.
pub fn deliver(gw: &Gateway, backend: Option<&str>, n: &Notification) {
    let recipients = gw.subscriptions.recipients(backend, n);
    if recipients.all_sessions {
        let event = sse_event(&Message::Notification(n.clone()).to_bytes());
        for session in gw.sessions.all() {
            // A failure is counted and logged by the handle.
            let _ = session.handle.push(event.clone());
        }
    }
    if !recipients.sessions.is_empty() {
        let event = sse_event(&Message::Notification(n.clone()).to_bytes());
        for id in recipients.sessions {
            match gw.sessions.peek(&id) {
                Some(session) => {
                    let _ = session.handle.push(event.clone());
                }
                None => gw.subscriptions.end_session(&id),
            }
        }
    }
    for (tx, message) in recipients.listens {
        if tx.try_send(message).is_err() {
            crate::session::note_stream_dropped("a subscription stream is full");
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
        if session.handle.push(event.clone()).is_ok() {
            sent += 1;
        }
    }
    tracing::debug!(%backend, sent, "relayed a backend's log message sent outside a request");
}

/// Brings every backend's own subscription in line (a session ended: what it wanted is no longer wanted).
fn sync_all(gw: &Gateway) {
    for name in gw.live().backends.keys() {
        sync_backend(gw, name);
    }
}

/// Makes `backend`'s own subscription cover what clients want from it now: every list change (the gateway
/// refreshes its catalog on them) and the URIs subscribed through it.
pub fn sync_backend(gw: &Gateway, backend: &str) {
    let Some(handle) = gw.live().backend(backend).cloned() else {
        return;
    };
    let uris = gw.subscriptions.uris_of(backend);
    handle.listen(ListenFilter {
        tools_list_changed: true,
        prompts_list_changed: true,
        resources_list_changed: true,
        resource_subscriptions: uris.into_iter().collect(),
    });
}

/// A log message passes when the client asked for logging and its level is at least the client's.
pub fn level_passes(n: &Notification, wanted: Option<LoggingLevel>) -> bool {
    let Some(wanted) = wanted else {
        return false;
    };
    let level = n
        .params
        .as_deref()
        .and_then(RawObject::parse)
        .and_then(|p| {
            p.get("level")
                .and_then(|l| serde_json::from_str::<LoggingLevel>(l.get()).ok())
        });
    level.is_some_and(|l| l >= wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn log_messages_pass_at_or_above_the_level() {
        let msg = |level: &str| {
            Notification::new(
                "notifications/message",
                Some(&json!({"level": level, "data": "x"})),
            )
        };
        // (message level, wanted, passes)
        let table = [
            ("error", Some(LoggingLevel::Warning), true),
            ("warning", Some(LoggingLevel::Warning), true),
            ("info", Some(LoggingLevel::Warning), false),
            ("debug", Some(LoggingLevel::Debug), true),
            ("error", None, false),
            ("loud", Some(LoggingLevel::Debug), false),
        ];
        for (level, wanted, passes) in table {
            assert_eq!(
                level_passes(&msg(level), wanted),
                passes,
                "{level} {wanted:?}"
            );
        }
    }
}
