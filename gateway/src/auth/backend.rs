//! The gateway's own credentials towards backends (`[backend.auth]`), made ready before the backends
//! start: a fixed header read from its environment variable or file, or an OAuth 2.0 client-credentials
//! token (RFC 6749 §4.4; client authenticated with HTTP Basic, §2.3.1) fetched once at start (bounded) and
//! then refreshed in the background at three quarters of its lifetime (every 10 s while the endpoint
//! fails; the last token is kept meanwhile). Secrets are never logged; the handlers mark the header
//! sensitive.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use handlers::Credential;
use serde::Deserialize;

use crate::config::{BackendAuth, Config};

/// One token request's deadline.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);
/// While the token endpoint fails, it is asked again this often.
const RETRY: Duration = Duration::from_secs(10);
/// A token without `expires_in` is refreshed this often.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// A token endpoint and how the gateway authenticates to it.
#[derive(Clone)]
pub(super) struct TokenSource {
    backend: String,
    url: String,
    client_id: String,
    secret: String,
    form: Vec<(&'static str, String)>,
    client: crate::egress::Client,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("backend", &self.backend)
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

pub(crate) fn read_secret(
    env: Option<&str>,
    file: Option<&std::path::Path>,
    what: &str,
) -> Result<String, String> {
    match (env, file) {
        (Some(var), _) => std::env::var(var)
            .map_err(|_| format!("{what}: the environment variable {var} is not set")),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(|t| t.lines().next().unwrap_or("").trim().to_owned())
            .map_err(|e| format!("{what}: {}: {e}", path.display())),
        (None, None) => Err(format!("{what}: no source")),
    }
    .and_then(|v| {
        if v.is_empty() {
            Err(format!("{what} is empty"))
        } else {
            Ok(v)
        }
    })
}

/// Each backend's credential (backends without `[backend.auth]` get none); client-credentials tokens are
/// fetched once now (a failure is logged, the refresher keeps trying) and kept fresh on the current
/// runtime. `Err` for a secret that cannot be read.
pub async fn prepare(config: &Config) -> Result<BTreeMap<String, Credential>, String> {
    let egress = std::sync::Arc::new(crate::egress::Egress::from_config(&config.egress));
    let mut out = BTreeMap::new();
    for entry in &config.backends {
        let Some(auth) = &entry.auth else { continue };
        let field = format!("backend {} auth", entry.name);
        let credential = if auth.is_token_exchange() || auth.is_authorization_code() {
            // Per request, per principal (`exchange`, `oauth`); the backend-wide credential stays empty (an
            // authorization-code backend's is set to the token its catalog is listed with: `oauth::lister`).
            Credential::rotating(auth.header_name())?
        } else if auth.is_client_credentials() {
            let credential = Credential::rotating(auth.header_name())?;
            let source = token_source(&entry.name, auth, &field, "client_credentials", &egress)?;
            match fetch(&source).await {
                Ok((value, lifetime)) => {
                    credential.set(&with_scheme(auth, &value))?;
                    tracing::info!(backend = %entry.name, expires_in_s = lifetime.as_secs(), "backend token fetched");
                    actix_rt::spawn(refresh(
                        source,
                        credential.clone(),
                        auth.clone(),
                        refresh_after(lifetime),
                    ));
                }
                Err(why) => {
                    tracing::warn!(backend = %entry.name, %why, "no backend token yet: its requests go without one until the token endpoint answers");
                    actix_rt::spawn(refresh(source, credential.clone(), auth.clone(), RETRY));
                }
            }
            credential
        } else {
            let value = read_secret(
                auth.value_env.as_deref(),
                auth.value_file.as_deref(),
                &field,
            )?;
            Credential::fixed(auth.header_name(), &with_scheme(auth, &value))
                .map_err(|e| format!("{field}: {e}"))?
        };
        out.insert(entry.name.clone(), credential);
    }
    Ok(out)
}

fn with_scheme(auth: &BackendAuth, value: &str) -> String {
    match auth.scheme() {
        Some(s) => format!("{s} {value}"),
        None => value.to_owned(),
    }
}

pub(super) fn token_source(
    backend: &str,
    auth: &BackendAuth,
    field: &str,
    grant_type: &str,
    egress: &std::sync::Arc<crate::egress::Egress>,
) -> Result<TokenSource, String> {
    let url = auth.token_url.clone().unwrap_or_default();
    let secret = read_secret(
        auth.client_secret_env.as_deref(),
        auth.client_secret_file.as_deref(),
        &format!("{field} client secret"),
    )?;
    let mut form = vec![("grant_type", grant_type.to_owned())];
    for (k, v) in [
        ("scope", &auth.scope),
        ("audience", &auth.audience),
        ("resource", &auth.resource),
    ] {
        if let Some(v) = v {
            form.push((k, v.clone()));
        }
    }
    let client = crate::egress::Client::new(
        egress,
        crate::egress::Origin::Configured,
        &handlers::TlsClient::default(),
        &url,
        TOKEN_TIMEOUT,
    )
    .map_err(|e| format!("{field} token_url: {e}"))?;
    Ok(TokenSource {
        backend: backend.to_owned(),
        url,
        client_id: auth.client_id.clone().unwrap_or_default(),
        secret,
        form,
        client,
    })
}

/// When to fetch again: at three quarters of the lifetime, at least after 5 s.
fn refresh_after(lifetime: Duration) -> Duration {
    (lifetime * 3 / 4).max(Duration::from_secs(5))
}

/// One token request; the token and its lifetime.
async fn fetch(source: &TokenSource) -> Result<(String, Duration), String> {
    token_request(source, &[]).await
}

/// One request to the token endpoint with the source's form and `extra` fields; the token and its lifetime.
pub(super) async fn token_request(
    source: &TokenSource,
    extra: &[(&str, &str)],
) -> Result<(String, Duration), String> {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        form_encode(&source.client_id),
        form_encode(&source.secret)
    ));
    let body: String = source
        .form
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.iter().copied())
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let response = source
        .client
        .request(reqwest::Method::POST, &source.url)
        .map_err(|e| format!("the token endpoint {}: {e}", source.url))?
        .header("authorization", format!("Basic {basic}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            format!(
                "the token endpoint {} failed: {}",
                handlers::shown_url_text(&source.url),
                handlers::error_chain(&e)
            )
        })?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("reading the token response: {}", handlers::error_chain(&e)))?;
    if !status.is_success() {
        // The body can say why; it is the endpoint's, and is logged at debug only.
        tracing::debug!(body = %String::from_utf8_lossy(&bytes[..bytes.len().min(512)]),
            "the token endpoint's refusal");
        return Err(format!(
            "the token endpoint {} answered {status}",
            handlers::shown_url_text(&source.url)
        ));
    }
    // serde's message can quote the answer's values, the token among them: at debug only.
    let token: TokenResponse = serde_json::from_slice(&bytes).map_err(|e| {
        tracing::debug!(error = %e, "the token response does not parse");
        "the token response is not one (a json object with a string access_token)".to_owned()
    })?;
    if token
        .token_type
        .as_deref()
        .is_some_and(|t| !t.eq_ignore_ascii_case("bearer"))
    {
        return Err("the token endpoint gave a token that is not a bearer token".to_owned());
    }
    let lifetime = token
        .expires_in
        .map_or(DEFAULT_LIFETIME, Duration::from_secs);
    Ok((token.access_token, lifetime))
}

/// Keeps the credential fresh for as long as the runtime runs.
async fn refresh(source: TokenSource, credential: Credential, auth: BackendAuth, first: Duration) {
    let mut wait = first;
    let mut failing = false;
    loop {
        tokio::time::sleep(wait).await;
        match fetch(&source).await {
            Ok((value, lifetime)) => {
                if let Err(e) = credential.set(&with_scheme(&auth, &value)) {
                    tracing::warn!(backend = %source.backend, error = %e, "the backend token is unusable");
                    wait = RETRY;
                    continue;
                }
                if failing {
                    tracing::info!(backend = %source.backend, "backend token fetched again");
                }
                failing = false;
                wait = refresh_after(lifetime);
            }
            Err(why) => {
                if !failing {
                    tracing::warn!(backend = %source.backend, %why, "the backend token could not be refreshed: the last one is kept");
                }
                failing = true;
                wait = RETRY;
            }
        }
    }
}

/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B for the Basic credentials too).
pub(crate) fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_token_endpoint_query_key_and_body_never_appear_in_errors() {
        use std::io::{Read, Write};
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = closed.local_addr().unwrap().port();
        drop(closed);
        // One request answered 401 with a body that names what the endpoint holds, then stops.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let failing = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let body = "TOKEN-BODY-SECRET";
                let answer = format!(
                    "HTTP/1.1 401 Unauthorized\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        for port in [refused, failing] {
            let url = format!("http://idp:USERINFO-SECRET@127.0.0.1:{port}/token?key=QUERY-SECRET");
            let client = crate::egress::Client::new(
                &std::sync::Arc::new(crate::egress::Egress::default()),
                crate::egress::Origin::Configured,
                &handlers::TlsClient::default(),
                &url,
                TOKEN_TIMEOUT,
            )
            .unwrap();
            let source = TokenSource {
                backend: "b".into(),
                url,
                client_id: "id".into(),
                secret: "s".into(),
                form: vec![("grant_type", "client_credentials".into())],
                client,
            };
            let why = token_request(&source, &[]).await.unwrap_err();
            for secret in ["QUERY-SECRET", "USERINFO-SECRET", "TOKEN-BODY-SECRET"] {
                assert!(!why.contains(secret), "{why}");
            }
            assert!(why.contains(&format!("127.0.0.1:{port}/token")), "{why}");
        }
    }

    #[test]
    fn form_values_are_encoded_as_rfc_6749_asks() {
        assert_eq!(form_encode("a b+c/d:é"), "a+b%2Bc%2Fd%3A%C3%A9");
        assert_eq!(form_encode("plain-1.2_3*"), "plain-1.2_3*");
    }

    #[test]
    fn tokens_are_refreshed_at_three_quarters_of_their_lifetime() {
        assert_eq!(
            refresh_after(Duration::from_secs(400)),
            Duration::from_secs(300)
        );
        assert_eq!(
            refresh_after(Duration::from_secs(2)),
            Duration::from_secs(5)
        );
    }
}
