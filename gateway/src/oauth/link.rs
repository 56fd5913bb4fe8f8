//! Consent links and the flow's `state`: sealed with the cluster's key ring (`Purpose::Authorization`, each
//! kind with associated data of its own, so a link never opens as a state nor the reverse), so that any
//! replica opens what another made. Each is single-use: its id is claimed once, in Redis when the replicas
//! share one (`SET NX` until it expires), else in a bounded table here (past [`MAX_CLAIMED`] ids, or
//! [`PER_PRINCIPAL`] of one principal, a new claim is refused until old ones expire).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::store::Registration;
use crate::cluster::keys::{KeyRing, Purpose};
use crate::cluster::redis::RedisLink;

/// Claimed ids remembered at most (without Redis).
pub const MAX_CLAIMED: usize = 10_000;
/// Claimed ids of one principal remembered at most.
pub const PER_PRINCIPAL: usize = 64;

/// What a consent link carries: whose consent, for which backend, and what to ask.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LinkClaims {
    /// The principal (`Principal::id`).
    pub p: String,
    /// The backend.
    pub b: String,
    /// The scopes to ask for (a step-up's union), if known.
    #[serde(default)]
    pub s: Option<String>,
    /// The backend's `resource_metadata` URL, from its challenge.
    #[serde(default)]
    pub m: Option<String>,
    /// The elicitation id the client was given (its completion names it).
    pub x: String,
    /// Expiry, Unix milliseconds.
    pub e: u64,
    /// Single-use id.
    pub j: String,
}

/// Which authorization server a flow's `state` came back from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum FlowKind {
    /// The backend's: the code is the principal's token for it.
    Backend,
    /// The gateway's own: the code proves who opened the link.
    SignIn,
}

/// What a flow's `state` carries to the callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowClaims {
    /// Which flow.
    pub k: FlowKind,
    /// The link it began from.
    pub l: LinkClaims,
    /// The PKCE verifier.
    pub v: String,
    /// The client.
    pub c: Registration,
    /// The token endpoint.
    pub t: String,
    /// The issuer.
    pub i: String,
    /// Whether the issuer said its responses carry `iss` (RFC 9207).
    pub n: bool,
    /// The `resource` asked for.
    pub r: String,
    /// The scopes asked for.
    #[serde(default)]
    pub s: Option<String>,
    /// Expiry, Unix milliseconds.
    pub e: u64,
    /// Single-use id.
    pub j: String,
}

const LINK_AAD: &[u8] = b"mcpgw/consent-link";
const FLOW_AAD: &[u8] = b"mcpgw/flow-state";

/// A random id (`bytes` random bytes, URL-safe base64).
pub fn random_id(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    let _ = getrandom::fill(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

fn seal<T: Serialize>(ring: &KeyRing, aad: &[u8], claims: &T) -> String {
    let plain = serde_json::to_vec(claims).unwrap_or_default();
    ring.seal_text(Purpose::Authorization, aad, &plain)
}

fn open<T: DeserializeOwned + Expiring>(
    ring: &KeyRing,
    aad: &[u8],
    sealed: &str,
    now_ms: u64,
) -> Option<T> {
    let plain = ring.open_text(Purpose::Authorization, aad, sealed)?;
    let claims: T = serde_json::from_slice(&plain).ok()?;
    (claims.expiry() >= now_ms).then_some(claims)
}

/// Claims that expire.
pub trait Expiring {
    /// Unix milliseconds.
    fn expiry(&self) -> u64;
}

impl Expiring for LinkClaims {
    fn expiry(&self) -> u64 {
        self.e
    }
}

impl Expiring for FlowClaims {
    fn expiry(&self) -> u64 {
        self.e
    }
}

/// Seals a link's claims.
pub fn seal_link(ring: &KeyRing, claims: &LinkClaims) -> String {
    seal(ring, LINK_AAD, claims)
}

/// Opens a link (`None`: forged, altered, expired, sealed by a retired key).
pub fn open_link(ring: &KeyRing, sealed: &str, now_ms: u64) -> Option<LinkClaims> {
    open(ring, LINK_AAD, sealed, now_ms)
}

/// Seals a flow's state.
pub fn seal_flow(ring: &KeyRing, claims: &FlowClaims) -> String {
    seal(ring, FLOW_AAD, claims)
}

/// Opens a flow's state.
pub fn open_flow(ring: &KeyRing, sealed: &str, now_ms: u64) -> Option<FlowClaims> {
    open(ring, FLOW_AAD, sealed, now_ms)
}

/// Single use of links and states.
#[derive(Default)]
pub struct Claimed {
    /// id → (principal, expiry ms).
    ids: Mutex<HashMap<String, (String, u64)>>,
}

impl std::fmt::Debug for Claimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Claimed")
    }
}

/// Why a claim failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Used before.
    Used,
    /// Too many in flight (here, or of this principal); try again later.
    Full,
    /// The store of the replicas cannot be reached.
    Unavailable,
}

impl Claimed {
    /// Claims `id` (of `principal`, valid until `expiry_ms`) once: in Redis when given, else here.
    pub async fn claim(
        &self,
        redis: Option<&RedisLink>,
        id: &str,
        principal: &str,
        expiry_ms: u64,
        now_ms: u64,
    ) -> Result<(), Refusal> {
        if let Some(redis) = redis {
            return match redis.use_once(&format!("oauth:{id}"), expiry_ms).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Refusal::Used),
                Err(_) => Err(Refusal::Unavailable),
            };
        }
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.contains_key(id) {
            return Err(Refusal::Used);
        }
        if ids.len() >= MAX_CLAIMED
            || ids.values().filter(|(p, _)| p == principal).count() >= PER_PRINCIPAL
        {
            ids.retain(|_, (_, e)| *e >= now_ms);
        }
        if ids.len() >= MAX_CLAIMED
            || ids.values().filter(|(p, _)| p == principal).count() >= PER_PRINCIPAL
        {
            return Err(Refusal::Full);
        }
        ids.insert(id.to_owned(), (principal.to_owned(), expiry_ms));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(e: u64) -> LinkClaims {
        LinkClaims {
            p: "api_key:alice".into(),
            b: "notes".into(),
            s: None,
            m: None,
            x: "x".into(),
            e,
            j: random_id(12),
        }
    }

    #[test]
    fn a_link_opens_until_it_expires_and_never_as_a_state() {
        let ring = KeyRing::random();
        let sealed = seal_link(&ring, &link(1_000));
        assert_eq!(
            open_link(&ring, &sealed, 999).map(|l| l.b).as_deref(),
            Some("notes")
        );
        assert!(open_link(&ring, &sealed, 1_001).is_none(), "expired");
        assert!(open_flow(&ring, &sealed, 0).is_none(), "another kind");
        assert!(
            open_link(&KeyRing::random(), &sealed, 0).is_none(),
            "another ring"
        );
        let mut altered = sealed.into_bytes();
        altered[10] ^= 1;
        assert!(open_link(&ring, &String::from_utf8(altered).unwrap(), 0).is_none());
    }

    #[actix_rt::test]
    async fn each_id_is_claimed_once_and_one_principal_cannot_fill_the_table() {
        let c = Claimed::default();
        assert_eq!(c.claim(None, "a", "p", 10, 0).await, Ok(()));
        assert_eq!(c.claim(None, "a", "p", 10, 0).await, Err(Refusal::Used));
        for i in 1..PER_PRINCIPAL {
            c.claim(None, &format!("p{i}"), "p", 10, 0).await.unwrap();
        }
        assert_eq!(
            c.claim(None, "one more", "p", 10, 0).await,
            Err(Refusal::Full)
        );
        assert_eq!(
            c.claim(None, "q1", "q", 10, 0).await,
            Ok(()),
            "another principal"
        );
        // Once they expire, the principal's places are free again.
        assert_eq!(c.claim(None, "later", "p", 100, 11).await, Ok(()));
    }
}
