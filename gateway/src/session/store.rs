//! The legacy session store: the session actors this replica holds, by id, bounded exactly, and what it
//! remembers of the sealed sessions it holds no actor for ([`Dormant`]). A Streamable HTTP session's id is
//! its sealed state ([`SealedSession`]): a request naming a session with no actor here opens the id and
//! rebuilds the actor (a restart, another replica's session, an actor dropped to make room). When the store
//! is full, the idlest actors with nothing open (no stream, no request, no subscription) are dropped, their
//! sessions kept as records; only when none can be dropped is a new actor refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use protocol::Generation;
use protocol::payload::InitializeRequestParams;
use serde_json::Value;

use super::dormant::{Dormant, Record, secs};
use super::replicas::{self, Opened};
use super::sealed::{SealedSession, SessionKey, TooLarge, unix_now};
use super::slots::Slots;
use super::subscriptions::Subscriptions;
use super::{NO_LEVEL, Session, SessionHandle, ShortId, Transport, new_session_id};
use crate::cluster::ClusterKeys;
use crate::cluster::redis::RedisLink;
use crate::metrics::SessionCounters;

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
    #[cfg(any(test, feature = "internals"))]
    pub fn of(max: usize) -> StoreLimits {
        StoreLimits {
            max,
            idle: Duration::from_secs(30 * 60),
            lifetime: Duration::from_secs(24 * 3600),
        }
    }
}

/// Sessions a replica remembers per session actor it may hold (records are 38 to 75 bytes resident each, an
/// actor about 1.7 KiB: bench/RESULTS.md (d)).
const RECORDS_PER_ACTOR: usize = 16;

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
    /// The ids of the sealed sessions in `map`, by key: how another replica's event, which names a session
    /// by its key, finds it.
    pub(super) by_key: DashMap<SessionKey, Arc<str>>,
    pub(super) slots: Slots,
    pub(super) subscriptions: Arc<Subscriptions>,
    pub(super) dormant: Dormant,
    /// Actors dropped to make room so far.
    pub(super) rested: AtomicU64,
    /// Replicas share last uses through Redis: idleness is the deployment's verdict, not this replica's.
    pub(super) shared_idle: bool,
    /// Sessions created and ended, per generation (`GET /metrics` reads them).
    pub(super) counters: Arc<SessionCounters>,
}

/// Why a session ended: one type with the metrics' `reason` label (`mcpgw_sessions_ended_total`).
pub use crate::metrics::SessionEnd as Ending;

/// What the log says of an ending.
fn described(why: Ending) -> &'static str {
    match why {
        Ending::Deleted => "deleted by the client",
        Ending::Idle => "expired after being idle",
        Ending::Expired => "reached its maximum lifetime",
        Ending::KeyDropped => "its key was dropped from the key ring",
        Ending::StdioClosed => "standard input closed",
        Ending::StreamClosed => "its HTTP+SSE stream closed",
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
        self.unindex(&session);
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
        self.counters.ended(session.generation, why);
        tracing::debug!(session = %ShortId(id), why = described(why), "session ended");
        true
    }
}

impl SessionStore {
    /// An empty store holding at most `max` sessions with a key ring of its own (tests).
    #[cfg(any(test, feature = "internals"))]
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
                by_key: DashMap::new(),
                slots: Slots::new(limits.max),
                subscriptions,
                dormant: Dormant::new(limits.max.saturating_mul(RECORDS_PER_ACTOR)),
                rested: AtomicU64::new(0),
                shared_idle: redis.is_some(),
                counters: Arc::default(),
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
        bound_to: Option<[u8; 16]>,
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
                    principal: bound_to.map(tag_of).unwrap_or_default(),
                };
                let (id, key) = sealed.seal(&self.keys.ring())?;
                (id, Some(key), expires_at)
            }
            (id, _) => (id.unwrap_or_else(new_session_id), None, u64::MAX),
        };
        let id: Arc<str> = Arc::from(id);
        let slot = self.sessions.slot()?;
        let session = Arc::new(
            Session::new(
                Arc::clone(&id),
                key,
                expires_at,
                generation,
                client_capabilities,
                params.client_info.clone(),
                transport,
                self.actor(&id, idle_timeout, transport),
            )
            .bound(bound_to),
        );
        self.sessions.index(&session);
        if let Some(replaced) = self.sessions.map.insert(id, session.clone()) {
            // An id given twice (never minted twice): the old session is gone, its slot is this one's.
            replaced.handle.end();
        } else {
            slot.keep();
        }
        self.sessions.counters.created(generation);
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
    ///
    /// `bound_to` is the principal the request comes from (with `[auth]` on): a session bound to another
    /// (or to none) is unknown to it, and is neither rebuilt nor marked used for it.
    pub async fn find(
        &self,
        id: &str,
        bound_to: Option<[u8; 16]>,
    ) -> Result<Option<Arc<Session>>, StoreFull> {
        if let Some(live) = self.live(id, bound_to) {
            return Ok(live);
        }
        let Some(opened) = self.open(id) else {
            return Ok(None);
        };
        if binding_of(&opened.state) != bound_to {
            return Ok(None);
        }
        let opened = match &self.redis {
            Some(link) => match replicas::checked(link, opened, self.limits.idle).await {
                Some(opened) => opened,
                None => return Ok(None),
            },
            None => opened,
        };
        self.rebuild(id, opened)
    }

    /// As [`SessionStore::find`] without asking Redis (tests; a store without Redis).
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, id: &str) -> Result<Option<Arc<Session>>, StoreFull> {
        if let Some(live) = self.live(id, None) {
            return Ok(live);
        }
        match self.open(id) {
            Some(opened) => self.rebuild(id, opened),
            None => Ok(None),
        }
    }

    /// `Some` when this replica holds the session's actor: the session (marked used), or `None` when it just
    /// reached its maximum lifetime (and ended).
    fn live(&self, id: &str, bound_to: Option<[u8; 16]>) -> Option<Option<Arc<Session>>> {
        let session = self.sessions.map.get(id).map(|r| r.value().clone())?;
        if session.bound_to != bound_to {
            return Some(None);
        }
        if session.expires_at <= unix_now() {
            self.sessions.end(id, Ending::Expired);
            return Some(None);
        }
        // Once per session after a ring is read again: its id must still open (a dropped key ends the
        // sessions it sealed on every replica, the ones with an actor here too).
        let version = self.keys.version();
        if session.key.is_some() && session.ring_version.load(Ordering::Relaxed) != version {
            if SealedSession::open(&self.keys.ring(), id, unix_now()).is_none() {
                self.sessions.end(id, Ending::KeyDropped);
                return Some(None);
            }
            session.ring_version.store(version, Ordering::Relaxed);
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
            let idle = now.saturating_sub(u64::from(r.last_use)) >= self.limits.idle.as_secs();
            // With Redis, the last use on any replica decides (`replicas::checked`).
            if idle && !self.sessions.shared_idle {
                self.sessions
                    .dormant
                    .put(key, Record { ended: true, ..r }, now);
                self.sessions.counters.ended(state.generation, Ending::Idle);
                tracing::debug!(session = %ShortId(id), why = described(Ending::Idle), "session ended");
                return None;
            }
        }
        Some(Opened {
            last_use: record.map_or(state.issued_at, |r| u64::from(r.last_use)),
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
            ..
        } = opened;
        let bound = binding_of(&state);
        let slot = self.sessions.slot()?;
        let id: Arc<str> = Arc::from(id);
        let session = match self.sessions.map.entry(Arc::clone(&id)) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(e) => {
                let session = Arc::new(
                    Session::new(
                        Arc::clone(&id),
                        Some(key),
                        state.expires_at,
                        state.generation,
                        state.client_capabilities,
                        state.client_info,
                        Transport::StreamableHttp,
                        self.actor(&id, self.limits.idle, Transport::StreamableHttp),
                    )
                    .bound(bound),
                );
                session.mark_initialized();
                session.log_level.store(level, Ordering::Relaxed);
                self.sessions.index(&session);
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
            replicas::publish_revocation(link, key, expires_at);
        }
        ended
    }

    /// Sessions created and ended so far, per generation.
    pub fn counters(&self) -> &Arc<SessionCounters> {
        &self.sessions.counters
    }

    /// Live sessions (with an actor on this replica) per generation, in `Generation::ALL` order.
    pub fn live_by_generation(&self) -> [u64; Generation::ALL.len()] {
        let mut out = [0; Generation::ALL.len()];
        for entry in self.sessions.map.iter() {
            out[entry.value().generation as usize] += 1;
        }
        out
    }

    /// Drops idle actors to make room, as a full store does (tests and benchmarks); how many.
    #[cfg(any(test, feature = "internals"))]
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
    #[cfg(any(test, feature = "internals"))]
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

/// A binding's text form in a sealed id.
fn tag_of(binding: [u8; 16]) -> String {
    binding.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a sealed session is bound to.
fn binding_of(state: &SealedSession) -> Option<[u8; 16]> {
    if state.principal.is_empty() {
        None
    } else {
        // An unreadable tag binds to nothing anyone can present.
        Some(
            crate::auth_context::AuthContext::binding_of_tag(&state.principal)
                .unwrap_or([0xff; 16]),
        )
    }
}
