//! The 2024-11-05 HTTP+SSE transport: a GET event stream whose first `endpoint` event names the URI to
//! POST messages to; every answer arrives as a `message` event on the stream. Requests are multiplexed on
//! the stream with the same id table as stdio; the end of the stream is the end of the session.

use std::sync::{Arc, OnceLock};

use protocol::Generation;
use protocol::payload::InitializeResult;
use protocol::shape::Failure;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::value::RawValue;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::event_stream::EventStream;
use super::{Poster, error_body, is_outage, json_headers, thread_client};
use crate::description::{ServerDescription, TransportKind};
use crate::handshake;
use crate::inbound::Inbound;
use crate::link::context::{Connected, Lifeline, LinkContext, Unanswered, Verdict, not_sent};
use crate::outbox::{CancelGuard, Outbox};
use crate::pending::{Lost, Pending, Reply};
use crate::request::BackendRequest;
use crate::wire;

/// A session over HTTP+SSE.
#[derive(Debug, Clone)]
pub(crate) struct SseLink(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    ctx: Arc<LinkContext>,
    client: reqwest::Client,
    endpoint: Url,
    pending: Arc<Pending>,
    outbox: Arc<EndpointOutbox>,
    generation: OnceLock<Generation>,
    /// Stops the stream reader, which ends the session.
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Why an HTTP+SSE connect failed.
pub(super) enum Refused {
    /// The URL does not answer GET with an event stream that names an endpoint.
    NotSse(String),
    /// The backend cannot serve now.
    Outage(String),
    /// The handshake failed.
    Failed(String),
}

/// Opens the stream, waits for the endpoint, and runs `initialize` over it.
pub(super) async fn connect(
    ctx: &Arc<LinkContext>,
    client: &reqwest::Client,
    url: &Url,
) -> Result<Connected<SseLink>, Refused> {
    let deadline = Instant::now() + ctx.config.connect_timeout;
    let opened = tokio::time::timeout_at(deadline, open(client, url, &ctx.config)).await;
    let (events, endpoint) = match opened {
        Ok(result) => result?,
        Err(_) => {
            return Err(Refused::Outage(format!(
                "no endpoint event within {} ms",
                ctx.config.connect_timeout.as_millis()
            )));
        }
    };
    let pending = Pending::new();
    let lifeline = Lifeline::default();
    let stop = CancellationToken::new();
    let outbox = Arc::new(EndpointOutbox {
        poster: Poster::start(
            client.clone(),
            Arc::from(ctx.name()),
            ctx.config.credential.clone(),
        ),
        endpoint: endpoint.clone(),
    });
    let inbound = Inbound::new(
        ctx.notifier.clone(),
        Some(Arc::clone(&pending)),
        Some(Arc::clone(&outbox) as Arc<dyn Outbox>),
    );
    actix_rt::spawn(read_stream(
        events,
        inbound,
        Arc::clone(&pending),
        lifeline.clone(),
        stop.clone(),
    ));
    let link = SseLink(Arc::new(Inner {
        ctx: Arc::clone(ctx),
        client: client.clone(),
        endpoint,
        pending,
        outbox,
        generation: OnceLock::new(),
        stop,
    }));
    let (generation, init) = link.initialize(deadline).await?;
    let _ = link.0.generation.set(generation);
    // The endpoint's path only: its query holds the backend's session id, a credential.
    info!(backend = %ctx.name(), %generation, endpoint = %link.0.endpoint.path(), "http+sse session initialized");
    Ok(Connected {
        link,
        description: Arc::new(ServerDescription::from_initialize(
            init,
            generation,
            TransportKind::HttpSse,
        )),
        verdict: Verdict::LegacySse,
        lifeline,
    })
}

/// GETs the event stream and reads it up to the `endpoint` event.
async fn open(
    client: &reqwest::Client,
    url: &Url,
    config: &crate::BackendConfig,
) -> Result<(EventStream, Url), Refused> {
    let credential = &config.credential;
    let response = client
        .get(url.clone())
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .headers(credential.headers())
        .send()
        .await
        .map_err(|e| {
            Refused::Outage(format!(
                "opening the event stream failed: {}",
                super::chain(&e)
            ))
        })?;
    if let Some(refused) =
        super::edge::redirect_refusal(response.status(), response.headers(), response.url())
    {
        return Err(Refused::Outage(refused));
    }
    let status = response.status();
    if is_outage(status) {
        return Err(Refused::Outage(format!("GET answered HTTP {status}")));
    }
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
    if status != StatusCode::OK || !is_stream {
        return Err(Refused::NotSse(format!("GET answered HTTP {status}")));
    }
    let mut events = EventStream::new(response, config.max_message_bytes);
    loop {
        match events.next().await {
            Some(Ok(event)) if event.event == "endpoint" => {
                let endpoint = url.join(event.data.trim()).map_err(|e| {
                    debug!(endpoint = %event.data, "the backend's endpoint event is no url");
                    Refused::NotSse(format!("invalid endpoint: {e}"))
                })?;
                // Messages go to the backend that was configured, never elsewhere.
                if endpoint.origin() != url.origin() {
                    return Err(Refused::Failed(format!(
                        "the endpoint {} is not on the backend's origin",
                        super::edge::shown_url(&endpoint)
                    )));
                }
                return Ok((events, endpoint));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(Refused::NotSse(e.to_string())),
            None => {
                return Err(Refused::NotSse(
                    "the event stream ended before the endpoint event".to_owned(),
                ));
            }
        }
    }
}

/// Routes `message` events until the stream ends or the session is stopped.
async fn read_stream(
    mut events: EventStream,
    inbound: Inbound,
    pending: Arc<Pending>,
    lifeline: Lifeline,
    stop: CancellationToken,
) {
    let lost = loop {
        let event = tokio::select! {
            () = stop.cancelled() => break Lost::Closed("the session was closed".to_owned()),
            event = events.next() => event,
        };
        match event {
            Some(Ok(event)) if event.is_message() => inbound.text(event.data.as_bytes()),
            Some(Ok(_)) => {}
            Some(Err(e)) => break Lost::Crashed(e.to_string()),
            None => break Lost::Crashed("the backend's event stream ended".to_owned()),
        }
    };
    debug!(?inbound, reason = lost.reason(), "http+sse stream closed");
    lifeline.cut(lost.reason());
    pending.close(lost);
}

impl SseLink {
    async fn initialize(
        &self,
        deadline: Instant,
    ) -> Result<(Generation, InitializeResult), Refused> {
        let params = self.0.ctx.initialize_params();
        let reply = self
            .request("initialize", Some(&params), deadline, false)
            .await
            .map_err(|u| Refused::Failed(format!("initialize: {}", self.0.ctx.unanswered(u))))?;
        let (generation, init) = handshake::judge_initialize(reply).map_err(Refused::Failed)?;
        let initialized = wire::notification("notifications/initialized", None);
        self.post(initialized)
            .await
            .map_err(|e| Refused::Failed(format!("notifications/initialized: {e}")))?;
        Ok((generation, init))
    }

    /// One request, answered by `deadline`; a timed-out or abandoned request is cancelled.
    pub(crate) async fn call(
        &self,
        mut request: BackendRequest,
        deadline: Instant,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &*self.0.ctx;
        let generation = self
            .0
            .generation
            .get()
            .copied()
            .unwrap_or(Generation::V2024_11_05);
        let params = ctx.params_for(generation, &mut request)?;
        match self
            .request(request.wire_name(), params.as_deref(), deadline, true)
            .await
        {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(ctx.backend_error(generation, request.method, error)),
            Err(u) => Err(ctx.unanswered(u)),
        }
    }

    async fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        deadline: Instant,
        cancellable: bool,
    ) -> Result<Reply, Unanswered> {
        let mut waiter = self.0.pending.register().map_err(not_sent)?;
        let id = waiter.id();
        let mut guard = CancelGuard::new(&*self.0.outbox, id, cancellable);
        let exchange = async {
            self.post(wire::request(id, method, params))
                .await
                .map_err(Unanswered::Failed)?;
            waiter.answer().await.map_err(Unanswered::from)
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(outcome) => {
                guard.disarm();
                outcome
            }
            Err(_) => {
                guard.timed_out();
                Err(Unanswered::Timeout)
            }
        }
    }

    /// POSTs one message to the endpoint; the answer, if any, comes on the stream.
    async fn post(&self, message: Vec<u8>) -> Result<(), String> {
        let inner = &*self.0;
        let response = thread_client(&inner.ctx, &inner.client)
            .post(inner.endpoint.clone())
            .headers(json_headers())
            .headers(inner.ctx.config.credential.headers())
            .body(message)
            .send()
            .await
            .map_err(|e| format!("posting to the backend failed: {}", super::chain(&e)))?;
        if let Some(refused) =
            super::edge::redirect_refusal(response.status(), response.headers(), response.url())
        {
            return Err(refused);
        }
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body = error_body(response).await;
        Err(match handshake::error_in_body(&body) {
            Some(error) => format!("the backend answered HTTP {status}: {error}"),
            None => format!("the backend answered HTTP {status}"),
        })
    }

    /// Ends the session: the stream is dropped and in-flight requests are answered at once.
    pub(crate) fn close(&self) {
        self.0
            .pending
            .close(Lost::Closed("the backend was shut down".to_owned()));
        self.0.stop.cancel();
    }
}

/// Best-effort messages POSTed to the session's endpoint.
#[derive(Debug)]
struct EndpointOutbox {
    poster: Poster,
    endpoint: Url,
}

impl Outbox for EndpointOutbox {
    fn deliver(&self, message: Vec<u8>) -> bool {
        self.poster
            .post(self.endpoint.clone(), json_headers(), message)
    }
}
