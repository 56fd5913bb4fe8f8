//! API keys: only their digests are configured (`sha256:HEX`, as `mcpgw auth hash-key` prints it). A
//! presented key is digested once and compared with every configured digest in constant time, all of them
//! every time, so neither the timing nor the order of the table says which digest came close.
//!
//! SHA-256 and not a slow password hash: keys are random (`mcpgw auth hash-key` refuses short ones), so
//! there is nothing to guess, and a slow hash per request would be a denial-of-service lever.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::principal::Principal;
use crate::config::{ApiKeyEntry, parse_digest};

/// The shortest key `mcpgw auth hash-key` takes (in bytes): 128 bits of base64 or hex and then some.
pub const MIN_KEY_LEN: usize = 24;

/// The digest of `key` as configured: `sha256:` and 64 lower-case hex digits.
pub fn digest_text(key: &str) -> String {
    let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys(Vec<([u8; 32], Principal)>);

impl ApiKeys {
    /// From `[[auth.api_key]]` (validated).
    pub fn new(entries: &[ApiKeyEntry]) -> ApiKeys {
        ApiKeys(
            entries
                .iter()
                .filter_map(|e| {
                    let digest = parse_digest(&e.digest.to_ascii_lowercase())?;
                    Some((
                        digest,
                        Principal {
                            name: e.principal.clone(),
                            source: super::principal::PrincipalSource::ApiKey,
                            groups: e.groups.clone(),
                            scopes: e.scopes.clone(),
                            token: None,
                        },
                    ))
                })
                .collect(),
        )
    }

    /// Whether any key is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The principal whose key this is.
    pub fn find(&self, key: &str) -> Option<&Principal> {
        let presented: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for (digest, principal) in &self.0 {
            // No early exit: every digest is compared, each in constant time.
            if bool::from(digest.ct_eq(&presented)) {
                found = Some(principal);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_by_its_digest_only() {
        let entry = |principal: &str, key: &str| ApiKeyEntry {
            principal: principal.to_owned(),
            digest: digest_text(key),
            digest_file: None,
            groups: vec!["ops".to_owned()],
            scopes: vec![],
        };
        let keys = ApiKeys::new(&[
            entry("alice", "alice-key-0123456789abcdef"),
            entry("bob", "bob-key-0123456789abcdef"),
        ]);
        assert_eq!(
            keys.find("alice-key-0123456789abcdef")
                .map(|p| p.name.as_str()),
            Some("alice")
        );
        assert_eq!(
            keys.find("bob-key-0123456789abcdef")
                .map(|p| p.name.as_str()),
            Some("bob")
        );
        for wrong in [
            "",
            "alice-key-0123456789abcdeF",
            "alice-key-0123456789abcde",
            &digest_text("alice-key-0123456789abcdef"),
        ] {
            assert!(keys.find(wrong).is_none(), "{wrong:?}");
        }
    }

    #[test]
    fn digests_parse_only_in_their_one_form() {
        let good = digest_text("k");
        assert!(parse_digest(&good).is_some());
        for bad in [
            "",
            "sha256:",
            "md5:00",
            &good[..good.len() - 1],
            &good.replace("sha256:", "SHA256:"),
            &format!("{good}0"),
            "sha256:zz00000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert!(parse_digest(bad).is_none(), "{bad:?}");
        }
    }
}
