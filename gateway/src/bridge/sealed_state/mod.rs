//! The gateway's sealed `requestState`. A backend's `input_required` result reaches a 2026-07-28 client with
//! its `requestState` wrapped in an envelope only this gateway (and replicas sharing its key ring) can open
//! (ChaCha20-Poly1305 with the ring's request-state subkey, the key's tag for rotation): bound to the backend, the method and a digest of the request's params, with an expiry and a
//! single-use id. The client's retry is checked before anything is routed; a tampered, expired, replayed or
//! foreign state is refused, and the backend gets back exactly the state it issued.
//!
//! `requestState` is attacker-controlled (the spec's words): nothing in it is trusted before it opens.

mod used;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::auth_context::AuthContext;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocol::raw::RawObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use used::UsedIds;

use crate::cluster::ClusterKeys;
#[cfg(any(test, feature = "internals"))]
use crate::cluster::keys::KeyRing;
use crate::cluster::keys::Purpose;

/// What an envelope is bound to, besides its contents.
const AAD: &[u8] = b"mcpgw/request-state/v1";
/// How long a sealed state stays valid.
const LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Single-use ids remembered at most (each until its state expires); a full set refuses new states.
const REMEMBERED: usize = 100_000;
/// Single-use ids one holder (a principal, else a client address) may hold at once: a hundredth of the
/// set, so one party cannot fill it for everyone.
pub const PER_HOLDER: usize = REMEMBERED / 100;

/// Why a client's `requestState` is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    /// Not an envelope of this gateway, or altered.
    #[error("requestState was not issued by this gateway or was altered")]
    Forged,
    /// Past its expiry.
    #[error("requestState has expired")]
    Expired,
    /// Issued for another method or other params.
    #[error("requestState belongs to a different request")]
    Mismatch,
    /// Already used once.
    #[error("requestState was already used")]
    Replayed,
    /// Issued to another authorization context (other credentials).
    #[error("requestState was issued to other credentials")]
    OtherCredentials,
    /// The gateway remembers its maximum of unexpired single-use ids; refused rather than forget one (which
    /// would let its state be replayed). Not used up: the same state opens once room is made.
    #[error("the gateway holds its maximum of request states in use; retry later")]
    TooManyInUse,
    /// The holder (principal or client address) holds its maximum of unexpired single-use ids; refused, not
    /// used up, so that it cannot fill the set for everyone.
    #[error(
        "you hold the maximum of {PER_HOLDER} request states used in the last 15 minutes; retry later"
    )]
    TooManyHeld,
}

/// Who uses a state, for the cap on single-use ids per holder: the principal when authentication
/// established one, else the client's address (an IPv6 address by its /64, which one client usually
/// holds whole), else (stdio) the one local client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Holder(String);

impl Holder {
    /// The holder of a request from `principal` at `client`.
    pub fn of(
        principal: Option<&crate::auth::Principal>,
        client: Option<std::net::IpAddr>,
    ) -> Holder {
        Holder(match (principal, client) {
            (Some(p), _) => format!("principal {}", p.id()),
            (None, Some(ip)) => format!("address {}", crate::auth::proxies::limited_as(ip)),
            (None, None) => "local".to_owned(),
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The backend's own state, as the raw JSON it sent.
    s: Box<RawValue>,
    /// The backend it came from.
    b: String,
    /// The method.
    m: String,
    /// Hex SHA-256 of the request's params without `_meta`, `inputResponses` and `requestState`.
    d: String,
    /// Expiry, milliseconds since the Unix epoch.
    e: u64,
    /// Single-use id.
    j: String,
    /// The authorization context it was issued to ([`AuthContext::tag`]).
    #[serde(default)]
    p: String,
}

/// Seals and opens request states with the cluster's key ring. One per gateway; cheap to share.
#[derive(Debug)]
pub struct StateSealer {
    keys: Arc<ClusterKeys>,
    used: UsedIds,
}

/// A state that opened: the backend it belongs to and the state to give back to it.
#[derive(Debug)]
pub struct Opened {
    /// The backend that issued it.
    pub backend: String,
    /// Its own `requestState`, byte for byte.
    pub state: Box<RawValue>,
    /// Its single-use id and expiry (Unix milliseconds): what replicas sharing a Redis claim once there.
    pub single_use: (String, u64),
}

impl StateSealer {
    /// A sealer with the ring of `keys` (re-read on reload: each seal and open uses the ring of the moment).
    pub fn new(keys: Arc<ClusterKeys>) -> StateSealer {
        StateSealer::remembering(keys, REMEMBERED, PER_HOLDER)
    }

    /// A sealer with one given ring (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn with_ring(ring: KeyRing) -> StateSealer {
        StateSealer::new(Arc::new(ClusterKeys::with(
            ring,
            crate::cluster::KeySource::Random,
        )))
    }

    /// A sealer remembering at most `remembered` single-use ids, `per_holder` of one holder.
    fn remembering(keys: Arc<ClusterKeys>, remembered: usize, per_holder: usize) -> StateSealer {
        StateSealer {
            keys,
            used: UsedIds::new(remembered, per_holder),
        }
    }

    /// Seals a backend's state for the request `params` of `method`.
    pub fn seal(
        &self,
        auth: &AuthContext,
        backend: &str,
        method: &str,
        params: Option<&RawValue>,
        state: &RawValue,
    ) -> String {
        let mut jti = [0u8; 12];
        let _ = getrandom::fill(&mut jti);
        let envelope = Envelope {
            s: state.to_owned(),
            b: backend.to_owned(),
            m: method.to_owned(),
            d: digest(params),
            e: now_ms() + LIFETIME.as_millis() as u64,
            j: URL_SAFE_NO_PAD.encode(jti),
            p: auth.tag(),
        };
        let plain = serde_json::to_vec(&envelope).unwrap_or_default();
        self.keys
            .ring()
            .seal_text(Purpose::RequestState, AAD, &plain)
    }

    /// Opens a client's state for the request `params` of `method`, once, used by `holder`.
    pub fn open(
        &self,
        auth: &AuthContext,
        holder: &Holder,
        method: &str,
        params: Option<&RawValue>,
        sealed: &str,
    ) -> Result<Opened, StateError> {
        let plain = self
            .keys
            .ring()
            .open_text(Purpose::RequestState, AAD, sealed)
            .ok_or(StateError::Forged)?;
        let envelope: Envelope = serde_json::from_slice(&plain).map_err(|_| StateError::Forged)?;
        let now = now_ms();
        if envelope.e < now {
            return Err(StateError::Expired);
        }
        if envelope.m != method || envelope.d != digest(params) {
            return Err(StateError::Mismatch);
        }
        if envelope.p != auth.tag() {
            return Err(StateError::OtherCredentials);
        }
        self.used
            .use_once(&envelope.j, envelope.e, now, &holder.0)?;
        Ok(Opened {
            backend: envelope.b,
            state: envelope.s,
            single_use: (envelope.j, envelope.e),
        })
    }
}

/// The digest binding a state to its request: the params without the keys that change between rounds,
/// canonicalised (keys sorted, compact) so a client may re-serialise them.
fn digest(params: Option<&RawValue>) -> String {
    let mut object = RawObject::parse_or_empty(params).unwrap_or_default();
    for key in ["_meta", "inputResponses", "requestState"] {
        object.remove(key);
    }
    let canonical: Value = serde_json::from_str(object.to_raw().get()).unwrap_or(Value::Null);
    let hash = Sha256::digest(canonical.to_string().as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Holder {
        Holder::of(None, None)
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn ring(byte: u8) -> KeyRing {
        KeyRing::parse(&format!(
            "a:{}",
            base64::engine::general_purpose::STANDARD.encode([byte; 32])
        ))
        .unwrap()
    }

    #[test]
    fn a_state_opens_once_for_its_own_request() {
        let sealer = StateSealer::with_ring(ring(7));
        let params = raw(r#"{"name":"t","arguments":{"a":1,"b":2}}"#);
        let sealed = sealer.seal(
            &AuthContext::ANONYMOUS,
            "web",
            "tools/call",
            Some(&params),
            &raw(r#""backend-state""#),
        );
        // the retry re-serialises the params differently and adds the round's keys: still the same request
        let retry = raw(
            r#"{"arguments":{"b":2,"a":1},"name":"t","inputResponses":{},"requestState":"x","_meta":{}}"#,
        );
        let opened = sealer
            .open(
                &AuthContext::ANONYMOUS,
                &local(),
                "tools/call",
                Some(&retry),
                &sealed,
            )
            .unwrap();
        assert_eq!(opened.backend, "web");
        assert_eq!(opened.state.get(), r#""backend-state""#);
        assert_eq!(
            sealer
                .open(
                    &AuthContext::ANONYMOUS,
                    &local(),
                    "tools/call",
                    Some(&retry),
                    &sealed
                )
                .unwrap_err(),
            StateError::Replayed
        );
    }

    #[test]
    fn a_full_replay_set_refuses_new_states_and_still_refuses_replays() {
        let sealer = StateSealer::remembering(
            Arc::new(ClusterKeys::with(
                ring(7),
                crate::cluster::KeySource::Random,
            )),
            2,
            2,
        );
        let params = raw(r#"{"name":"t"}"#);
        let states: Vec<String> = (0..3)
            .map(|i| {
                sealer.seal(
                    &AuthContext::ANONYMOUS,
                    "web",
                    "tools/call",
                    Some(&params),
                    &raw(&i.to_string()),
                )
            })
            .collect();
        let open = |state: &str| {
            sealer
                .open(
                    &AuthContext::ANONYMOUS,
                    &local(),
                    "tools/call",
                    Some(&params),
                    state,
                )
                .map(|opened| opened.state.get().to_owned())
        };
        // (state, outcome), in order
        let table = [
            (&states[0], Ok("0".to_owned())),
            (&states[1], Ok("1".to_owned())),
            (&states[2], Err(StateError::TooManyInUse)),
            (&states[0], Err(StateError::Replayed)),
            (&states[1], Err(StateError::Replayed)),
            (&states[2], Err(StateError::TooManyInUse)),
        ];
        for (i, (state, want)) in table.into_iter().enumerate() {
            assert_eq!(open(state), want, "step {i}");
        }
    }

    #[test]
    fn tampering_and_mismatches_are_refused() {
        let sealer = StateSealer::with_ring(ring(7));
        let params = raw(r#"{"name":"t"}"#);
        let sealed = sealer.seal(
            &AuthContext::ANONYMOUS,
            "web",
            "tools/call",
            Some(&params),
            &raw("1"),
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let tampered = URL_SAFE_NO_PAD.encode(bytes);
        // (method, params, state, error)
        let table = [
            (
                "tools/call",
                r#"{"name":"t"}"#,
                tampered.as_str(),
                StateError::Forged,
            ),
            (
                "tools/call",
                r#"{"name":"t"}"#,
                "not-base64!",
                StateError::Forged,
            ),
            ("tools/call", r#"{"name":"t"}"#, "", StateError::Forged),
            (
                "prompts/get",
                r#"{"name":"t"}"#,
                sealed.as_str(),
                StateError::Mismatch,
            ),
            (
                "tools/call",
                r#"{"name":"u"}"#,
                sealed.as_str(),
                StateError::Mismatch,
            ),
        ];
        for (method, p, state, want) in table {
            assert_eq!(
                sealer
                    .open(
                        &AuthContext::ANONYMOUS,
                        &local(),
                        method,
                        Some(&raw(p)),
                        state
                    )
                    .unwrap_err(),
                want,
                "{method} {p}"
            );
        }
        let other_key = StateSealer::with_ring(ring(8));
        assert_eq!(
            other_key
                .open(
                    &AuthContext::ANONYMOUS,
                    &local(),
                    "tools/call",
                    Some(&params),
                    &sealed
                )
                .unwrap_err(),
            StateError::Forged
        );
        // the same request under other credentials
        let alice = AuthContext::from_authorization(Some(b"Bearer alice"));
        let hers = sealer.seal(&alice, "web", "tools/call", Some(&params), &raw("1"));
        assert_eq!(
            sealer
                .open(
                    &AuthContext::ANONYMOUS,
                    &local(),
                    "tools/call",
                    Some(&params),
                    &hers
                )
                .unwrap_err(),
            StateError::OtherCredentials
        );
        assert!(
            sealer
                .open(&alice, &local(), "tools/call", Some(&params), &hers)
                .is_ok()
        );
    }
}
