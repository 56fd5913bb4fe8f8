//! RFC 8693 token exchange towards a backend (`[backend.auth] grant = "token_exchange"`): the client's own
//! token is never passed through (the MCP spec forbids it); the gateway exchanges it at the backend's token
//! endpoint for one meant for that backend (`audience`/`resource`), and sends that on the request. Exchanged
//! tokens are cached per subject token until shortly before they expire, in a bounded map; a full map drops
//! its expired entries, then everything (each principal's next call exchanges again). Only 2026-07-28
//! backends take them: a legacy backend's one session never carries several principals' identities
//! (`handlers` refuses such a request).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::HeaderValue;
use sha2::{Digest, Sha256};

use super::backend::{TokenSource, token_request, token_source};
use super::principal::SubjectToken;
use crate::config::BackendAuth;

/// Exchanged tokens kept at most, per backend.
const MAX_CACHED: usize = 10_000;
/// An exchanged token is used until this long before it expires.
const MARGIN: Duration = Duration::from_secs(30);
/// RFC 8693's grant type.
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The subject token's type: an OAuth access token (RFC 8693 §3).
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// One backend's exchanger.
#[derive(Debug)]
pub struct Exchanger {
    source: TokenSource,
    scheme: Option<String>,
    cache: Mutex<HashMap<[u8; 32], (HeaderValue, Instant)>>,
}

impl Exchanger {
    /// For a backend whose `[backend.auth]` exchanges tokens.
    pub fn new(
        backend: &str,
        auth: &BackendAuth,
        egress: &std::sync::Arc<crate::egress::Egress>,
    ) -> Result<Exchanger, String> {
        Ok(Exchanger {
            source: token_source(
                backend,
                auth,
                &format!("backend {backend} auth"),
                GRANT,
                egress,
            )?,
            scheme: auth.scheme().map(str::to_owned),
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The header value to send for a request of the principal holding `subject`.
    pub async fn credential(&self, subject: &SubjectToken) -> Result<HeaderValue, String> {
        let key: [u8; 32] = Sha256::digest(subject.0.as_bytes()).into();
        let now = Instant::now();
        if let Some(v) = self.cache.lock().ok().and_then(|c| {
            c.get(&key)
                .filter(|(_, until)| *until > now)
                .map(|(v, _)| v.clone())
        }) {
            return Ok(v);
        }
        let (token, lifetime) = token_request(
            &self.source,
            &[
                ("subject_token", &subject.0),
                ("subject_token_type", ACCESS_TOKEN),
            ],
        )
        .await?;
        let text = match &self.scheme {
            Some(s) => format!("{s} {token}"),
            None => token,
        };
        let mut value = HeaderValue::from_str(&text)
            .map_err(|_| "the exchanged token is not a valid header value".to_owned())?;
        value.set_sensitive(true);
        let until = now + lifetime.saturating_sub(MARGIN);
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (_, u)| *u > now);
                if cache.len() >= MAX_CACHED {
                    cache.clear();
                }
            }
            cache.insert(key, (value.clone(), until));
        }
        Ok(value)
    }
}

/// The exchangers of every backend that exchanges tokens.
pub fn exchangers(
    config: &crate::config::Config,
) -> Result<std::collections::BTreeMap<String, std::sync::Arc<Exchanger>>, String> {
    let egress = std::sync::Arc::new(crate::egress::Egress::from_config(&config.egress));
    config
        .backends
        .iter()
        .filter_map(|b| {
            b.auth
                .as_ref()
                .filter(|a| a.is_token_exchange())
                .map(|a| (b, a))
        })
        .map(|(b, a)| {
            Ok((
                b.name.clone(),
                std::sync::Arc::new(Exchanger::new(&b.name, a, &egress)?),
            ))
        })
        .collect()
}
