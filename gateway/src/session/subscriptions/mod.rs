//! Change notifications and resource subscriptions, across sessions and backends.
//!
//! Clients subscribe in their era's way — a legacy session with `resources/subscribe` (updates on its GET
//! stream), a 2026-07-28 client with a `subscriptions/listen` stream — and the gateway keeps, per backend,
//! one subscription covering every URI any client wants from it (`BackendHandle::listen`). What backends
//! announce comes back here and fans out to exactly the clients that asked: `resources/updated` to the
//! subscribers of that URI through the backend that sent it, `list_changed` to legacy sessions (unsolicited,
//! as their era does) and to the listen streams that asked for that kind.
//!
//! Bounded: a session holds at most [`MAX_PER_SESSION`] URIs, a listen request names at most
//! [`MAX_PER_LISTEN`], a caller holds at most [`MAX_PER_CALLER`] over its sessions and streams and at most
//! [`MAX_LISTENS_PER_CALLER`] streams, the gateway at most [`MAX_LISTENS`] streams; every delivery is a
//! `try_send`. Every table is indexed by what a change names (backend and URI, kind of list change), so
//! subscribing, syncing a backend and fanning a notification out cost work in proportion to what they name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use handlers::Caller;
use protocol::meta::SUBSCRIPTION_ID;
use protocol::raw::RawObject;
use protocol::{Method, Notification, RequestId};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::Reader;

/// URIs one legacy session may subscribe to.
pub const MAX_PER_SESSION: usize = 1024;
/// URIs one `subscriptions/listen` request may name.
pub const MAX_PER_LISTEN: usize = 1024;
/// URIs one caller (a principal, else a legacy session, else a client address) may hold subscribed at once,
/// over all its sessions and listen streams.
pub const MAX_PER_CALLER: usize = 16_384;
/// Listen streams one principal may hold open at once (a caller known only by its address — perhaps many
/// clients behind one NAT or proxy, or a load generator — is bounded by the pool and its URIs instead).
pub const MAX_LISTENS_PER_CALLER: usize = 1024;
/// Listen streams held at once: the pool every stream takes its place from, for its lifetime.
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
    /// `resourceSubscriptions`: each URI, and the backend the client's view routes it to.
    pub uris: BTreeMap<String, String>,
}

/// Why a subscription is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubscribeError {
    /// The session holds its maximum of URIs.
    #[error("the session already subscribes to {MAX_PER_SESSION} resources, its maximum")]
    UrisForSession,
    /// The caller holds its maximum of URIs over its sessions and streams.
    #[error(
        "this client already subscribes to {MAX_PER_CALLER} resources over its sessions and streams, its maximum"
    )]
    UrisForCaller,
    /// The caller holds its maximum of listen streams.
    #[error("this client already holds {MAX_LISTENS_PER_CALLER} subscription streams, its maximum")]
    ListensForCaller,
    /// The gateway holds its maximum of listen streams.
    #[error("the gateway holds its maximum of {MAX_LISTENS} subscription streams")]
    Listens,
}

impl SubscribeError {
    /// Whether the client is at its own bound (its request is refused as invalid params, naming the bound);
    /// else the gateway is (overload).
    pub fn is_callers(&self) -> bool {
        !matches!(self, SubscribeError::Listens)
    }
}

struct Listen {
    id: RequestId,
    filter: Filter,
    tx: mpsc::Sender<Vec<u8>>,
    caller: Option<Caller>,
    /// Whose view judges what reaches it (`notify`).
    reader: std::sync::Arc<Reader>,
}

/// What one caller holds now.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    streams: usize,
    uris: usize,
}

/// The three kinds of list change a listen stream may ask for, as indexes into [`State::kinds`].
fn kind_of(method: Option<Method>) -> Option<usize> {
    match method {
        Some(Method::NotificationsToolsListChanged) => Some(0),
        Some(Method::NotificationsPromptsListChanged) => Some(1),
        Some(Method::NotificationsResourcesListChanged) => Some(2),
        _ => None,
    }
}

/// A resource subscribed through a backend: (backend, URI).
type Route = (String, String);

/// Every table is indexed by what a change names, so that a subscription, a listen stream or a notification
/// costs work in proportion to what it names, never to everything subscribed.
#[derive(Default)]
struct State {
    /// (backend, URI) → legacy sessions subscribed to the URI through that backend.
    uris: BTreeMap<(String, String), BTreeSet<String>>,
    /// Legacy session → who it counts against, and its (backend, URI)s.
    sessions: HashMap<String, (Option<Caller>, BTreeSet<Route>)>,
    /// Listen streams by a local key.
    listens: HashMap<u64, Listen>,
    /// (backend, URI) → listen streams subscribed to the URI through that backend.
    listening: BTreeMap<(String, String), BTreeSet<u64>>,
    /// The listen streams that asked for each kind of list change (tools, prompts, resources).
    kinds: [BTreeSet<u64>; 3],
    /// Backend → the URIs clients want from it, and how many subscriptions want each.
    by_backend: HashMap<String, BTreeMap<String, usize>>,
    /// What each caller holds (an entry only while it holds something).
    callers: HashMap<Caller, Held>,
}

impl State {
    fn want(&mut self, backend: &str, uri: &str) {
        *self
            .by_backend
            .entry(backend.to_owned())
            .or_default()
            .entry(uri.to_owned())
            .or_insert(0) += 1;
    }

    fn unwant(&mut self, backend: &str, uri: &str) {
        let Some(uris) = self.by_backend.get_mut(backend) else {
            return;
        };
        if let Some(n) = uris.get_mut(uri) {
            *n -= 1;
            if *n == 0 {
                uris.remove(uri);
            }
        }
        if uris.is_empty() {
            self.by_backend.remove(backend);
        }
    }

    fn held(&mut self, caller: Option<Caller>, change: impl FnOnce(&mut Held)) {
        let Some(caller) = caller else { return };
        let held = self.callers.entry(caller).or_default();
        change(held);
        if held.streams == 0 && held.uris == 0 {
            self.callers.remove(&caller);
        }
    }

    fn holds(&self, caller: Option<Caller>) -> Held {
        caller
            .and_then(|c| self.callers.get(&c).copied())
            .unwrap_or_default()
    }

    /// Removes one (backend, URI) of a legacy session from the tables.
    fn remove_subscriber(&mut self, key: &(String, String), session: &str, caller: Option<Caller>) {
        let Some(sessions) = self.uris.get_mut(key) else {
            return;
        };
        let removed = sessions.remove(session);
        if sessions.is_empty() {
            self.uris.remove(key);
        }
        if removed {
            self.unwant(&key.0, &key.1);
            self.held(caller, |h| h.uris = h.uris.saturating_sub(1));
        }
    }
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
pub type ListenRecipient = (mpsc::Sender<Vec<u8>>, Vec<u8>, std::sync::Arc<Reader>);

/// A listen stream's place in the pool ([`MAX_LISTENS`]) and in its caller's bounds, held for the stream's
/// lifetime: dropping it removes the stream and everything it subscribed to.
#[derive(Debug)]
pub struct ListenGuard {
    subs: std::sync::Arc<Subscriptions>,
    key: u64,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        let mut state = self.subs.lock();
        let Some(listen) = state.listens.remove(&self.key) else {
            return;
        };
        for kind in &mut state.kinds {
            kind.remove(&self.key);
        }
        for (uri, backend) in &listen.filter.uris {
            let key = (backend.clone(), uri.clone());
            if let Some(keys) = state.listening.get_mut(&key) {
                keys.remove(&self.key);
                if keys.is_empty() {
                    state.listening.remove(&key);
                }
            }
            state.unwant(backend, uri);
        }
        let uris = listen.filter.uris.len();
        state.held(listen.caller, |h| {
            h.streams = h.streams.saturating_sub(1);
            h.uris = h.uris.saturating_sub(uris);
        });
    }
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A legacy session subscribes to `uri`, served by `backend` (one accepted elsewhere: another replica
    /// took it within its bounds).
    pub fn subscribe(&self, session: &str, uri: &str, backend: &str) -> Result<(), SubscribeError> {
        self.subscribe_as(None, session, uri, backend)
    }

    /// A legacy session of `caller` subscribes to `uri`, served by `backend`: within the session's bound
    /// and the caller's.
    pub fn subscribe_as(
        &self,
        caller: Option<Caller>,
        session: &str,
        uri: &str,
        backend: &str,
    ) -> Result<(), SubscribeError> {
        let mut state = self.lock();
        let key = (backend.to_owned(), uri.to_owned());
        let (owner, mine) = state
            .sessions
            .get(session)
            .map(|(c, m)| (*c, m.contains(&key)))
            .unwrap_or((caller, false));
        if mine {
            return Ok(());
        }
        let count = state.sessions.get(session).map_or(0, |(_, m)| m.len());
        if count >= MAX_PER_SESSION {
            return Err(SubscribeError::UrisForSession);
        }
        if owner.is_some() && state.holds(owner).uris >= MAX_PER_CALLER {
            return Err(SubscribeError::UrisForCaller);
        }
        state
            .sessions
            .entry(session.to_owned())
            .or_insert_with(|| (owner, BTreeSet::new()))
            .1
            .insert(key.clone());
        state
            .uris
            .entry(key)
            .or_default()
            .insert(session.to_owned());
        state.want(backend, uri);
        state.held(owner, |h| h.uris += 1);
        Ok(())
    }

    /// A legacy session unsubscribes from `uri` (through whichever backend it subscribed).
    pub fn unsubscribe(&self, session: &str, uri: &str) {
        let mut state = self.lock();
        let Some((caller, mine)) = state.sessions.get_mut(session) else {
            return;
        };
        let caller = *caller;
        let keys: Vec<(String, String)> = mine.iter().filter(|(_, u)| u == uri).cloned().collect();
        for key in &keys {
            mine.remove(key);
        }
        if mine.is_empty() {
            // A session with no subscription left holds none (it may rest again).
            state.sessions.remove(session);
        }
        for key in &keys {
            state.remove_subscriber(key, session, caller);
        }
    }

    /// A legacy session ended: all its subscriptions go (and [`Subscriptions::changed`] wakes when it had
    /// any).
    pub fn end_session(&self, session: &str) {
        let removed = {
            let mut state = self.lock();
            let (caller, keys) = state.sessions.remove(session).unwrap_or_default();
            for key in &keys {
                state.remove_subscriber(key, session, caller);
            }
            !keys.is_empty()
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
        self.lock()
            .sessions
            .get(session)
            .map_or(0, |(_, m)| m.len())
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

    /// A listen stream of `caller` opens, within the pool and the caller's bounds (its count of streams
    /// only when `count_streams`: the caller is a principal); it is removed when the guard drops.
    #[allow(clippy::too_many_arguments)]
    pub fn listen(
        self: &std::sync::Arc<Self>,
        id: RequestId,
        filter: Filter,
        caller: Option<Caller>,
        count_streams: bool,
        tx: mpsc::Sender<Vec<u8>>,
        reader: std::sync::Arc<Reader>,
    ) -> Result<ListenGuard, SubscribeError> {
        let mut state = self.lock();
        let held = state.holds(caller);
        if count_streams && held.streams >= MAX_LISTENS_PER_CALLER {
            return Err(SubscribeError::ListensForCaller);
        }
        if held.uris + filter.uris.len() > MAX_PER_CALLER {
            return Err(SubscribeError::UrisForCaller);
        }
        if state.listens.len() >= MAX_LISTENS {
            return Err(SubscribeError::Listens);
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let wanted = [filter.tools, filter.prompts, filter.resources];
        for (kind, wanted) in state.kinds.iter_mut().zip(wanted) {
            if wanted {
                kind.insert(key);
            }
        }
        for (uri, backend) in &filter.uris {
            state
                .listening
                .entry((backend.clone(), uri.clone()))
                .or_default()
                .insert(key);
            state.want(backend, uri);
        }
        let uris = filter.uris.len();
        state.held(caller, |h| {
            h.streams += 1;
            h.uris += uris;
        });
        state.listens.insert(
            key,
            Listen {
                id,
                filter,
                tx,
                caller,
                reader,
            },
        );
        Ok(ListenGuard {
            subs: std::sync::Arc::clone(self),
            key,
        })
    }

    /// The URIs clients want from `backend` (what its own subscription must cover).
    pub fn uris_of(&self, backend: &str) -> BTreeSet<String> {
        self.lock()
            .by_backend
            .get(backend)
            .map(|uris| uris.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Who must hear `backend`'s notification: a resource's subscribers through that backend, or the
    /// streams that asked for a kind of list change (`backend` is not needed for those).
    pub fn recipients(&self, backend: Option<&str>, n: &Notification) -> Recipients {
        let state = self.lock();
        let method = n.known_method();
        let mut out = Recipients::default();
        let listens: Vec<u64> = if method == Some(Method::NotificationsResourcesUpdated) {
            let (Some(uri), Some(backend)) = (updated_uri(n), backend) else {
                return out;
            };
            let key = (backend.to_owned(), uri);
            if let Some(sessions) = state.uris.get(&key) {
                out.sessions.extend(sessions.iter().cloned());
            }
            state
                .listening
                .get(&key)
                .map(|keys| keys.iter().copied().collect())
                .unwrap_or_default()
        } else if let Some(kind) = kind_of(method) {
            out.all_sessions = true;
            state.kinds[kind].iter().copied().collect()
        } else {
            return out;
        };
        for key in listens {
            if let Some(listen) = state.listens.get(&key) {
                out.listens.push((
                    listen.tx.clone(),
                    tagged(n, &listen.id),
                    std::sync::Arc::clone(&listen.reader),
                ));
            }
        }
        out
    }
}

/// The URI of a `notifications/resources/updated`.
pub fn updated_uri(n: &Notification) -> Option<String> {
    let params = RawObject::parse(n.params.as_deref()?)?;
    serde_json::from_str(params.get("uri")?.get()).ok()
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
mod tests;
