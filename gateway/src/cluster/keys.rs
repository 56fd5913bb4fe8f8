//! The key ring replicas share: one key a line, `ID:BASE64` of 32 random bytes; the first line seals, every
//! line opens. Each key's ciphers are derived once, when the ring is read (HKDF-SHA256, one subkey per
//! purpose), never per request. What is sealed carries a one-byte tag of its key's id, so opening tries only
//! the keys with that tag (in practice one).
//!
//! Nothing here logs or prints a key; errors name the line, never its content.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};

/// What a subkey is for: each purpose has its own, so nothing sealed for one opens as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A legacy session's `Mcp-Session-Id`.
    SessionId,
    /// A 2026-07-28 `requestState`.
    RequestState,
}

impl Purpose {
    fn info(self) -> &'static [u8] {
        match self {
            Purpose::SessionId => b"mcpgw/session-id/v1",
            Purpose::RequestState => b"mcpgw/request-state/v1",
        }
    }
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
}

impl RingKey {
    fn new(id: String, secret: &[u8; 32]) -> RingKey {
        let derive = |purpose: Purpose| {
            let mut okm = [0u8; 32];
            // 32 bytes is far below HKDF-SHA256's limit of 255 * 32: this cannot fail.
            let _ = Hkdf::<Sha256>::new(None, secret).expand(purpose.info(), &mut okm);
            ChaCha20Poly1305::new(Key::from_slice(&okm))
        };
        RingKey {
            tag: tag_of(&id),
            session: derive(Purpose::SessionId),
            state: derive(Purpose::RequestState),
            id,
        }
    }

    fn cipher(&self, purpose: Purpose) -> &ChaCha20Poly1305 {
        match purpose {
            Purpose::SessionId => &self.session,
            Purpose::RequestState => &self.state,
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
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("ids", &self.ids())
            .field("shared", &self.shared)
            .finish()
    }
}

/// Bytes sealed data adds to its plaintext: the key tag, the nonce and the AEAD tag.
pub const OVERHEAD: usize = 1 + 12 + 16;

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
        Ok(KeyRing { keys, shared: true })
    }

    /// A ring of one random key, for a gateway with no ring configured: what it seals opens only in this
    /// process (one replica; a restart ends every session).
    pub fn random() -> KeyRing {
        KeyRing {
            keys: vec![RingKey::new("local".to_owned(), &random_secret())],
            shared: false,
        }
    }

    /// Whether the ring came from configuration (and can be shared by replicas and restarts).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The ids, the sealing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|k| k.id.as_str()).collect()
    }

    /// Seals `plain` for `purpose` with the first key: `tag || nonce || ciphertext`, bound to `aad`.
    pub fn seal(&self, purpose: Purpose, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let key = &self.keys[0];
        let mut nonce = [0u8; 12];
        fill_random(&mut nonce);
        let sealed = key
            .cipher(purpose)
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad })
            // Encryption fails only past the cipher's length limit (256 GiB): not reachable here.
            .unwrap_or_default();
        let mut out = Vec::with_capacity(OVERHEAD + plain.len());
        out.push(key.tag);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Seals and encodes as URL-safe base64 without padding (a valid header value and JSON string).
    pub fn seal_text(&self, purpose: Purpose, aad: &[u8], plain: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.seal(purpose, aad, plain))
    }

    /// Opens what [`KeyRing::seal`] made with any key of the ring; `None` for anything else (forged,
    /// altered, another purpose or `aad`, a key no longer in the ring), all alike.
    pub fn open(&self, purpose: Purpose, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < OVERHEAD {
            return None;
        }
        let (tag, rest) = (sealed[0], &sealed[1..]);
        let (nonce, ciphertext) = rest.split_at(12);
        self.keys.iter().filter(|k| k.tag == tag).find_map(|k| {
            k.cipher(purpose)
                .decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: ciphertext,
                        aad,
                    },
                )
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
mod tests {
    use super::*;

    fn line(id: &str, byte: u8) -> String {
        format!("{id}:{}", STANDARD.encode([byte; 32]))
    }

    #[test]
    fn what_one_key_seals_opens_with_any_ring_holding_it_and_no_other() {
        let old = KeyRing::parse(&line("a", 1)).unwrap();
        let both = KeyRing::parse(&format!("{}\n{}\n", line("b", 2), line("a", 1))).unwrap();
        let other = KeyRing::parse(&line("a", 3)).unwrap();
        let sealed = old.seal(Purpose::SessionId, b"x", b"hello");
        assert_eq!(
            both.open(Purpose::SessionId, b"x", &sealed).as_deref(),
            Some(&b"hello"[..])
        );
        // The same id with another secret, another purpose, another aad: none opens it.
        assert_eq!(other.open(Purpose::SessionId, b"x", &sealed), None);
        assert_eq!(old.open(Purpose::RequestState, b"x", &sealed), None);
        assert_eq!(old.open(Purpose::SessionId, b"y", &sealed), None);
        // The new first key seals; the old ring cannot open that (rotation's middle step is "add everywhere").
        let new = both.seal(Purpose::SessionId, b"x", b"hi");
        assert_eq!(old.open(Purpose::SessionId, b"x", &new), None);
        assert!(both.open(Purpose::SessionId, b"x", &new).is_some());
    }

    #[test]
    fn every_altered_byte_is_refused() {
        let ring = KeyRing::parse(&line("a", 1)).unwrap();
        let sealed = ring.seal(Purpose::SessionId, b"", b"state of a session");
        for i in 0..sealed.len() {
            let mut altered = sealed.clone();
            altered[i] ^= 0x01;
            assert_eq!(
                ring.open(Purpose::SessionId, b"", &altered),
                None,
                "byte {i}"
            );
        }
        assert_eq!(
            ring.open(Purpose::SessionId, b"", &sealed[..OVERHEAD - 1]),
            None
        );
    }

    #[test]
    fn bad_rings_are_refused_naming_the_line_never_the_key() {
        let cases: [(&str, KeyRingError); 6] = [
            ("", KeyRingError::Empty),
            ("# only a comment\n\n", KeyRingError::Empty),
            (
                "nokey",
                KeyRingError::Line {
                    line: 1,
                    why: "expected ID:BASE64",
                },
            ),
            (
                "\na:AAAA",
                KeyRingError::Line {
                    line: 2,
                    why: "the key must be 32 bytes (44 base64 characters)",
                },
            ),
            (
                "a b:AAAA",
                KeyRingError::Line {
                    line: 1,
                    why: "the key id may hold only A-Z, a-z, 0-9, '.', '_' and '-'",
                },
            ),
            (
                "a:%%%",
                KeyRingError::Line {
                    line: 1,
                    why: "the key is not valid base64",
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(KeyRing::parse(text).unwrap_err(), want, "{text:?}");
        }
        let twice = format!("{}\n{}", line("a", 1), line("a", 2));
        assert_eq!(
            KeyRing::parse(&twice).unwrap_err(),
            KeyRingError::DuplicateId {
                line: 2,
                id: "a".into()
            }
        );
        let secret = STANDARD.encode([7u8; 31]);
        let e = KeyRing::parse(&format!("a:{secret}"))
            .unwrap_err()
            .to_string();
        assert!(!e.contains(&secret), "{e}");
    }

    #[test]
    fn a_new_key_line_loads_and_is_fresh() {
        let a = new_key_line();
        let b = new_key_line();
        assert_ne!(a, b);
        let ring = KeyRing::parse(&format!("{a}\n{b}")).unwrap();
        assert_eq!(ring.ids().len(), 2);
        assert!(ring.is_shared());
        assert!(!KeyRing::random().is_shared());
    }
}
