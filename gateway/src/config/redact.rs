//! How the config in effect is shown (`GET /admin/config`): every config struct is `Serialize`, and each
//! field that may hold a secret is written through one of these functions (`#[serde(serialize_with)]` on the
//! field itself, so the rule sits beside the field). What they hide: API-key digests, the values of a stdio
//! backend's environment (their names stay), a stdio backend's arguments (connection strings with passwords
//! are commonly passed there), and the password and query of a URL (Redis, backends, the JWK set). Names of
//! environment variables and file paths are not secrets and are shown.
//!
//! It must not be used to read a config back: the redacted text does not load.

use std::collections::BTreeMap;

use serde::Serializer;

/// What stands in for a hidden value.
pub const REDACTED: &str = "<redacted>";

/// A value hidden whole.
pub fn hidden<T, S: Serializer>(_: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(REDACTED)
}

/// An environment's names, each with its value hidden.
pub fn env_values<S: Serializer>(env: &BTreeMap<String, String>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(env.keys().map(|k| (k, REDACTED)))
}

/// A command: the program shown, each argument hidden.
pub fn command<S: Serializer>(command: &Option<Vec<String>>, s: S) -> Result<S::Ok, S::Error> {
    match command {
        None => s.serialize_none(),
        Some(words) => s.collect_seq(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| if i == 0 { w.as_str() } else { REDACTED }),
        ),
    }
}

/// A URL with its password (`user:password@`) and query hidden.
pub fn url<S: Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match url {
        None => s.serialize_none(),
        Some(u) => s.serialize_str(&redact_url(u)),
    }
}

/// A URL that is always there, its password and query hidden.
pub fn required_url<S: Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

/// `scheme://user:password@host/path?query#fragment` → `scheme://user:<redacted>@host/path?<redacted>`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (rest, query) = match rest.split_once('?') {
        Some((r, _)) => (r, true),
        None => (rest, false),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:{REDACTED}@{host}"),
            // A user alone may be a token (`https://TOKEN@host`): hidden too.
            None => format!("{REDACTED}@{host}"),
        },
        None => authority.to_owned(),
    };
    let mut out = match scheme {
        Some(scheme) => format!("{scheme}://{authority}{path}"),
        None => format!("{authority}{path}"),
    };
    if query {
        out.push('?');
        out.push_str(REDACTED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_urls_password_user_token_and_query_are_hidden() {
        let table = [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            (
                "rediss://default:s3cret@redis.example:6380",
                "rediss://default:<redacted>@redis.example:6380",
            ),
            (
                "https://tok3n@h.example/mcp",
                "https://<redacted>@h.example/mcp",
            ),
            (
                "https://h.example/mcp?key=s3cret#x",
                "https://h.example/mcp?<redacted>",
            ),
            (
                "http://u:p@x@h.example:1/a/b?q",
                "http://u:<redacted>@h.example:1/a/b?<redacted>",
            ),
        ];
        for (url, shown) in table {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    /// Every field that may hold a secret set to a value that must never be shown: none of them is in the
    /// config's JSON, while the names and paths that are not secrets are.
    #[test]
    fn the_shown_config_holds_no_secret() {
        let text = r#"
            [cluster]
            keys_file = "/etc/mcpgw/keys"
            redis = "redis://user:SECRET-REDIS@127.0.0.1:6379/0"

            [auth]
            [[auth.api_key]]
            principal = "alice"
            digest = "sha256:5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7"
            groups = ["ops"]

            [auth.jwt]
            jwks_url = "https://idp.example/jwks?token=SECRET-JWKS"
            issuer = "https://idp.example"
            audience = "mcpgw"
            algorithms = ["RS256", "HS256"]
            hs256_secret_env = "JWT_KEY_VAR"

            [admin]
            listen = "127.0.0.1:7801"
            groups = ["ops"]

            [traces]
            endpoint = "https://otel:SECRET-OTEL@collector.example:4318"
            headers = { authorization = "Bearer SECRET-COLLECTOR" }

            [[backend]]
            name = "db"
            command = ["mcp-server-postgres", "postgresql://u:SECRET-ARG@db/x"]
            env = { PGPASSWORD = "SECRET-ENV" }

            [[backend]]
            name = "remote"
            url = "https://SECRET-USER@backend.example/mcp?k=SECRET-QUERY"
            [backend.auth]
            header = "X-Api-Key"
            value_env = "REMOTE_KEY_VAR"
        "#;
        let config = super::super::Config::from_toml_str(text, Path::new("t.toml")).unwrap();
        let shown = serde_json::to_string(&config).unwrap();
        for secret in ["SECRET", "5ec7e75e"] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        for name in [
            "PGPASSWORD",
            "REMOTE_KEY_VAR",
            "JWT_KEY_VAR",
            "/etc/mcpgw/keys",
            "mcp-server-postgres",
            "alice",
        ] {
            assert!(shown.contains(name), "{name} not shown in {shown}");
        }
    }
}
