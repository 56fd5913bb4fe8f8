//! The OAuth 2.0 Protected Resource Metadata document (RFC 9728) of the gateway as a resource server, served
//! without authentication at `/.well-known/oauth-protected-resource` and at its path-suffixed form (the
//! resource's path after it, `…/oauth-protected-resource/mcp`), which is what 401 challenges point to.

use serde_json::{Value, json};

use crate::config::OAuthConfig;

/// The well-known path's prefix.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document's URL as RFC 9728 §3.1 forms it: the well-known path inserted between the resource's host
/// and its path.
pub fn document_url(oauth: &OAuthConfig) -> String {
    let resource = oauth.resource.split(['?', '#']).next().unwrap_or("");
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let host = rest.split('/').next().unwrap_or("");
    format!("{scheme}://{host}{WELL_KNOWN}{}", oauth.resource_path())
}

/// The document (scopes: `scopes_supported`, else every scope `[[auth.scope]]` requires).
pub fn document(oauth: &OAuthConfig, required_scopes: &[String]) -> Value {
    let mut doc = json!({
        "resource": oauth.resource,
        "authorization_servers": oauth.authorization_servers,
        "bearer_methods_supported": ["header"],
    });
    let scopes = oauth
        .scopes_supported
        .clone()
        .unwrap_or_else(|| required_scopes.to_vec());
    if !scopes.is_empty() {
        doc["scopes_supported"] = json!(scopes);
    }
    if let Some(name) = &oauth.resource_name {
        doc["resource_name"] = json!(name);
    }
    if let Some(page) = &oauth.resource_documentation {
        doc["resource_documentation"] = json!(page);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(resource: &str) -> OAuthConfig {
        OAuthConfig {
            resource: resource.to_owned(),
            authorization_servers: vec!["https://as.example.com".to_owned()],
            scopes_supported: None,
            resource_name: None,
            resource_documentation: None,
        }
    }

    #[test]
    fn the_document_url_puts_the_well_known_path_between_host_and_path() {
        let cases = [
            (
                "https://gw.example.com/mcp",
                "https://gw.example.com/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://gw.example.com",
                "https://gw.example.com/.well-known/oauth-protected-resource",
            ),
            (
                "http://127.0.0.1:7800/a/mcp",
                "http://127.0.0.1:7800/.well-known/oauth-protected-resource/a/mcp",
            ),
        ];
        for (resource, want) in cases {
            assert_eq!(document_url(&oauth(resource)), want, "{resource}");
        }
    }

    #[test]
    fn the_document_holds_what_rfc_9728_asks_and_nothing_empty() {
        let doc = document(&oauth("https://gw.example.com/mcp"), &[]);
        assert_eq!(doc["resource"], "https://gw.example.com/mcp");
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://as.example.com"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert!(
            doc.get("scopes_supported").is_none(),
            "a parameter with no value is omitted (§2)"
        );
        let doc = document(
            &oauth("https://gw.example.com/mcp"),
            &["mcp:tools".to_owned()],
        );
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
    }
}
