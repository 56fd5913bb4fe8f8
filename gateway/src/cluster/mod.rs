//! What replicas of one deployment share, so that any replica serves any request: the key ring (`keys`)
//! that seals legacy session ids and 2026-07-28 request states, read from `[cluster] keys_file` or
//! `MCPGW_SESSION_KEYS` and re-read on SIGHUP.
//!
//! It must not be on a request's path with I/O: the ring is read at start and on reload, never per request.

mod event;
pub mod keys;
mod listen;
pub mod redis;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use keys::{KeyRing, KeyRingError};

use crate::config::ClusterConfig;

/// This process's name among the replicas (8 random hex digits): the questions it asks legacy clients
/// carry it, so an answer that reaches another replica is sent here.
pub fn replica() -> &'static str {
    static REPLICA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    REPLICA.get_or_init(|| {
        let mut bytes = [0u8; 4];
        let _ = getrandom::fill(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// The environment variable holding the key ring's text (instead of `[cluster] keys_file`).
pub const KEYS_ENV: &str = "MCPGW_SESSION_KEYS";

/// Where the key ring comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `[cluster] keys_file`.
    File(PathBuf),
    /// `MCPGW_SESSION_KEYS`.
    Environment,
    /// Nothing configured: a random key of this process.
    Random,
}

/// Why the key ring cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// Both sources set.
    #[error("the key ring is set twice: [cluster] keys_file and {KEYS_ENV}; set one")]
    Twice,
    /// The file cannot be read.
    #[error("cannot read the key ring {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not a key ring.
    #[error("the key ring in {source_name}: {error}")]
    Parse {
        /// The file or the variable.
        source_name: String,
        /// What is wrong.
        error: KeyRingError,
    },
}

impl KeySource {
    /// The configured source (the file, the environment variable, or none).
    pub fn of(config: &ClusterConfig) -> Result<KeySource, KeysError> {
        let env = std::env::var_os(KEYS_ENV).is_some_and(|v| !v.is_empty());
        match (&config.keys_file, env) {
            (Some(_), true) => Err(KeysError::Twice),
            (Some(path), false) => Ok(KeySource::File(path.clone())),
            (None, true) => Ok(KeySource::Environment),
            (None, false) => Ok(KeySource::Random),
        }
    }

    /// Reads the ring from the source.
    pub fn read(&self) -> Result<KeyRing, KeysError> {
        let (text, source_name) = match self {
            KeySource::Random => return Ok(KeyRing::random()),
            KeySource::File(path) => (
                std::fs::read_to_string(path).map_err(|error| KeysError::Read {
                    path: path.clone(),
                    error,
                })?,
                path.display().to_string(),
            ),
            KeySource::Environment => (
                std::env::var(KEYS_ENV).unwrap_or_default(),
                KEYS_ENV.to_owned(),
            ),
        };
        KeyRing::parse(&text).map_err(|error| KeysError::Parse { source_name, error })
    }
}

/// `[cluster] seal_cipher` as the ring takes it.
fn seal_cipher(config: &ClusterConfig) -> keys::SealCipher {
    match config.seal_cipher {
        Some(crate::config::SealCipher::ChaCha20Poly1305) => keys::SealCipher::ChaCha20Poly1305,
        Some(crate::config::SealCipher::XChaCha20Poly1305) | None => {
            keys::SealCipher::XChaCha20Poly1305
        }
    }
}

/// The key ring in use, swapped whole by a reload. A read takes a short lock and an `Arc` clone; nothing
/// holds the lock across an `.await`.
#[derive(Debug)]
pub struct ClusterKeys {
    current: RwLock<Arc<KeyRing>>,
    source: KeySource,
    /// What new seals use, kept across reloads.
    cipher: keys::SealCipher,
    /// Rings read so far after the first: a session checked under an older one is checked again.
    version: std::sync::atomic::AtomicU64,
}

impl ClusterKeys {
    /// Reads the configured ring.
    pub fn load(config: &ClusterConfig) -> Result<ClusterKeys, KeysError> {
        let source = KeySource::of(config)?;
        let cipher = seal_cipher(config);
        let mut keys = ClusterKeys::with(source.read()?.sealing_with(cipher), source);
        keys.cipher = cipher;
        Ok(keys)
    }

    /// A given ring (tests; `source` is what a reload reads again).
    pub fn with(ring: KeyRing, source: KeySource) -> ClusterKeys {
        ClusterKeys {
            current: RwLock::new(Arc::new(ring)),
            source,
            cipher: keys::SealCipher::default(),
            version: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A random ring of this process only.
    #[cfg(any(test, feature = "internals"))]
    pub fn random() -> ClusterKeys {
        ClusterKeys::with(KeyRing::random(), KeySource::Random)
    }

    /// The ring in use now.
    pub fn ring(&self) -> Arc<KeyRing> {
        match self.current.read() {
            Ok(ring) => Arc::clone(&ring),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// How many times the ring was replaced (0 for the first).
    pub fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Where it comes from.
    pub fn source(&self) -> &KeySource {
        &self.source
    }

    fn replace(&self, ring: KeyRing) {
        let ring = Arc::new(ring);
        match self.current.write() {
            Ok(mut current) => *current = ring,
            Err(poisoned) => *poisoned.into_inner() = ring,
        }
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }
}

impl crate::reloadable::Reload for ClusterKeys {
    fn part(&self) -> &'static str {
        "session key ring"
    }

    /// Reads the ring again; a ring that does not load keeps the current one. A random ring stays as it is.
    fn reload(&self) -> Result<(), String> {
        if self.source == KeySource::Random {
            return Ok(());
        }
        let ring = self
            .source
            .read()
            .map_err(|e| e.to_string())?
            .sealing_with(self.cipher);
        let ids: Vec<String> = ring.ids().into_iter().map(str::to_owned).collect();
        // Said once the new ring is in place: whoever reads the line (the replica tests do) may rely on it.
        self.replace(ring);
        tracing::info!(keys = ?ids, "key ring read: the first key seals");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reloadable::Reload;

    #[test]
    fn a_reload_swaps_the_ring_and_a_bad_file_keeps_the_old_one() {
        let dir = std::env::temp_dir().join(format!("mcpgw-ring-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        let a = keys::new_key_line();
        std::fs::write(&path, &a).unwrap();
        let config = ClusterConfig {
            keys_file: Some(path.clone()),
            redis: None,
            redis_password_file: None,
            seal_cipher: Some(crate::config::SealCipher::ChaCha20Poly1305),
        };
        let keys = ClusterKeys::load(&config).unwrap();
        let first = keys.ring().ids()[0].to_owned();
        let b = keys::new_key_line();
        std::fs::write(&path, format!("{b}\n{a}\n")).unwrap();
        keys.reload().unwrap();
        assert_eq!(keys.ring().ids()[1], first);
        let sealed = keys.ring().seal(keys::Purpose::SessionId, b"", b"x");
        assert_eq!(
            sealed.len(),
            1 + 12 + 1 + 16,
            "the configured cipher survives a reload"
        );
        std::fs::write(&path, "garbage").unwrap();
        let err = keys.reload().unwrap_err();
        assert!(err.contains("line 1"), "{err}");
        assert_eq!(keys.ring().ids().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
