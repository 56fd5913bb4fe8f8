//! `[authorization]`: how the gateway asks each user for their own authorization to backends whose
//! `[backend.auth] grant = "authorization_code"` — where its consent links and callbacks live, how a link
//! proves who opens it, and the token store's bounds.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[authorization]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AuthorizationConfig {
    /// The gateway's public base URL (`https://gw.example.com`): consent links, the OAuth callback and the
    /// client metadata document are made from it, never from a request's `Host`.
    pub public_url: Option<String>,
    /// The gateway's `client_id` at authorization servers that take Client ID Metadata Documents (default:
    /// `{public_url}/oauth/client`, which the gateway serves; another URL must serve the same document).
    pub client_metadata_url: Option<String>,
    /// How a consent link proves who opens it.
    #[serde(default)]
    pub link_proof: Option<LinkProof>,
    /// Sign-in at the gateway's own authorization server (`[auth.oauth]`): the client id registered there
    /// for the consent pages (`link_proof = "sign_in"`).
    pub sign_in_client_id: Option<String>,
    /// Its secret's environment variable, for a confidential client (none: a public client with PKCE).
    pub sign_in_client_secret_env: Option<String>,
    /// How long a consent link may be opened after it is made, in seconds.
    #[serde(default = "default_link_ttl")]
    pub link_ttl_secs: u64,
    /// Tokens kept at most in memory (without `[cluster] redis`); the least recently stored are dropped
    /// past it (their users consent again).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// How long a stored token is kept without being refreshed or used again, in days (Redis's expiry).
    #[serde(default = "default_token_days")]
    pub token_days: u64,
}

impl Default for AuthorizationConfig {
    fn default() -> AuthorizationConfig {
        AuthorizationConfig {
            public_url: None,
            client_metadata_url: None,
            link_proof: None,
            sign_in_client_id: None,
            sign_in_client_secret_env: None,
            link_ttl_secs: default_link_ttl(),
            max_tokens: default_max_tokens(),
            token_days: default_token_days(),
        }
    }
}

/// How a consent link proves who opens it.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LinkProof {
    /// The browser signs in at the gateway's own authorization server, and the principal it signs in as
    /// must be the one the link was made for (needs `[auth.oauth]` and `sign_in_client_id`).
    SignIn,
    /// The link itself: single-use, short-lived, bound to one principal and one backend, but whoever holds
    /// it first consents for that principal. The operator's explicit choice (API keys have no sign-in).
    Link,
}

fn default_link_ttl() -> u64 {
    600
}

fn default_max_tokens() -> usize {
    10_000
}

fn default_token_days() -> u64 {
    30
}

impl AuthorizationConfig {
    /// The link proof in effect: the configured one, else sign-in where it can be had.
    pub fn proof(&self, gateway_oauth: bool) -> Option<LinkProof> {
        self.link_proof.or_else(|| {
            (gateway_oauth && self.sign_in_client_id.is_some()).then_some(LinkProof::SignIn)
        })
    }

    /// The public base URL without a final `/`.
    pub fn base(&self) -> Option<&str> {
        self.public_url.as_deref().map(|u| u.trim_end_matches('/'))
    }

    /// Checked when a backend uses `grant = "authorization_code"` (`used`), given whether `[auth]` is on
    /// and has `[auth.oauth]`.
    pub(super) fn validate(
        &self,
        used: Option<&str>,
        auth_enabled: bool,
        gateway_oauth: bool,
        strict: bool,
    ) -> Result<(), ConfigError> {
        if let Some(url) = &self.public_url {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| invalid("authorization.public_url", format!("not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https")
                || parsed.query().is_some()
                || parsed.fragment().is_some()
            {
                return Err(invalid(
                    "authorization.public_url",
                    "must be an http(s) URL without a query or fragment",
                ));
            }
            if strict && super::http_url::plain_beyond_loopback(url) {
                return Err(invalid(
                    "authorization.public_url",
                    "server.strict: consent links and the OAuth callback would cross plain http beyond loopback",
                ));
            }
        }
        if self.link_ttl_secs == 0 || self.link_ttl_secs > 3600 {
            return Err(invalid(
                "authorization.link_ttl_secs",
                "must be 1 to 3600 (a consent link is short-lived)",
            ));
        }
        if self.max_tokens == 0 || self.token_days == 0 {
            return Err(invalid(
                "authorization.max_tokens",
                "max_tokens and token_days must be above 0",
            ));
        }
        if self.link_proof == Some(LinkProof::SignIn)
            && (!gateway_oauth || self.sign_in_client_id.is_none())
        {
            return Err(invalid(
                "authorization.link_proof",
                "sign_in needs [auth.oauth] (the gateway's authorization server) and sign_in_client_id",
            ));
        }
        let Some(backend) = used else {
            return Ok(());
        };
        let field = format!("backend {backend} auth.grant");
        if !auth_enabled {
            return Err(invalid(
                field,
                "authorization_code keeps each principal's own token: configure [auth] so that clients are told apart",
            ));
        }
        if self.public_url.is_none() {
            return Err(invalid(
                "authorization.public_url",
                format!(
                    "backend {backend} asks users to authorize it: give the gateway's public base URL \
                     (consent links and the OAuth callback are made from it)"
                ),
            ));
        }
        if self.proof(gateway_oauth).is_none() {
            return Err(invalid(
                "authorization.link_proof",
                "say how a consent link proves who opens it: \"sign_in\" (with [auth.oauth] and \
                 sign_in_client_id) or \"link\" (whoever holds the single-use link consents for its principal)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::config::Config;

    const KEY: &str = "[[auth.api_key]]\nprincipal = \"a\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n\n";
    const BACKEND: &str = "[[backend]]\nname = \"n\"\nurl = \"https://n.example/mcp\"\n[backend.auth]\ngrant = \"authorization_code\"\n";
    const LINK: &str =
        "[authorization]\npublic_url = \"https://gw.example\"\nlink_proof = \"link\"\n\n";

    fn check(text: &str) -> Result<(), String> {
        Config::from_toml_str(text, std::path::Path::new("t.toml"))
            .map(drop)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_per_user_backend_needs_principals_a_public_url_and_a_link_proof() {
        let oauth = "[auth.jwt]\nissuer = \"https://idp.example\"\naudience = \"https://gw.example/mcp\"\nalgorithms = [\"HS256\"]\nhs256_secret_file = \"/dev/null\"\n\n[auth.oauth]\nresource = \"https://gw.example/mcp\"\nauthorization_servers = [\"https://idp.example\"]\n\n";
        let cases: &[(String, Option<&str>)] = &[
            (format!("{KEY}{LINK}{BACKEND}"), None),
            (format!("{LINK}{BACKEND}"), Some("configure [auth]")),
            (format!("{KEY}{BACKEND}"), Some("authorization.public_url")),
            (
                format!("{KEY}[authorization]\npublic_url = \"https://gw.example\"\n\n{BACKEND}"),
                Some("authorization.link_proof"),
            ),
            (
                format!(
                    "{KEY}[authorization]\npublic_url = \"https://gw.example\"\nlink_proof = \"sign_in\"\n\n{BACKEND}"
                ),
                Some("sign_in needs [auth.oauth]"),
            ),
            (
                format!(
                    "{KEY}[authorization]\npublic_url = \"https://gw.example?x=1\"\nlink_proof = \"link\"\n\n{BACKEND}"
                ),
                Some("without a query"),
            ),
            (
                format!("{KEY}{LINK}{BACKEND}client_secret_env = \"S\"\n"),
                Some("pre-registered client"),
            ),
            (
                format!("{KEY}{LINK}{BACKEND}value_env = \"S\"\n"),
                Some("finds the backend's authorization server itself"),
            ),
            (
                format!("{KEY}{LINK}{BACKEND}header = \"X-Token\"\n"),
                Some("Authorization: Bearer"),
            ),
            (
                format!(
                    "{KEY}[authorization]\npublic_url = \"https://gw.example\"\nlink_proof = \"link\"\nlink_ttl_secs = 7200\n\n{BACKEND}"
                ),
                Some("link_ttl_secs"),
            ),
            (
                format!(
                    "{oauth}[authorization]\npublic_url = \"https://gw.example\"\nsign_in_client_id = \"c\"\n\n{BACKEND}"
                ),
                None,
            ),
        ];
        for (text, want) in cases {
            match (check(text), want) {
                (Ok(()), None) => {}
                (Err(e), Some(w)) => assert!(e.contains(w), "{e}\n--- for ---\n{text}"),
                (got, want) => panic!("{got:?}, wanted {want:?}\n--- for ---\n{text}"),
            }
        }
    }
}
