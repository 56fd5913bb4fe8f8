//! What backends announce on their own, handled in one place: (re)connections and list changes rebuild the
//! catalog (merged when they come in bursts) and re-establish each backend's subscription; list changes and
//! resource updates then fan out to the clients that asked (see `subscriptions`), and log messages sent
//! outside a request to the legacy sessions that asked for logging — each only to readers whose view shows
//! the backend, or whose view changed ([`fanout`](super::fanout)).

use std::sync::Arc;
use std::time::Duration;

use handlers::{BackendEvent, ListenFilter};
use protocol::{Method, Notification};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::notify::fanout::{self, Seen};
use crate::notify::listing::{Scope, refresh};
use crate::notify::readers::ReaderViews;
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
    // The readers' views of the current catalog (log messages and updates are judged by them).
    let mut views = ReaderViews::new(gw.live().policy.clone());
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
                        if let Some((before, after)) = refresh(&gw, &scope).await {
                            views = list_changes(&gw, views, &before, &after);
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
                if gw.drain.is_draining() {
                    // Stopped by the gateway's own shutdown: nothing went wrong.
                    tracing::info!(%backend, "backend stopped");
                } else {
                    tracing::warn!(%backend, %reason, "backend down");
                }
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
                    // Who hears of it is decided once the catalog is refreshed: the readers whose view changed.
                    pending.add(Pending::one(&backend));
                }
                Some(Method::NotificationsMessage) => {
                    views.follow(gw.live().policy.as_ref());
                    fanout::log(&gw, &mut views, &backend, &notification);
                }
                Some(Method::NotificationsResourcesUpdated) => {
                    if let Some(uri) = updated_uri(&notification) {
                        gw.resource_cache.invalidate(&uri);
                        views.follow(gw.live().policy.as_ref());
                        fanout::update(&gw, &mut views, &backend, &uri, &notification);
                    }
                }
                Some(Method::NotificationsElicitationComplete) => {
                    crate::notify::completion::deliver(&gw, &backend, &notification, None);
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

/// The catalog went from `before` to `after`: each reader hears of the lists its view changed in (judged
/// under the policy in force now); the views of `after` are kept for what comes next.
fn list_changes(
    gw: &Gateway,
    mut views: ReaderViews,
    before: &Arc<crate::catalog::CatalogSnapshot>,
    after: &Arc<crate::catalog::CatalogSnapshot>,
) -> ReaderViews {
    let policy = gw.live().policy.clone();
    views.follow(policy.as_ref());
    let mut next = ReaderViews::new(policy);
    let heard = fanout::list_changes(
        gw,
        Seen {
            full: before,
            views: &mut views,
        },
        Seen {
            full: after,
            views: &mut next,
        },
    );
    tracing::debug!(
        ?heard,
        "list changes sent to the readers whose view changed"
    );
    next
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
