//! The session store across replicas, through Redis (`cluster::redis`): log levels and subscriptions
//! published, other replicas' events applied, last uses published in batches (a rebuild's one read and a
//! DELETE's publication, which the store itself makes, are `replicas`). Without Redis none
//! of this runs, and a DELETE or idle expiry holds on the replica that saw it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::dormant::{Record, secs};
use super::replicas::{key_of_text, key_text};
use super::sealed::{SealedSession, unix_now};
use super::store::{Ending, SessionStore};
use super::{NO_LEVEL, Session};
use crate::cluster::redis::{ClusterEvent, Named};
#[cfg(any(test, feature = "internals"))]
use crate::cluster::redis::RedisLink;

/// How often last uses are published (at most once per this per session): every 30 s, or four times per
/// `session_idle_secs` when that is shorter, so a session busy on one replica is never idle on another.
pub fn touch_every(idle: std::time::Duration) -> std::time::Duration {
    (idle / 4).clamp(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(30),
    )
}

impl SessionStore {
    /// Applies another replica's event (one naming its session by key, or an older replica's by id).
    pub fn apply(&self, event: ClusterEvent) {
        match event {
            ClusterEvent::Revoke {
                session,
                expires_at,
            } => {
                let live = self.named(&session);
                if live.is_some_and(|id| self.sessions.end(&id, Ending::Deleted)) {
                    return;
                }
                // No actor here: remembered as ended until its id expires.
                let now = unix_now();
                let ended = match (&session.key, &session.id) {
                    (Some(key), _) => key_of_text(key).map(|key| (key, expires_at)),
                    (None, Some(id)) => SealedSession::open(&self.keys.ring(), id, now)
                        .map(|(state, key)| (key, state.expires_at)),
                    (None, None) => None,
                };
                if let Some((key, expires_at)) = ended.filter(|(_, x)| *x > now) {
                    let record = Record {
                        last_use: secs(now),
                        expires: secs(expires_at),
                        level: NO_LEVEL,
                        ended: true,
                    };
                    self.sessions.dormant.put(key, record, now);
                }
            }
            ClusterEvent::Level { session, level } => {
                if let Some(s) = self.named(&session).and_then(|id| self.peek(&id)) {
                    s.log_level.store(level, Ordering::Relaxed);
                }
            }
            ClusterEvent::Subscribe {
                session,
                uri,
                backend,
                on,
            } => {
                // Only where the session has its actor (a replica that rebuilds it later reads Redis).
                if let Some(id) = self.named(&session) {
                    let subscriptions = &self.sessions.subscriptions;
                    if on {
                        let _ = subscriptions.subscribe(&id, &uri, &backend);
                    } else {
                        subscriptions.unsubscribe(&id, &uri);
                    }
                    subscriptions.follow();
                }
            }
            ClusterEvent::Answer { session, response } => {
                let live = self.named(&session).and_then(|id| self.peek(&id));
                let answered = match (live, protocol::Message::parse(response.as_bytes())) {
                    (Some(s), Ok(protocol::Message::Response(r))) => s.input_requests().answer(r),
                    _ => false,
                };
                if !answered {
                    tracing::info!(
                        session = session.key.as_deref().unwrap_or("-"),
                        "an answer from another replica found no open question here (it ended)"
                    );
                }
            }
        }
    }

    /// The id of the live session (with its actor here) an event names: by its key, or by the id an older
    /// replica published.
    fn named(&self, session: &Named) -> Option<Arc<str>> {
        match (&session.key, &session.id) {
            (Some(key), _) => self.sessions.id_of(key_of_text(key)?),
            (None, Some(id)) => self.peek(id).map(|s| Arc::clone(&s.id)),
            (None, None) => None,
        }
    }

    /// Publishes a session's new log level (in the background).
    pub fn level_changed(&self, session: &Session) {
        let (Some(link), Some(key)) = (&self.redis, session.key) else {
            return;
        };
        let level = session.log_level.load(Ordering::Relaxed);
        let (link, expires_at) = (link.clone(), session.expires_at);
        tokio::spawn(async move {
            if let Err(e) = link.set_level(&key_text(key), level, expires_at).await {
                tracing::warn!(error = %e, "a log level is not shared with the other replicas");
            }
        });
    }

    /// Publishes a session's `resources/subscribe` (`on`) or `resources/unsubscribe` (in the background).
    pub fn subscription_changed(&self, session: &Session, uri: &str, backend: &str, on: bool) {
        let (Some(link), Some(key)) = (&self.redis, session.key) else {
            return;
        };
        let event = ClusterEvent::Subscribe {
            session: Named::key(&key_text(key)),
            uri: uri.to_owned(),
            backend: backend.to_owned(),
            on,
        };
        let (link, expires_at) = (link.clone(), session.expires_at);
        tokio::spawn(async move {
            if let Err(e) = link
                .set_subscription(&key_text(key), event, expires_at)
                .await
            {
                tracing::warn!(error = %e, "a resource subscription is not shared with the other replicas");
            }
        });
    }

    /// Publishes the last use of every session used since its last publication (one round trip); how many.
    pub async fn publish_uses(&self) -> usize {
        let Some(link) = &self.redis else {
            return 0;
        };
        let now = unix_now();
        let touched: Vec<(String, u64, u64)> = self
            .all()
            .into_iter()
            .filter_map(|s| {
                let key = s.key?;
                let last_use = now.saturating_sub(s.idle_for().as_secs());
                let published = s.published_use.load(Ordering::Relaxed);
                (last_use > published).then(|| {
                    s.published_use.store(last_use, Ordering::Relaxed);
                    (key_text(key), last_use, s.expires_at)
                })
            })
            .collect();
        let n = touched.len();
        if let Err(e) = link.touch(&touched).await {
            tracing::debug!(error = %e, sessions = n, "last uses not published");
            return 0;
        }
        n
    }

    /// Redis, when configured.
    #[cfg(any(test, feature = "internals"))]
    pub fn redis(&self) -> Option<&Arc<RedisLink>> {
        self.redis.as_ref()
    }
}
