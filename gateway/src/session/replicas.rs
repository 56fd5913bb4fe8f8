//! What the store asks and tells the other replicas about one session, through Redis: a session's name
//! there ([`key_text`]), what Redis says of a session opened here before its actor is rebuilt
//! ([`checked`]), and a DELETE's publication. The rest of the sharing (events applied, levels,
//! subscriptions, last uses) is `shared`, above the store.

use std::sync::Arc;

use super::sealed::{SealedSession, SessionKey, unix_now};
use crate::cluster::redis::RedisLink;

/// A sealed id that opened and passed this replica's records: what rebuilding its actor needs.
#[derive(Debug)]
pub(super) struct Opened {
    pub(super) state: SealedSession,
    pub(super) key: SessionKey,
    /// The log level (its index; `NO_LEVEL` for none).
    pub(super) level: u8,
    /// Resource subscriptions made on other replicas, `(backend, uri)`.
    pub(super) subscriptions: Vec<(String, String)>,
    /// Its last use known here (Unix seconds; its `initialize` when none).
    pub(super) last_use: u64,
}

/// A session's name in Redis (its keys and the events about it): not its id, which cannot be rebuilt from it.
pub fn key_text(key: SessionKey) -> String {
    format!("{:032x}", key.0)
}

/// The key a [`key_text`] names; `None` for any other text.
pub fn key_of_text(text: &str) -> Option<SessionKey> {
    (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u128::from_str_radix(text, 16).ok().map(SessionKey))
        .flatten()
}

/// What Redis says of an opened session, before its actor is rebuilt here: revoked (a DELETE on another
/// replica), idle too long everywhere (the later of its last use published and its last use here, or its
/// `initialize`), its log level and subscriptions. Redis unreachable: fails open (the session is rebuilt
/// from what this replica knows).
pub(super) async fn checked(
    link: &RedisLink,
    mut opened: Opened,
    idle: std::time::Duration,
) -> Option<Opened> {
    match link.session(&key_text(opened.key)).await {
        Ok(record) => {
            if record.revoked {
                return None;
            }
            let last_use = record.last_use.unwrap_or(0).max(opened.last_use);
            if unix_now().saturating_sub(last_use) >= idle.as_secs() {
                return None;
            }
            if let Some(level) = record.level {
                opened.level = level;
            }
            opened.subscriptions = record.subscriptions;
            Some(opened)
        }
        Err(e) => {
            tracing::debug!(error = %e, "a session rebuilt without asking redis");
            Some(opened)
        }
    }
}

/// Publishes a DELETE (in the background: the DELETE is answered at once; kept while Redis is down).
pub(super) fn publish_revocation(link: &Arc<RedisLink>, key: SessionKey, expires_at: u64) {
    let link = link.clone();
    tokio::spawn(async move {
        link.revoke(&key_text(key), expires_at).await;
    });
}
