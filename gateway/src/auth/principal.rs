//! Who is asking ([`Principal`], with the bearer token it presented, [`SubjectToken`]) and why a credential
//! was refused ([`Reason`]): what every way of authenticating (`api_key`, `jwt`) answers with.

use std::sync::Arc;

/// Who is asking, once authentication has said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Its name (an API key's principal, a token's subject).
    pub name: String,
    /// The groups it belongs to.
    pub groups: Vec<String>,
    /// The scopes its credential grants.
    pub scopes: Vec<String>,
    /// The bearer token it presented (kept for a token exchange towards a backend; never logged).
    pub token: Option<SubjectToken>,
}

/// A client's bearer token, as presented: redacted in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(pub Arc<str>);

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(<redacted>)")
    }
}

/// Why a credential was refused (said in `error_description`, and logged at debug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No credential at all.
    Missing,
    /// Not a token that parses (or `alg: none`).
    Malformed,
    /// An algorithm not accepted, or not the one its key is pinned to.
    Algorithm,
    /// A `kid` no key has.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `exp` passed.
    Expired,
    /// `nbf` not reached.
    NotYetValid,
    /// Not meant for this resource.
    Audience,
    /// Not from the configured issuer.
    Issuer,
    /// A required claim is missing.
    MissingClaim,
    /// No principal claim.
    NoPrincipal,
    /// An API key that is not configured.
    UnknownApiKey,
}

impl Reason {
    /// The `error_description` said to the client.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Missing => "authentication required",
            Reason::Malformed => "the token is malformed",
            Reason::Algorithm => "the token's algorithm is not accepted",
            Reason::UnknownKey => "the token's signing key is unknown",
            Reason::Signature => "the token's signature is invalid",
            Reason::Expired => "the token has expired",
            Reason::NotYetValid => "the token is not valid yet",
            Reason::Audience => "the token is not meant for this resource",
            Reason::Issuer => "the token's issuer is not trusted",
            Reason::MissingClaim => "the token lacks a required claim",
            Reason::NoPrincipal => "the token names no principal",
            Reason::UnknownApiKey => "the API key is not valid",
        }
    }
}
