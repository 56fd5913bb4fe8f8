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
    Authenticator::from_config(&config).unwrap().unwrap()
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
