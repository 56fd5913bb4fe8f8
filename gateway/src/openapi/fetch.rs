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
    let shown = shown(source);
    let bytes = if is_url(source) {
        let Some(client) = client else {
            return Err(format!("cannot fetch {shown}: no http client"));
        };
        tokio::time::timeout(timeout, from_url(client, source))
            .await
            .map_err(|_| format!("fetching {shown} took longer than {timeout:?}"))??
    } else {
        let path = source.to_owned();
        let read = tokio::task::spawn_blocking(move || read_bounded(&path))
            .await
            .map_err(|e| format!("reading {source}: {e}"))?;
        read?
    };
    String::from_utf8(bytes).map_err(|_| format!("{shown} is not UTF-8 text"))
}

fn is_url(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

/// The document's source as it may be shown: a URL without its userinfo or query, a path as it is.
pub(super) fn shown(source: &str) -> String {
    if is_url(source) {
        handlers::shown_url_text(source)
    } else {
        source.to_owned()
    }
}

async fn from_url(client: &crate::egress::Client, url: &str) -> Result<Vec<u8>, String> {
    let shown = handlers::shown_url_text(url);
    let response = client
        .request(reqwest::Method::GET, url)
        .map_err(|e| format!("fetching {shown}: {e}"))?
        .header(
            reqwest::header::ACCEPT,
            "application/json, application/yaml, */*",
        )
        .send()
        .await
        .map_err(|e| format!("fetching {shown}: {}", handlers::error_chain(&e)))?;
    if !response.status().is_success() {
        return Err(format!("fetching {shown}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| format!("fetching {shown}: {}", handlers::error_chain(&e)))?;
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{shown} is larger than {MAX_DOCUMENT_BYTES} bytes"));
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
