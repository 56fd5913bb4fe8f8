//! `[backend.auth]`: the gateway's own credential towards an HTTP backend — a header whose value comes
//! from an environment variable or a file (never from the config in clear), or an OAuth 2.0 client-
//! credentials token the gateway fetches and refreshes. The client's credentials never reach a backend.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[backend.auth]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackendAuth {
    /// The header it is sent in (default `Authorization`).
    pub header: Option<String>,
    /// A fixed value: the environment variable holding it.
    pub value_env: Option<String>,
    /// A fixed value: the file holding it (its first line).
    pub value_file: Option<PathBuf>,
    /// Put before the value with a space (`"Bearer"`); default: `Bearer` in `Authorization`, nothing in
    /// another header.
    pub scheme: Option<String>,
    /// OAuth: the token endpoint (client credentials, or token exchange with `grant`).
    #[serde(serialize_with = "super::redact::url")]
    pub token_url: Option<String>,
    /// `"client_credentials"` (default: one token for the gateway), `"token_exchange"` (RFC 8693: each
    /// client's token exchanged for one meant for this backend; needs `[auth]`) or `"authorization_code"`
    /// (each principal's own consent at the backend's authorization server; needs `[auth]` and
    /// `[authorization]`).
    #[serde(default)]
    pub grant: Grant,
    /// The client's id.
    pub client_id: Option<String>,
    /// The environment variable holding the client's secret.
    pub client_secret_env: Option<String>,
    /// The file holding the client's secret.
    pub client_secret_file: Option<PathBuf>,
    /// Scopes asked for (space-separated).
    pub scope: Option<String>,
    /// `audience` asked for (some authorization servers want it).
    pub audience: Option<String>,
    /// `resource` asked for (RFC 8707): the backend's URI.
    pub resource: Option<String>,
}

/// How a backend token is had.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// One token for the gateway (RFC 6749 §4.4).
    #[default]
    ClientCredentials,
    /// The client's token exchanged per principal (RFC 8693).
    TokenExchange,
    /// Each principal's own authorization at the backend's authorization server: the gateway asks the user
    /// to open a consent link and runs the authorization code flow with PKCE for them (`oauth`).
    AuthorizationCode,
}

impl BackendAuth {
    /// The header's name.
    pub fn header_name(&self) -> &str {
        self.header.as_deref().unwrap_or("Authorization")
    }

    /// What goes before the value.
    pub fn scheme(&self) -> Option<&str> {
        match &self.scheme {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s),
            None if self.header_name().eq_ignore_ascii_case("authorization") => Some("Bearer"),
            None => None,
        }
    }

    /// Whether it fetches one OAuth token for the gateway.
    pub fn is_client_credentials(&self) -> bool {
        self.token_url.is_some() && self.grant == Grant::ClientCredentials
    }

    /// Whether each principal authorizes the gateway at the backend's own authorization server.
    pub fn is_authorization_code(&self) -> bool {
        self.grant == Grant::AuthorizationCode
    }

    /// Whether it exchanges each client's token.
    pub fn is_token_exchange(&self) -> bool {
        self.token_url.is_some() && self.grant == Grant::TokenExchange
    }

    pub(super) fn validate(
        &self,
        field: &dyn Fn(&str) -> String,
        http: bool,
        strict: bool,
    ) -> Result<(), ConfigError> {
        if !http {
            return Err(invalid(
                field("auth"),
                "credentials go to HTTP backends; a stdio backend takes its secrets from env",
            ));
        }
        if reqwest_header_name(self.header_name()).is_none() {
            return Err(invalid(field("auth.header"), "not a valid header name"));
        }
        let fixed = self.value_env.is_some() || self.value_file.is_some();
        if self.grant == Grant::AuthorizationCode {
            return self.validate_authorization_code(field, fixed);
        }
        match (fixed, &self.token_url) {
            (true, Some(_)) => Err(invalid(
                field("auth.token_url"),
                "give a fixed value (value_env or value_file) or client credentials (token_url), not both",
            )),
            (false, None) => Err(invalid(
                field("auth"),
                "give value_env or value_file (a fixed header), or token_url with client_id (client credentials)",
            )),
            (true, None) if self.grant == Grant::TokenExchange => Err(invalid(
                field("auth.grant"),
                "token_exchange needs token_url",
            )),
            (true, None) => {
                if self.value_env.is_some() && self.value_file.is_some() {
                    return Err(invalid(
                        field("auth.value_env"),
                        "give value_env or value_file, not both",
                    ));
                }
                Ok(())
            }
            (false, Some(url)) => {
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(invalid(field("auth.token_url"), "must be an http(s) URL"));
                }
                if strict && super::http_url::plain_beyond_loopback(url) {
                    return Err(invalid(
                        field("auth.token_url"),
                        "server.strict: the client secret would cross plain http beyond loopback",
                    ));
                }
                if self.client_id.as_deref().is_none_or(str::is_empty) {
                    return Err(invalid(
                        field("auth.client_id"),
                        "client credentials need client_id",
                    ));
                }
                if self.client_secret_env.is_some() == self.client_secret_file.is_some() {
                    return Err(invalid(
                        field("auth.client_secret_env"),
                        "give client_secret_env or client_secret_file (one of them)",
                    ));
                }
                Ok(())
            }
        }
    }
}

impl BackendAuth {
    /// `grant = "authorization_code"`: endpoints come from the backend's metadata; a pre-registered client
    /// is `client_id` (with a secret for a confidential one).
    fn validate_authorization_code(
        &self,
        field: &dyn Fn(&str) -> String,
        fixed: bool,
    ) -> Result<(), ConfigError> {
        if fixed || self.token_url.is_some() || self.audience.is_some() {
            return Err(invalid(
                field("auth.grant"),
                "authorization_code finds the backend's authorization server itself (RFC 9728, RFC 8414): \
                 give no value_env, value_file, token_url or audience",
            ));
        }
        if self.client_secret_env.is_some() && self.client_secret_file.is_some() {
            return Err(invalid(
                field("auth.client_secret_env"),
                "give client_secret_env or client_secret_file, not both",
            ));
        }
        let secret = self.client_secret_env.is_some() || self.client_secret_file.is_some();
        if secret && self.client_id.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(
                field("auth.client_id"),
                "a client secret belongs to a pre-registered client: give its client_id",
            ));
        }
        if !self.header_name().eq_ignore_ascii_case("authorization")
            || self.scheme() != Some("Bearer")
        {
            return Err(invalid(
                field("auth.header"),
                "authorization_code sends OAuth bearer tokens: Authorization: Bearer",
            ));
        }
        if let Some(resource) = &self.resource
            && !(resource.starts_with("https://") || resource.starts_with("http://"))
        {
            return Err(invalid(field("auth.resource"), "must be an http(s) URL"));
        }
        Ok(())
    }
}

fn reqwest_header_name(name: &str) -> Option<()> {
    actix_web::http::header::HeaderName::from_bytes(name.as_bytes())
        .ok()
        .map(drop)
}
