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

    /// The context of an HTTP request.
    pub fn of_headers(headers: &actix_web::http::header::HeaderMap) -> AuthContext {
        let value = headers
            .get(actix_web::http::header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        AuthContext::from_authorization(value)
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
