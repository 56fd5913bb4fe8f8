//! `[auth]`: who may ask. API keys (stored as digests only), JWTs verified against a JWK set or an HS256
//! secret, the OAuth 2.1 resource server on top of them (RFC 9728's metadata document, RFC 8707's audience),
//! and the scopes required per method or tool. Off until configured.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::http_url::{is_http_url, plain_beyond_loopback};
use super::{ConfigError, invalid};

/// The algorithms a token may be signed with, as `[auth.jwt] algorithms` names them.
pub const ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "HS256",
];

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The header API keys are sent in: `Authorization` as `Bearer KEY` (default), or another header
    /// (`X-Api-Key`) holding the key alone.
    pub api_key_header: Option<String>,
    /// `[[auth.api_key]]` tables.
    #[serde(rename = "api_key")]
    pub api_keys: Vec<ApiKeyEntry>,
    /// `[auth.jwt]`.
    pub jwt: Option<JwtConfig>,
    /// `[auth.oauth]`: the OAuth 2.1 resource server (needs `[auth.jwt]`).
    pub oauth: Option<OAuthConfig>,
    /// `[[auth.scope]]` tables: scopes a request needs, per method or tool.
    #[serde(rename = "scope")]
    pub scopes: Vec<ScopeRule>,
}

/// One `[[auth.api_key]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyEntry {
    /// Who the key's holder is.
    pub principal: String,
    /// `sha256:HEX` of the key, as `mcpgw auth hash-key` prints it; the key itself is never configured.
    /// Empty in the file when `digest_file` is given: read from it when the config is loaded.
    #[serde(default, serialize_with = "super::redact::hidden")]
    pub digest: String,
    /// A file holding the digest instead (a mounted Kubernetes or compose secret), read when the config is
    /// loaded and on every reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_file: Option<std::path::PathBuf>,
    /// Groups the principal belongs to.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Scopes the key grants (checked against `[[auth.scope]]`).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A string or a list of strings.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany {
    /// `audience = "x"`.
    One(String),
    /// `audience = ["x", "y"]`.
    Many(Vec<String>),
}

impl Default for OneOrMany {
    fn default() -> OneOrMany {
        OneOrMany::Many(Vec::new())
    }
}

impl OneOrMany {
    /// Its strings.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// `[auth.jwt]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// Where the issuer publishes its keys (a JWK set): fetched at start, refreshed in the background.
    #[serde(serialize_with = "super::redact::url")]
    pub jwks_url: Option<String>,
    /// A JWK set in a file instead (re-read on SIGHUP with the rest of the configuration).
    pub jwks_file: Option<PathBuf>,
    /// Extra roots (PEM) for an https `jwks_url`, beside the platform's.
    pub jwks_ca_file: Option<PathBuf>,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` a token must carry (one of them); with `[auth.oauth]` its `resource` is accepted too.
    #[serde(default)]
    pub audience: OneOrMany,
    /// The claim naming the principal (default `sub`).
    #[serde(default = "default_principal_claim")]
    pub principal_claim: String,
    /// The claim listing its groups (default `groups`; a list or a space-separated string).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// The algorithms accepted (default RS256, ES256, EdDSA). Each key is pinned to one of them.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// The HS256 secret's file (HS256 only with a secret; never in the configuration in clear).
    pub hs256_secret_file: Option<PathBuf>,
    /// The environment variable holding the HS256 secret instead.
    pub hs256_secret_env: Option<String>,
    /// Leeway for `exp` and `nbf`, in seconds (default 30).
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// How often the JWK set is fetched again, in seconds (default 300); an unknown `kid` fetches it at
    /// most once every 30 s.
    #[serde(default = "default_refresh")]
    pub refresh_secs: u64,
}

fn default_principal_claim() -> String {
    "sub".to_owned()
}

fn default_groups_claim() -> String {
    "groups".to_owned()
}

fn default_algorithms() -> Vec<String> {
    ["RS256", "ES256", "EdDSA"].map(str::to_owned).to_vec()
}

fn default_leeway() -> u64 {
    30
}

fn default_refresh() -> u64 {
    300
}

/// `[auth.oauth]`: what the RFC 9728 document says and what 401s point to.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The gateway's own resource URI (`https://gw.example.com/mcp`): tokens must name it in `aud`.
    pub resource: String,
    /// The authorization servers that issue tokens for it (issuer URLs).
    pub authorization_servers: Vec<String>,
    /// Scopes listed in the document (default: every scope `[[auth.scope]]` requires).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// A human-readable name for the document.
    pub resource_name: Option<String>,
    /// A page documenting the resource.
    pub resource_documentation: Option<String>,
}

/// One `[[auth.scope]]`: a request that matches needs every scope listed.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScopeRule {
    /// The method (an MCP wire name; default: any).
    pub method: Option<String>,
    /// A glob (`*`, `?`) on the exposed tool name of a `tools/call` (only with `tools/call` or no method).
    pub tool: Option<String>,
    /// The scopes needed.
    pub scopes: Vec<String>,
}

impl AuthConfig {
    /// Whether any authentication is configured.
    pub fn enabled(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some()
    }

    pub(super) fn validate(&self, strict: bool) -> Result<(), ConfigError> {
        if let Some(h) = &self.api_key_header
            && actix_web::http::header::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return Err(invalid("auth.api_key_header", "not a valid header name"));
        }
        let mut digests = std::collections::BTreeMap::new();
        for (i, k) in self.api_keys.iter().enumerate() {
            let field = |f: &str| format!("auth.api_key[{i}].{f}");
            if k.principal.trim().is_empty() {
                return Err(invalid(field("principal"), "must not be empty"));
            }
            if parse_digest(&k.digest).is_none() {
                return Err(invalid(
                    field("digest"),
                    "must be sha256:<64 hex digits>, as `mcpgw auth hash-key` prints it",
                ));
            }
            if let Some(first) = digests.insert(k.digest.to_ascii_lowercase(), i) {
                return Err(invalid(
                    field("digest"),
                    format!("the same key as auth.api_key[{first}]"),
                ));
            }
        }
        if let Some(jwt) = &self.jwt {
            jwt.validate(self.oauth.is_some(), strict)?;
        }
        if let Some(oauth) = &self.oauth {
            if self.jwt.is_none() {
                return Err(invalid(
                    "auth.oauth",
                    "the resource server verifies tokens with [auth.jwt]: configure it too",
                ));
            }
            oauth.validate()?;
        }
        for (i, rule) in self.scopes.iter().enumerate() {
            let field = |f: &str| format!("auth.scope[{i}].{f}");
            if !self.enabled() {
                return Err(invalid(
                    field("scopes"),
                    "scopes need authentication: configure [[auth.api_key]] or [auth.jwt]",
                ));
            }
            if rule.scopes.is_empty() || rule.scopes.iter().any(|s| !valid_scope(s)) {
                return Err(invalid(
                    field("scopes"),
                    "must list scopes (visible ASCII but '\"' and '\\\\', no spaces)",
                ));
            }
            if let Some(m) = &rule.method
                && !protocol::Method::parse(m).is_some_and(protocol::Method::is_client_request)
            {
                return Err(invalid(
                    field("method"),
                    format!("{m:?} is not a method an MCP client sends"),
                ));
            }
            if rule.tool.is_some() && rule.method.as_deref().is_some_and(|m| m != "tools/call") {
                return Err(invalid(field("tool"), "a tool rule applies to tools/call"));
            }
        }
        Ok(())
    }
}

/// The 32 bytes of a configured digest; `None` unless it is `sha256:` and 64 hex digits.
pub fn parse_digest(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:")?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// A block of `trusted_proxies`: `"10.0.0.0/8"`, or one address (`"10.0.0.7"`, a /32 or /128).
pub fn parse_proxy_block(text: &str) -> Option<ipnet::IpNet> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>().ok().or_else(|| {
        text.parse::<std::net::IpAddr>()
            .ok()
            .map(ipnet::IpNet::from)
    })
}

/// A scope token as RFC 6749 §3.3 allows it.
fn valid_scope(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

impl JwtConfig {
    /// The HS256 secret's source, if any.
    pub fn has_secret(&self) -> bool {
        self.hs256_secret_file.is_some() || self.hs256_secret_env.is_some()
    }

    fn validate(&self, oauth: bool, strict: bool) -> Result<(), ConfigError> {
        let field = |f: &str| format!("auth.jwt.{f}");
        if self.jwks_url.is_some() && self.jwks_file.is_some() {
            return Err(invalid(
                field("jwks_url"),
                "give jwks_url or jwks_file, not both",
            ));
        }
        if self.jwks_url.is_none() && self.jwks_file.is_none() && !self.has_secret() {
            return Err(invalid(
                field("jwks_url"),
                "give jwks_url or jwks_file (or an HS256 secret)",
            ));
        }
        if let Some(u) = &self.jwks_url {
            if !is_http_url(u) {
                return Err(invalid(
                    field("jwks_url"),
                    format!("{u:?} is not an http(s) URL"),
                ));
            }
            if strict && plain_beyond_loopback(u) {
                return Err(invalid(
                    field("jwks_url"),
                    "server.strict: keys fetched over plain http beyond loopback could be forged",
                ));
            }
        }
        if self.hs256_secret_file.is_some() && self.hs256_secret_env.is_some() {
            return Err(invalid(
                field("hs256_secret_file"),
                "give hs256_secret_file or hs256_secret_env, not both",
            ));
        }
        if self.issuer.trim().is_empty() {
            return Err(invalid(field("issuer"), "must not be empty"));
        }
        if self.audience.to_vec().is_empty() && !oauth {
            return Err(invalid(
                field("audience"),
                "tokens must be meant for this gateway: give the audience (or [auth.oauth] resource)",
            ));
        }
        if self.principal_claim.is_empty() {
            return Err(invalid(field("principal_claim"), "must not be empty"));
        }
        if self.algorithms.is_empty() {
            return Err(invalid(field("algorithms"), "must list at least one"));
        }
        for a in &self.algorithms {
            if !ALGORITHMS.contains(&a.as_str()) {
                return Err(invalid(
                    field("algorithms"),
                    format!("{a:?} is not one of {}", ALGORITHMS.join(", ")),
                ));
            }
        }
        let hs = self.algorithms.iter().any(|a| a == "HS256");
        if hs != self.has_secret() {
            return Err(invalid(
                field("algorithms"),
                "HS256 is accepted only with a secret (hs256_secret_file or hs256_secret_env), and a secret only with HS256",
            ));
        }
        if self.refresh_secs < 30 {
            return Err(invalid(field("refresh_secs"), "must be at least 30"));
        }
        if self.leeway_secs > 300 {
            return Err(invalid(field("leeway_secs"), "must be at most 300"));
        }
        Ok(())
    }
}

impl OAuthConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !is_http_url(&self.resource) {
            return Err(invalid(
                "auth.oauth.resource",
                "must be the gateway's absolute http(s) URI, without a fragment",
            ));
        }
        if self.authorization_servers.is_empty() {
            return Err(invalid(
                "auth.oauth.authorization_servers",
                "must name at least one issuer URL",
            ));
        }
        for (i, s) in self.authorization_servers.iter().enumerate() {
            if !is_http_url(s) {
                return Err(invalid(
                    format!("auth.oauth.authorization_servers[{i}]"),
                    format!("{s:?} is not an http(s) URL"),
                ));
            }
        }
        Ok(())
    }

    /// The path of the resource URI (`/mcp` for `https://gw.example.com/mcp`), for the path-suffixed
    /// metadata document; empty for a bare host.
    pub fn resource_path(&self) -> &str {
        let rest = self.resource.split_once("://").map_or("", |(_, rest)| rest);
        let path = rest.find('/').map_or("", |i| &rest[i..]);
        let path = path.split('?').next().unwrap_or("");
        path.trim_end_matches('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first problem `[server] strict = true` finds in `rest`, as "field: message".
    fn strict_refusal(rest: &str) -> Option<String> {
        let text = format!("[server]\nstrict = true\n{rest}");
        super::super::Config::from_toml_str(&text, std::path::Path::new("t.toml"))
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn strict_refuses_a_jwks_url_whose_host_the_http_client_sees_beyond_loopback() {
        let jwt = |url: &str| {
            format!("[auth.jwt]\njwks_url = '{url}'\nissuer = 'https://idp'\naudience = 'gw'\n")
        };
        let refused = strict_refusal(&jwt(r"http://evil\@127.0.0.1/jwks")).unwrap_or_default();
        assert!(refused.contains("auth.jwt.jwks_url"), "{refused}");
        assert_eq!(strict_refusal(&jwt("http://127.0.0.1:9/jwks")), None);
    }

    #[test]
    fn strict_refuses_a_token_endpoint_over_plain_http_beyond_loopback() {
        let backend = |url: &str| {
            format!(
                "[[backend]]\nname = 'a'\nurl = 'https://a.example/mcp'\n[backend.auth]\ntoken_url = '{url}'\nclient_id = 'gw'\nclient_secret_env = 'S'\n"
            )
        };
        for url in [
            "http://idp.example/token",
            r"http://evil\@127.0.0.1/token",
            "http://127.0.0.1.evil.com/token",
        ] {
            let refused = strict_refusal(&backend(url)).unwrap_or_default();
            assert!(
                refused.contains("backend[0].auth.token_url"),
                "{url}: {refused}"
            );
        }
        for url in ["https://idp.example/token", "http://127.0.0.1:9/token"] {
            assert_eq!(strict_refusal(&backend(url)), None, "{url}");
        }
    }

    #[test]
    fn the_resource_path_is_what_follows_the_host() {
        let o = |r: &str| OAuthConfig {
            resource: r.to_owned(),
            authorization_servers: vec![],
            scopes_supported: None,
            resource_name: None,
            resource_documentation: None,
        };
        assert_eq!(o("https://gw.example.com/mcp").resource_path(), "/mcp");
        assert_eq!(o("https://gw.example.com/").resource_path(), "");
        assert_eq!(o("https://gw.example.com").resource_path(), "");
        assert_eq!(
            o("http://127.0.0.1:7800/a/mcp?x=1").resource_path(),
            "/a/mcp"
        );
    }

    #[test]
    fn scopes_are_rfc_6749_tokens() {
        for (s, ok) in [
            ("mcp:tools", true),
            ("a b", false),
            ("", false),
            ("x\"y", false),
            ("tools.read", true),
        ] {
            assert_eq!(valid_scope(s), ok, "{s:?}");
        }
    }
}
