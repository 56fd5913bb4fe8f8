//! Legacy Streamable HTTP backends (2025-03-26 … 2025-11-25): the `initialize` handshake, the
//! `Mcp-Session-Id` it returns, `MCP-Protocol-Version` on later requests (2025-06-18+), re-initialisation
//! on a 404 (once per request), the GET stream for unsolicited notifications, `notifications/cancelled` for
//! abandoned requests, and DELETE of the session on shutdown.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use protocol::Generation;
use protocol::headers::names;
use protocol::payload::InitializeResult;
use protocol::session_id::ShortId;
use protocol::shape::Failure;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::{
    Exchange, Poster, ReadError, SizeLimits, error_body, is_outage, json_headers, read_reply,
    status_failure, version_header,
};
use crate::description::{ServerDescription, TransportKind};
use crate::handshake::{self, modern_refusal_in_body};
use crate::inbound::Inbound;
use crate::link::context::{Connected, Lifeline, LinkContext, Renew, Verdict};
use crate::outbox::{CancelGuard, Outbox};
use crate::request::BackendRequest;
use crate::wire;

mod principals;
mod streams;

use principals::Principals;
use streams::listen;

/// How long the DELETE of a session at shutdown may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// A legacy session with a Streamable HTTP backend.
#[derive(Debug, Clone)]
pub(crate) struct LegacyLink(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    ctx: Arc<LinkContext>,
    client: reqwest::Client,
    url: Url,
    /// The data path's requests in the shared session (`exchange`); `client` serves the handshake, the
    /// GET stream, best-effort posts and the principals' own sessions.
    exchange: Exchange,
    session: RwLock<Session>,
    last_id: AtomicI64,
    poster: Poster,
    /// Cancellations and answers to the backend's requests, posted with the current session's headers.
    outbox: Arc<dyn Outbox>,
    /// Messages on response streams and the GET stream.
    inbound: Inbound,
    /// Stops the GET stream.
    listening: CancellationToken,
    /// Woken when the session is renewed, so that the GET stream follows it.
    renewed: Arc<Notify>,
    /// Sessions of principals whose requests carry their own credential.
    principals: Principals,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listening.cancel();
    }
}

/// What `initialize` settled.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Session {
    id: Option<String>,
    generation: Generation,
    /// The gateway's credential towards the backend, on every request of the session.
    credential: crate::Credential,
    /// A principal's own session (`principals`): a 401 or 403 there is that principal's, not an outage.
    own: bool,
}

/// Why a legacy handshake failed.
pub(super) enum Refused {
    /// 400, 404 or 405 without a modern error body: maybe an HTTP+SSE backend.
    NotStreamable(String),
    /// The backend cannot serve now.
    Outage(String),
    /// The backend refused the handshake.
    Failed(String),
    /// 401 or 403: the credential was refused (an outage for the gateway's own; for a principal's own
    /// session, that principal's token — [`Failure::Unauthorized`]).
    Credential {
        /// The outage's wording.
        why: String,
        /// The status.
        status: u16,
        /// The `WWW-Authenticate` challenge, if any (bounded).
        challenge: Option<String>,
    },
}

/// Runs the handshake and starts the session's GET stream.
pub(super) async fn connect(
    ctx: &Arc<LinkContext>,
    client: &reqwest::Client,
    url: &Url,
) -> Result<Connected<LegacyLink>, Refused> {
    let exchange = Exchange::new(ctx, url).map_err(Refused::Outage)?;
    let last_id = AtomicI64::new(0);
    let (session, init) =
        initialize(ctx, client, url, &last_id, ctx.config.credential.clone()).await?;
    info!(backend = %ctx.name(), generation = %session.generation, session = ?session.id.as_deref().map(ShortId),
        "legacy streamable http session initialized");
    let description = Arc::new(ServerDescription::from_initialize(
        init,
        session.generation,
        TransportKind::StreamableHttp,
    ));
    let poster = Poster::start(
        client.clone(),
        Arc::from(ctx.name()),
        ctx.config.credential.clone(),
    );
    let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
        let outbox: Arc<dyn Outbox> = Arc::new(SessionOutbox(weak.clone()));
        Inner {
            ctx: Arc::clone(ctx),
            client: client.clone(),
            url: url.clone(),
            exchange,
            session: RwLock::new(session),
            last_id,
            poster,
            inbound: Inbound::new(ctx.notifier.clone(), None, Some(Arc::clone(&outbox))),
            outbox,
            listening: CancellationToken::new(),
            renewed: Arc::new(Notify::new()),
            principals: Principals::default(),
        }
    });
    actix_rt::spawn(listen(
        Arc::downgrade(&inner),
        inner.listening.clone(),
        Arc::clone(&inner.renewed),
    ));
    Ok(Connected {
        link: LegacyLink(inner),
        description,
        verdict: Verdict::Legacy,
        lifeline: Lifeline::default(),
    })
}

/// POSTs `initialize` then `notifications/initialized`.
async fn initialize(
    ctx: &LinkContext,
    client: &reqwest::Client,
    url: &Url,
    last_id: &AtomicI64,
    credential: crate::Credential,
) -> Result<(Session, InitializeResult), Refused> {
    let id = last_id.fetch_add(1, Ordering::Relaxed) + 1;
    let params = ctx.initialize_params();
    let body = wire::request(id, "initialize", Some(&params));
    let limit = ctx.config.connect_timeout;
    let handshake = async {
        let response = client
            .post(url.clone())
            .headers(json_headers())
            .headers(credential.headers())
            .body(body)
            .send()
            .await
            .map_err(|e| Refused::Outage(format!("initialize failed: {}", super::chain(&e))))?;
        if let Some(refused) =
            super::edge::redirect_refusal(response.status(), response.headers(), response.url())
        {
            return Err(Refused::Outage(refused));
        }
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Refused::Credential {
                why: format!("initialize answered HTTP {status}"),
                status: status.as_u16(),
                challenge: super::challenge_of(response.headers()),
            });
        }
        if is_outage(status) {
            return Err(Refused::Outage(format!(
                "initialize answered HTTP {status}"
            )));
        }
        if status != StatusCode::OK {
            let body = error_body(response).await;
            if let Some(why) = modern_refusal_in_body(&body) {
                return Err(Refused::Failed(why));
            }
            let why = format!("initialize answered HTTP {status}");
            return Err(match status.as_u16() {
                400 | 404 | 405 => Refused::NotStreamable(why),
                _ => Refused::Failed(why),
            });
        }
        let session_id = response
            .headers()
            .get(names::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let inbound = Inbound::new(ctx.notifier.clone(), None, None);
        let reply = read_reply(response, id, &inbound, SizeLimits::of(ctx))
            .await
            .map_err(|e| Refused::Failed(format!("initialize: {e}")))?;
        let (generation, init) = handshake::judge_initialize(reply).map_err(Refused::Failed)?;
        let session = Session {
            id: session_id,
            generation,
            credential,
            own: false,
        };
        let initialized = wire::notification("notifications/initialized", None);
        let response = client
            .post(url.clone())
            .headers(session.headers())
            .body(initialized)
            .send()
            .await
            .map_err(|e| {
                Refused::Outage(format!(
                    "notifications/initialized failed: {}",
                    super::chain(&e)
                ))
            })?;
        if !response.status().is_success() {
            return Err(Refused::Failed(format!(
                "notifications/initialized answered HTTP {}",
                response.status()
            )));
        }
        Ok((session, init))
    };
    match tokio::time::timeout(limit, handshake).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Refused::Outage(format!(
            "no answer to initialize within {} ms",
            limit.as_millis()
        ))),
    }
}

impl Session {
    /// The JSON headers plus the session id and, from 2025-06-18, the negotiated protocol version.
    fn headers(&self) -> HeaderMap {
        let mut h = json_headers();
        self.credential.apply(&mut h);
        if let Some(value) = self
            .id
            .as_deref()
            .and_then(|id| HeaderValue::from_str(id).ok())
        {
            h.insert(names::SESSION_ID, value);
        }
        if self.generation.has_protocol_version_header() {
            h.insert(names::PROTOCOL_VERSION, version_header(self.generation));
        }
        h
    }
}

/// One attempt's outcome: done, or the session expired (404) and may be renewed.
enum Attempt {
    Done(Result<Box<RawValue>, Failure>),
    Expired(Option<String>),
}

impl Inner {
    fn session(&self) -> Session {
        self.session
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl LegacyLink {
    fn session(&self) -> Session {
        self.0.session()
    }

    /// The current session id.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.session().id
    }

    /// One request, answered by `deadline`. A 404 on the session renews it (through `renew`) and retries
    /// once; a request that times out or is abandoned is cancelled with `notifications/cancelled`.
    pub(crate) async fn call(
        &self,
        mut request: BackendRequest,
        deadline: Instant,
        renew: Option<Renew>,
    ) -> Result<Box<RawValue>, Failure> {
        let ctx = &*self.0.ctx;
        // A request with its own credential goes in its principal's session, never in the shared one.
        let own = request.credential.take();
        let params = ctx.params_for(self.session().generation, &mut request)?;
        let method = (request.method, request.wire_name());
        let inbound = self.0.inbound.for_request(&mut request, deadline);
        let trace = request.trace.as_ref();
        if let Some(credential) = own {
            // Boxed, like every path below that a warm shared session does not take: inline, their state
            // would be carried by every call's future.
            return Box::pin(self.call_as(
                credential,
                method.0,
                params.as_deref(),
                trace,
                deadline,
                &inbound,
            ))
            .await;
        }
        let first = self
            .attempt(method, params.as_deref(), trace, deadline, &inbound)
            .await;
        let stale = match first {
            Attempt::Done(outcome) => return outcome,
            Attempt::Expired(stale) => stale,
        };
        let Some(renew) = renew else {
            return Err(ctx.unavailable("the backend session expired"));
        };
        debug!(backend = %ctx.name(), session = ?stale.as_deref().map(ShortId), "backend session expired: renewing it");
        match tokio::time::timeout_at(deadline, renew(stale)).await {
            Ok(Ok(())) => {}
            Ok(Err(failure)) => return Err(failure),
            Err(_) => return Err(ctx.timeout()),
        }
        match Box::pin(self.attempt(method, params.as_deref(), trace, deadline, &inbound)).await {
            Attempt::Done(outcome) => outcome,
            Attempt::Expired(_) => Err(ctx.unavailable("the backend session expired again")),
        }
    }

    async fn attempt(
        &self,
        method: (protocol::Method, &'static str),
        params: Option<&RawValue>,
        trace: Option<&crate::TraceContext>,
        deadline: Instant,
        inbound: &Inbound,
    ) -> Attempt {
        let outbox = Arc::clone(&self.0.outbox);
        self.attempt_in(
            self.session(),
            &outbox,
            method,
            params,
            trace,
            deadline,
            inbound,
        )
        .await
    }

    /// One attempt in `session`.
    /// One request in `session`; its cancellation, and the answers to what the backend asks on its stream
    /// (`inbound` delivers them to `outbox`), go in that session too.
    #[allow(clippy::too_many_arguments)] // the request, and the session it goes in
    async fn attempt_in(
        &self,
        session: Session,
        outbox: &Arc<dyn Outbox>,
        (method, wire): (protocol::Method, &'static str),
        params: Option<&RawValue>,
        trace: Option<&crate::TraceContext>,
        deadline: Instant,
        inbound: &Inbound,
    ) -> Attempt {
        let inner = &*self.0;
        let ctx = &*inner.ctx;
        let id = inner.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let body = wire::request(id, wire, params);
        let mut guard = CancelGuard::new(&**outbox, id, true);
        let mut headers = session.headers();
        if let Some(trace) = trace {
            trace.apply(&mut headers);
        }
        let exchange = async {
            // Sent once more only if it never reached the backend (`exchange`).
            let response = inner
                .exchange
                .post(ctx, headers, body)
                .await
                .map_err(|reason| ctx.unavailable(reason));
            let response = match response {
                Ok(r) => r,
                Err(failure) => return Attempt::Done(Err(failure)),
            };
            if session.own
                && let Some(refused) = super::refused_credential(ctx, &response)
            {
                return Attempt::Done(Err(refused));
            }
            let status = response.status();
            if status == StatusCode::NOT_FOUND && session.id.is_some() {
                return Attempt::Expired(session.id.clone());
            }
            if status != StatusCode::OK {
                let failure = Box::pin(status_failure(
                    ctx,
                    session.generation,
                    method,
                    response,
                    &inner.url,
                ))
                .await;
                return Attempt::Done(Err(failure));
            }
            let reply = match read_reply(response, id, inbound, SizeLimits::of(ctx)).await {
                Err(ReadError::Ended(Some(resume))) => {
                    Box::pin(self.resume(&session, id, resume, inbound)).await
                }
                other => other,
            };
            Attempt::Done(match reply {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(error)) => Err(ctx.backend_error(session.generation, method, error)),
                Err(e) => Err(e.into_failure(ctx)),
            })
        };
        match tokio::time::timeout_at(deadline, exchange).await {
            Ok(attempt) => {
                guard.disarm();
                attempt
            }
            Err(_) => {
                guard.timed_out();
                Attempt::Done(Err(ctx.timeout()))
            }
        }
    }

    /// Replaces the session with a fresh `initialize`; what the backend said this time.
    pub(crate) async fn reinitialize(&self) -> Result<Arc<ServerDescription>, String> {
        let inner = &*self.0;
        let (session, init) = initialize(
            &inner.ctx,
            &inner.client,
            &inner.url,
            &inner.last_id,
            inner.ctx.config.credential.clone(),
        )
        .await
        .map_err(|r| match r {
            Refused::NotStreamable(why)
            | Refused::Outage(why)
            | Refused::Failed(why)
            | Refused::Credential { why, .. } => why,
        })?;
        info!(backend = %inner.ctx.name(), session = ?session.id.as_deref().map(ShortId), "backend session renewed");
        let generation = session.generation;
        *inner
            .session
            .write()
            .unwrap_or_else(PoisonError::into_inner) = session;
        inner.renewed.notify_waiters();
        Ok(Arc::new(ServerDescription::from_initialize(
            init,
            generation,
            TransportKind::StreamableHttp,
        )))
    }

    /// Ends the session: stops the GET stream and DELETEs the session (best effort, in the background).
    pub(crate) fn close(&self) {
        self.0.listening.cancel();
        self.delete(self.session());
        for session in self.0.principals.drain() {
            self.delete(session);
        }
    }
}

/// Posts best-effort messages with the session's current headers.
#[derive(Debug)]
struct SessionOutbox(Weak<Inner>);

impl Outbox for SessionOutbox {
    fn deliver(&self, message: Vec<u8>) -> bool {
        let Some(inner) = self.0.upgrade() else {
            return false;
        };
        let headers = inner.session().headers();
        inner.poster.post(inner.url.clone(), headers, message)
    }
}
