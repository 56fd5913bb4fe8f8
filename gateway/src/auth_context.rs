//! Who is asking, as far as a gateway that does not authenticate can tell: the client's authorization
//! context. It is the SHA-256 of the request's `Authorization` header (the credential itself is never kept),
//! or [`AuthContext::ANONYMOUS`] without one (and on stdio, where the host is the only client).
//!
//! What it is used for: a sealed `requestState` is bound to the context it was issued to (a retry under
//! other credentials is refused), and `resources/read` results a backend marked `cacheScope: "private"`
//! are only ever reused for the same context (MCP 2026-07-28 caching: private entries are keyed by
//! authorization context).

use sha2::{Digest, Sha256};

/// A client's authorization context (a digest, never the credential).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuthContext([u8; 32]);

impl AuthContext {
    /// No `Authorization` header.
    pub const ANONYMOUS: AuthContext = AuthContext([0; 32]);

    /// The context of a request whose `Authorization` header is `value` (`None`: anonymous).
    pub fn from_authorization(value: Option<&[u8]>) -> AuthContext {
        match value {
            None => AuthContext::ANONYMOUS,
            Some(v) => {
                let mut hasher = Sha256::new();
                hasher.update(b"mcpgw authorization context\0");
                hasher.update(v);
                AuthContext(hasher.finalize().into())
            }
        }
    }

    /// The context of an authenticated principal: the same for every credential it presents (a refreshed
    /// token keeps its sessions and states), distinct from every header digest.
    pub fn of_principal(name: &str) -> AuthContext {
        let mut hasher = Sha256::new();
        hasher.update(b"mcpgw principal\0");
        hasher.update(name.as_bytes());
        AuthContext(hasher.finalize().into())
    }

    /// The context of an HTTP request.
    #[cfg(any(test, feature = "internals"))]
    pub fn of_headers(headers: &actix_web::http::header::HeaderMap) -> AuthContext {
        let value = headers
            .get(actix_web::http::header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        AuthContext::from_authorization(value)
    }

    /// What a legacy session is bound to: the first 16 bytes (a principal's context, with `[auth]` on).
    pub fn binding(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out.copy_from_slice(&self.0[..16]);
        out
    }

    /// A binding from its text form ([`AuthContext::tag`]); `None` for any other text.
    pub fn binding_of_tag(tag: &str) -> Option<[u8; 16]> {
        if tag.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in tag.as_bytes().chunks(2).enumerate() {
            out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
        }
        Some(out)
    }

    /// A short stable text form (hex of the first 16 bytes), for sealed envelopes.
    pub fn tag(&self) -> String {
        self.0[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_credentials_share_a_context_and_others_do_not() {
        let a = AuthContext::from_authorization(Some(b"Bearer one"));
        assert_eq!(a, AuthContext::from_authorization(Some(b"Bearer one")));
        assert_ne!(a, AuthContext::from_authorization(Some(b"Bearer two")));
        assert_ne!(a, AuthContext::ANONYMOUS);
        assert_ne!(
            AuthContext::from_authorization(Some(b"")),
            AuthContext::ANONYMOUS
        );
        assert_eq!(a.tag().len(), 32);
        assert!(!a.tag().contains("one"));
    }
}
