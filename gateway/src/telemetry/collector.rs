//! The OTLP exporter's HTTP client: the workspace's reqwest (rustls with ring, no second TLS stack) behind
//! opentelemetry-http's `HttpClient`, each export run on a small tokio runtime of its own.
//!
//! The SDK's batch processor exports from its own thread with a blocking executor, where no tokio runtime
//! runs: the request is spawned on this client's runtime and awaited from there. It must never run on, or
//! block, an actix arbiter; a collector that is down costs a refused connection per batch, nothing more.

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// The client the exporter POSTs batches with.
#[derive(Debug)]
pub(crate) struct Collector {
    client: reqwest::Client,
    /// `Some` until dropped (shut down in the background: dropping a runtime inside another blocks).
    runtime: Option<tokio::runtime::Runtime>,
}

impl Collector {
    /// A client for `url` (its TLS settings from the URL's scheme: the platform's roots for `https://`),
    /// each request bounded by `timeout`.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Collector, String> {
        let client = handlers::outbound_client(&handlers::TlsClient::default(), url, timeout)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcpgw-otlp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the trace exporter's runtime: {e}"))?;
        Ok(Collector {
            client,
            runtime: Some(runtime),
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for Collector {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or("the trace exporter is shut down")?;
        let client = self.client.clone();
        let (parts, body) = request.into_parts();
        let sent = runtime.spawn(async move {
            let response = client
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                // The endpoint's query or userinfo must not reach the exporter's logs.
                .map_err(|e| handlers::error_chain(&e))?;
            let mut answer = Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                *headers = response.headers().clone();
            }
            let body = response
                .bytes()
                .await
                .map_err(|e| handlers::error_chain(&e))?;
            Ok::<_, HttpError>(answer.body(body)?)
        });
        sent.await?
    }
}
