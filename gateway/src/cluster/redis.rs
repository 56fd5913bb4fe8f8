//! The replicas' Redis (`[cluster] redis`): what changes after a legacy session's `initialize` and must reach
//! whichever replica needs it. Kept off the hot path: an established session's requests send nothing here.
//!
//! - `mcpgw:s:{key}`, a hash per sealed session that changed after `initialize`: `u` last use (Unix seconds,
//!   written in batches at most once per 30 s per session), `r` revoked, `l` log level; it expires with the
//!   session's id. Read once by a replica that rebuilds the session.
//! - `mcpgw:sub:{key}`, a set per sealed session that subscribed to resources: `BACKEND URI` members, read
//!   with the hash by a replica that rebuilds the session; it expires with the session's id.
//! - `mcpgw:session`, a channel: revocations (a DELETE), log levels and resource subscriptions, applied by
//!   every replica holding the session (a replica that has none records a revocation until the id expires).
//!   Events name a session by its key (the sealed id's key tag and nonce, as in `mcpgw:s:{key}`), never by
//!   its id: the id is the session's credential, and Redis keeps the stream; the key cannot be turned back
//!   into an id. Replicas before this change published full ids (`id`): those are still read, and they
//!   cannot read the key-named events (they ignore them, logged at debug).
//! - `mcpgw:events`, a stream holding the same events (the last ~100,000), each added in one MULTI/EXEC with
//!   its publication: a replica whose subscription had a gap (Redis restarted, a connection lost) reads what
//!   it missed from there once it has subscribed again (see `listen.rs`).
//! - `mcpgw:answer:{replica}`, a channel per replica: a legacy client's answer to a question that another
//!   replica asked (the question's id names the replica).
//! - `mcpgw:used:{id}`: a sealed `requestState`'s single use, set if absent until the state expires.
//!
//! Every command has a deadline ([`DEADLINE`]); Redis down answers [`Unavailable`] at once, never a hang.
//! Revocations made while it is down are kept (bounded) and published when it is back.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use super::event::{ClusterEvent, Named};
use redis::aio::ConnectionManager;

/// How long one Redis command may take before it counts as unavailable.
pub const DEADLINE: Duration = Duration::from_millis(500);
/// Revocations kept while Redis is unreachable, at most (the oldest are dropped beyond, and counted).
const PENDING_MAX: usize = 10_000;
/// The channel of session changes.
pub(super) const SESSION_CHANNEL: &str = "mcpgw:session";
/// The stream that keeps the session channel's events, for a replica whose subscription had a gap.
pub(super) const EVENTS_STREAM: &str = "mcpgw:events";
/// Events the stream keeps, about (trimmed approximately, as Redis does it cheaply).
pub(super) const EVENTS_KEPT: usize = 100_000;

/// Redis could not be reached in time.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("the cluster store (redis) is unreachable: {0}")]
pub struct Unavailable(pub String);

/// What Redis holds of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionRecord {
    /// Its resource subscriptions, `(backend, uri)`.
    pub subscriptions: Vec<(String, String)>,
    /// Last use published, Unix seconds.
    pub last_use: Option<u64>,
    /// A DELETE was made.
    pub revoked: bool,
    /// The log level (its index).
    pub level: Option<u8>,
}

/// One revocation to publish.
#[derive(Debug, Clone)]
struct Revocation {
    key: String,
    expires_at: u64,
}

/// The link to Redis. Cheap to share behind an `Arc`.
pub struct RedisLink {
    pub(super) client: redis::Client,
    conn: ConnectionManager,
    pub(super) replica: String,
    pending: Mutex<VecDeque<Revocation>>,
    /// Commands sent (all kinds), for `/readyz` and tests.
    commands: AtomicU64,
    /// Commands that failed or timed out.
    failures: AtomicU64,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// The key of a session's hash.
fn session_hash(key: &str) -> String {
    format!("mcpgw:s:{key}")
}

/// The key of a session's set of subscriptions.
fn session_subscriptions(key: &str) -> String {
    format!("mcpgw:sub:{key}")
}

/// Adds `event` to the stream and publishes it; the pipeline is made atomic (MULTI/EXEC), so an event in
/// the stream has been published (what `listen.rs`'s catching up relies on).
fn announce(pipe: &mut redis::Pipeline, event: &ClusterEvent) {
    let text = serde_json::to_string(event).unwrap_or_default();
    pipe.atomic();
    pipe.cmd("XADD")
        .arg(EVENTS_STREAM)
        .arg("MAXLEN")
        .arg("~")
        .arg(EVENTS_KEPT)
        .arg("*")
        .arg("e")
        .arg(&text)
        .ignore();
    pipe.cmd("PUBLISH").arg(SESSION_CHANNEL).arg(text).ignore();
}

impl RedisLink {
    /// A link to `url` (nothing is sent until needed: Redis down at start is not an error). Must be called
    /// inside the runtime that drives the connection.
    pub fn open(url: &str, replica: &str) -> Result<RedisLink, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(DEADLINE))
            .set_response_timeout(Some(DEADLINE))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config)?;
        Ok(RedisLink {
            client,
            conn,
            replica: replica.to_owned(),
            pending: Mutex::new(VecDeque::new()),
            commands: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        })
    }

    /// This replica's name on the channels.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Commands sent so far.
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Commands that failed so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Revocations waiting for Redis.
    pub fn pending(&self) -> usize {
        self.pending.lock().map_or(0, |p| p.len())
    }

    pub(super) async fn run<T: redis::FromRedisValue>(
        &self,
        what: &redis::Pipeline,
        commands: u64,
    ) -> Result<T, Unavailable> {
        self.commands.fetch_add(commands, Ordering::Relaxed);
        let mut conn = self.conn.clone();
        let outcome = tokio::time::timeout(DEADLINE, what.query_async::<T>(&mut conn)).await;
        match outcome {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(Unavailable(e.to_string()))
            }
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(Unavailable(format!(
                    "no answer within {} ms",
                    DEADLINE.as_millis()
                )))
            }
        }
    }

    /// One command sent alone (a rate limit's lease, `limit::redis`), within the same deadline as every
    /// other, counted with them.
    pub async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, Unavailable> {
        let mut pipe = redis::pipe();
        pipe.add_command(cmd);
        let (value,): (T,) = self.run(&pipe, 1).await?;
        Ok(value)
    }

    /// What Redis holds of a session (one round trip).
    pub async fn session(&self, key: &str) -> Result<SessionRecord, Unavailable> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(session_hash(key));
        pipe.cmd("SMEMBERS").arg(session_subscriptions(key));
        let (fields, members): (HashMap<String, String>, Vec<String>) = self.run(&pipe, 2).await?;
        Ok(SessionRecord {
            subscriptions: members
                .iter()
                .filter_map(|m| m.split_once(' '))
                .map(|(b, u)| (b.to_owned(), u.to_owned()))
                .collect(),
            last_use: fields.get("u").and_then(|v| v.parse().ok()),
            revoked: fields.get("r").is_some_and(|v| v == "1"),
            level: fields.get("l").and_then(|v| v.parse().ok()),
        })
    }

    /// Publishes sessions' last uses, `(key, last use, expires_at)`, in one round trip.
    pub async fn touch(&self, touched: &[(String, u64, u64)]) -> Result<(), Unavailable> {
        if touched.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (key, last_use, expires_at) in touched {
            let hash = session_hash(key);
            pipe.cmd("HSET").arg(&hash).arg("u").arg(*last_use).ignore();
            pipe.cmd("EXPIREAT").arg(&hash).arg(*expires_at).ignore();
        }
        self.run::<()>(&pipe, 2 * touched.len() as u64).await
    }

    /// Records and publishes a DELETE; kept for later when Redis is unreachable (fail open: the replica
    /// that took the DELETE has applied it already).
    pub async fn revoke(&self, key: &str, expires_at: u64) {
        let r = Revocation {
            key: key.to_owned(),
            expires_at,
        };
        if let Err(e) = self.publish_revocation(&r).await {
            tracing::warn!(error = %e, "a DELETE is kept to be published when redis is back");
            self.keep(r);
        }
    }

    fn keep(&self, r: Revocation) {
        if let Ok(mut pending) = self.pending.lock() {
            if pending.len() >= PENDING_MAX {
                pending.pop_front();
                tracing::warn!(
                    max = PENDING_MAX,
                    "a kept DELETE was dropped: too many while redis is down"
                );
            }
            pending.push_back(r);
        }
    }

    async fn publish_revocation(&self, r: &Revocation) -> Result<(), Unavailable> {
        let hash = session_hash(&r.key);
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(&hash).arg("r").arg(1).ignore();
        pipe.cmd("EXPIREAT").arg(&hash).arg(r.expires_at).ignore();
        let event = ClusterEvent::Revoke {
            session: Named::key(&r.key),
            expires_at: r.expires_at,
        };
        announce(&mut pipe, &event);
        self.run::<()>(&pipe, 4).await
    }

    /// Publishes the revocations kept while Redis was down; how many went out.
    pub async fn flush_pending(&self) -> usize {
        let mut sent = 0;
        loop {
            let next = self.pending.lock().ok().and_then(|mut p| p.pop_front());
            let Some(r) = next else {
                return sent;
            };
            if self.publish_revocation(&r).await.is_err() {
                if let Ok(mut p) = self.pending.lock() {
                    p.push_front(r);
                }
                return sent;
            }
            sent += 1;
        }
    }

    /// Records and publishes a session's log level.
    pub async fn set_level(
        &self,
        key: &str,
        level: u8,
        expires_at: u64,
    ) -> Result<(), Unavailable> {
        let hash = session_hash(key);
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(&hash).arg("l").arg(level).ignore();
        pipe.cmd("EXPIREAT").arg(&hash).arg(expires_at).ignore();
        let event = ClusterEvent::Level {
            session: Named::key(key),
            level,
        };
        announce(&mut pipe, &event);
        self.run::<()>(&pipe, 4).await
    }

    /// Records and publishes a session's resource subscription (`on`) or its end.
    pub async fn set_subscription(
        &self,
        key: &str,
        event: ClusterEvent,
        expires_at: u64,
    ) -> Result<(), Unavailable> {
        let ClusterEvent::Subscribe {
            uri, backend, on, ..
        } = &event
        else {
            return Ok(());
        };
        let set = session_subscriptions(key);
        let member = format!("{backend} {uri}");
        let mut pipe = redis::pipe();
        pipe.cmd(if *on { "SADD" } else { "SREM" })
            .arg(&set)
            .arg(member)
            .ignore();
        pipe.cmd("EXPIREAT").arg(&set).arg(expires_at).ignore();
        announce(&mut pipe, &event);
        self.run::<()>(&pipe, 4).await
    }

    /// Sends a client's answer in the session `key` to the replica that asked; `Ok(false)` when no replica
    /// by that name listens (it is gone: the question is lost with it).
    pub async fn deliver_answer(
        &self,
        replica: &str,
        key: &str,
        response: &str,
    ) -> Result<bool, Unavailable> {
        let event = serde_json::to_string(&ClusterEvent::Answer {
            session: Named::key(key),
            response: response.to_owned(),
        })
        .unwrap_or_default();
        let mut pipe = redis::pipe();
        pipe.cmd("PUBLISH")
            .arg(format!("mcpgw:answer:{replica}"))
            .arg(event);
        let (receivers,): (u64,) = self.run(&pipe, 1).await?;
        Ok(receivers > 0)
    }

    /// Marks a single-use id used until `expires_ms` (Unix milliseconds); `Ok(false)` when it was used
    /// already (on any replica).
    pub async fn use_once(&self, id: &str, expires_ms: u64) -> Result<bool, Unavailable> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(format!("mcpgw:used:{id}"))
            .arg(&self.replica)
            .arg("NX")
            .arg("PXAT")
            .arg(expires_ms);
        let (set,): (Option<String>,) = self.run(&pipe, 1).await?;
        Ok(set.is_some())
    }
}
