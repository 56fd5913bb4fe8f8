//! The key ring replicas share: one key a line, `ID:BASE64` of 32 random bytes; the first line seals, every
//! line opens. Each key's ciphers are derived once, when the ring is read (HKDF-SHA256, one subkey per
//! purpose and format), never per request. What is sealed carries a one-byte tag of its key's id, so opening
//! tries only the keys with that tag (in practice one).
//!
//! Two formats open: `0x02 || tag || 24-byte nonce || ciphertext` (XChaCha20-Poly1305, what is sealed by
//! default: random 192-bit nonces never collide however long a key lives) and the earlier
//! `tag || 12-byte nonce || ciphertext` (ChaCha20-Poly1305, whose random 96-bit nonces near the birthday
//! bound after some 2^32 seals under one key), which `[cluster] seal_cipher = "chacha20-poly1305"` still
//! seals while replicas of an earlier version share the ring. The AEAD decides: an earlier id whose tag
//! happens to be `0x02` fails as the new format and opens as the old.
//!
//! Nothing here logs or prints a key; errors name the line, never its content.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};

/// What a subkey is for: each purpose has its own, so nothing sealed for one opens as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A legacy session's `Mcp-Session-Id`.
    SessionId,
    /// A 2026-07-28 `requestState`.
    RequestState,
    /// Per-user authorization to backends: consent links, an authorization flow's state, the tokens at
    /// rest (`oauth`).
    Authorization,
}

impl Purpose {
    /// HKDF's `info` of the earlier format's subkey.
    fn info(self) -> &'static [u8] {
        match self {
            Purpose::SessionId => b"mcpgw/session-id/v1",
            Purpose::RequestState => b"mcpgw/request-state/v1",
            Purpose::Authorization => b"mcpgw/authorization/v1",
        }
    }

    /// HKDF's `info` of the XChaCha20-Poly1305 format's subkey (its own: no key serves both ciphers).
    fn info_x(self) -> &'static [u8] {
        match self {
            Purpose::SessionId => b"mcpgw/session-id/v2",
            Purpose::RequestState => b"mcpgw/request-state/v2",
            Purpose::Authorization => b"mcpgw/authorization/v2",
        }
    }
}

/// The cipher new seals use (`[cluster] seal_cipher`); both always open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SealCipher {
    /// XChaCha20-Poly1305, 192-bit random nonces (the default).
    #[default]
    XChaCha20Poly1305,
    /// ChaCha20-Poly1305, 96-bit random nonces: what versions before it sealed, for a rolling upgrade.
    ChaCha20Poly1305,
}

/// Why a key ring does not load.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyRingError {
    /// No key at all.
    #[error(
        "the key ring holds no key (one `ID:BASE64` line per key; `mcpgw cluster new-key` prints one)"
    )]
    Empty,
    /// A line that is not `ID:BASE64`.
    #[error("key ring line {line}: {why}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong (never the key).
        why: &'static str,
    },
    /// The same id twice.
    #[error("key ring line {line}: the key id {id:?} is already used by an earlier line")]
    DuplicateId {
        /// 1-based.
        line: usize,
        /// The id.
        id: String,
    },
}

struct RingKey {
    id: String,
    tag: u8,
    session: ChaCha20Poly1305,
    state: ChaCha20Poly1305,
    session_x: XChaCha20Poly1305,
    state_x: XChaCha20Poly1305,
    authorization: ChaCha20Poly1305,
    authorization_x: XChaCha20Poly1305,
}

impl RingKey {
    fn new(id: String, secret: &[u8; 32]) -> RingKey {
        let derive = |info: &[u8]| {
            let mut okm = [0u8; 32];
            // 32 bytes is far below HKDF-SHA256's limit of 255 * 32: this cannot fail.
            let _ = Hkdf::<Sha256>::new(None, secret).expand(info, &mut okm);
            *Key::from_slice(&okm)
        };
        let (session, state, authorization) = (
            Purpose::SessionId,
            Purpose::RequestState,
            Purpose::Authorization,
        );
        RingKey {
            tag: tag_of(&id),
            session: ChaCha20Poly1305::new(&derive(session.info())),
            state: ChaCha20Poly1305::new(&derive(state.info())),
            session_x: XChaCha20Poly1305::new(&derive(session.info_x())),
            state_x: XChaCha20Poly1305::new(&derive(state.info_x())),
            authorization: ChaCha20Poly1305::new(&derive(authorization.info())),
            authorization_x: XChaCha20Poly1305::new(&derive(authorization.info_x())),
            id,
        }
    }

    fn cipher(&self, purpose: Purpose) -> &ChaCha20Poly1305 {
        match purpose {
            Purpose::SessionId => &self.session,
            Purpose::RequestState => &self.state,
            Purpose::Authorization => &self.authorization,
        }
    }

    fn cipher_x(&self, purpose: Purpose) -> &XChaCha20Poly1305 {
        match purpose {
            Purpose::SessionId => &self.session_x,
            Purpose::RequestState => &self.state_x,
            Purpose::Authorization => &self.authorization_x,
        }
    }
}

/// The one-byte tag sealed data carries for its key.
fn tag_of(id: &str) -> u8 {
    Sha256::digest(id.as_bytes())[0]
}

/// The keys, the sealing one first. Cheap to share behind an `Arc`.
pub struct KeyRing {
    keys: Vec<RingKey>,
    /// Read from configuration (`false`: a random key of this process only).
    shared: bool,
    /// What new seals use.
    cipher: SealCipher,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("ids", &self.ids())
            .field("shared", &self.shared)
            .field("cipher", &self.cipher)
            .finish()
    }
}

/// The first byte of the XChaCha20-Poly1305 format.
const FORMAT_X: u8 = 0x02;

/// Bytes the earlier format adds to its plaintext: the key tag, the 96-bit nonce and the AEAD tag.
const OVERHEAD_V1: usize = 1 + 12 + 16;

/// Bytes sealed data adds to its plaintext (at most): the format, the key tag, the 192-bit nonce and the
/// AEAD tag.
pub const OVERHEAD: usize = 1 + 1 + 24 + 16;

impl KeyRing {
    /// Parses a ring: one `ID:BASE64` a line (blank lines and `#` comments skipped); ids are 1 to 32 of
    /// `A-Z a-z 0-9 . _ -`; each key is 32 bytes in standard base64.
    pub fn parse(text: &str) -> Result<KeyRing, KeyRingError> {
        let mut keys: Vec<RingKey> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let entry = raw.trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let bad = |why| KeyRingError::Line { line, why };
            let (id, secret) = entry.split_once(':').ok_or(bad("expected ID:BASE64"))?;
            let id = id.trim();
            if id.is_empty() || id.len() > 32 {
                return Err(bad("the key id must be 1 to 32 characters"));
            }
            if !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(bad(
                    "the key id may hold only A-Z, a-z, 0-9, '.', '_' and '-'",
                ));
            }
            let bytes = STANDARD
                .decode(secret.trim())
                .map_err(|_| bad("the key is not valid base64"))?;
            let secret: [u8; 32] = bytes
                .try_into()
                .map_err(|_| bad("the key must be 32 bytes (44 base64 characters)"))?;
            if keys.iter().any(|k| k.id == id) {
                return Err(KeyRingError::DuplicateId {
                    line,
                    id: id.to_owned(),
                });
            }
            keys.push(RingKey::new(id.to_owned(), &secret));
        }
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        Ok(KeyRing {
            keys,
            shared: true,
            cipher: SealCipher::default(),
        })
    }

    /// A ring of one random key, for a gateway with no ring configured: what it seals opens only in this
    /// process (one replica; a restart ends every session).
    pub fn random() -> KeyRing {
        KeyRing {
            keys: vec![RingKey::new("local".to_owned(), &random_secret())],
            shared: false,
            cipher: SealCipher::default(),
        }
    }

    /// The same ring, sealing with `cipher` (opening both formats whatever it is).
    pub fn sealing_with(self, cipher: SealCipher) -> KeyRing {
        KeyRing { cipher, ..self }
    }

    /// Whether the ring came from configuration (and can be shared by replicas and restarts).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The ids, the sealing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|k| k.id.as_str()).collect()
    }

    /// Seals `plain` for `purpose` with the first key, bound to `aad`: `0x02 || tag || nonce || ciphertext`
    /// (XChaCha20-Poly1305), or `tag || nonce || ciphertext` under the earlier cipher.
    pub fn seal(&self, purpose: Purpose, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let key = &self.keys[0];
        let payload = Payload { msg: plain, aad };
        let mut out = Vec::with_capacity(OVERHEAD + plain.len());
        // Encryption fails only past the cipher's length limit (256 GiB): not reachable here.
        match self.cipher {
            SealCipher::XChaCha20Poly1305 => {
                let mut nonce = [0u8; 24];
                fill_random(&mut nonce);
                let sealed = key
                    .cipher_x(purpose)
                    .encrypt(XNonce::from_slice(&nonce), payload)
                    .unwrap_or_default();
                out.extend_from_slice(&[FORMAT_X, key.tag]);
                out.extend_from_slice(&nonce);
                out.extend_from_slice(&sealed);
            }
            SealCipher::ChaCha20Poly1305 => {
                let mut nonce = [0u8; 12];
                fill_random(&mut nonce);
                let sealed = key
                    .cipher(purpose)
                    .encrypt(Nonce::from_slice(&nonce), payload)
                    .unwrap_or_default();
                out.push(key.tag);
                out.extend_from_slice(&nonce);
                out.extend_from_slice(&sealed);
            }
        }
        out
    }

    /// Seals and encodes as URL-safe base64 without padding (a valid header value and JSON string).
    pub fn seal_text(&self, purpose: Purpose, aad: &[u8], plain: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.seal(purpose, aad, plain))
    }

    /// Opens what [`KeyRing::seal`] made, in either format, with any key of the ring; `None` for anything
    /// else (forged, altered, another purpose or `aad`, a key no longer in the ring), all alike.
    pub fn open(&self, purpose: Purpose, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        self.open_x(purpose, aad, sealed)
            .or_else(|| self.open_v1(purpose, aad, sealed))
    }

    fn open_x(&self, purpose: Purpose, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        let [FORMAT_X, tag, rest @ ..] = sealed else {
            return None;
        };
        if sealed.len() < OVERHEAD {
            return None;
        }
        let (nonce, msg) = rest.split_at(24);
        self.keys.iter().filter(|k| k.tag == *tag).find_map(|k| {
            k.cipher_x(purpose)
                .decrypt(XNonce::from_slice(nonce), Payload { msg, aad })
                .ok()
        })
    }

    fn open_v1(&self, purpose: Purpose, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < OVERHEAD_V1 {
            return None;
        }
        let (tag, rest) = (sealed[0], &sealed[1..]);
        let (nonce, msg) = rest.split_at(12);
        self.keys.iter().filter(|k| k.tag == tag).find_map(|k| {
            k.cipher(purpose)
                .decrypt(Nonce::from_slice(nonce), Payload { msg, aad })
                .ok()
        })
    }

    /// Decodes and opens what [`KeyRing::seal_text`] made.
    pub fn open_text(&self, purpose: Purpose, aad: &[u8], sealed: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        self.open(purpose, aad, &bytes)
    }
}

/// A fresh key ring line, `ID:BASE64`: `mcpgw cluster new-key`. The id is `k` and 8 random hex digits.
pub fn new_key_line() -> String {
    let mut id = [0u8; 4];
    fill_random(&mut id);
    let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!("k{id}:{}", STANDARD.encode(random_secret()))
}

fn random_secret() -> [u8; 32] {
    let mut secret = [0u8; 32];
    fill_random(&mut secret);
    secret
}

fn fill_random(buf: &mut [u8]) {
    if getrandom::fill(buf).is_err() {
        // A key or nonce must never be predictable: no entropy source is a broken machine.
        panic!("the operating system's random number generator is unavailable");
    }
}

#[cfg(test)]
mod tests;
