//! Change notifications and resource subscriptions, across sessions and backends.
//!
//! Clients subscribe in their era's way — a legacy session with `resources/subscribe` (updates on its GET
//! stream), a 2026-07-28 client with a `subscriptions/listen` stream — and the gateway keeps, per backend,
//! one subscription covering every URI any client wants from it (`BackendHandle::listen`). What backends
//! announce comes back here and fans out to exactly the clients that asked: `resources/updated` to the
//! subscribers of that URI, `list_changed` to legacy sessions (unsolicited, as their era does) and to the
//! listen streams that asked for that kind. Bounded: a session holds at most [`MAX_PER_SESSION`] URIs, the
//! gateway at most [`MAX_LISTENS`] listen streams, and every delivery is a `try_send`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use protocol::meta::SUBSCRIPTION_ID;
use protocol::raw::RawObject;
use protocol::{Method, Notification, RequestId};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::Reader;

/// URIs one legacy session may subscribe to.
pub const MAX_PER_SESSION: usize = 1024;
/// Listen streams held at once.
pub const MAX_LISTENS: usize = 100_000;

/// What a 2026-07-28 `subscriptions/listen` asked for (and what the gateway acknowledges).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `toolsListChanged`.
    pub tools: bool,
    /// `promptsListChanged`.
    pub prompts: bool,
    /// `resourcesListChanged`.
    pub resources: bool,
    /// `resourceSubscriptions`.
    pub uris: BTreeSet<String>,
}

/// Why a subscription is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubscribeError {
    /// The session holds its maximum of URIs.
    #[error("the session already subscribes to {MAX_PER_SESSION} resources")]
    TooMany,
    /// The gateway holds its maximum of listen streams.
    #[error("the gateway holds its maximum of {MAX_LISTENS} subscription streams")]
    TooManyListens,
}

struct Listen {
    id: RequestId,
    filter: Filter,
    tx: mpsc::Sender<Vec<u8>>,
    /// Whose view judges what reaches it (`notify`).
    reader: Arc<Reader>,
}

#[derive(Default)]
struct State {
    /// URI → (backend, legacy sessions subscribed).
    uris: BTreeMap<String, (String, BTreeSet<String>)>,
    /// Legacy session → its URIs.
    sessions: HashMap<String, BTreeSet<String>>,
    /// Listen streams by a local key.
    listens: HashMap<u64, Listen>,
}

/// Every subscription the gateway holds. Locks are held only for map updates, never across an `.await`.
#[derive(Default)]
pub struct Subscriptions {
    state: Mutex<State>,
    next: AtomicU64,
    /// Woken when the backends' own subscriptions must follow: a session's subscriptions went, or came
    /// from another replica (a session rebuilt here, or subscribed there).
    changed: tokio::sync::Notify,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscriptions")
    }
}

/// Who must hear a notification: legacy sessions (by id) and listen streams (already tagged messages).
#[derive(Debug, Default)]
pub struct Recipients {
    /// Every legacy session hears it (list changes reach legacy clients unsolicited).
    pub all_sessions: bool,
    /// Legacy sessions to push the plain notification to.
    pub sessions: Vec<String>,
    /// Listen streams with the message tagged with their subscription id, and their reader (whose view
    /// `notify` judges the message by).
    pub listens: Vec<ListenRecipient>,
}

/// A listen stream that must hear a notification: its sender, the message tagged with its subscription id,
/// and its reader.
pub type ListenRecipient = (mpsc::Sender<Vec<u8>>, Vec<u8>, Arc<Reader>);

/// Removes a listen stream when its request ends.
#[derive(Debug)]
pub struct ListenGuard<'a> {
    subs: &'a Subscriptions,
    key: u64,
}

impl Drop for ListenGuard<'_> {
    fn drop(&mut self) {
        self.subs.lock().listens.remove(&self.key);
    }
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A legacy session subscribes to `uri`, served by `backend`.
    pub fn subscribe(&self, session: &str, uri: &str, backend: &str) -> Result<(), SubscribeError> {
        let mut state = self.lock();
        let mine = state.sessions.entry(session.to_owned()).or_default();
        if !mine.contains(uri) && mine.len() >= MAX_PER_SESSION {
            return Err(SubscribeError::TooMany);
        }
        mine.insert(uri.to_owned());
        let entry = state
            .uris
            .entry(uri.to_owned())
            .or_insert_with(|| (backend.to_owned(), BTreeSet::new()));
        entry.1.insert(session.to_owned());
        Ok(())
    }

    /// A legacy session unsubscribes from `uri`.
    pub fn unsubscribe(&self, session: &str, uri: &str) {
        let mut state = self.lock();
        if let Some(mine) = state.sessions.get_mut(session) {
            mine.remove(uri);
            if mine.is_empty() {
                // A session with no subscription left holds none (it may rest again).
                state.sessions.remove(session);
            }
        }
        remove_subscriber(&mut state, uri, session);
    }

    /// A legacy session ended: all its subscriptions go (and [`Subscriptions::changed`] wakes when it had
    /// any).
    pub fn end_session(&self, session: &str) {
        let removed = {
            let mut state = self.lock();
            let uris = state.sessions.remove(session).unwrap_or_default();
            for uri in &uris {
                remove_subscriber(&mut state, uri, session);
            }
            !uris.is_empty()
        };
        if removed {
            self.changed.notify_one();
        }
    }

    /// Whether a session holds any subscription.
    pub fn has_session(&self, session: &str) -> bool {
        self.lock().sessions.contains_key(session)
    }

    /// How many URIs a legacy session subscribes to.
    pub fn count_of(&self, session: &str) -> usize {
        self.lock().sessions.get(session).map_or(0, BTreeSet::len)
    }

    /// How many 2026-07-28 `subscriptions/listen` streams are open.
    pub fn listen_streams(&self) -> usize {
        self.lock().listens.len()
    }

    /// Whether any legacy session holds a subscription.
    pub fn has_sessions(&self) -> bool {
        !self.lock().sessions.is_empty()
    }

    /// Resolves once subscriptions changed since the last call in a way the backends' own must follow (the
    /// wake-ups coalesce: never a queue).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Subscriptions came from elsewhere (another replica): the backends' own must follow.
    pub fn follow(&self) {
        self.changed.notify_one();
    }

    /// A listen stream opens; it is removed when the guard drops.
    pub fn listen(
        &self,
        id: RequestId,
        filter: Filter,
        tx: mpsc::Sender<Vec<u8>>,
        reader: Arc<Reader>,
    ) -> Result<ListenGuard<'_>, SubscribeError> {
        let mut state = self.lock();
        if state.listens.len() >= MAX_LISTENS {
            return Err(SubscribeError::TooManyListens);
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        state.listens.insert(
            key,
            Listen {
                id,
                filter,
                tx,
                reader,
            },
        );
        Ok(ListenGuard { subs: self, key })
    }

    /// The URIs clients want from `backend` (what its own subscription must cover); `route` names the
    /// backend serving a URI a listen stream asked for.
    pub fn uris_of(
        &self,
        backend: &str,
        route: impl Fn(&str) -> Option<String>,
    ) -> BTreeSet<String> {
        let state = self.lock();
        let mut uris: BTreeSet<String> = state
            .uris
            .iter()
            .filter(|(_, (b, _))| b == backend)
            .map(|(uri, _)| uri.clone())
            .collect();
        uris.extend(
            state
                .listens
                .values()
                .flat_map(|l| l.filter.uris.iter())
                .filter(|u| route(u).as_deref() == Some(backend))
                .cloned(),
        );
        uris
    }

    /// Who must hear a backend's notification.
    pub fn recipients(&self, n: &Notification) -> Recipients {
        let state = self.lock();
        let method = n.known_method();
        let uri = (method == Some(Method::NotificationsResourcesUpdated))
            .then(|| {
                n.params
                    .as_deref()
                    .and_then(RawObject::parse)
                    .and_then(|p| {
                        p.get("uri")
                            .and_then(|u| serde_json::from_str::<String>(u.get()).ok())
                    })
            })
            .flatten();
        let mut out = Recipients::default();
        match (method, &uri) {
            (Some(Method::NotificationsResourcesUpdated), Some(uri)) => {
                if let Some((_, sessions)) = state.uris.get(uri) {
                    out.sessions.extend(sessions.iter().cloned());
                }
            }
            (
                Some(
                    Method::NotificationsToolsListChanged
                    | Method::NotificationsPromptsListChanged
                    | Method::NotificationsResourcesListChanged,
                ),
                _,
            ) => out.all_sessions = true,
            _ => return out,
        }
        for listen in state.listens.values() {
            let wanted = match method {
                Some(Method::NotificationsToolsListChanged) => listen.filter.tools,
                Some(Method::NotificationsPromptsListChanged) => listen.filter.prompts,
                Some(Method::NotificationsResourcesListChanged) => listen.filter.resources,
                _ => uri.as_ref().is_some_and(|u| listen.filter.uris.contains(u)),
            };
            if wanted {
                out.listens.push((
                    listen.tx.clone(),
                    tagged(n, &listen.id),
                    listen.reader.clone(),
                ));
            }
        }
        out
    }
}

fn remove_subscriber(state: &mut State, uri: &str, session: &str) {
    if let Some((_, sessions)) = state.uris.get_mut(uri) {
        sessions.remove(session);
        if sessions.is_empty() {
            state.uris.remove(uri);
        }
    }
}

/// The notification as a listen stream carries it: `_meta` tagged with the subscription id.
pub fn tagged(n: &Notification, subscription: &RequestId) -> Vec<u8> {
    let mut params = RawObject::parse_or_empty(n.params.as_deref()).unwrap_or_default();
    let mut meta = params
        .get("_meta")
        .and_then(RawObject::parse)
        .unwrap_or_default();
    meta.set(SUBSCRIPTION_ID, subscription.as_raw_value().to_owned());
    params.set("_meta", meta.to_raw());
    let raw: Box<RawValue> = params.to_raw();
    protocol::Message::Notification(Notification {
        method: n.method.clone(),
        params: Some(raw),
    })
    .to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn updated(uri: &str) -> Notification {
        Notification::new(
            "notifications/resources/updated",
            Some(&json!({"uri": uri})),
        )
    }

    #[test]
    fn updates_reach_subscribers_only() {
        let subs = Subscriptions::default();
        subs.subscribe("s1", "file:///a", "files").unwrap();
        subs.subscribe("s2", "file:///b", "files").unwrap();
        assert_eq!(subs.recipients(&updated("file:///a")).sessions, vec!["s1"]);
        assert!(subs.recipients(&updated("file:///c")).sessions.is_empty());
        assert_eq!(subs.uris_of("files", |_| None).len(), 2);
        subs.unsubscribe("s1", "file:///a");
        assert!(subs.recipients(&updated("file:///a")).sessions.is_empty());
        // s1 holds nothing now (its actor may rest); s2 still does.
        assert!(!subs.has_session("s1"));
        assert!(subs.has_session("s2") && subs.has_sessions());
        subs.end_session("s2");
        assert!(subs.uris_of("files", |_| None).is_empty());
        assert!(!subs.has_sessions());
    }

    #[test]
    fn listen_streams_get_what_they_asked_for_tagged() {
        let subs = Subscriptions::default();
        let (tx, _rx) = mpsc::channel(4);
        let filter = Filter {
            tools: true,
            uris: ["file:///a".to_owned()].into(),
            ..Filter::default()
        };
        let reader = Arc::new(Reader::new(0, None));
        let guard = subs
            .listen(RequestId::number(9), filter, tx, reader)
            .unwrap();
        let r = subs.recipients(&Notification::new("notifications/tools/list_changed", None));
        assert_eq!(r.listens.len(), 1);
        let msg: serde_json::Value = serde_json::from_slice(&r.listens[0].1).unwrap();
        assert_eq!(msg["params"]["_meta"][SUBSCRIPTION_ID], 9);
        assert!(
            subs.recipients(&Notification::new(
                "notifications/prompts/list_changed",
                None
            ))
            .listens
            .is_empty()
        );
        assert_eq!(subs.recipients(&updated("file:///a")).listens.len(), 1);
        drop(guard);
        assert!(subs.recipients(&updated("file:///a")).listens.is_empty());
    }

    #[test]
    fn a_session_is_bounded() {
        let subs = Subscriptions::default();
        for i in 0..MAX_PER_SESSION {
            subs.subscribe("s", &format!("u{i}"), "b").unwrap();
        }
        assert_eq!(
            subs.subscribe("s", "one-more", "b"),
            Err(SubscribeError::TooMany)
        );
        subs.subscribe("s", "u0", "b").unwrap();
    }
}
