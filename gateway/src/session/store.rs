//! The legacy session store: the session actors this replica holds, by id, bounded exactly, and what it
//! remembers of the sealed sessions it holds no actor for ([`Dormant`]). A Streamable HTTP session's id is
//! its sealed state ([`SealedSession`]): a request naming a session with no actor here opens the id and
//! rebuilds the actor (a restart, another replica's session, an actor dropped to make room). When the store
//! is full, the idlest actors with nothing open (no stream, no request, no subscription) are dropped, their
//! sessions kept as records; only when none can be dropped is a new actor refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use protocol::Generation;
use protocol::payload::InitializeRequestParams;
use serde_json::Value;

use super::dormant::{Dormant, Record, secs};
use super::sealed::{SealedSession, TooLarge, unix_now};
use super::subscriptions::Subscriptions;
use super::{NO_LEVEL, Session, SessionHandle, ShortId, Transport, new_session_id};
use crate::cluster::ClusterKeys;
use crate::cluster::redis::RedisLink;

/// The store is full: `initialize` is refused instead of growing without bound.
#[derive(Debug, thiserror::Error)]
#[error("the gateway holds its maximum of {0} sessions")]
pub struct StoreFull(pub usize);

/// Why a session could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// No room (see [`StoreFull`]).
    #[error(transparent)]
    Full(#[from] StoreFull),
    /// The client's state does not fit in an id.
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
}

/// The store's bounds and clocks.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// Session actors held at most.
    pub max: usize,
    /// A session unused this long is over (`session_idle_secs`).
    pub idle: Duration,
    /// A session's id expires this long after `initialize` (`session_max_lifetime_secs`).
    pub lifetime: Duration,
}

impl StoreLimits {
    /// `max` actors, the default idle time (30 minutes) and lifetime (24 hours).
    pub fn of(max: usize) -> StoreLimits {
        StoreLimits {
            max,
            idle: Duration::from_secs(30 * 60),
            lifetime: Duration::from_secs(24 * 3600),
        }
    }
}

/// A sealed id that opened and passed this replica's records: what rebuilding its actor needs.
#[derive(Debug)]
pub(super) struct Opened {
    pub(super) state: SealedSession,
    pub(super) key: super::SessionKey,
    /// The log level (its index; `NO_LEVEL` for none).
    pub(super) level: u8,
    /// Resource subscriptions made on other replicas, `(backend, uri)`.
    pub(super) subscriptions: Vec<(String, String)>,
}

/// Sessions a replica remembers per session actor it may hold (records are 38 to 75 bytes resident each, an
/// actor about 1.7 KiB: bench/RESULTS.md (d)).
const RECORDS_PER_ACTOR: usize = 16;

/// Rests a request needing a slot may try before it is refused (each rests a 64th of the maximum).
const SLOT_TRIES: usize = 4;

/// Every live legacy session, by id. Guards are never held across an `.await`: callers get an `Arc` clone.
#[derive(Debug)]
pub struct SessionStore {
    pub(super) sessions: Arc<Sessions>,
    pub(super) keys: Arc<ClusterKeys>,
    pub(super) limits: StoreLimits,
    resumed: AtomicU64,
    /// Redis, when replicas share one (`[cluster] redis`).
    pub(super) redis: Option<Arc<RedisLink>>,
}

/// The sessions by id, and a count of slots taken: a slot is taken (compare-and-swap below the maximum)
/// before a session is inserted and given back when it is removed, so the map never holds more than the
/// maximum, however many `initialize`s race.
#[derive(Debug)]
pub(super) struct Sessions {
    /// Keyed by the session's own id (the same allocation as `Session::id`).
    pub(super) map: DashMap<Arc<str>, Arc<Session>>,
    slots: Slots,
    pub(super) subscriptions: Arc<Subscriptions>,
    pub(super) dormant: Dormant,
    /// Actors dropped to make room so far.
    rested: AtomicU64,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The client sent DELETE.
    Deleted,
    /// No request for `session_idle_secs`.
    Idle,
    /// `session_max_lifetime_secs` after its `initialize`.
    Expired,
    /// `mcpgw serve --stdio`: standard input ended (or a new `initialize` replaced it).
    StdioClosed,
    /// 2024-11-05 HTTP+SSE: the client closed the session's stream.
    StreamClosed,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Deleted => "deleted by the client",
            Ending::Idle => "expired after being idle",
            Ending::Expired => "reached its maximum lifetime",
            Ending::StdioClosed => "standard input closed",
            Ending::StreamClosed => "its HTTP+SSE stream closed",
        }
    }
}

impl Sessions {
    /// The one way a session ends, whatever ends it: removed from the store (its slot given back), its
    /// actor stopped (its stream closes), its subscriptions dropped (the backends' own shrink when the
    /// change watcher wakes on `Subscriptions::changed`), and a sealed session's record marked ended until
    /// its id expires (the id never opens again here). Requests of it still in flight finish; answers to
    /// its open questions can no longer arrive (no session to send them on), so those questions end at
    /// their deadline.
    pub(super) fn end(&self, id: &str, why: Ending) -> bool {
        let Some((_, session)) = self.map.remove(id) else {
            return false;
        };
        self.slots.give_back();
        self.subscriptions.end_session(id);
        session.handle.end();
        if let Some(key) = session.key {
            let record = Record {
                last_use: secs(unix_now()),
                expires: secs(session.expires_at),
                level: NO_LEVEL,
                ended: true,
            };
            self.dormant.put(key, record, unix_now());
        }
        tracing::info!(session = %ShortId(id), why = why.as_str(), "session ended");
        true
    }

    /// Whether the session's actor may be dropped and rebuilt later: a sealed session that nothing uses now
    /// (no request holds it, no stream, no subscription).
    fn can_rest(&self, id: &str, session: &Arc<Session>) -> bool {
        self.may_rest(id, session, true)
    }

    /// [`Sessions::can_rest`], the subscriptions asked only when `any_subscribed` (some session holds one).
    fn may_rest(&self, id: &str, session: &Arc<Session>, any_subscribed: bool) -> bool {
        session.key.is_some()
            && Arc::strong_count(session) == 1
            && !session.handle.has_open_stream()
            && !(any_subscribed && self.subscriptions.has_session(id))
    }

    /// Drops the actors of the idlest sessions that can rest (a 64th of the maximum at a time, at least
    /// one), keeping each as a record. The scan copies no id (each is shared, counted) and asks the
    /// subscriptions' lock about each session only while some session has a subscription.
    fn rest_idlest(&self) -> Rest<'_> {
        let any_subscribed = self.subscriptions.has_sessions();
        let mut idle: Vec<(Duration, Arc<str>)> = self
            .map
            .iter()
            .filter(|r| self.may_rest(r.key(), r.value(), any_subscribed))
            .map(|r| (r.value().idle_for(), Arc::clone(r.key())))
            .collect();
        let mut rest = Rest {
            candidates: idle.len(),
            count: 0,
            slot: None,
        };
        if idle.is_empty() {
            return rest;
        }
        let n = (self.slots.max / 64).clamp(1, idle.len());
        let idlest_first = |a: &(Duration, Arc<str>), b: &(Duration, Arc<str>)| b.0.cmp(&a.0);
        let now = unix_now();
        // The n idlest; those another request rested first (or that are in use again) are made up for by
        // the next idlest, so that a request racing another for room still rests n.
        let mut left = &mut idle[..];
        while rest.count < n && !left.is_empty() {
            let k = (n - rest.count).min(left.len());
            if k < left.len() {
                left.select_nth_unstable_by(k - 1, idlest_first);
            }
            let (batch, tail) = std::mem::take(&mut left).split_at_mut(k);
            left = tail;
            for (_, id) in batch.iter() {
                if self.rest_one(id, now) {
                    if rest.slot.is_none() {
                        // The first slot freed stays taken, now the caller's.
                        rest.slot = Some(Slot(Some(&self.slots)));
                    } else {
                        self.slots.give_back();
                    }
                    rest.count += 1;
                }
            }
        }
        self.rested.fetch_add(rest.count as u64, Ordering::Relaxed);
        rest
    }

    /// Drops the actor of a session that can rest, keeping it as a record (its slot is the caller's to give
    /// back); whether it did.
    fn rest_one(&self, id: &str, now: u64) -> bool {
        let Some((_, session)) = self.map.remove_if(id, |id, s| self.can_rest(id, s)) else {
            return false;
        };
        session.handle.end();
        if let Some(key) = session.key {
            let record = Record {
                last_use: secs(now.saturating_sub(session.idle_for().as_secs())),
                expires: secs(session.expires_at),
                level: session.log_level.load(Ordering::Relaxed),
                ended: false,
            };
            self.dormant.put(key, record, now);
        }
        true
    }

    /// A free slot, making room by resting idle actors when there is none: the request that rests keeps one
    /// of the slots it freed (no other request can take it first). A rest finds none to drop only when every
    /// one it could have rested was taken or rested by other requests meanwhile: a few tries, refused at once
    /// when nothing can rest.
    fn slot(&self) -> Result<Slot<'_>, StoreFull> {
        for _ in 0..SLOT_TRIES {
            if let Some(slot) = self.slots.take() {
                return Ok(slot);
            }
            let rest = self.rest_idlest();
            if let Some(slot) = rest.slot {
                return Ok(slot);
            }
            if rest.candidates == 0 {
                break;
            }
        }
        self.slots.take().ok_or(StoreFull(self.slots.max))
    }
}

/// At most `max` slots taken at once.
#[derive(Debug)]
pub(super) struct Slots {
    taken: AtomicUsize,
    max: usize,
}

impl Slots {
    pub(super) fn new(max: usize) -> Slots {
        Slots {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes a slot if one is free; it is given back when the returned guard drops, unless kept.
    pub(super) fn take(&self) -> Option<Slot<'_>> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Some(self)))
    }

    pub(super) fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A slot taken and not yet kept: given back on drop (a session that was not inserted after all).
pub(super) struct Slot<'a>(Option<&'a Slots>);

/// What one rest did: the actors it could have rested, those it rested, and the slot of the first of them,
/// still taken (for the request that needed room: no other can take it first).
struct Rest<'a> {
    candidates: usize,
    count: usize,
    slot: Option<Slot<'a>>,
}

impl Slot<'_> {
    /// The slot now belongs to an entry in the map; the entry's removal gives it back.
    pub(super) fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.0 {
            slots.give_back();
        }
    }
}

impl SessionStore {
    /// An empty store holding at most `max` sessions with a key ring of its own (tests).
    pub fn new(max: usize, subscriptions: Arc<Subscriptions>) -> SessionStore {
        SessionStore::with_keys(
            StoreLimits::of(max),
            subscriptions,
            Arc::new(ClusterKeys::random()),
            None,
        )
    }

    /// An empty store within `limits`, sealing ids with `keys`, whose subscriptions are kept in
    /// `subscriptions`.
    pub fn with_keys(
        limits: StoreLimits,
        subscriptions: Arc<Subscriptions>,
        keys: Arc<ClusterKeys>,
        redis: Option<Arc<RedisLink>>,
    ) -> SessionStore {
        SessionStore {
            sessions: Arc::new(Sessions {
                map: DashMap::new(),
                slots: Slots::new(limits.max),
                subscriptions,
                dormant: Dormant::new(limits.max.saturating_mul(RECORDS_PER_ACTOR)),
                rested: AtomicU64::new(0),
            }),
            keys,
            limits,
            resumed: AtomicU64::new(0),
            redis,
        }
    }

    /// Creates a session for an accepted `initialize` and starts its actor on the current arbiter. `id` is
    /// given when the transport minted it already (HTTP+SSE names it in its endpoint event); a Streamable
    /// HTTP session's id is minted here, sealed.
    pub fn create(
        &self,
        id: Option<String>,
        generation: Generation,
        params: &InitializeRequestParams,
        transport: Transport,
        idle_timeout: Duration,
    ) -> Result<Arc<Session>, CreateError> {
        let client_capabilities = serde_json::to_value(&params.capabilities)
            .unwrap_or_else(|_| Value::Object(Default::default()));
        let (id, key, expires_at) = match (id, transport) {
            (None, Transport::StreamableHttp) => {
                let issued_at = unix_now();
                let expires_at = issued_at.saturating_add(self.limits.lifetime.as_secs());
                let sealed = SealedSession {
                    generation,
                    client_capabilities: client_capabilities.clone(),
                    client_info: params.client_info.clone(),
                    issued_at,
                    expires_at,
                    principal: String::new(),
                };
                let (id, key) = sealed.seal(&self.keys.ring())?;
                (id, Some(key), expires_at)
            }
            (id, _) => (id.unwrap_or_else(new_session_id), None, u64::MAX),
        };
        let id: Arc<str> = Arc::from(id);
        let slot = self.sessions.slot()?;
        let session = Arc::new(Session::new(
            Arc::clone(&id),
            key,
            expires_at,
            generation,
            client_capabilities,
            params.client_info.clone(),
            transport,
            self.actor(&id, idle_timeout, transport),
        ));
        if let Some(replaced) = self.sessions.map.insert(id, session.clone()) {
            // An id given twice (never minted twice): the old session is gone, its slot is this one's.
            replaced.handle.end();
        } else {
            slot.keep();
        }
        Ok(session)
    }

    fn actor(&self, id: &Arc<str>, idle: Duration, transport: Transport) -> SessionHandle {
        SessionHandle::start(
            Arc::clone(id),
            Arc::downgrade(&self.sessions),
            idle,
            transport == Transport::HttpSse,
        )
    }

    /// The session with this id, marked used: its actor, or one rebuilt from its sealed id (a session of
    /// another replica, of this one before a restart, or one whose actor rested). `Ok(None)` for an id that
    /// is unknown, forged, altered, expired, idle too long or ended, all alike; `Err` when no actor can be
    /// made room for now. With Redis, a rebuild costs one read (revoked? last use? log level?); a session
    /// with an actor costs none.
    pub async fn find(&self, id: &str) -> Result<Option<Arc<Session>>, StoreFull> {
        if let Some(live) = self.live(id) {
            return Ok(live);
        }
        let Some(opened) = self.open(id) else {
            return Ok(None);
        };
        let opened = match &self.redis {
            Some(link) => match super::shared::checked(link, opened, self.limits.idle).await {
                Some(opened) => opened,
                None => return Ok(None),
            },
            None => opened,
        };
        self.rebuild(id, opened)
    }

    /// As [`SessionStore::find`] without asking Redis (tests; a store without Redis).
    pub fn get(&self, id: &str) -> Result<Option<Arc<Session>>, StoreFull> {
        if let Some(live) = self.live(id) {
            return Ok(live);
        }
        match self.open(id) {
            Some(opened) => self.rebuild(id, opened),
            None => Ok(None),
        }
    }

    /// `Some` when this replica holds the session's actor: the session (marked used), or `None` when it just
    /// reached its maximum lifetime (and ended).
    fn live(&self, id: &str) -> Option<Option<Arc<Session>>> {
        let session = self.sessions.map.get(id).map(|r| r.value().clone())?;
        if session.expires_at <= unix_now() {
            self.sessions.end(id, Ending::Expired);
            return Some(None);
        }
        session.touch();
        Some(Some(session))
    }

    /// Opens a sealed id and checks this replica's record of it.
    fn open(&self, id: &str) -> Option<Opened> {
        let now = unix_now();
        let (state, key) = SealedSession::open(&self.keys.ring(), id, now)?;
        let record = self.sessions.dormant.get(key);
        if let Some(r) = record {
            if r.ended {
                return None;
            }
            if now.saturating_sub(u64::from(r.last_use)) >= self.limits.idle.as_secs() {
                self.sessions
                    .dormant
                    .put(key, Record { ended: true, ..r }, now);
                tracing::info!(session = %ShortId(id), why = Ending::Idle.as_str(), "session ended");
                return None;
            }
        }
        Some(Opened {
            state,
            key,
            level: record.map_or(NO_LEVEL, |r| r.level),
            subscriptions: Vec::new(),
        })
    }

    /// Starts the actor of an opened session (unless a concurrent request did).
    fn rebuild(&self, id: &str, opened: Opened) -> Result<Option<Arc<Session>>, StoreFull> {
        let Opened {
            state,
            key,
            level,
            subscriptions,
        } = opened;
        let slot = self.sessions.slot()?;
        let id: Arc<str> = Arc::from(id);
        let session = match self.sessions.map.entry(Arc::clone(&id)) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(e) => {
                let session = Arc::new(Session::new(
                    Arc::clone(&id),
                    Some(key),
                    state.expires_at,
                    state.generation,
                    state.client_capabilities,
                    state.client_info,
                    Transport::StreamableHttp,
                    self.actor(&id, self.limits.idle, Transport::StreamableHttp),
                ));
                session.mark_initialized();
                session.log_level.store(level, Ordering::Relaxed);
                e.insert(session.clone());
                for (backend, uri) in &subscriptions {
                    // Within the per-session bound: they were accepted on the replica that took them.
                    let _ = self.sessions.subscriptions.subscribe(&id, uri, backend);
                }
                if !subscriptions.is_empty() {
                    self.sessions.subscriptions.follow();
                }
                slot.keep();
                self.sessions.dormant.take(key);
                self.resumed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(session = %ShortId(&id), "session resumed from its id");
                session
            }
        };
        session.touch();
        Ok(Some(session))
    }

    /// The live session with this id, without marking it used or rebuilding it (deliveries must not keep
    /// a session alive).
    pub fn peek(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.map.get(id).map(|r| r.value().clone())
    }

    /// Ends a session and releases everything it holds (see [`Ending`]); `false` when no such session. A
    /// DELETE is published to every replica (with Redis).
    pub fn end(&self, id: &str, why: Ending) -> bool {
        let key = self
            .sessions
            .map
            .get(id)
            .and_then(|s| s.key.map(|k| (k, s.expires_at)));
        let ended = self.sessions.end(id, why);
        if let (true, Ending::Deleted, Some((key, expires_at)), Some(link)) =
            (ended, why, key, &self.redis)
        {
            super::shared::publish_revocation(link, key, id, expires_at);
        }
        ended
    }

    /// Drops idle actors to make room, as a full store does (tests and benchmarks); how many.
    pub fn rest_idlest(&self) -> usize {
        self.sessions.rest_idlest().count
    }

    /// Actors dropped to make room so far (their sessions kept as records).
    pub fn rested(&self) -> u64 {
        self.sessions.rested.load(Ordering::Relaxed)
    }

    /// Every live session (cloned out: no map guard is held by the caller).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.sessions
            .map
            .iter()
            .map(|r| r.value().clone())
            .collect()
    }

    /// Session actors held.
    pub fn len(&self) -> usize {
        self.sessions.map.len()
    }

    /// No session actors.
    pub fn is_empty(&self) -> bool {
        self.sessions.map.is_empty()
    }

    /// Sessions remembered without an actor (resting, or ended until their ids expire).
    pub fn records(&self) -> usize {
        self.sessions.dormant.len()
    }

    /// Ended sessions forgotten before their ids expired, to stay within the records' bound.
    pub fn records_pruned_early(&self) -> u64 {
        self.sessions.dormant.pruned_early()
    }

    /// Sessions rebuilt from their ids so far.
    pub fn resumed(&self) -> u64 {
        self.resumed.load(Ordering::Relaxed)
    }

    /// The key ring in use.
    pub fn keys(&self) -> &Arc<ClusterKeys> {
        &self.keys
    }
}
