//! Fetching an OpenAPI document: a file (read off the arbiter thread) or an http(s) URL (with the backend's
//! client, within the connect timeout), at most [`MAX_DOCUMENT_BYTES`], as UTF-8 text.

use std::time::Duration;

use futures_util::StreamExt;

/// The largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// The document's text, or why it cannot be had.
pub(super) async fn document(
    source: &str,
    client: Option<&crate::egress::Client>,
    timeout: Duration,
) -> Result<String, String> {
    let bytes = if source.starts_with("http://") || source.starts_with("https://") {
        let Some(client) = client else {
            return Err(format!("cannot fetch {source}: no http client"));
        };
        tokio::time::timeout(timeout, from_url(client, source))
            .await
            .map_err(|_| format!("fetching {source} took longer than {timeout:?}"))??
    } else {
        let path = source.to_owned();
        let read = tokio::task::spawn_blocking(move || read_bounded(&path))
            .await
            .map_err(|e| format!("reading {source}: {e}"))?;
        read?
    };
    String::from_utf8(bytes).map_err(|_| format!("{source} is not UTF-8 text"))
}

async fn from_url(client: &crate::egress::Client, url: &str) -> Result<Vec<u8>, String> {
    let response = client
        .request(reqwest::Method::GET, url)
        .map_err(|e| format!("fetching {url}: {e}"))?
        .header(
            reqwest::header::ACCEPT,
            "application/json, application/yaml, */*",
        )
        .send()
        .await
        .map_err(|e| format!("fetching {url}: {}", handlers::error_chain(&e)))?;
    if !response.status().is_success() {
        return Err(format!("fetching {url}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("fetching {url}: {}", handlers::error_chain(&e)))?;
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{url} is larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn read_bounded(path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(format!("{path} is larger than {MAX_DOCUMENT_BYTES} bytes"));
    }
    Ok(bytes)
}
