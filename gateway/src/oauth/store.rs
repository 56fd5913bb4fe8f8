//! The token store: each principal's own tokens for each backend, keyed by (principal, backend) and sealed
//! with the cluster's key ring (`Purpose::Authorization`, the key bound to both as associated data, so a
//! record moved under another key does not open). In Redis with `[cluster] redis` — any replica serves a
//! user after the consent another replica ran — as `mcpgw:grant:{digest}`, expiring after `token_days`
//! without a store; in memory otherwise, at most `max_tokens`, the least recently stored dropped first. A
//! record a retired key sealed does not open: its user consents again. Nothing here is logged, and only
//! the admin view's summary ([`GrantSummary`]: who, which backend, until when) ever leaves it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cluster::ClusterKeys;
use crate::cluster::keys::Purpose;
use crate::cluster::redis::{RedisLink, Unavailable};

/// A client registered at an authorization server, and how it authenticates at the token endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registration {
    /// `client_id`.
    pub id: String,
    /// `client_secret`, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// How it authenticates.
    pub method: ClientAuth,
}

/// Token endpoint client authentication (RFC 6749 §2.3, RFC 7591 `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the id and secret.
    ClientSecretBasic,
    /// The id and secret in the form.
    ClientSecretPost,
    /// A public client: the id in the form.
    None,
}

impl ClientAuth {
    /// Its RFC 7591 name.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::ClientSecretBasic => "client_secret_basic",
            ClientAuth::ClientSecretPost => "client_secret_post",
            ClientAuth::None => "none",
        }
    }

    /// From its RFC 7591 name.
    pub fn from_name(name: &str) -> Option<ClientAuth> {
        match name {
            "client_secret_basic" => Some(ClientAuth::ClientSecretBasic),
            "client_secret_post" => Some(ClientAuth::ClientSecretPost),
            "none" => Some(ClientAuth::None),
            _ => None,
        }
    }
}

/// One principal's tokens for one backend, and what refreshing them needs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Grant {
    /// The principal (`Principal::id`).
    pub principal: String,
    /// The backend.
    pub backend: String,
    /// The access token.
    pub access: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<String>,
    /// When the access token expires (Unix seconds; 0: not said).
    pub expires: u64,
    /// The scopes asked for (space-separated), what a step-up adds to.
    #[serde(default)]
    pub scope: Option<String>,
    /// The `resource` it was asked for (RFC 8707).
    pub resource: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client it was issued to.
    pub client: Registration,
    /// When it was stored (Unix seconds).
    pub stored: u64,
}

impl Grant {
    /// Whether the access token is to be refreshed before use (it expires within `margin` seconds).
    pub fn stale(&self, now: u64, margin: u64) -> bool {
        self.expires != 0 && self.expires <= now.saturating_add(margin)
    }
}

/// What the admin view shows of a grant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GrantSummary {
    /// The principal.
    pub principal: String,
    /// The backend.
    pub backend: String,
    /// When its access token expires (Unix seconds; 0: not said).
    pub expires: u64,
    /// Whether it can be refreshed.
    pub refreshable: bool,
    /// When it was stored (Unix seconds).
    pub stored: u64,
}

/// Summaries the admin view lists at most.
pub const LISTED_AT_MOST: usize = 1_000;

/// Where the grants live.
pub struct TokenStore {
    keys: Arc<ClusterKeys>,
    redis: Option<Arc<RedisLink>>,
    memory: Mutex<Memory>,
    max: usize,
    ttl_secs: u64,
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore")
            .field("redis", &self.redis.is_some())
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Memory {
    /// Sealed records by key, with the tick they were stored at.
    map: HashMap<String, (String, u64)>,
    tick: u64,
}

/// The record key of (principal, backend): a digest, so Redis never holds a principal's name in clear.
fn key(principal: &str, backend: &str) -> String {
    let mut h = Sha256::new();
    h.update(principal.as_bytes());
    h.update([0]);
    h.update(backend.as_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn redis_key(key: &str) -> String {
    format!("mcpgw:grant:{key}")
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl TokenStore {
    /// A store sealing with `keys`, in Redis when `redis` is given.
    pub fn new(
        keys: Arc<ClusterKeys>,
        redis: Option<Arc<RedisLink>>,
        max: usize,
        ttl_secs: u64,
    ) -> TokenStore {
        TokenStore {
            keys,
            redis,
            memory: Mutex::new(Memory::default()),
            max: max.max(1),
            ttl_secs,
        }
    }

    fn seal(&self, key: &str, grant: &Grant) -> String {
        let plain = serde_json::to_vec(grant).unwrap_or_default();
        self.keys
            .ring()
            .seal_text(Purpose::Authorization, key.as_bytes(), &plain)
    }

    fn open(&self, key: &str, sealed: &str) -> Option<Grant> {
        let plain = self
            .keys
            .ring()
            .open_text(Purpose::Authorization, key.as_bytes(), sealed)?;
        serde_json::from_slice(&plain).ok()
    }

    /// The principal's grant for the backend, if it has one that opens.
    pub async fn get(&self, principal: &str, backend: &str) -> Result<Option<Grant>, Unavailable> {
        let key = key(principal, backend);
        let sealed = match &self.redis {
            Some(redis) => {
                let mut cmd = redis::cmd("GET");
                cmd.arg(redis_key(&key));
                redis.query::<Option<String>>(cmd).await?
            }
            None => self
                .memory
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map
                .get(&key)
                .map(|(s, _)| s.clone()),
        };
        Ok(sealed
            .and_then(|s| self.open(&key, &s))
            .filter(|g| g.principal == principal && g.backend == backend))
    }

    /// Stores (or replaces) the grant.
    pub async fn put(&self, grant: &Grant) -> Result<(), Unavailable> {
        let key = key(&grant.principal, &grant.backend);
        let sealed = self.seal(&key, grant);
        match &self.redis {
            Some(redis) => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(redis_key(&key))
                    .arg(sealed)
                    .arg("EX")
                    .arg(self.ttl_secs.max(1));
                redis.query::<()>(cmd).await
            }
            None => {
                let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
                memory.tick += 1;
                let tick = memory.tick;
                if memory.map.len() >= self.max && !memory.map.contains_key(&key) {
                    let oldest = memory
                        .map
                        .iter()
                        .min_by_key(|(_, (_, t))| *t)
                        .map(|(k, _)| k.clone());
                    if let Some(oldest) = oldest {
                        memory.map.remove(&oldest);
                    }
                }
                memory.map.insert(key, (sealed, tick));
                Ok(())
            }
        }
    }

    /// Forgets the principal's grant for the backend; whether there was one.
    pub async fn remove(&self, principal: &str, backend: &str) -> Result<bool, Unavailable> {
        let key = key(principal, backend);
        match &self.redis {
            Some(redis) => {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(redis_key(&key));
                Ok(redis.query::<u64>(cmd).await? > 0)
            }
            None => Ok(self
                .memory
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map
                .remove(&key)
                .is_some()),
        }
    }

    /// Every grant that opens, at most [`LISTED_AT_MOST`] (the admin view, revocation of a backend's).
    pub async fn all(&self) -> Result<Vec<Grant>, Unavailable> {
        let records: Vec<(String, String)> = match &self.redis {
            Some(redis) => {
                let mut keys: Vec<String> = Vec::new();
                let mut cursor: u64 = 0;
                loop {
                    let mut cmd = redis::cmd("SCAN");
                    cmd.arg(cursor)
                        .arg("MATCH")
                        .arg("mcpgw:grant:*")
                        .arg("COUNT")
                        .arg(500);
                    let (next, batch): (u64, Vec<String>) = redis.query(cmd).await?;
                    keys.extend(batch);
                    cursor = next;
                    if cursor == 0 || keys.len() >= LISTED_AT_MOST {
                        break;
                    }
                }
                keys.truncate(LISTED_AT_MOST);
                if keys.is_empty() {
                    return Ok(Vec::new());
                }
                let mut cmd = redis::cmd("MGET");
                cmd.arg(&keys);
                let values: Vec<Option<String>> = redis.query(cmd).await?;
                keys.into_iter()
                    .zip(values)
                    .filter_map(|(k, v)| Some((k.strip_prefix("mcpgw:grant:")?.to_owned(), v?)))
                    .collect()
            }
            None => self
                .memory
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map
                .iter()
                .take(LISTED_AT_MOST)
                .map(|(k, (s, _))| (k.clone(), s.clone()))
                .collect(),
        };
        Ok(records
            .into_iter()
            .filter_map(|(k, s)| self.open(&k, &s))
            .collect())
    }
}

impl Grant {
    /// Its summary.
    pub fn summary(&self) -> GrantSummary {
        GrantSummary {
            principal: self.principal.clone(),
            backend: self.backend.clone(),
            expires: self.expires,
            refreshable: self.refresh.is_some(),
            stored: self.stored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::KeySource;
    use crate::cluster::keys::KeyRing;

    pub(crate) fn grant(principal: &str, backend: &str, access: &str) -> Grant {
        Grant {
            principal: principal.into(),
            backend: backend.into(),
            access: access.into(),
            refresh: Some("r".into()),
            expires: 0,
            scope: None,
            resource: "https://r.example/mcp".into(),
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            client: Registration {
                id: "c".into(),
                secret: None,
                method: ClientAuth::None,
            },
            stored: 1,
        }
    }

    fn store(max: usize) -> TokenStore {
        TokenStore::new(
            Arc::new(ClusterKeys::with(KeyRing::random(), KeySource::Random)),
            None,
            max,
            60,
        )
    }

    #[actix_rt::test]
    async fn each_principal_gets_only_its_own_grant_for_each_backend() {
        let s = store(10);
        s.put(&grant("api_key:alice", "notes", "A")).await.unwrap();
        s.put(&grant("api_key:bob", "notes", "B")).await.unwrap();
        s.put(&grant("api_key:alice", "files", "A2")).await.unwrap();
        let got = |p: &'static str, b: &'static str| {
            let s = &s;
            async move { s.get(p, b).await.unwrap().map(|g| g.access) }
        };
        assert_eq!(got("api_key:alice", "notes").await.as_deref(), Some("A"));
        assert_eq!(got("api_key:bob", "notes").await.as_deref(), Some("B"));
        assert_eq!(got("api_key:bob", "files").await, None);
        assert_eq!(
            got("jwt:x#alice", "notes").await,
            None,
            "another source, another principal"
        );
        assert!(s.remove("api_key:alice", "notes").await.unwrap());
        assert!(!s.remove("api_key:alice", "notes").await.unwrap());
        assert_eq!(got("api_key:alice", "notes").await, None);
        assert_eq!(got("api_key:bob", "notes").await.as_deref(), Some("B"));
    }

    #[actix_rt::test]
    async fn a_full_store_refuses_to_grow_and_drops_its_oldest() {
        let s = store(2);
        for who in ["a", "b", "c"] {
            s.put(&grant(who, "notes", who)).await.unwrap();
        }
        assert_eq!(s.all().await.unwrap().len(), 2);
        assert!(
            s.get("a", "notes").await.unwrap().is_none(),
            "the oldest went"
        );
        assert!(s.get("c", "notes").await.unwrap().is_some());
        // Replacing one's own does not push anyone out.
        s.put(&grant("b", "notes", "b2")).await.unwrap();
        assert_eq!(s.get("c", "notes").await.unwrap().unwrap().access, "c");
    }

    #[actix_rt::test]
    async fn a_record_moved_to_another_key_or_sealed_by_a_retired_key_does_not_open() {
        let s = store(10);
        s.put(&grant("alice", "notes", "A")).await.unwrap();
        let sealed = {
            let m = s.memory.lock().unwrap();
            m.map.get(&key("alice", "notes")).unwrap().0.clone()
        };
        // Bob's slot holding alice's sealed record: bound to its key, it does not open there.
        s.memory
            .lock()
            .unwrap()
            .map
            .insert(key("bob", "notes"), (sealed.clone(), 9));
        assert!(s.get("bob", "notes").await.unwrap().is_none());
        // Another ring (a retired key): nothing opens, so its user consents again.
        let other = TokenStore::new(
            Arc::new(ClusterKeys::with(KeyRing::random(), KeySource::Random)),
            None,
            10,
            60,
        );
        other
            .memory
            .lock()
            .unwrap()
            .map
            .insert(key("alice", "notes"), (sealed, 1));
        assert!(other.get("alice", "notes").await.unwrap().is_none());
    }

    #[test]
    fn a_grant_is_stale_only_near_its_stated_expiry() {
        let mut g = grant("a", "b", "t");
        assert!(!g.stale(100, 30), "no expiry said");
        g.expires = 200;
        assert!(!g.stale(100, 30));
        assert!(g.stale(180, 30));
    }
}
