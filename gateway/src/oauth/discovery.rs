//! Finding a backend's authorization server: the `WWW-Authenticate` challenge (RFC 6750 §3), the protected
//! resource metadata (RFC 9728: the challenge's `resource_metadata`, else the well-known URL with the
//! resource's path inserted, then at the root), the authorization server's metadata (RFC 8414 with the
//! issuer's path inserted, then OpenID Connect discovery inserted and appended), and the checks the MCP
//! authorization spec asks of a client: the document's `resource` is the backend's, the metadata's
//! `issuer` is the one asked for. A backend of the 2025-03-26 generation with no resource metadata has its
//! authorization server at its own origin, with `/authorize`, `/token` and `/register` when that origin
//! publishes no metadata either.

use std::collections::BTreeMap;

use reqwest::Url;
use serde::Deserialize;

/// A `WWW-Authenticate: Bearer …` challenge's parameters (lower-case names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    params: BTreeMap<String, String>,
}

impl Challenge {
    /// The `Bearer` challenge of a `WWW-Authenticate` value; `None` when it has none.
    pub fn parse(header: &str) -> Option<Challenge> {
        let start = find_scheme(header, "bearer")?;
        let mut rest = header[start + "bearer".len()..].trim_start();
        let mut params = BTreeMap::new();
        while let Some(eq) = rest.find('=') {
            let name = rest[..eq].trim().trim_start_matches(',').trim();
            if name.is_empty() || name.contains(' ') {
                // Another scheme's challenge begins: this one has ended.
                break;
            }
            let after = rest[eq + 1..].trim_start();
            let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, next)) = chars.next() {
                                value.push(next);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end.min(quoted.len())..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            };
            params.insert(name.to_ascii_lowercase(), value);
            rest = tail.trim_start().trim_start_matches(',').trim_start();
        }
        Some(Challenge { params })
    }

    /// A challenge naming only where the resource's metadata is (what a consent link keeps of one).
    pub fn from_metadata_url(url: &str) -> Challenge {
        Challenge {
            params: BTreeMap::from([("resource_metadata".to_owned(), url.to_owned())]),
        }
    }

    /// A parameter's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// `scope`, when the challenge names the scopes it needs.
    pub fn scope(&self) -> Option<&str> {
        self.get("scope").filter(|s| !s.trim().is_empty())
    }

    /// Whether it says the token lacks a scope (a step-up is due).
    pub fn insufficient_scope(&self) -> bool {
        self.get("error") == Some("insufficient_scope")
    }
}

/// Where `scheme` starts as an auth scheme in `header` (case-insensitive, at the start or after a comma).
fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before = lower[..at].trim_end();
        let after = lower[at + scheme.len()..].chars().next();
        if (before.is_empty() || before.ends_with(','))
            && after.is_none_or(|c| c == ' ' || c == ',')
        {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

/// RFC 9728's document (the fields the gateway reads).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Its authorization servers' issuers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414's document (the fields the gateway reads).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ServerMetadata {
    /// The issuer.
    pub issuer: String,
    /// Where the browser goes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// RFC 7591 dynamic registration.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (default `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods; the gateway needs `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents (a URL as `client_id`).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// The well-known URLs of `resource`'s metadata, in the order they are tried: with its path inserted, then
/// at its origin's root.
pub fn resource_metadata_urls(resource: &Url) -> Vec<Url> {
    let path = resource.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut at = |p: &str| {
        let mut u = resource.clone();
        u.set_path(p);
        u.set_query(None);
        u.set_fragment(None);
        if !urls.contains(&u) {
            urls.push(u);
        }
    };
    if !path.is_empty() {
        at(&format!("/.well-known/oauth-protected-resource{path}"));
    }
    at("/.well-known/oauth-protected-resource");
    urls
}

/// The metadata URLs of `issuer`, in the order the MCP spec has clients try them.
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let with_path = |p: String| {
        let mut u = issuer.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        u
    };
    if path.is_empty() {
        vec![
            with_path("/.well-known/oauth-authorization-server".to_owned()),
            with_path("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            with_path(format!("/.well-known/oauth-authorization-server{path}")),
            with_path(format!("/.well-known/openid-configuration{path}")),
            with_path(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Whether the document's `resource` covers `expected` (the backend's URL): the same origin, and a path
/// that is the backend's or one of its parents, segment by segment (a document at the origin's root names
/// the origin). RFC 9728 §3.3: a client must not use a document about another resource.
pub fn same_resource(document: &str, expected: &Url) -> bool {
    let Ok(doc) = Url::parse(document) else {
        return false;
    };
    let parent = doc.path().trim_end_matches('/');
    let path = expected.path().trim_end_matches('/');
    doc.scheme() == expected.scheme()
        && doc.host_str().map(str::to_ascii_lowercase)
            == expected.host_str().map(str::to_ascii_lowercase)
        && doc.port_or_known_default() == expected.port_or_known_default()
        && doc.fragment().is_none()
        && (path == parent || path.starts_with(&format!("{parent}/")))
}

/// Whether the metadata's `issuer` (or an authorization response's `iss`) is the issuer asked for: RFC
/// 8414 §3.3 and RFC 9207 §2.4 compare them as strings, with no normalisation (`https://as/` is not
/// `https://as`).
pub fn same_issuer(document: &str, asked: &str) -> bool {
    document == asked
}

/// The endpoints a 2025-03-26 server without metadata has at its origin.
pub fn fallback_endpoints(origin: &Url) -> ServerMetadata {
    let at = |p: &str| {
        let mut u = origin.clone();
        u.set_path(p);
        u.set_query(None);
        u.set_fragment(None);
        u.to_string()
    };
    let mut issuer = origin.clone();
    issuer.set_path("");
    ServerMetadata {
        issuer: issuer.as_str().trim_end_matches('/').to_owned(),
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        scopes_supported: None,
        token_endpoint_auth_methods_supported: None,
        code_challenge_methods_supported: None,
        client_id_metadata_document_supported: false,
        authorization_response_iss_parameter_supported: false,
    }
}

/// The scopes to ask for: the challenge's, else everything the resource lists, else none (the parameter is
/// left out).
pub fn scopes_to_ask(
    challenge: Option<&Challenge>,
    resource: Option<&ResourceMetadata>,
) -> Option<String> {
    if let Some(scope) = challenge.and_then(Challenge::scope) {
        return Some(scope.to_owned());
    }
    resource
        .and_then(|r| r.scopes_supported.as_ref())
        .filter(|s| !s.is_empty())
        .map(|s| s.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_rfc_6750_writes_them() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            (
                r#"Bearer resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp", scope="a b""#,
                Some(("scope", "a b")),
            ),
            (
                r#"Bearer error="insufficient_scope", scope="notes.read notes.write""#,
                Some(("error", "insufficient_scope")),
            ),
            (r#"bearer realm=x,scope=read"#, Some(("scope", "read"))),
            (
                r#"Basic realm="a", Bearer scope="w\"x""#,
                Some(("scope", "w\"x")),
            ),
            (r#"Basic realm="only""#, None),
            (r#"DPoP algs="ES256""#, None),
        ];
        for (header, want) in cases {
            let got = Challenge::parse(header);
            match want {
                None => assert!(got.is_none(), "{header}"),
                Some((k, v)) => {
                    assert_eq!(got.as_ref().and_then(|c| c.get(k)), Some(*v), "{header}")
                }
            }
        }
        let c = Challenge::parse(r#"Bearer error="insufficient_scope", scope="x""#).unwrap();
        assert!(c.insufficient_scope());
        assert!(!Challenge::parse("Bearer").unwrap().insufficient_scope());
        assert_eq!(
            Challenge::parse(r#"Bearer scope="  ""#).unwrap().scope(),
            None
        );
    }

    #[test]
    fn well_known_urls_insert_the_path_then_fall_back() {
        let r = Url::parse("https://r.example:8443/tenant/mcp?x=1").unwrap();
        let got: Vec<String> = resource_metadata_urls(&r)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "https://r.example:8443/.well-known/oauth-protected-resource/tenant/mcp",
                "https://r.example:8443/.well-known/oauth-protected-resource",
            ]
        );
        let root = Url::parse("https://r.example/").unwrap();
        assert_eq!(resource_metadata_urls(&root).len(), 1);
        let issuer = Url::parse("https://as.example/tenant1").unwrap();
        let got: Vec<String> = server_metadata_urls(&issuer)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let bare = Url::parse("https://as.example").unwrap();
        let got: Vec<String> = server_metadata_urls(&bare)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_document_about_another_resource_or_issuer_is_refused() {
        let ours = Url::parse("https://r.example/mcp").unwrap();
        for (doc, same) in [
            ("https://r.example/mcp", true),
            ("https://R.example:443/mcp/", true),
            ("https://r.example/other", false),
            ("https://r.example", true),
            ("https://r.example/m", false),
            ("https://r.example/mcp/deeper", false),
            ("https://evil.example/mcp", false),
            ("http://r.example/mcp", false),
            ("not a url", false),
        ] {
            assert_eq!(same_resource(doc, &ours), same, "{doc}");
        }
        assert!(same_issuer("https://as.example", "https://as.example"));
        assert!(
            !same_issuer("https://as.example/", "https://as.example"),
            "no normalisation"
        );
        assert!(!same_issuer("https://as.example/x", "https://as.example"));
    }

    #[test]
    fn scopes_come_from_the_challenge_then_the_resource() {
        let doc = ResourceMetadata {
            resource: "r".into(),
            authorization_servers: vec![],
            scopes_supported: Some(vec!["a".into(), "b".into()]),
        };
        let c = Challenge::parse(r#"Bearer scope="c""#).unwrap();
        assert_eq!(scopes_to_ask(Some(&c), Some(&doc)).as_deref(), Some("c"));
        assert_eq!(scopes_to_ask(None, Some(&doc)).as_deref(), Some("a b"));
        assert_eq!(scopes_to_ask(None, None), None);
        let empty = ResourceMetadata {
            scopes_supported: Some(vec![]),
            ..doc
        };
        assert_eq!(scopes_to_ask(None, Some(&empty)), None);
    }
}
