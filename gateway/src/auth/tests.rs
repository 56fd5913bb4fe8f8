//! Credentials as they arrive in headers: which scheme is tried, and the challenges said back.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

use super::api_key::digest_text;
use super::*;
use crate::config::{ApiKeyEntry, AuthConfig, ScopeRule};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    map
}

const KEY: &str = "key-of-alice-0123456789abcdef";

fn with_keys(header: Option<&str>) -> Authenticator {
    let config = AuthConfig {
        api_key_header: header.map(str::to_owned),
        api_keys: vec![ApiKeyEntry {
            principal: "alice".into(),
            digest: digest_text(KEY),
            digest_file: None,
            groups: vec![],
            scopes: vec!["mcp".into()],
        }],
        scopes: vec![ScopeRule {
            method: Some("tools/call".into()),
            tool: None,
            scopes: vec!["mcp".into(), "mcp:call".into()],
        }],
        ..AuthConfig::default()
    };
    Authenticator::from_config(&config, &Default::default())
        .unwrap()
        .unwrap()
}

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn api_keys_come_as_bearer_tokens_or_in_their_own_header() {
    let bearer = with_keys(None);
    type Case<'a> = (&'a [(&'a str, &'a str)], Result<&'a str, Reason>);
    let cases: &[Case] = &[
        (&[], Err(Reason::Missing)),
        (&[("authorization", &format!("Bearer {KEY}"))], Ok("alice")),
        (
            &[("authorization", &format!("bearer  {KEY} "))],
            Ok("alice"),
        ),
        (
            &[("authorization", "Bearer wrong-key-0123456789abcdef")],
            Err(Reason::UnknownApiKey),
        ),
        (
            &[("authorization", &format!("Basic {KEY}"))],
            Err(Reason::Missing),
        ),
        (&[("authorization", "Bearer ")], Err(Reason::Missing)),
    ];
    for (h, want) in cases {
        let got = run(bearer.authenticate(&headers(h)));
        assert_eq!(
            got.as_ref().map(|p| p.name.as_str()).map_err(|r| *r),
            *want,
            "{h:?}"
        );
    }
    let own = with_keys(Some("X-Api-Key"));
    assert_eq!(
        run(own.authenticate(&headers(&[("x-api-key", KEY)])))
            .unwrap()
            .name,
        "alice"
    );
    assert_eq!(
        run(own.authenticate(&headers(&[("authorization", &format!("Bearer {KEY}"))]))),
        Err(Reason::Missing),
        "with its own header, a key in Authorization is not looked at"
    );
}

#[test]
fn challenges_say_what_rfc_6750_asks() {
    let a = with_keys(None);
    assert_eq!(
        a.challenge(Reason::Missing),
        r#"Bearer realm="mcpgw", scope="mcp mcp:call""#,
        "no error code when no credential was sent (RFC 6750 §3.1)"
    );
    assert_eq!(
        a.challenge(Reason::Expired),
        r#"Bearer realm="mcpgw", scope="mcp mcp:call", error="invalid_token", error_description="the token has expired""#
    );
    assert_eq!(
        a.insufficient_scope(&["mcp:call".into()]),
        r#"Bearer realm="mcpgw", error="insufficient_scope", scope="mcp:call", error_description="the token lacks a scope this request needs""#
    );
}

#[test]
fn the_jwks_url_is_fetched_under_the_egress_rule() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counting = accepted.clone();
        // Counts connections and closes them: no fetch may get this far.
        let server = tokio::spawn(async move {
            for _ in 0..4 {
                if listener.accept().await.is_ok() {
                    counting.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let text = format!(
            "[auth.jwt]\njwks_url = 'http://localhost:{port}/jwks'\nissuer = 'https://idp'\naudience = 'gw'\n[egress]\ndeny_networks = ['127.0.0.0/8', '::1/128']\n"
        );
        let config =
            crate::config::Config::from_toml_str(&text, std::path::Path::new("t.toml")).unwrap();
        let egress = Arc::new(crate::egress::Egress::from_config(&config.egress));
        let auth = Authenticator::from_config(&config.auth, &egress)
            .unwrap()
            .unwrap();
        let keys = auth.key_set().unwrap().clone();
        keys.refresh_for_unknown_kid().await;
        assert_eq!(keys.counts(), (0, 1), "the fetch failed");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            0,
            "a denied address is never connected to"
        );
        server.abort();
    });
}
