//! The authorization flow's HTTP: every URL it fetches goes through the egress rule (`egress::Client`).
//! A URL at the backend's own origin is as configured as the backend (the operator chose to reach it);
//! any other — an authorization server, a token endpoint named in metadata, a `resource_metadata` URL
//! elsewhere — is discovered, so internal addresses need `[egress] allow_hosts` or `allow_networks`. No
//! redirect is followed, answers are read up to 64 KiB, and each request has 5 s.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::de::DeserializeOwned;

use super::discovery::{
    Challenge, ResourceMetadata, ServerMetadata, fallback_endpoints, resource_metadata_urls,
    same_issuer, same_resource, server_metadata_urls,
};
use crate::egress::{Client, Egress, Origin};

/// One request's deadline.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer read.
const MAX_BODY: usize = 64 * 1024;

/// Fetches for one backend's flows.
#[derive(Debug, Clone)]
pub struct Fetcher {
    egress: Arc<Egress>,
    /// The backend's URL: its origin is configured.
    backend: Url,
}

/// An answer: its status, `WWW-Authenticate`, and body (bounded).
pub struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub body: Vec<u8>,
}

impl Fetcher {
    /// Fetches for the backend at `backend`.
    pub fn new(egress: Arc<Egress>, backend: Url) -> Fetcher {
        Fetcher { egress, backend }
    }

    fn origin_of(&self, url: &Url) -> Origin {
        if url.origin() == self.backend.origin() {
            Origin::Configured
        } else {
            Origin::Discovered
        }
    }

    /// Sends `request` (built by `build` on a client for `url`) and reads the answer.
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        build: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<Answer, String> {
        let parsed = Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let client = Client::new(
            &self.egress,
            self.origin_of(&parsed),
            &handlers::TlsClient::default(),
            url,
            TIMEOUT,
        )?;
        let host = parsed.host_str().unwrap_or("").to_owned();
        let response = build(client.request(method, url)?)
            .send()
            .await
            .map_err(|e| format!("{host}: {}", without_url(&e)))?;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{host}: {}", without_url(&e)))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(format!(
                    "{host}: the answer is larger than {MAX_BODY} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            challenge,
            body,
        })
    }

    /// A JSON document at `url` (200 only).
    pub async fn json<T: DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let answer = self
            .send(reqwest::Method::GET, url, |r| {
                r.header(reqwest::header::ACCEPT, "application/json")
            })
            .await?;
        if answer.status != 200 {
            return Err(format!("{} answered HTTP {}", shown(url), answer.status));
        }
        serde_json::from_slice(&answer.body)
            .map_err(|e| format!("{} is not the document expected: {e}", shown(url)))
    }

    /// The backend's challenge to a request without a token: what it answers an unauthenticated `ping`.
    pub async fn challenge(&self) -> Option<Challenge> {
        let body = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        let answer = self
            .send(reqwest::Method::POST, self.backend.as_str(), |r| {
                r.header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header(
                        reqwest::header::ACCEPT,
                        "application/json, text/event-stream",
                    )
                    .body(body)
            })
            .await
            .ok()?;
        answer.challenge.as_deref().and_then(Challenge::parse)
    }

    /// The backend's protected resource metadata: from the challenge's `resource_metadata`, else the
    /// well-known URLs (path inserted, then the root). `Ok(None)` when it publishes none (a 2025-03-26
    /// server); `Err` for a document about another resource, which must not be used.
    pub async fn resource_metadata(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<Option<ResourceMetadata>, String> {
        let urls: Vec<String> = match challenge.and_then(|c| c.get("resource_metadata")) {
            Some(url) => vec![url.to_owned()],
            None => resource_metadata_urls(&self.backend)
                .iter()
                .map(Url::to_string)
                .collect(),
        };
        for url in urls {
            match self.json::<ResourceMetadata>(&url).await {
                Ok(doc) => {
                    if !same_resource(&doc.resource, &self.backend) {
                        return Err(format!(
                            "the backend's resource metadata is about another resource ({}): not used",
                            doc.resource
                        ));
                    }
                    return Ok(Some(doc));
                }
                Err(why) => tracing::debug!(%why, "no protected resource metadata there"),
            }
        }
        Ok(None)
    }

    /// The authorization server's metadata, its `issuer` checked against `issuer`.
    pub async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, String> {
        let parsed =
            Url::parse(issuer).map_err(|e| format!("issuer {issuer:?} is not a URL: {e}"))?;
        let mut last = String::from("no metadata");
        for url in server_metadata_urls(&parsed) {
            match self.json::<ServerMetadata>(url.as_str()).await {
                Ok(doc) if same_issuer(&doc.issuer, issuer) => return Ok(doc),
                Ok(doc) => {
                    return Err(format!(
                        "the authorization server's metadata names issuer {:?}, not {issuer:?}: not used",
                        doc.issuer
                    ));
                }
                Err(why) => last = why,
            }
        }
        Err(format!(
            "no authorization server metadata for {issuer}: {last}"
        ))
    }

    /// Metadata for a backend without resource metadata (2025-03-26): at its origin, else the default
    /// endpoints there.
    pub async fn origin_metadata(&self) -> ServerMetadata {
        let mut origin = self.backend.clone();
        origin.set_path("");
        origin.set_query(None);
        let issuer = origin.as_str().trim_end_matches('/').to_owned();
        match self.server_metadata(&issuer).await {
            Ok(doc) => doc,
            Err(_) => fallback_endpoints(&self.backend),
        }
    }
}

/// A URL as logs and errors show it: scheme, host, port and path (never a query).
pub fn shown(url: &str) -> String {
    Url::parse(url).map_or_else(
        |_| "a URL".to_owned(),
        |u| {
            format!(
                "{}://{}{}",
                u.scheme(),
                u.host_str().unwrap_or(""),
                u.path()
            )
        },
    )
}

/// A reqwest error without the URL it carries (its query could hold a code).
fn without_url(e: &reqwest::Error) -> String {
    let e = e.to_string();
    match e.find(" for url (") {
        Some(i) => e[..i].to_owned(),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_discovered_internal_url_is_refused_and_the_backends_own_origin_is_not() {
        let backend = Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let fetcher = Fetcher::new(Arc::new(Egress::default()), backend);
        // An authorization server on another internal address, learned from a document: refused unless
        // [egress] allows it.
        let refused = fetcher.json::<serde_json::Value>("http://10.1.2.3/x").await;
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("egress refused")),
            "{refused:?}"
        );
        // The backend's own origin is as configured as the backend: tried (and nothing listens there).
        let tried = fetcher
            .json::<serde_json::Value>("http://127.0.0.1:9/.well-known/x")
            .await;
        assert!(
            tried.as_ref().is_err_and(|e| !e.contains("egress refused")),
            "{tried:?}"
        );
        // Allowed by [egress] allow_networks.
        let allowed = Egress::from_config(&crate::config::EgressConfig {
            allow_networks: vec!["10.0.0.0/8".into()],
            ..Default::default()
        });
        let fetcher = Fetcher::new(
            Arc::new(allowed),
            Url::parse("http://127.0.0.1:9/mcp").unwrap(),
        );
        let r = fetcher
            .send(reqwest::Method::GET, "http://10.1.2.3:9/x", |r| {
                r.timeout(Duration::from_millis(200))
            })
            .await
            .err();
        assert!(
            r.as_ref().is_none_or(|e| !e.contains("egress refused")),
            "{r:?}"
        );
    }

    #[test]
    fn urls_are_shown_without_their_query() {
        assert_eq!(
            shown("https://as.example/token?code=secret"),
            "https://as.example/token"
        );
    }
}
