//! The session store across replicas, through Redis (`cluster::redis`): log levels and subscriptions
//! published, other replicas' events applied, last uses published in batches (a rebuild's one read and a
//! DELETE's publication, which the store itself makes, are `replicas`). Without Redis none
//! of this runs, and a DELETE or idle expiry holds on the replica that saw it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::dormant::{Record, secs};
use super::replicas::key_text;
use super::sealed::{SealedSession, unix_now};
use super::store::{Ending, SessionStore};
use super::{NO_LEVEL, Session, ShortId};
use crate::cluster::redis::{ClusterEvent, RedisLink};

/// How often last uses are published (at most once per this per session): every 30 s, or four times per
/// `session_idle_secs` when that is shorter, so a session busy on one replica is never idle on another.
pub fn touch_every(idle: std::time::Duration) -> std::time::Duration {
    (idle / 4).clamp(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(30),
    )
}

impl SessionStore {
    /// Applies another replica's event.
    pub fn apply(&self, event: ClusterEvent) {
        match event {
            ClusterEvent::Revoke { id } => {
                if !self.sessions.end(&id, Ending::Deleted) {
                    // No actor here: remembered as ended until its id expires.
                    let now = unix_now();
                    if let Some((state, key)) = SealedSession::open(&self.keys.ring(), &id, now) {
                        let record = Record {
                            last_use: secs(now),
                            expires: secs(state.expires_at),
                            level: NO_LEVEL,
                            ended: true,
                        };
                        self.sessions.dormant.put(key, record, now);
                    }
                }
            }
            ClusterEvent::Level { id, level } => {
                if let Some(s) = self.peek(&id) {
                    s.log_level.store(level, Ordering::Relaxed);
                }
            }
            ClusterEvent::Subscribe {
                id,
                uri,
                backend,
                on,
            } => {
                // Only where the session has its actor (a replica that rebuilds it later reads Redis).
                if self.peek(&id).is_some() {
                    let subscriptions = &self.sessions.subscriptions;
                    if on {
                        let _ = subscriptions.subscribe(&id, &uri, &backend);
                    } else {
                        subscriptions.unsubscribe(&id, &uri);
                    }
                    subscriptions.follow();
                }
            }
            ClusterEvent::Answer { id, response } => {
                let answered = match (
                    self.peek(&id),
                    protocol::Message::parse(response.as_bytes()),
                ) {
                    (Some(s), Ok(protocol::Message::Response(r))) => s.input_requests().answer(r),
                    _ => false,
                };
                if !answered {
                    tracing::info!(session = %ShortId(&id), "an answer from another replica found no open question here (it ended)");
                }
            }
        }
    }

    /// Publishes a session's new log level (in the background).
    pub fn level_changed(&self, session: &Session) {
        let (Some(link), Some(key)) = (&self.redis, session.key) else {
            return;
        };
        let level = session.log_level.load(Ordering::Relaxed);
        let (link, id, expires_at) = (link.clone(), session.id.clone(), session.expires_at);
        tokio::spawn(async move {
            if let Err(e) = link.set_level(&key_text(key), &id, level, expires_at).await {
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
            id: session.id.to_string(),
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
    pub fn redis(&self) -> Option<&Arc<RedisLink>> {
        self.redis.as_ref()
    }
}
