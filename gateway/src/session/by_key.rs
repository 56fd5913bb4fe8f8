//! The live sealed sessions by key: another replica's event names a session by its key (the sealed id's
//! key tag and nonce), never by its id, and this index finds the id it names here.

use std::sync::Arc;

use super::Session;
use super::sealed::SessionKey;
use super::store::Sessions;

impl Sessions {
    /// Indexes a sealed session by its key (before it enters `map`).
    pub(super) fn index(&self, session: &Session) {
        if let Some(key) = session.key {
            self.by_key.insert(key, Arc::clone(&session.id));
        }
    }

    /// Forgets a session's key (once it left `map`), unless the key names another id by now.
    pub(super) fn unindex(&self, session: &Session) {
        if let Some(key) = session.key {
            self.by_key.remove_if(&key, |_, id| *id == session.id);
        }
    }

    /// The id of the live session whose key is `key`.
    pub(super) fn id_of(&self, key: SessionKey) -> Option<Arc<str>> {
        let id = self.by_key.get(&key).map(|id| Arc::clone(id.value()))?;
        self.map.contains_key(&id).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use protocol::Generation;
    use protocol::payload::InitializeRequestParams;

    use super::super::store::{SessionStore, StoreLimits};
    use super::super::{Transport, key_text};
    use super::*;
    use crate::cluster::redis::{ClusterEvent, Named};

    fn store(ring: &str) -> SessionStore {
        let keys = crate::cluster::ClusterKeys::with(
            crate::cluster::keys::KeyRing::parse(ring).unwrap(),
            crate::cluster::KeySource::Random,
        );
        let limits = StoreLimits {
            max: 8,
            idle: Duration::from_secs(60),
            lifetime: Duration::from_secs(3600),
        };
        SessionStore::with_keys(limits, Default::default(), Arc::new(keys), None)
    }

    fn session(store: &SessionStore) -> Arc<Session> {
        let params: InitializeRequestParams = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "replica-test", "version": "1"}}))
        .unwrap();
        let (generation, transport) = (Generation::V2025_06_18, Transport::StreamableHttp);
        let idle = Duration::from_secs(60);
        store
            .create(None, generation, &params, transport, idle, None)
            .unwrap()
    }

    fn by_key(s: &Session) -> Named {
        Named::key(&key_text(s.key.expect("sealed")))
    }

    #[actix_rt::test]
    async fn an_event_naming_a_session_by_its_key_reaches_it_without_its_id() {
        let ring = crate::cluster::keys::new_key_line();
        let (here, there) = (store(&ring), store(&ring));
        // Held on both replicas.
        let held = session(&here);
        there.get(&held.id).unwrap().expect("rebuilt there");
        there.apply(ClusterEvent::Level {
            session: by_key(&held),
            level: 5,
        });
        let level = there
            .peek(&held.id)
            .unwrap()
            .log_level
            .load(Ordering::Relaxed);
        assert_eq!(level, 5, "the level reached the session by its key");
        there.apply(ClusterEvent::Revoke {
            session: by_key(&held),
            expires_at: held.expires_at,
        });
        assert!(there.peek(&held.id).is_none(), "the DELETE ended its actor");
        assert!(
            there.get(&held.id).unwrap().is_none(),
            "and it is not rebuilt"
        );
        // Never held there: the revocation is remembered by key until the id expires.
        let elsewhere = session(&here);
        there.apply(ClusterEvent::Revoke {
            session: by_key(&elsewhere),
            expires_at: elsewhere.expires_at,
        });
        assert!(there.get(&elsewhere.id).unwrap().is_none(), "never rebuilt");
        // An older replica's event, naming the id, still works.
        let older = session(&here);
        there.get(&older.id).unwrap().expect("rebuilt there");
        there.apply(ClusterEvent::Revoke {
            session: Named {
                key: None,
                id: Some(older.id.to_string()),
            },
            expires_at: 0,
        });
        assert!(there.get(&older.id).unwrap().is_none());
        // The index holds only live sessions.
        assert_eq!(
            there.sessions.by_key.len(),
            0,
            "every key left with its session"
        );
    }
}
