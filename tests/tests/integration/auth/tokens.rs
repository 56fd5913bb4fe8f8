//! JWTs signed by the test's issuer (RS256, ES256, EdDSA keys made at run time, published by the test's
//! JWKS endpoint): a valid token passes in both eras; each defect of a token gets 401 `invalid_token`
//! while the same gateway accepts a good token; no token gets 401 naming the metadata document and no
//! error; a token lacking the scope a tool needs gets 403 for that tool only; the 401 comes before
//! anything is validated (or the body read), so it is the same whatever the request names; a token is read
//! from `Authorization: Bearer` only, the scheme in any case.

use std::time::Duration;

use serde_json::{Value, json};

use super::issuer::{self, Availability, Jwks, SigningKey, claims, shared_rsa};
use super::{
    Gw, assert_401, assert_echoed, bearer, challenge, echo_call, initialize, jwt_config,
    modern_echo, open_session, post,
};
use crate::support::{TempDir, client, into_reply, modern_request};

/// The algorithms of the test configs (the README's default, spelled out).
const ALGS: &str = r#"algorithms = ["RS256", "ES256", "EdDSA"]"#;

/// The issuer's keys and its JWKS endpoint (serving all three).
struct Issuer {
    ec: SigningKey,
    ed: SigningKey,
    jwks: Jwks,
}

impl Issuer {
    fn start() -> Issuer {
        let ec = SigningKey::es256("ec-1");
        let ed = SigningKey::eddsa("ed-1");
        let jwks = Jwks::start(&[shared_rsa(), &ec, &ed], Availability::Up);
        Issuer { ec, ed, jwks }
    }

    fn keys(&self) -> [&SigningKey; 3] {
        [shared_rsa(), &self.ec, &self.ed]
    }

    /// A gateway verifying its tokens (`extra_jwt` added to `[auth.jwt]`), once it fetched the set.
    fn gateway(&self, name: &str, extra_jwt: &str) -> Gw {
        let gw = Gw::start(name, |port| {
            jwt_config(&self.jwks.url(), port, 300, extra_jwt)
        });
        assert!(
            self.jwks
                .wait_until(Jwks::served, 1, Duration::from_secs(15)),
            "the gateway never fetched the JWK set\n{}",
            gw.log()
        );
        // Fetched is not yet held: the gateway says when it verifies with the set.
        assert!(
            gw.wait_log("JWK set fetched", Duration::from_secs(15)),
            "{}",
            gw.log()
        );
        gw
    }
}

/// A good token: alice, granted `mcp:tools`.
fn good(key: &SigningKey) -> String {
    key.sign(&claims("alice", "mcp:tools"))
}

#[test]
fn valid_rs256_es256_and_eddsa_tokens_open_a_legacy_session_and_call_a_tool() {
    let issuer = Issuer::start();
    let gw = issuer.gateway("valid-legacy", ALGS);
    for key in issuer.keys() {
        let auth = [bearer(&good(key))];
        let session = open_session(&gw.url(), &auth);
        let text = format!("legacy-{:?}", key.alg);
        let r = post(&gw.url(), &auth, Some(&session), &echo_call(2, &text));
        assert_echoed(&r, &text);
    }
}

#[test]
fn valid_rs256_es256_and_eddsa_tokens_call_a_tool_in_a_2026_07_28_request() {
    let issuer = Issuer::start();
    let gw = issuer.gateway("valid-modern", ALGS);
    for key in issuer.keys() {
        let text = format!("modern-{:?}", key.alg);
        let r = modern_echo(&gw, &text, &[bearer(&good(key))]);
        assert_echoed(&r, &text);
    }
}

#[test]
fn no_token_gets_401_pointing_to_the_metadata_document_with_no_error_code() {
    let issuer = Issuer::start();
    let gw = issuer.gateway("no-token", ALGS);
    let legacy = initialize(&gw.url(), &[]);
    assert_401(&legacy, &gw.metadata_url(), None);
    assert!(
        legacy
            .header("www-authenticate")
            .unwrap()
            .contains(&format!("resource_metadata=\"{}\"", gw.metadata_url())),
        "{legacy:?}"
    );
    let modern = modern_echo(&gw, "x", &[]);
    assert_401(&modern, &gw.metadata_url(), None);
    // A bearer scheme with nothing after it is no credential either.
    let empty = initialize(&gw.url(), &[("Authorization".into(), "Bearer ".into())]);
    assert_401(&empty, &gw.metadata_url(), None);
}

/// Starts an issuer and a gateway (with `extra_jwt`), checks that a good token passes, then that each
/// token `make` builds gets 401 `invalid_token` in both eras, its `error_description` saying `why`. The
/// issuer and gateway, for more checks.
fn refused(
    name: &str,
    extra_jwt: &str,
    why: &str,
    make: impl Fn(&Issuer) -> Vec<String>,
) -> (Issuer, Gw) {
    let issuer = Issuer::start();
    let gw = issuer.gateway(name, extra_jwt);
    assert_echoed(
        &modern_echo(&gw, "good", &[bearer(&good(&issuer.ec))]),
        "good",
    );
    for token in make(&issuer) {
        let auth = [bearer(&token)];
        for r in [initialize(&gw.url(), &auth), modern_echo(&gw, "bad", &auth)] {
            assert_401(&r, &gw.metadata_url(), Some("invalid_token"));
            let described = challenge(&r)
                .remove("error_description")
                .unwrap_or_default();
            assert!(
                described.contains(why),
                "{why:?} not in {described:?}: {token}"
            );
        }
    }
    (issuer, gw)
}

/// `claims` of a good token with `field` replaced by `value`.
fn with(field: &str, value: Value) -> Value {
    let mut c = claims("alice", "mcp:tools");
    c[field] = value;
    c
}

#[test]
fn an_expired_token_gets_401_invalid_token() {
    refused("expired", ALGS, "expired", |i| {
        let past = issuer::now() - 3600;
        let mut c = with("exp", json!(past));
        c["iat"] = json!(past - 600);
        i.keys().iter().map(|k| k.sign(&c)).collect()
    });
}

#[test]
fn a_token_for_another_audience_gets_401_invalid_token() {
    refused("audience", ALGS, "not meant for", |i| {
        let c = with("aud", json!("https://another-resource.test.invalid/mcp"));
        i.keys().iter().map(|k| k.sign(&c)).collect()
    });
}

#[test]
fn a_token_from_another_issuer_gets_401_invalid_token() {
    refused("issuer", ALGS, "issuer", |i| {
        let c = with("iss", json!("https://another-issuer.test.invalid"));
        i.keys().iter().map(|k| k.sign(&c)).collect()
    });
}

#[test]
fn a_token_signed_by_another_key_under_a_published_kid_gets_401_invalid_token() {
    refused("signature", ALGS, "signature", |i| {
        let c = claims("alice", "mcp:tools");
        vec![
            SigningKey::es256("other").sign_as(&i.ec.kid, &c),
            SigningKey::eddsa("other").sign_as(&i.ed.kid, &c),
            SigningKey::rs256("other").sign_as(&shared_rsa().kid, &c),
        ]
    });
}

#[test]
fn an_unsigned_alg_none_token_gets_401_invalid_token() {
    refused("alg-none", ALGS, "malformed", |i| {
        let c = claims("alice", "mcp:tools");
        vec![
            issuer::unsigned(&i.ec.kid, &c),
            issuer::unsigned(&shared_rsa().kid, &c),
        ]
    });
}

/// HS256 tokens HMAC'd with what an attacker knows of the RSA key: its public PEM, its modulus.
fn confused_tokens() -> Vec<String> {
    let rsa = shared_rsa();
    let (pem, n) = rsa.rsa_public.clone().expect("an RSA key");
    let c = claims("alice", "mcp:tools");
    vec![
        issuer::hs256(&pem, Some(&rsa.kid), &c),
        issuer::hs256(&n, Some(&rsa.kid), &c),
        issuer::hs256(&pem, None, &c),
    ]
}

#[test]
fn an_hs256_token_keyed_with_the_rsa_public_key_gets_401_invalid_token() {
    refused("confusion", ALGS, "algorithm", |_| confused_tokens());
}

#[test]
fn an_hs256_token_keyed_with_the_rsa_public_key_gets_401_even_where_hs256_is_accepted() {
    let secrets = TempDir::new("auth-hs256-secret");
    let secret = "an-hs256-secret-of-at-least-32-bytes-0123456789";
    let path = secrets.file("secret", secret);
    let extra = format!(
        "algorithms = [\"RS256\", \"ES256\", \"EdDSA\", \"HS256\"]\nhs256_secret_file = {:?}",
        path.display().to_string()
    );
    // HS256 tokens are verified with the configured secret only, so the RSA-keyed ones fail its check.
    let (_issuer, gw) = refused("confusion-hs256", &extra, "signature", |_| {
        confused_tokens()
    });
    // HS256 itself is accepted there, with the configured secret (so the refusals above are the key's).
    let token = issuer::hs256(secret.as_bytes(), None, &claims("alice", "mcp:tools"));
    assert_echoed(&modern_echo(&gw, "hs", &[bearer(&token)]), "hs");
}

#[test]
fn a_token_without_the_tools_scope_gets_403_insufficient_scope_for_m_echo_but_lists_tools() {
    let issuer = Issuer::start();
    let gw = issuer.gateway("scope", ALGS);
    let auth = [bearer(&issuer.ec.sign(&claims("alice", "mcp:other")))];
    let session = open_session(&gw.url(), &auth);
    let list = post(
        &gw.url(),
        &auth,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
    );
    assert_eq!(list.status, 200, "{list:?}");
    let listed = list.json();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"m__echo"), "{names:?}");
    let calls = [
        post(&gw.url(), &auth, Some(&session), &echo_call(2, "x")),
        modern_echo(&gw, "x", &auth),
    ];
    for r in calls {
        assert_eq!(r.status, 403, "{r:?}");
        let c = challenge(&r);
        assert_eq!(
            c.get("error").map(String::as_str),
            Some("insufficient_scope"),
            "{r:?}"
        );
        assert_eq!(
            c.get("scope").map(String::as_str),
            Some("mcp:tools"),
            "{r:?}"
        );
        assert_eq!(
            c.get("resource_metadata"),
            Some(&gw.metadata_url()),
            "{r:?}"
        );
    }
    // The same call with the scope granted passes.
    let granted = [bearer(&good(&issuer.ec))];
    assert_echoed(&modern_echo(&gw, "y", &granted), "y");
}

/// What the tests compare of a 401: status, challenge, content type, body.
fn shape(r: &crate::support::Reply) -> (u16, Option<String>, Option<String>, String) {
    (
        r.status,
        r.header("www-authenticate"),
        r.header("content-type"),
        r.text.clone(),
    )
}

/// `method` `url` with `auth`, `headers` and `body`.
fn send(
    method: reqwest::Method,
    url: &str,
    auth: &[(String, String)],
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> crate::support::Reply {
    let mut req = client().request(method, url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    for (k, v) in auth {
        req = req.header(k, v);
    }
    into_reply(req.send().expect("an answer"))
}

#[test]
fn the_401_is_the_same_whatever_the_unauthenticated_request_names() {
    use reqwest::Method;
    let issuer = Issuer::start();
    let gw = issuer.gateway("same-401", ALGS);
    let (url, base) = (gw.url(), gw.base());
    let expired = {
        let mut c = claims("alice", "mcp:tools");
        c["exp"] = json!(issuer::now() - 3600);
        issuer.ec.sign(&c)
    };
    let unknown_tool = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "nobody__nothing", "arguments": {}}})
    .to_string();
    let no_session = "no-such-session-0123456789";
    // Larger than max_body_bytes (4 MiB): refused before the body is read, so not 413.
    let too_large = vec![b' '; 5 * 1024 * 1024];
    let json = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    for (credential, error) in [(None, None), (Some(expired), Some("invalid_token"))] {
        let auth: Vec<(String, String)> = credential.iter().map(|t| bearer(t)).collect();
        let first = initialize(&url, &auth);
        assert_401(&first, &gw.metadata_url(), error);
        let modern: Vec<(&str, &str)> =
            auth.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let others = [
            post(&url, &auth, None, &unknown_tool),
            post(&url, &auth, Some(no_session), &unknown_tool),
            post(&url, &auth, None, "{this is not json"),
            post(&url, &auth, None, ""),
            modern_request(
                &url,
                "tools/call",
                json!({"name": "nobody__nothing"}),
                &modern,
            ),
            send(Method::POST, &url, &auth, &json, too_large.clone()),
            send(
                Method::GET,
                &url,
                &auth,
                &[
                    ("Accept", "text/event-stream"),
                    ("Mcp-Session-Id", no_session),
                ],
                vec![],
            ),
            send(
                Method::DELETE,
                &url,
                &auth,
                &[("Mcp-Session-Id", no_session)],
                vec![],
            ),
            send(
                Method::GET,
                &format!("{base}/sse"),
                &auth,
                &[("Accept", "text/event-stream")],
                vec![],
            ),
            send(
                Method::POST,
                &format!("{base}/messages?sessionId={no_session}"),
                &auth,
                &json,
                unknown_tool.clone().into_bytes(),
            ),
        ];
        for (i, r) in others.iter().enumerate() {
            assert_eq!(shape(r), shape(&first), "request {i}, credential {error:?}");
        }
    }
    // Authenticated, the same requests are told apart: the 401 came before any of that was looked at.
    let auth = [bearer(&good(&issuer.ec))];
    let session = post(&url, &auth, Some(no_session), &unknown_tool);
    assert_eq!(session.status, 404, "{session:?}");
    let garbage = post(&url, &auth, None, "{this is not json");
    assert_eq!(garbage.json()["error"]["code"], -32700, "{garbage:?}");
    let large = send(Method::POST, &url, &auth, &json, too_large);
    assert_eq!(large.status, 413, "{large:?}");
}

#[test]
fn a_token_is_taken_from_the_authorization_header_only_with_the_scheme_in_any_case() {
    let issuer = Issuer::start();
    let gw = issuer.gateway("scheme", ALGS);
    let token = good(&issuer.ec);
    for scheme in ["bearer", "BEARER"] {
        let auth = [("Authorization".to_owned(), format!("{scheme} {token}"))];
        assert_echoed(&modern_echo(&gw, scheme, &auth), scheme);
    }
    // Not in the query (bearer_methods_supported is ["header"]), nor under another scheme.
    let in_query = send(
        reqwest::Method::POST,
        &format!("{}?access_token={token}", gw.url()),
        &[],
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        echo_call(1, "q").into_bytes(),
    );
    assert_401(&in_query, &gw.metadata_url(), None);
    let basic = [("Authorization".to_owned(), format!("Basic {token}"))];
    assert_401(&initialize(&gw.url(), &basic), &gw.metadata_url(), None);
}
