//! A legacy session's id is its negotiated state, sealed with the cluster's key ring: any replica that has
//! no actor for a session opens its id and rebuilds one. What the id holds: the generation, the client's
//! capabilities, its `clientInfo` (name, version, title), when it was issued and when it expires, and the
//! digest of the principal it is bound to (empty until authentication exists). A forged, altered or
//! expired id opens to nothing, exactly like an unknown one.

use std::time::{SystemTime, UNIX_EPOCH};

use protocol::Generation;
use protocol::payload::Implementation;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::keys::{KeyRing, Purpose};

/// What a sealed id is bound to besides its contents.
const AAD: &[u8] = b"mcpgw/session/v1";
/// The longest id minted: a client whose capabilities do not fit is refused at `initialize` (a header line of
/// this size passes every common proxy's default limit, nginx's 8 KiB among them).
pub const MAX_ID_CHARS: usize = 4096;

/// A session's identity inside the gateway and its records: the sealed id's key tag and nonce (unique per
/// minted id; only ids that opened are ever recorded under it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionKey(pub u128);

/// The negotiated state a sealed id carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SealedSession {
    /// The negotiated generation.
    pub generation: Generation,
    /// The client's declared capabilities.
    pub client_capabilities: Value,
    /// The client's `clientInfo` (name, version, title).
    pub client_info: Implementation,
    /// Seconds since the Unix epoch.
    pub issued_at: u64,
    /// Seconds since the Unix epoch; the id is dead from then on.
    pub expires_at: u64,
    /// The digest of the principal it is bound to (empty: none).
    pub principal: String,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    g: String,
    c: Value,
    n: String,
    v: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    i: u64,
    x: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    p: String,
}

/// The id's capabilities and client info do not fit in [`MAX_ID_CHARS`].
#[derive(Debug, thiserror::Error)]
#[error(
    "the client's capabilities and clientInfo are too large for a session id ({0} characters, at most {MAX_ID_CHARS})"
)]
pub struct TooLarge(pub usize);

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl SealedSession {
    /// Seals the state into an id (URL-safe base64: visible ASCII, a valid header value).
    pub fn seal(&self, ring: &KeyRing) -> Result<(String, SessionKey), TooLarge> {
        let wire = Wire {
            g: self.generation.as_str().to_owned(),
            c: self.client_capabilities.clone(),
            n: self.client_info.name.clone(),
            v: self.client_info.version.clone(),
            t: self.client_info.title.clone(),
            i: self.issued_at,
            x: self.expires_at,
            p: self.principal.clone(),
        };
        let plain = serde_json::to_vec(&wire).unwrap_or_default();
        let sealed = ring.seal(Purpose::SessionId, AAD, &plain);
        let id = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &sealed);
        if id.len() > MAX_ID_CHARS {
            return Err(TooLarge(id.len()));
        }
        Ok((id, key_of(&sealed)))
    }

    /// Opens an id sealed with a key of `ring` that has not expired at `now` (seconds since the epoch).
    pub fn open(ring: &KeyRing, id: &str, now: u64) -> Option<(SealedSession, SessionKey)> {
        if id.len() > MAX_ID_CHARS {
            return None;
        }
        let sealed =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, id).ok()?;
        let plain = ring.open(Purpose::SessionId, AAD, &sealed)?;
        let wire: Wire = serde_json::from_slice(&plain).ok()?;
        if wire.x <= now {
            return None;
        }
        let generation = Generation::parse(&wire.g).ok()?;
        let client_info = Implementation {
            name: wire.n,
            version: wire.v,
            title: wire.t,
            description: None,
            website_url: None,
            icons: None,
            extra: Default::default(),
        };
        Some((
            SealedSession {
                generation,
                client_capabilities: wire.c,
                client_info,
                issued_at: wire.i,
                expires_at: wire.x,
                principal: wire.p,
            },
            key_of(&sealed),
        ))
    }
}

/// The first 13 bytes of a sealed id (its key tag and nonce, after the format byte in the XChaCha20 one) as its
/// [`SessionKey`].
fn key_of(sealed: &[u8]) -> SessionKey {
    let mut key = [0u8; 16];
    let n = sealed.len().min(13);
    key[..n].copy_from_slice(&sealed[..n]);
    SessionKey(u128::from_be_bytes(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(expires_at: u64) -> SealedSession {
        SealedSession {
            generation: Generation::V2025_06_18,
            client_capabilities: json!({"sampling": {}, "roots": {"listChanged": true}}),
            client_info: serde_json::from_value(json!({"name": "python-sdk", "version": "2.3.0"}))
                .unwrap(),
            issued_at: 1_000,
            expires_at,
            principal: String::new(),
        }
    }

    #[test]
    fn an_id_opens_to_its_state_on_any_replica_with_the_ring_until_it_expires() {
        let text = crate::cluster::keys::new_key_line();
        let here = KeyRing::parse(&text).unwrap();
        let there = KeyRing::parse(&text).unwrap();
        let (id, key) = state(2_000).seal(&here).unwrap();
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        // 192-bit nonces: some 208 characters for this client.
        assert!(id.len() < 220, "{} characters", id.len());
        let (opened, opened_key) = SealedSession::open(&there, &id, 1_999).unwrap();
        assert_eq!((opened, opened_key), (state(2_000), key));
        assert!(SealedSession::open(&there, &id, 2_000).is_none(), "expired");
        assert!(
            SealedSession::open(&KeyRing::random(), &id, 1_500).is_none(),
            "other ring"
        );
    }

    #[test]
    fn forged_and_altered_ids_open_to_nothing() {
        let ring = KeyRing::random();
        let (id, _) = state(u64::MAX).seal(&ring).unwrap();
        let mut altered = id.clone().into_bytes();
        let mid = altered.len() / 2;
        altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        for forged in [
            "",
            "00",
            &"a".repeat(64),
            &altered,
            &id[..id.len() - 1],
            &format!("{id}A"),
            &"A".repeat(MAX_ID_CHARS + 1),
        ] {
            assert!(
                SealedSession::open(&ring, forged, 0).is_none(),
                "{forged:?}"
            );
        }
    }

    #[test]
    fn a_client_too_large_for_an_id_is_refused() {
        let mut big = state(10);
        big.client_capabilities = json!({"experimental": {"x": "y".repeat(MAX_ID_CHARS)}});
        assert!(big.seal(&KeyRing::random()).is_err());
    }
}
