//! Token verification, table-driven: keys made at run time (ES256 and EdDSA with rcgen, HS256 from a secret).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::*;
use crate::config::{JwtConfig, OneOrMany};

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://gw.test/mcp";
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-secret";

struct Signer {
    kid: &'static str,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
}

fn es256(kid: &'static str) -> Signer {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    Signer {
        kid,
        alg: Algorithm::ES256,
        key: EncodingKey::from_ec_der(&pair.serialize_der()),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&raw[1..33]), "y": URL_SAFE_NO_PAD.encode(&raw[33..65])}),
    }
}

fn eddsa(kid: &'static str) -> Signer {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    Signer {
        kid,
        alg: Algorithm::EdDSA,
        key: EncodingKey::from_ed_der(&pair.serialize_der()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": URL_SAFE_NO_PAD.encode(pair.public_key_raw())}),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 600,
        "groups": ["ops"], "scope": "mcp:tools mcp:read"})
}

fn sign(signer: &Signer, claims: &Value) -> String {
    let mut header = Header::new(signer.alg);
    header.kid = Some(signer.kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

fn rules(algorithms: &[&str]) -> Rules {
    Rules::new(
        &JwtConfig {
            jwks_url: None,
            jwks_file: None,
            jwks_ca_file: None,
            issuer: ISSUER.to_owned(),
            audience: OneOrMany::One(AUDIENCE.to_owned()),
            principal_claim: "sub".to_owned(),
            groups_claim: "groups".to_owned(),
            algorithms: algorithms.iter().map(|a| (*a).to_owned()).collect(),
            hs256_secret_file: None,
            hs256_secret_env: None,
            leeway_secs: 30,
            refresh_secs: 300,
        },
        None,
    )
}

fn keys_of(signers: &[&Signer], allowed: &[Algorithm]) -> Vec<PinnedKey> {
    let set: JwkSet = serde_json::from_value(
        json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()}),
    )
    .unwrap();
    let (keys, skipped) = pinned_keys(&set, allowed);
    assert!(skipped.is_empty(), "{skipped:?}");
    keys
}

fn with(mut c: Value, key: &str, v: Value) -> Value {
    c[key] = v;
    c
}

/// A token with this header and claims, signed with an HMAC `secret` (what an attacker can make).
fn forged_hs256(kid: &str, claims: &Value, secret: &[u8]) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).unwrap()
}

#[test]
fn tokens_are_refused_for_every_reason_and_accepted_otherwise() {
    let es = es256("es-1");
    let ed = eddsa("ed-1");
    let other = es256("es-1"); // the same kid, another key: a forged signature
    let rules = rules(&["ES256", "EdDSA"]);
    let keys = keys_of(&[&es, &ed], &rules.allowed);
    let none_token = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT","kid":"es-1"}"#),
        URL_SAFE_NO_PAD.encode(claims().to_string())
    );
    // The public key's own bytes as an HMAC secret: the classic RS256 → HS256 confusion, here with EC.
    let public_bytes = es.jwk["x"].as_str().unwrap().as_bytes().to_vec();
    let cases: Vec<(&str, String, Result<&str, Reason>)> = vec![
        ("es256", sign(&es, &claims()), Ok("alice")),
        ("eddsa", sign(&ed, &claims()), Ok("alice")),
        (
            "expired",
            sign(&es, &with(claims(), "exp", json!(now() - 120))),
            Err(Reason::Expired),
        ),
        (
            "expired within the leeway",
            sign(&es, &with(claims(), "exp", json!(now() - 10))),
            Ok("alice"),
        ),
        (
            "not yet valid",
            sign(&es, &with(claims(), "nbf", json!(now() + 600))),
            Err(Reason::NotYetValid),
        ),
        (
            "wrong audience",
            sign(&es, &with(claims(), "aud", json!("https://other.test"))),
            Err(Reason::Audience),
        ),
        (
            "audience in a list",
            sign(&es, &with(claims(), "aud", json!(["x", AUDIENCE]))),
            Ok("alice"),
        ),
        (
            "wrong issuer",
            sign(&es, &with(claims(), "iss", json!("https://evil.test"))),
            Err(Reason::Issuer),
        ),
        (
            "no exp",
            sign(&es, &{
                let mut c = claims();
                c.as_object_mut().unwrap().remove("exp");
                c
            }),
            Err(Reason::MissingClaim),
        ),
        (
            "no aud",
            sign(&es, &{
                let mut c = claims();
                c.as_object_mut().unwrap().remove("aud");
                c
            }),
            Err(Reason::MissingClaim),
        ),
        (
            "no subject",
            sign(&es, &{
                let mut c = claims();
                c.as_object_mut().unwrap().remove("sub");
                c
            }),
            Err(Reason::NoPrincipal),
        ),
        (
            "bad signature",
            sign(&other, &claims()),
            Err(Reason::Signature),
        ),
        (
            "unknown kid",
            sign(&es256("es-9"), &claims()),
            Err(Reason::UnknownKey),
        ),
        ("alg none", none_token, Err(Reason::Malformed)),
        (
            "hs256 with the public key as secret",
            forged_hs256("es-1", &claims(), &public_bytes),
            Err(Reason::Algorithm),
        ),
        (
            "hs256 with no secret configured",
            forged_hs256("es-1", &claims(), SECRET),
            Err(Reason::Algorithm),
        ),
        ("garbage", "a.b.c".to_owned(), Err(Reason::Malformed)),
    ];
    for (what, token, want) in cases {
        let got = rules.verify(&token, &keys, None);
        assert_eq!(
            got.as_ref().map(|p| p.name.as_str()).map_err(|r| *r),
            want,
            "{what}"
        );
    }
}

#[test]
fn a_key_pinned_to_one_algorithm_refuses_a_token_naming_another() {
    let ed = eddsa("k");
    let rules = rules(&["ES256", "EdDSA"]);
    let keys = keys_of(&[&ed], &rules.allowed);
    // Signed with an ES256 key under the EdDSA key's kid: refused for its algorithm before any signature.
    let mut es = es256("k");
    es.jwk = Value::Null;
    assert_eq!(
        rules
            .verify(&sign(&es, &claims()), &keys, None)
            .unwrap_err(),
        Reason::Algorithm
    );
    // A JWK stating an alg that does not fit its type is not used at all.
    let mut bad = eddsa("bad").jwk;
    bad["alg"] = json!("ES256");
    let set: JwkSet = serde_json::from_value(json!({"keys": [bad]})).unwrap();
    let (keys, skipped) = pinned_keys(&set, &rules.allowed);
    assert!(keys.is_empty() && skipped.len() == 1, "{skipped:?}");
}

#[test]
fn hs256_verifies_only_with_the_configured_secret() {
    let rules = rules(&["HS256"]);
    let secret = PinnedKey::secret(SECRET);
    let good = forged_hs256("any", &claims(), SECRET);
    assert_eq!(
        rules.verify(&good, &[], Some(&secret)).unwrap().name,
        "alice"
    );
    let bad = forged_hs256("any", &claims(), b"another secret of at least 32 bytes!!");
    assert_eq!(
        rules.verify(&bad, &[], Some(&secret)).unwrap_err(),
        Reason::Signature
    );
    // A symmetric key in a published set is never used.
    let set: JwkSet = serde_json::from_value(
        json!({"keys": [{"kty": "oct", "kid": "any", "k": URL_SAFE_NO_PAD.encode(SECRET)}]}),
    )
    .unwrap();
    let (keys, skipped) = pinned_keys(&set, &rules.allowed);
    assert!(keys.is_empty() && skipped.len() == 1);
}

#[test]
fn groups_and_scopes_come_from_lists_or_space_separated_strings() {
    let es = es256("k");
    let rules = rules(&["ES256"]);
    let keys = keys_of(&[&es], &rules.allowed);
    let p = rules.verify(&sign(&es, &claims()), &keys, None).unwrap();
    assert_eq!(p.groups, ["ops"]);
    assert_eq!(p.scopes, ["mcp:tools", "mcp:read"]);
    let c = with(with(claims(), "groups", json!("a b")), "scope", Value::Null);
    let c = with(c, "scp", json!(["x"]));
    let p = rules.verify(&sign(&es, &c), &keys, None).unwrap();
    assert_eq!(
        (p.groups, p.scopes),
        (vec!["a".to_owned(), "b".to_owned()], vec!["x".to_owned()])
    );
}
