//! `[cluster]`: what replicas share — the key ring that seals session ids and request states, and Redis.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[cluster]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The key ring: one key a line, `ID:BASE64` of 32 random bytes; the first seals, every line opens.
    /// Re-read on SIGHUP. The environment variable `MCPGW_SESSION_KEYS` may hold the same text instead.
    pub keys_file: Option<PathBuf>,
    /// Redis (`redis://[user:password@]host:port[/db]` or `rediss://…`): the session state that changes
    /// after `initialize`, revocations, answers that cross replicas.
    #[serde(serialize_with = "super::redact::url")]
    pub redis: Option<String>,
    /// A file holding Redis's password (a mounted secret), put in `redis`'s URL when the config is loaded:
    /// the config itself then holds none.
    pub redis_password_file: Option<PathBuf>,
    /// The cipher new session ids and request states are sealed with (both always open):
    /// `"xchacha20-poly1305"` (default) or `"chacha20-poly1305"`, what versions before it sealed with
    /// random 96-bit nonces, for a rolling upgrade from one of them only.
    pub seal_cipher: Option<SealCipher>,
}

/// `[cluster] seal_cipher`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum SealCipher {
    /// 192-bit random nonces (the default).
    #[serde(rename = "xchacha20-poly1305")]
    XChaCha20Poly1305,
    /// 96-bit random nonces: what replicas of earlier versions open.
    #[serde(rename = "chacha20-poly1305")]
    ChaCha20Poly1305,
}

impl ClusterConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.redis
            && !(url.starts_with("redis://") || url.starts_with("rediss://"))
        {
            return Err(invalid(
                "cluster.redis",
                "must be a redis:// or rediss:// URL",
            ));
        }
        Ok(())
    }
}
