//! What an operator sees of the legacy sessions (the admin view): the most recently used ones, bounded, and
//! each one's age. Read-only, and short on the map: each shard is read-locked only while its entries' `Arc`s
//! are looked at (a bounded heap keeps the `limit` most recent; nothing is cloned past it).
//!
//! It must not mark a session used, rebuild one, or hold a map guard beyond the walk (never across an
//! `.await`).

use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use super::sealed::unix_now;
use super::{Session, SessionStore};

/// The most recent sessions and how many there are.
#[derive(Debug)]
pub struct Recent {
    /// Session actors held (all of them, not only those returned).
    pub total: usize,
    /// At most the limit asked for, the most recently used first.
    pub sessions: Vec<Arc<Session>>,
}

/// A session in the heap, ordered by how long it has been idle (the idlest on top, to be popped first).
struct ByIdle(Duration, Arc<Session>);

impl PartialEq for ByIdle {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for ByIdle {}
impl PartialOrd for ByIdle {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByIdle {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl SessionStore {
    /// The `limit` most recently used sessions, most recent first, and the number of sessions held.
    pub fn most_recent(&self, limit: usize) -> Recent {
        let mut heap: BinaryHeap<ByIdle> = BinaryHeap::with_capacity(limit.saturating_add(1));
        let mut total = 0usize;
        for entry in self.sessions.map.iter() {
            total += 1;
            if limit == 0 {
                continue;
            }
            let idle = entry.value().idle_for();
            if heap.len() < limit {
                heap.push(ByIdle(idle, Arc::clone(entry.value())));
            } else if heap.peek().is_some_and(|top| idle < top.0) {
                heap.pop();
                heap.push(ByIdle(idle, Arc::clone(entry.value())));
            }
        }
        Recent {
            total,
            // Ascending idle time: the most recently used first.
            sessions: heap
                .into_sorted_vec()
                .into_iter()
                .map(|ByIdle(_, s)| s)
                .collect(),
        }
    }

    /// How long ago the session began: its `initialize`, as its sealed id says; for a session without one
    /// (HTTP+SSE, stdio), since this replica started its actor.
    pub fn age(&self, session: &Session) -> Duration {
        if session.key.is_some() && session.expires_at != u64::MAX {
            let began = session
                .expires_at
                .saturating_sub(self.limits.lifetime.as_secs());
            return Duration::from_secs(unix_now().saturating_sub(began));
        }
        session.epoch.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Transport;
    use protocol::Generation;
    use protocol::payload::InitializeRequestParams;

    #[actix_rt::test]
    async fn the_most_recently_used_come_first_within_the_limit_with_the_total() {
        let params: InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}))
        .unwrap();
        let store = SessionStore::new(10, Default::default());
        let made: Vec<Arc<Session>> = (0..4)
            .map(|_| {
                store
                    .create(
                        None,
                        Generation::V2025_06_18,
                        &params,
                        Transport::StreamableHttp,
                        Duration::from_secs(60),
                        None,
                    )
                    .unwrap()
            })
            .collect();
        // Idle times are kept in milliseconds: the touches come later than the creations by more than one.
        tokio::time::sleep(Duration::from_millis(20)).await;
        made[2].touch();
        let recent = store.most_recent(1);
        assert_eq!(recent.total, 4);
        assert_eq!(recent.sessions.len(), 1);
        assert!(Arc::ptr_eq(&recent.sessions[0], &made[2]));
        let all = store.most_recent(100);
        assert_eq!((all.total, all.sessions.len()), (4, 4));
        assert!(Arc::ptr_eq(&all.sessions[0], &made[2]));
        assert_eq!(store.most_recent(0).sessions.len(), 0);
        // A sealed session's age counts from its `initialize` (its id's expiry minus the lifetime).
        assert!(store.age(&made[0]) < Duration::from_secs(60));
    }
}
