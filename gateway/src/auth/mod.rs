//! Identity: who is asking (`[auth]`), established once per HTTP request before its body is read — before
//! validation, routing or any look at the catalog — and then carried by the request's `MwContext` as its
//! principal (the chain's first middleware checks its scopes: [`scopes`]). API keys, JWTs, and the OAuth
//! 2.1 resource server's answers (RFC 6750 challenges, RFC 9728 metadata). Off until configured; stdio is
//! trusted (local).
//!
//! It must not log a credential, and must not fetch anything on a request's path but for a token naming a
//! key it does not hold (bounded, at most once every 30 s).

pub mod api_key;
pub mod backend;
pub mod exchange;
pub mod jwks;
pub mod jwt;
pub mod metadata;
mod principal;
pub mod proxies;
pub mod scopes;

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::HeaderMap;

use self::api_key::ApiKeys;
use self::jwks::{KeySet, Source};
use self::jwt::{PinnedKey, Rules};
pub use self::principal::{Principal, Reason, SubjectToken};
#[cfg(any(test, feature = "internals"))]
pub use self::principal::PrincipalSource;
use crate::config::{AuthConfig, OAuthConfig};

/// How the gateway authenticates requests (built once from `[auth]`).
#[derive(Debug)]
pub struct Authenticator {
    api_keys: ApiKeys,
    api_key_header: Option<actix_web::http::header::HeaderName>,
    jwt: Option<Jwt>,
    oauth: Option<OAuthConfig>,
    /// `[[auth.scope]]`.
    pub scopes: scopes::ScopeRules,
}

#[derive(Debug)]
struct Jwt {
    rules: Rules,
    keys: Arc<KeySet>,
    secret: Option<PinnedKey>,
    refresh: Duration,
}

impl Authenticator {
    /// From `[auth]` (validated); `None` when authentication is off. Reads the HS256 secret and a JWK
    /// file now; a JWK URL is fetched once [`Authenticator::start`] runs.
    pub fn from_config(
        config: &AuthConfig,
        egress: &Arc<crate::egress::Egress>,
    ) -> Result<Option<Authenticator>, String> {
        if !config.enabled() {
            return Ok(None);
        }
        let oauth = config.oauth.clone();
        let jwt = match &config.jwt {
            None => None,
            Some(j) => {
                let rules = Rules::new(j, oauth.as_ref().map(|o| o.resource.as_str()));
                let source = match (&j.jwks_url, &j.jwks_file) {
                    (Some(url), _) => {
                        let tls = handlers::TlsClient {
                            ca_file: j.jwks_ca_file.clone(),
                            ..handlers::TlsClient::default()
                        };
                        let client = crate::egress::Client::new(
                            egress,
                            crate::egress::Origin::Configured,
                            &tls,
                            url,
                            jwks::FETCH_TIMEOUT,
                        )
                        .map_err(|e| format!("auth.jwt.jwks_url: {e}"))?;
                        Source::Url(url.clone(), client)
                    }
                    (None, Some(path)) => Source::File(path.clone()),
                    (None, None) => Source::None,
                };
                let secret = read_secret(j)?.map(|s| PinnedKey::secret(&s));
                Some(Jwt {
                    keys: Arc::new(KeySet::new(source, rules.allowed.clone())?),
                    rules,
                    secret,
                    refresh: Duration::from_secs(j.refresh_secs),
                })
            }
        };
        let api_key_header = match &config.api_key_header {
            Some(h) if !h.eq_ignore_ascii_case("authorization") => Some(
                actix_web::http::header::HeaderName::from_bytes(h.as_bytes())
                    .map_err(|e| format!("auth.api_key_header: {e}"))?,
            ),
            _ => None,
        };
        Ok(Some(Authenticator {
            api_keys: ApiKeys::new(&config.api_keys),
            api_key_header,
            jwt,
            oauth,
            scopes: scopes::ScopeRules::new(&config.scopes),
        }))
    }

    /// Starts fetching a JWK URL in the background (on the current runtime).
    pub fn start(&self) {
        if let Some(jwt) = &self.jwt {
            let keys = Arc::clone(&jwt.keys);
            actix_rt::spawn(keys.refresh_forever(jwt.refresh));
        }
    }

    /// The JWK set, when tokens are verified with one (for `/readyz` and SIGHUP).
    pub fn key_set(&self) -> Option<&Arc<KeySet>> {
        self.jwt.as_ref().map(|j| &j.keys)
    }

    /// The OAuth resource server's settings, when on.
    pub fn oauth(&self) -> Option<&OAuthConfig> {
        self.oauth.as_ref()
    }

    /// Who sent these headers; `Err` (with whether a credential was sent at all) when nobody acceptable.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Reason> {
        let bearer = headers
            .get(actix_web::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        if let Some(name) = &self.api_key_header
            && let Some(key) = headers.get(name).and_then(|v| v.to_str().ok())
        {
            return self
                .api_keys
                .find(key.trim())
                .cloned()
                .ok_or(Reason::UnknownApiKey);
        }
        let Some(token) = bearer else {
            return Err(Reason::Missing);
        };
        // API keys in `Authorization` unless they have their own header; a JWT-shaped token is a JWT.
        let keys_here = self.api_key_header.is_none() && !self.api_keys.is_empty();
        match &self.jwt {
            Some(jwt) if looks_like_jwt(token) || !keys_here => {
                jwt.verify(token).await.map(|mut p| {
                    p.token = Some(SubjectToken(Arc::from(token)));
                    p
                })
            }
            _ if keys_here => self
                .api_keys
                .find(token)
                .cloned()
                .ok_or(Reason::UnknownApiKey),
            _ => Err(Reason::Missing),
        }
    }

    /// The `WWW-Authenticate` value of a 401 (`reason`: why; a credential was sent unless `Missing`).
    pub fn challenge(&self, reason: Reason) -> String {
        let mut params = vec![("realm", "mcpgw".to_owned())];
        if let Some(url) = self.metadata_url() {
            params.push(("resource_metadata", url));
        }
        let scopes = self.scopes.all();
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        if reason != Reason::Missing {
            params.push(("error", "invalid_token".to_owned()));
            params.push(("error_description", reason.describe().to_owned()));
        }
        bearer_challenge(&params)
    }

    /// The `WWW-Authenticate` value of a 403 for a principal lacking `needed`.
    pub fn insufficient_scope(&self, needed: &[String]) -> String {
        let mut params = vec![("realm", "mcpgw".to_owned())];
        if let Some(url) = self.metadata_url() {
            params.push(("resource_metadata", url));
        }
        params.push(("error", "insufficient_scope".to_owned()));
        params.push(("scope", needed.join(" ")));
        params.push((
            "error_description",
            "the token lacks a scope this request needs".to_owned(),
        ));
        bearer_challenge(&params)
    }

    /// The RFC 9728 document's URL (path-suffixed form), when OAuth is on.
    pub fn metadata_url(&self) -> Option<String> {
        self.oauth.as_ref().map(metadata::document_url)
    }
}

impl Jwt {
    async fn verify(&self, token: &str) -> Result<Principal, Reason> {
        let keys = self.keys.current();
        match self.rules.verify(token, &keys, self.secret.as_ref()) {
            Err(Reason::UnknownKey) => {
                self.keys.refresh_for_unknown_kid().await;
                let keys = self.keys.current();
                self.rules.verify(token, &keys, self.secret.as_ref())
            }
            other => other,
        }
    }
}

/// The HS256 secret from its file or environment variable, if configured.
fn read_secret(j: &crate::config::JwtConfig) -> Result<Option<Vec<u8>>, String> {
    let secret = match (&j.hs256_secret_file, &j.hs256_secret_env) {
        (Some(path), _) => std::fs::read(path)
            .map_err(|e| format!("auth.jwt.hs256_secret_file {}: {e}", path.display()))?
            .trim_ascii()
            .to_vec(),
        (None, Some(var)) => std::env::var(var)
            .map_err(|_| format!("auth.jwt.hs256_secret_env: {var} is not set"))?
            .into_bytes(),
        (None, None) => return Ok(None),
    };
    if secret.len() < 32 {
        return Err("auth.jwt: the HS256 secret must be at least 32 bytes".to_owned());
    }
    Ok(Some(secret))
}

/// The token of `Authorization: Bearer TOKEN` (the scheme in any case, RFC 6750 §2.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Three base64url parts: a JWS in compact form (API keys never have two dots).
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// `Bearer k="v", …` with the values quoted (RFC 6750 §3; quotes and backslashes escaped).
fn bearer_challenge(params: &[(&str, String)]) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|(k, v)| {
            let v = v.replace('\\', "\\\\").replace('"', "\\\"");
            format!("{k}=\"{v}\"")
        })
        .collect();
    format!("Bearer {}", parts.join(", "))
}

#[cfg(test)]
mod tests;
