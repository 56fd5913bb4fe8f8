//! The OAuth 2.0 Protected Resource Metadata document (RFC 9728) at both of its places, and the probes,
//! answered without any token while `/mcp` asks for one.

use std::time::Duration;

use serde_json::json;

use super::issuer::{Availability, Jwks, SigningKey};
use super::{Gw, ISSUER, assert_401, initialize, jwt_config};
use crate::support::{Reply, client, into_reply};

fn get(url: &str) -> Reply {
    into_reply(client().get(url).send().unwrap())
}

#[test]
fn the_protected_resource_document_is_served_without_a_token_at_both_well_known_paths() {
    let key = SigningKey::es256("k1");
    let jwks = Jwks::start(&[&key], Availability::Up);
    let gw = Gw::start("metadata", |port| jwt_config(&jwks.url(), port, 300, ""));
    assert!(jwks.wait_until(Jwks::served, 1, Duration::from_secs(15)));
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = get(&format!("{}{path}", gw.base()));
        assert_eq!(r.status, 200, "{path}: {r:?}");
        let content_type = r.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("application/json"),
            "{path}: {content_type}"
        );
        let doc = r.json();
        assert_eq!(doc["resource"], json!(gw.resource()), "{path}: {doc}");
        assert_eq!(
            doc["authorization_servers"],
            json!([ISSUER]),
            "{path}: {doc}"
        );
        assert_eq!(
            doc["bearer_methods_supported"],
            json!(["header"]),
            "{path}: {doc}"
        );
        let scopes = doc["scopes_supported"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(scopes.contains(&json!("mcp:tools")), "{path}: {doc}");
    }
    // The 401s point to the path-suffixed one, which is the URL fetched above.
    assert_401(&initialize(&gw.url(), &[]), &gw.metadata_url(), None);
    for probe in ["/healthz", "/readyz"] {
        let r = get(&format!("{}{probe}", gw.base()));
        assert_eq!(r.status, 200, "{probe} without a token: {r:?}");
    }
}
