//! RFC 8693 token exchange towards a backend (`[backend.auth] grant = "token_exchange"`): each principal's
//! own token is exchanged at a token endpoint made here for one meant for the backend, cached, and sent on
//! that principal's requests only; the client's token itself never reaches the backend. Towards a legacy
//! backend each principal gets a backend session of its own, initialized with its own token: the session the
//! gateway shares never carries a principal's identity.

use std::sync::{Arc, Mutex};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::backend_credentials::{Recorder, token_server};
use crate::support::{TempDir, gateway, http_mock, modern_call_as};

pub(crate) const SECRET: &str = "an HS256 secret of at least thirty-two bytes";

/// A token endpoint that answers token-exchange requests from `gw-client:gw-secret` with
/// `exchanged-N`, recording each `(subject_token, issued)`.
/// `(subject_token, issued token)` pairs, in order.
type Issued = Arc<Mutex<Vec<(String, String)>>>;

fn exchange_endpoint() -> (String, Issued) {
    let issued = Arc::new(Mutex::new(Vec::new()));
    let record = issued.clone();
    let url = token_server(move |head, body| {
        let field = |name: &str| {
            body.split('&')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .unwrap_or("")
                .to_owned()
        };
        let ok = head.contains("Basic Z3ctY2xpZW50Omd3LXNlY3JldA==")
            && field("grant_type") == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
            && field("subject_token_type")
                == "urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
            && field("audience") == "backend-x"
            && !field("subject_token").is_empty();
        if !ok {
            return (
                "400 Bad Request",
                json!({"error": "invalid_request"}).to_string(),
            );
        }
        let mut issued = record.lock().unwrap();
        let token = format!("exchanged-{}", issued.len() + 1);
        issued.push((field("subject_token"), token.clone()));
        ("200 OK", json!({"access_token": token, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 600}).to_string())
    });
    (url, issued)
}

/// A token of `sub` that a gateway with `[auth.jwt]` on [`SECRET`] accepts.
pub(crate) fn token_of(sub: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"iss": "https://issuer.test", "aud": "mcpgw-test", "sub": sub, "exp": exp}),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

fn call(url: &str, token: &str, tool: &str) -> Value {
    modern_call_as(
        token,
        url,
        tool,
        json!({}),
        json!({"arguments": {"text": "hi"}}),
    )
}

#[test]
fn each_principals_token_is_exchanged_for_the_backend_and_never_passed_through() {
    let dir = TempDir::new("token-exchange");
    let (token_url, issued) = exchange_endpoint();
    let modern = http_mock(&["--name", "x", "--era", "modern"]);
    let legacy = http_mock(&["--name", "l", "--era", "legacy"]);
    let (to_modern, to_legacy) = (Recorder::start(&modern.url), Recorder::start(&legacy.url));
    let secret = dir.file("hs256.secret", SECRET);
    let client_secret = dir.file("client.secret", "gw-secret");
    let exchange = format!(
        "[backend.auth]\ntoken_url = \"{token_url}\"\ngrant = \"token_exchange\"\nclient_id = \"gw-client\"\n\
         client_secret_file = {:?}\naudience = \"backend-x\"\n",
        client_secret.display()
    );
    let config = format!(
        "[auth.jwt]\nissuer = \"https://issuer.test\"\naudience = \"mcpgw-test\"\nalgorithms = [\"HS256\"]\n\
         hs256_secret_file = {:?}\n\n[[backend]]\nname = \"x\"\nurl = \"{}\"\n{exchange}\n\
         [[backend]]\nname = \"l\"\nurl = \"{}\"\n{exchange}",
        secret.display(),
        to_modern.url,
        to_legacy.url
    );
    let gw = gateway(&config, &dir);
    let (alice, bob) = (token_of("alice"), token_of("bob"));

    for _ in 0..3 {
        let r = call(&gw.url, &alice, "x__echo");
        assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    }
    let r = call(&gw.url, &bob, "x__echo");
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    let exchanged = issued.lock().unwrap().clone();
    assert_eq!(
        exchanged,
        vec![
            (alice.clone(), "exchanged-1".to_owned()),
            (bob.clone(), "exchanged-2".to_owned())
        ],
        "one exchange per principal (cached), each of its own token"
    );
    let seen = to_modern.text();
    let calls: Vec<&str> = seen
        .lines()
        .filter(|l| l.starts_with("authorization:"))
        .collect();
    assert!(
        calls.ends_with(&[
            "authorization: Bearer exchanged-1",
            "authorization: Bearer exchanged-1",
            "authorization: Bearer exchanged-1",
            "authorization: Bearer exchanged-2"
        ]),
        "each call carried its principal's exchanged token: {calls:?}"
    );
    assert!(
        !seen.contains(&alice) && !seen.contains(&bob),
        "a client's own token reached the backend"
    );

    // The legacy backend: each principal in a backend session of its own, initialized with its own
    // exchanged token; the session the gateway shares carries none.
    for token in [&alice, &bob, &alice] {
        let r = call(&gw.url, token, "l__echo");
        assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
    }
    let requests = requests_of(&to_legacy.text());
    let sessions_of = |credential: Option<&str>| -> std::collections::BTreeSet<String> {
        requests
            .iter()
            .filter(|(auth, _)| auth.as_deref() == credential)
            .filter_map(|(_, session)| session.clone())
            .collect()
    };
    let (alices, bobs, shared) = (
        sessions_of(Some("Bearer exchanged-3")),
        sessions_of(Some("Bearer exchanged-4")),
        sessions_of(None),
    );
    assert_eq!((alices.len(), bobs.len()), (1, 1), "{requests:?}");
    assert!(
        alices.is_disjoint(&bobs) && alices.is_disjoint(&shared) && bobs.is_disjoint(&shared),
        "{requests:?}"
    );
    assert!(
        requests.iter().all(|(auth, _)| auth.is_none()
            || auth.as_deref() == Some("Bearer exchanged-3")
            || auth.as_deref() == Some("Bearer exchanged-4")),
        "{requests:?}"
    );
    let seen = to_legacy.text();
    assert!(
        !seen.contains(&alice) && !seen.contains(&bob),
        "a client's own token reached the backend"
    );
    assert_eq!(
        issued.lock().unwrap().len(),
        4,
        "each backend exchanges for itself, once per principal"
    );
}

/// Each recorded request's `authorization` and `mcp-session-id`, in order.
fn requests_of(seen: &str) -> Vec<(Option<String>, Option<String>)> {
    let mut out: Vec<(Option<String>, Option<String>)> = Vec::new();
    let mut in_head = false;
    for line in seen.lines() {
        if line.ends_with(" HTTP/1.1") {
            out.push((None, None));
            in_head = true;
        } else if line.is_empty() {
            in_head = false;
        } else if in_head {
            let last = out.last_mut().expect("a request line first");
            if let Some(v) = line.strip_prefix("authorization: ") {
                last.0 = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("mcp-session-id: ") {
                last.1 = Some(v.to_owned());
            }
        }
    }
    out
}
