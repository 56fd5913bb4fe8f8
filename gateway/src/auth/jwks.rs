//! The JWK set behind `[auth.jwt]`: read from a file (again on SIGHUP) or fetched from a URL — at start, then
//! every `refresh_secs` in the background (every 10 s while it fails), and when a token names a `kid` the set
//! does not hold (at most once every 30 s, counted apart from the other fetches so that a key rotation is
//! seen at once; only the request that starts such a fetch waits, bounded by the fetch's deadline: others
//! are answered from the keys there are, never queued behind it). A request never fetches otherwise: it
//! reads the current set, an `Arc` swapped whole. A fetch that fails keeps the keys it had.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::JwkSet;

use super::jwt::{PinnedKey, pinned_keys};

/// One fetch's deadline (connect and body).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// An unknown `kid` fetches the set at most this often.
pub const UNKNOWN_KID_EVERY: Duration = Duration::from_secs(30);
/// While fetching fails, it is tried again this often.
const RETRY: Duration = Duration::from_secs(10);
/// The largest JWK set read.
const MAX_BYTES: usize = 1024 * 1024;

/// Where the keys come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A URL, with its client (under the egress rule).
    Url(String, crate::egress::Client),
    /// A file.
    File(PathBuf),
    /// No key set: only the HS256 secret.
    None,
}

/// The current keys and how they were had.
#[derive(Debug)]
pub struct KeySet {
    source: Source,
    allowed: Vec<Algorithm>,
    keys: RwLock<Arc<Vec<PinnedKey>>>,
    /// Serialises fetches (a request for an unknown `kid` never waits for one under way: it tries it).
    fetching: tokio::sync::Mutex<()>,
    /// When a `kid` the set did not hold last made it fetched (its own limit: the background refresh
    /// does not delay a key rotation).
    unknown_kid_at: std::sync::Mutex<Option<Instant>>,
    fetched: AtomicU64,
    failures: AtomicU64,
}

impl KeySet {
    /// A set with no keys yet (a file is read at once; a URL is fetched by [`KeySet::refresh_forever`]).
    pub fn new(source: Source, allowed: Vec<Algorithm>) -> Result<KeySet, String> {
        let set = KeySet {
            source,
            allowed,
            keys: RwLock::new(Arc::new(Vec::new())),
            fetching: tokio::sync::Mutex::new(()),
            unknown_kid_at: std::sync::Mutex::new(None),
            fetched: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        };
        if let Source::File(path) = &set.source {
            let text = std::fs::read(path)
                .map_err(|e| format!("auth.jwt.jwks_file {}: {e}", path.display()))?;
            set.install(&text)
                .map_err(|e| format!("auth.jwt.jwks_file {}: {e}", path.display()))?;
        }
        Ok(set)
    }

    /// The keys now (never waits on a fetch).
    pub fn current(&self) -> Arc<Vec<PinnedKey>> {
        self.keys
            .read()
            .map_or_else(|p| p.into_inner().clone(), |k| k.clone())
    }

    /// Successful reads and failed ones so far.
    #[cfg(any(test, feature = "internals"))]
    pub fn counts(&self) -> (u64, u64) {
        (
            self.fetched.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }

    /// Parses a JWK set and swaps it in; how many keys it gave.
    fn install(&self, text: &[u8]) -> Result<usize, String> {
        let set: JwkSet =
            serde_json::from_slice(text).map_err(|e| format!("not a JWK set: {e}"))?;
        let (keys, skipped) = pinned_keys(&set, &self.allowed);
        for why in &skipped {
            tracing::warn!(key = %why, "a key of the JWK set is not used");
        }
        if keys.is_empty() && !set.keys.is_empty() {
            return Err("no usable key in the JWK set".to_owned());
        }
        let n = keys.len();
        match self.keys.write() {
            Ok(mut k) => *k = Arc::new(keys),
            Err(p) => *p.into_inner() = Arc::new(keys),
        }
        self.fetched.fetch_add(1, Ordering::Relaxed);
        Ok(n)
    }

    /// Reads the set again from where it comes from.
    async fn fetch(&self) -> Result<usize, String> {
        let outcome = match &self.source {
            Source::Url(url, client) => fetch_url(client, url).await,
            Source::File(path) => {
                std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
            }
            Source::None => return Ok(0),
        };
        let result = outcome.and_then(|bytes| self.install(&bytes));
        if result.is_err() {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Reads the file again (SIGHUP).
    pub fn reload_file(&self) -> Result<usize, String> {
        match &self.source {
            Source::File(path) => {
                let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
                self.install(&text)
            }
            _ => Ok(0),
        }
    }

    /// A token named a `kid` the set does not hold: fetch the set again, unless an unknown `kid` did so
    /// less than [`UNKNOWN_KID_EVERY`] ago or a fetch is under way. Only the request that starts the fetch
    /// waits for it (bounded by the fetch's deadline); any other returns at once and is answered from the
    /// keys there are (a request never queues behind a slow key server).
    pub async fn refresh_for_unknown_kid(&self) {
        if !matches!(self.source, Source::Url(..)) {
            return;
        }
        // A fetch under way (this or the background one) is not waited for.
        let Ok(_serialised) = self.fetching.try_lock() else {
            return;
        };
        let fetch_now = match self.unknown_kid_at.lock() {
            Ok(mut last) if last.is_none_or(|t| t.elapsed() >= UNKNOWN_KID_EVERY) => {
                *last = Some(Instant::now());
                true
            }
            _ => false,
        };
        if !fetch_now {
            return;
        }
        match tokio::time::timeout(FETCH_TIMEOUT * 2, self.fetch()).await {
            Ok(Ok(n)) => tracing::info!(keys = n, "JWK set fetched again for an unknown kid"),
            Ok(Err(why)) => tracing::warn!(%why, "the JWK set could not be fetched"),
            Err(_) => tracing::warn!("fetching the JWK set took too long"),
        }
    }

    /// Fetches the set now and then every `every` (every 10 s while it fails), for as long as the runtime
    /// runs. Nothing to do for a file.
    pub async fn refresh_forever(self: Arc<Self>, every: Duration) {
        let Source::Url(url, _) = &self.source else {
            return;
        };
        let mut failing = false;
        let mut fetched = false;
        loop {
            let outcome = {
                let _serialised = self.fetching.lock().await;
                self.fetch().await
            };
            match outcome {
                Ok(n) => {
                    // The first set held is said once (tokens verify from then on), a recovery too.
                    if !fetched {
                        let url = handlers::shown_url_text(url);
                        tracing::info!(keys = n, %url, "JWK set fetched: tokens are verified with it");
                    } else if failing {
                        let url = handlers::shown_url_text(url);
                        tracing::info!(keys = n, %url, "the JWK set is reachable again");
                    } else {
                        tracing::debug!(keys = n, %url, "JWK set fetched");
                    }
                    fetched = true;
                    failing = false;
                }
                Err(why) => {
                    if !failing {
                        let url = handlers::shown_url_text(url);
                        tracing::warn!(%url, %why, "the JWK set could not be fetched: the keys it had are kept; tokens signed with others are refused");
                    }
                    failing = true;
                }
            }
            tokio::time::sleep(if failing { RETRY.min(every) } else { every }).await;
        }
    }
}

async fn fetch_url(client: &crate::egress::Client, url: &str) -> Result<Vec<u8>, String> {
    let mut response = client
        .request(reqwest::Method::GET, url)?
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| handlers::error_chain(&e))?;
    if !response.status().is_success() {
        return Err(format!(
            "{} answered {}",
            handlers::shown_url_text(url),
            response.status()
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| handlers::error_chain(&e))?
    {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(format!("the JWK set is larger than {MAX_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl crate::reloadable::Reload for KeySet {
    fn part(&self) -> &'static str {
        "jwk set file"
    }

    fn reload(&self) -> Result<(), String> {
        if !matches!(self.source, Source::File(_)) {
            return Ok(()); // a URL refreshes itself
        }
        self.reload_file().map(drop)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures_util::FutureExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use std::io::{Read, Write};

    /// A loopback JWK set server that holds each request until `release` is notified; `asked` counts
    /// requests and `got` says each one arrived. Serves at most four connections.
    async fn held_jwks_server(
        asked: Arc<AtomicUsize>,
        got: tokio::sync::mpsc::UnboundedSender<()>,
        release: Arc<tokio::sync::Notify>,
    ) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move {
            for _ in 0..4 {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let (asked, got, release) = (asked.clone(), got.clone(), release.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16384 {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    asked.fetch_add(1, Ordering::SeqCst);
                    let _ = got.send(());
                    release.notified().await;
                    let body = r#"{"keys":[]}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(answer.as_bytes()).await;
                });
            }
        });
        url
    }

    #[test]
    fn an_unknown_kid_is_not_queued_behind_a_jwks_fetch_another_request_started() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let asked = Arc::new(AtomicUsize::new(0));
            let (got_tx, mut got) = tokio::sync::mpsc::unbounded_channel();
            let release = Arc::new(tokio::sync::Notify::new());
            let url = held_jwks_server(asked.clone(), got_tx, release.clone()).await;
            // A deadline far beyond the test's: the held fetch never ends on its own.
            let client = crate::egress::Client::new(
                &Arc::new(crate::egress::Egress::default()),
                crate::egress::Origin::Configured,
                &handlers::TlsClient::default(),
                &url,
                Duration::from_secs(120),
            )
            .unwrap();
            let keys =
                Arc::new(KeySet::new(Source::Url(url, client), vec![Algorithm::RS256]).unwrap());

            // The first unknown kid starts a fetch, which the server holds.
            let first = tokio::spawn({
                let keys = keys.clone();
                async move { keys.refresh_for_unknown_kid().await }
            });
            tokio::time::timeout(Duration::from_secs(30), got.recv())
                .await
                .expect("the first unknown kid fetches the set")
                .unwrap();

            // Another unknown kid meanwhile: answered on its first poll, without a second fetch.
            assert!(
                keys.refresh_for_unknown_kid().now_or_never().is_some(),
                "a request for another unknown kid waited for the fetch under way"
            );
            assert_eq!(asked.load(Ordering::SeqCst), 1, "one fetch at a time");
            assert_eq!(keys.counts(), (0, 0), "the first fetch is still held");

            release.notify_waiters();
            tokio::time::timeout(Duration::from_secs(30), first)
                .await
                .expect("the first fetch ends once the server answers")
                .unwrap();
            assert_eq!(keys.counts(), (1, 0));

            // Within UNKNOWN_KID_EVERY of that fetch, an unknown kid fetches nothing.
            assert!(keys.refresh_for_unknown_kid().now_or_never().is_some());
            assert_eq!(
                asked.load(Ordering::SeqCst),
                1,
                "unknown kids are rate limited"
            );
        });
    }

    /// A loopback server that answers one request with `status` and a body, then stops.
    fn answering_once(status: &'static str, body: &'static str) -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        port
    }

    #[actix_rt::test]
    async fn a_jwks_url_query_key_never_appears_in_fetch_errors() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = closed.local_addr().unwrap().port();
        drop(closed);
        let failing = answering_once("500 Internal Server Error", "JWKS-BODY-SECRET");
        for port in [refused, failing] {
            let url =
                format!("http://idp:USERINFO-SECRET@127.0.0.1:{port}/jwks?token=QUERY-SECRET");
            let client = crate::egress::Client::new(
                &Arc::new(crate::egress::Egress::default()),
                crate::egress::Origin::Configured,
                &handlers::TlsClient::default(),
                &url,
                FETCH_TIMEOUT,
            )
            .unwrap();
            let set = KeySet::new(Source::Url(url, client), vec![Algorithm::ES256]).unwrap();
            let why = set.fetch().await.unwrap_err();
            for secret in ["QUERY-SECRET", "USERINFO-SECRET", "JWKS-BODY-SECRET"] {
                assert!(!why.contains(secret), "{why}");
            }
            assert!(why.contains(&format!("127.0.0.1:{port}/jwks")), "{why}");
        }
    }
}
