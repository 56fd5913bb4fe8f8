//! Who is asking ([`Principal`], with the bearer token it presented, [`SubjectToken`]) and why a credential
//! was refused ([`Reason`]): what every way of authenticating (`api_key`, `jwt`) answers with.

use std::sync::Arc;

use crate::config::qualified;

/// Who is asking, once authentication has said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Its name (an API key's principal, a token's subject), within its source's namespace.
    pub name: String,
    /// How it was authenticated: an API key named `ops-bot` and a token whose subject is `ops-bot` are two
    /// principals.
    pub source: PrincipalSource,
    /// The groups it belongs to.
    pub groups: Vec<String>,
    /// The scopes its credential grants.
    pub scopes: Vec<String>,
    /// The bearer token it presented (kept for a token exchange towards a backend; never logged).
    pub token: Option<SubjectToken>,
}

/// How a principal was authenticated: each source names its principals in a namespace of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrincipalSource {
    /// An `[[auth.api_key]]`: the name is its `principal`.
    ApiKey,
    /// A JWT: the name is its principal claim, within its issuer (`iss`, when the token has one).
    Jwt {
        /// The token's `iss`.
        issuer: Option<String>,
    },
}

impl PrincipalSource {
    /// The qualifier config names of this source are written with (`api_key`, `jwt`).
    pub fn qualifier(&self) -> &'static str {
        match self {
            PrincipalSource::ApiKey => qualified::API_KEY,
            PrincipalSource::Jwt { .. } => qualified::JWT,
        }
    }
}

impl Principal {
    /// Who it is across sources, what its sessions, sealed states, private cache entries, rate-limit
    /// buckets and shares are bound to: `api_key:NAME`, `jwt:NAME` (a token without `iss`) or
    /// `jwt:ISSUER#NAME` (`#` and `%` in the issuer percent-encoded, so no two differ only in where the
    /// issuer ends).
    pub fn id(&self) -> String {
        match &self.source {
            PrincipalSource::ApiKey => Principal::api_key_id(&self.name),
            PrincipalSource::Jwt { issuer: None } => format!("{}:{}", qualified::JWT, self.name),
            PrincipalSource::Jwt {
                issuer: Some(issuer),
            } => {
                let issuer = issuer.replace('%', "%25").replace('#', "%23");
                format!("{}:{issuer}#{}", qualified::JWT, self.name)
            }
        }
    }

    /// Feeds what [`Principal::id`] names to `h` without building the string: principals with one id hash
    /// alike, and no two ids the same way (the request path keys per-principal tables by this).
    pub fn hash_id<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        match &self.source {
            PrincipalSource::ApiKey => (0u8, &self.name).hash(h),
            PrincipalSource::Jwt { issuer } => (1u8, issuer, &self.name).hash(h),
        }
    }

    /// The [`Principal::id`] of the API key whose principal is `name`.
    pub fn api_key_id(name: &str) -> String {
        format!("{}:{name}", qualified::API_KEY)
    }

    /// Whether a config's principal glob names it (`api_key:GLOB` / `jwt:GLOB`: of that source only;
    /// unqualified: of either).
    pub fn is_named(&self, pattern: &str) -> bool {
        qualified::matches(pattern, self.source.qualifier(), &self.name, true)
    }

    /// Whether it is in a group a config's glob names (qualified as [`Principal::is_named`]).
    pub fn in_group(&self, pattern: &str) -> bool {
        let source = self.source.qualifier();
        self.groups
            .iter()
            .any(|g| qualified::matches(pattern, source, g, true))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(source: PrincipalSource, groups: &[&str]) -> Principal {
        Principal {
            name: "ops-bot".into(),
            source,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            scopes: Vec::new(),
            token: None,
        }
    }

    fn jwt(issuer: Option<&str>) -> PrincipalSource {
        PrincipalSource::Jwt {
            issuer: issuer.map(str::to_owned),
        }
    }

    #[test]
    fn a_principals_id_names_its_source_and_issuer_and_config_names_pick_by_source() {
        let key = principal(PrincipalSource::ApiKey, &["ops"]);
        let token = principal(jwt(Some("https://idp.example/")), &["ops"]);
        assert_eq!(key.id(), "api_key:ops-bot");
        assert_eq!(principal(jwt(None), &[]).id(), "jwt:ops-bot");
        assert_eq!(token.id(), "jwt:https://idp.example/#ops-bot");
        // An issuer holding `#` cannot pose as another issuer's subject.
        let (a, b) = (
            Principal {
                name: "b#c".into(),
                ..principal(jwt(Some("a")), &[])
            },
            Principal {
                name: "c".into(),
                ..principal(jwt(Some("a#b")), &[])
            },
        );
        assert_ne!(a.id(), b.id());
        // (pattern, named by the key, named by the token)
        for (pattern, by_key, by_token) in [
            ("ops-bot", true, true),
            ("ops-*", true, true),
            ("api_key:ops-bot", true, false),
            ("jwt:ops-bot", false, true),
            ("jwt:*", false, true),
            ("api_key:other", false, false),
        ] {
            assert_eq!(key.is_named(pattern), by_key, "{pattern}");
            assert_eq!(token.is_named(pattern), by_token, "{pattern}");
        }
        for (pattern, by_key, by_token) in [
            ("ops", true, true),
            ("api_key:ops", true, false),
            ("jwt:o*", false, true),
            ("dev", false, false),
        ] {
            assert_eq!(key.in_group(pattern), by_key, "{pattern}");
            assert_eq!(token.in_group(pattern), by_token, "{pattern}");
        }
    }
}
