//! OpenAPI backends (`[[backend]] openapi`): a REST API's operations as MCP tools, served in-process behind
//! the same `BackendHandle` as every backend (`handlers::InProcessServer`), so the catalog, policy, limits,
//! metrics, deadlines and circuit breakers apply unchanged.
//!
//! The server fetches and translates the document (crate `openapi`, pure) when the backend connects — at
//! start, after a reload (an openapi backend is always started again, so a changed document is a catalog
//! change) and after a reconnect — and answers `server/discover`, `tools/list` and `tools/call`. A call is
//! the HTTP request its operation describes, sent with the backend's TLS settings and credential, bounded
//! in size, never redirected to another origin; its deadline is the backend's (the link drops the request's
//! future). Whatever the API answers, and a transport failure, is a tool result: a 4xx/5xx or a failure is a
//! tool error (`isError: true`), as the founding error model wants.
//!
//! It must not let arguments choose the host or set credentials, cookies or hop headers (the translation
//! refuses such parameters), and must not hold its lock across an `.await`.

mod fetch;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use handlers::{Credential, InProcessAnswer, InProcessServer, TlsClient};
use protocol::method::Method;
use protocol::payload::Implementation;
use protocol::shape::{CachePolicy, Stamp, response_bytes, shape};
use protocol::{Error, ErrorCode, Generation, Request, RequestId, Response};
use serde_json::{Map, Value, json};

use crate::config::SelectionEntry;

const MODERN: Generation = Generation::V2026_07_28;

/// The largest request body a call sends.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// The largest answer a call reads; a longer one is a tool error.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Redirects a call follows at most (all to the API's own origin).
const MAX_REDIRECTS: usize = 5;
/// How long parsing and translating a fetched document may take.
const TRANSLATE_DEADLINE: Duration = Duration::from_secs(30);

/// What an openapi backend is configured with.
#[derive(Debug, Clone)]
pub struct OpenApiBackend {
    /// The backend's name (for logs).
    pub name: String,
    /// The document: a file path or an http(s) URL.
    pub document: String,
    /// Where the API is.
    pub base_url: String,
    /// Which operations become tools, by tool name.
    pub operations: Option<SelectionEntry>,
    /// The backend's TLS settings (for the document's URL and the API).
    pub tls: TlsClient,
    /// The backend's credential (`[backend.auth]`), sent with every call.
    pub credential: Credential,
    /// How long fetching the document may take.
    pub connect_timeout: Duration,
    /// The egress rule a document's URL is fetched under.
    pub egress: Arc<crate::egress::Egress>,
}

/// The in-process server of one openapi backend.
#[derive(Debug, Clone)]
pub struct OpenApiServer(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    config: OpenApiBackend,
    base_url: Result<reqwest::Url, String>,
    /// The API's client: `Err` says why it cannot be built.
    client: Result<reqwest::Client, String>,
    /// The document's client, under the egress rule (`Err` for a file, or why it cannot be built).
    document_client: Result<crate::egress::Client, String>,
    /// The document as last translated (set when the backend connects).
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// A translated document.
#[derive(Debug)]
struct Loaded {
    /// The Tool objects, in the document's order.
    tools: Vec<Value>,
    operations: HashMap<String, openapi::Operation>,
    /// The document's title and version as the server's `serverInfo`.
    stamp: Stamp,
}

impl OpenApiServer {
    /// The server of `config` (nothing is fetched until the backend connects).
    pub fn new(config: OpenApiBackend) -> OpenApiServer {
        let base_url =
            reqwest::Url::parse(&config.base_url).map_err(|e| format!("invalid base_url: {e}"));
        let origin = base_url.as_ref().ok().cloned();
        let client = handlers::rest_client(
            &config.tls,
            &config.base_url,
            config.connect_timeout,
            move |next: &reqwest::Url| origin.as_ref().is_some_and(|o| same_origin(o, next)),
            MAX_REDIRECTS,
        );
        let document_client = if config.document.starts_with("http://")
            || config.document.starts_with("https://")
        {
            // As before the rule: redirects followed to the API's own origin only.
            let origin = base_url.as_ref().ok().cloned();
            crate::egress::Client::following(
                &config.egress,
                crate::egress::Origin::Configured,
                &config.tls,
                &config.document,
                config.connect_timeout,
                move |next: &reqwest::Url| origin.as_ref().is_some_and(|o| same_origin(o, next)),
                MAX_REDIRECTS,
            )
        } else {
            Err("the document is a file".to_owned())
        };
        OpenApiServer(Arc::new(Inner {
            config,
            base_url,
            client,
            document_client,
            loaded: Mutex::new(None),
        }))
    }
}

/// Whether `next` is on `origin`'s scheme, host and port.
fn same_origin(origin: &reqwest::Url, next: &reqwest::Url) -> bool {
    origin.scheme() == next.scheme()
        && origin.host_str() == next.host_str()
        && origin.port_or_known_default() == next.port_or_known_default()
}

impl InProcessServer for OpenApiServer {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let inner = Arc::clone(&self.0);
        handlers::answer_requests(message, move |request| async move {
            inner.answer(&request).await
        })
    }
}

/// A JSON-RPC error response.
fn error(id: Option<&RequestId>, err: Error) -> Vec<u8> {
    response_bytes(&Response::error(id.cloned(), err), MODERN)
}

impl Inner {
    async fn answer(&self, request: &Request) -> Vec<u8> {
        let Some(method) = Method::parse(&request.method).filter(|m| m.exists_in(MODERN)) else {
            return error(
                Some(&request.id),
                Error::new(
                    ErrorCode::MethodNotFound,
                    format!("method not found: {}", request.method),
                ),
            );
        };
        // Connecting (discover) fetches the document again; the other methods use the one in hand.
        let loaded = match self.loaded(method == Method::ServerDiscover).await {
            Ok(loaded) => loaded,
            Err(why) => {
                return error(Some(&request.id), Error::new(ErrorCode::InternalError, why));
            }
        };
        let result = match method {
            Method::ServerDiscover => json!({
                "supportedVersions": [MODERN.as_str()],
                "capabilities": {"tools": {}},
            }),
            Method::Ping => json!({}),
            Method::ToolsList => json!({"tools": loaded.tools}),
            Method::ToolsCall => self.call(&loaded, request).await,
            other => {
                return error(
                    Some(&request.id),
                    Error::new(
                        ErrorCode::MethodNotFound,
                        format!("method not found: {other} (an openapi backend serves tools)"),
                    ),
                );
            }
        };
        match serde_json::value::to_raw_value(&result) {
            Ok(raw) => shape(&request.id, method, MODERN, Ok(&raw), &loaded.stamp).body,
            Err(e) => error(
                Some(&request.id),
                Error::new(ErrorCode::InternalError, e.to_string()),
            ),
        }
    }

    /// The translated document: fetched and translated now when `again` or when none is in hand.
    async fn loaded(&self, again: bool) -> Result<Arc<Loaded>, String> {
        if !again {
            let kept = self
                .loaded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(loaded) = kept {
                return Ok(loaded);
            }
        }
        let text = fetch::document(
            &self.config.document,
            self.document_client.as_ref().ok(),
            self.config.connect_timeout,
        )
        .await?;
        // Parsed and translated on a blocking thread, never on the arbiter that serves the other backends
        // and the clients: bounded in what it may build (`openapi::MAX_ALIAS_NODES`,
        // `openapi::MAX_DOCUMENT_VALUES`) and waited for at most `TRANSLATE_DEADLINE`.
        let config = self.config.clone();
        let translating = tokio::task::spawn_blocking(move || translate(&config, &text));
        let loaded = match tokio::time::timeout(TRANSLATE_DEADLINE, translating).await {
            Ok(Ok(translated)) => Arc::new(translated?),
            Ok(Err(e)) => return Err(format!("translating the openapi document failed: {e}")),
            Err(_) => {
                return Err(format!(
                    "openapi document {}: not translated within {} s",
                    fetch::shown(&self.config.document),
                    TRANSLATE_DEADLINE.as_secs()
                ));
            }
        };
        *self.loaded.lock().unwrap_or_else(PoisonError::into_inner) = Some(loaded.clone());
        Ok(loaded)
    }

    /// A `tools/call`: the operation's HTTP request, its answer as the tool's result; everything that goes
    /// wrong is a tool error.
    async fn call(&self, loaded: &Loaded, request: &Request) -> Value {
        #[derive(serde::Deserialize)]
        struct Params {
            name: String,
            #[serde(default)]
            arguments: Option<Map<String, Value>>,
        }
        let params = match request.params_as::<Params>() {
            Ok(p) => p,
            Err(e) => return tool_error(&e.to_string()),
        };
        let Some(operation) = loaded.operations.get(&params.name) else {
            return tool_error(&format!("no operation {} in the document", params.name));
        };
        let (Ok(base), Ok(client)) = (&self.base_url, &self.client) else {
            let why = self.base_url.as_ref().err().or(self.client.as_ref().err());
            return tool_error(why.map_or("the API cannot be reached", String::as_str));
        };
        let arguments = params.arguments.unwrap_or_default();
        let http = match operation.request(base, &arguments) {
            Ok(http) => http,
            Err(e) => return tool_error(&e.to_string()),
        };
        if http
            .body
            .as_ref()
            .is_some_and(|b| b.len() > MAX_REQUEST_BYTES)
        {
            return tool_error(&format!(
                "the request body is larger than {MAX_REQUEST_BYTES} bytes"
            ));
        }
        let mut builder = client.request(http.method, http.url);
        for (name, value) in http.headers {
            builder = builder.header(name, value);
        }
        builder = builder.headers(self.config.credential.headers());
        if let Some(body) = http.body {
            // Its `Content-Type` is among the request's headers.
            builder = builder.body(body);
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => {
                return tool_error(&format!(
                    "the API did not answer: {}",
                    handlers::error_chain(&e)
                ));
            }
        };
        let status = response.status();
        if status.is_redirection() {
            // Its target's host only: the path and query are the API's to keep.
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|location| response.url().join(location).ok())
                .and_then(|to| to.host_str().map(str::to_owned))
                .unwrap_or_else(|| "an unnamed place".to_owned());
            return tool_error(&format!(
                "HTTP {status}: a redirect to {to} was not followed (only the API's own origin is)"
            ));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match bounded_body(response).await {
            Ok(body) => body,
            Err(why) => return tool_error(&why),
        };
        operation.result(status.as_u16(), content_type.as_deref(), &body)
    }
}

/// The document's tools and operations (on a blocking thread: a large document takes a while).
fn translate(config: &OpenApiBackend, text: &str) -> Result<Loaded, String> {
    let name = &config.name;
    let shown = fetch::shown(&config.document);
    let document =
        openapi::Document::parse(text).map_err(|e| format!("openapi document {shown}: {e}"))?;
    let selected = |tool: &str| config.operations.as_ref().is_none_or(|s| s.selects(tool));
    let translation = document
        .tools(&selected)
        .map_err(|e| format!("openapi document {shown}: {e}"))?;
    for refused in &translation.refused {
        tracing::warn!(backend = %name, operation = %refused.operation, why = %refused.why,
            "openapi operation not offered as a tool");
    }
    let info = Implementation {
        name: document.title().to_owned(),
        version: document.version().to_owned(),
        ..Implementation::default()
    };
    let tools = translation
        .operations
        .iter()
        .map(|o| o.tool.clone())
        .collect();
    let operations = translation
        .operations
        .into_iter()
        .map(|o| (o.name.clone(), o))
        .collect();
    tracing::info!(backend = %name, document = %shown, "openapi document translated");
    Ok(Loaded {
        stamp: Stamp::new(&info, CachePolicy::NONE),
        tools,
        operations,
    })
}

/// The answer's body, at most [`MAX_RESPONSE_BYTES`].
async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, String> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
    {
        return Err(format!(
            "the API's answer is larger than {MAX_RESPONSE_BYTES} bytes"
        ));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| format!("the API's answer broke off: {}", handlers::error_chain(&e)))?;
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(format!(
                "the API's answer is larger than {MAX_RESPONSE_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A tool error result saying `why`.
fn tool_error(why: &str) -> Value {
    json!({"content": [{"type": "text", "text": why}], "isError": true})
}
