//! Dispatch of a valid request: the methods the gateway answers itself (`ping`, `server/discover`, the
//! aggregated lists, `logging/setLevel`) and the ones it routes to the backend that owns the tool, resource,
//! prompt or completion reference, with names de-prefixed and the backend's own `Mcp-Param-*` headers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use handlers::{BackendRequest, Caller, RelatedSink};
use protocol::payload::LoggingLevel;
use protocol::raw::RawObject;
use protocol::shape::Failure;
use protocol::validate::{Call, Target};
use protocol::{Error, ErrorCode, Generation, Method};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::auth_context::AuthContext;
use crate::catalog::{CatalogSnapshot, ListKind};
use crate::pipeline::context::RequestContext;
mod asked;
mod down;
mod per_user;
pub mod replay;
mod request;
mod search;
mod state;
mod url;
pub(crate) use url::UrlAsk;

use crate::bridge::sealed_state::Holder;
use crate::pipeline::response::{Outcome, backend_outcome};
use crate::session::Session;
use crate::state::Gateway;
use state::FromState;

/// The result `_meta` key naming the backends a list or `server/discover` is missing or holds stale:
/// `{"missing": [names], "stale": [names]}` (see [`CatalogSnapshot::degraded`]).
pub const DEGRADED: &str = "io.mcpgw/degraded";

/// Everything dispatch needs besides the call: the gateway, and what it borrows of the request's context.
#[derive(Debug)]
pub struct Dispatch<'a> {
    /// The gateway.
    pub gw: &'a Arc<Gateway>,
    /// The catalog as the request may see it (its context's view: the call was validated against it).
    pub snapshot: &'a CatalogSnapshot,
    /// The generation the client speaks.
    pub generation: Generation,
    /// The legacy session, if any.
    pub session: Option<&'a Session>,
    /// Where the request's own notifications (progress, logging) go, when the client can receive them.
    pub related: Option<RelatedSink>,
    /// Who is asking: sealed states are bound to it, private cache entries keyed by it.
    pub auth: AuthContext,
    /// Who holds the single-use ids of the states it uses (its principal, else its address).
    pub holder: Holder,
    /// Who the call counts against for a backend's per-caller share (the context's caller).
    pub caller: Option<Caller>,
    /// The backend the call was routed to, once dispatch knows it (for the access log).
    pub backend: std::cell::OnceCell<String>,
    /// How long the call waited on backends so far (the metrics' gateway overhead is the rest).
    pub backend_time: std::cell::Cell<Duration>,
    /// The client's bearer token, for a backend that exchanges it (`[backend.auth] grant =
    /// "token_exchange"`).
    pub subject: Option<crate::auth::SubjectToken>,
    /// The principal (`Principal::id`), for a backend each principal authorizes itself.
    pub principal: Option<String>,
    /// The endpoint the request arrived at (its instructions in `server/discover`).
    pub endpoint: &'a Arc<crate::endpoint::Endpoint>,
    /// How the client reached the gateway (`serve --stdio` has one client).
    pub transport: crate::session::Transport,
}

impl<'a> Dispatch<'a> {
    /// The dispatch of one request in its context, for `principal` (the one the middleware chain ended
    /// with); no sink for its own notifications (see [`Dispatch::with_sink`]).
    pub(crate) fn new(
        gw: &'a Arc<Gateway>,
        request: &'a RequestContext,
        principal: Option<&crate::auth::Principal>,
    ) -> Dispatch<'a> {
        Dispatch {
            gw,
            snapshot: request.view(),
            generation: request.generation(),
            session: request.session().map(|s| &**s),
            related: None,
            auth: request.auth(),
            holder: Holder::of(principal, request.client()),
            caller: request.caller(),
            backend: std::cell::OnceCell::new(),
            backend_time: std::cell::Cell::new(Duration::ZERO),
            subject: principal.and_then(|p| p.token.clone()),
            // Only a per-user backend needs it: no allocation per request otherwise.
            principal: gw
                .oauth
                .as_ref()
                .and(principal)
                .map(crate::auth::Principal::id),
            endpoint: request.endpoint(),
            transport: request.transport(),
        }
    }

    /// Another dispatch in the same context whose request's own messages go to `sink` (a streamed answer
    /// dispatches once per round).
    pub(crate) fn with_sink(&self, sink: RelatedSink) -> Dispatch<'a> {
        Dispatch {
            gw: self.gw,
            snapshot: self.snapshot,
            generation: self.generation,
            session: self.session,
            related: Some(sink),
            auth: self.auth,
            holder: self.holder.clone(),
            caller: self.caller,
            backend: std::cell::OnceCell::new(),
            backend_time: std::cell::Cell::new(Duration::ZERO),
            subject: self.subject.clone(),
            principal: self.principal.clone(),
            endpoint: self.endpoint,
            transport: self.transport,
        }
    }
}

impl Dispatch<'_> {
    /// Runs one call to its outcome; records the backend on the current span.
    pub async fn run(&self, call: &Call) -> Outcome {
        if call.method() == Method::ResourcesRead {
            return self.read_resource(call).await;
        }
        self.run_uncached(call).await
    }

    /// `resources/read` through the gateway's cache, once the view has routed the URI: a fresh public result
    /// of the backend the view routed it to, or one private to this client's authorization context, is
    /// answered from it; a result the backend says may be reused is kept under that backend (never the
    /// result of an `input_required` retry).
    async fn read_resource(&self, call: &Call) -> Outcome {
        let (uri, backend) = match call.target() {
            Some(Target::Resource { uri, route }) => match self.snapshot.resource_at(*route) {
                Some(route) => (uri.clone(), route.backend.to_owned()),
                None => return Outcome::Error(stale_route()),
            },
            _ => return self.run_uncached(call).await,
        };
        let retry = call
            .request()
            .params
            .as_deref()
            .and_then(RawObject::parse)
            .is_some_and(|p| p.get("inputResponses").is_some() || p.get("requestState").is_some());
        let ticket = self.gw.resource_cache.ticket();
        if !retry {
            let hit = self.gw.resource_cache.get(&backend, &uri, &self.auth);
            self.gw.metrics.cache(hit.is_some());
            if let Some(hit) = hit {
                tracing::debug!(%uri, "answered from the resource cache");
                return Outcome::Result(hit);
            }
        }
        let outcome = self.run_uncached(call).await;
        if let (false, Outcome::Result(raw)) = (retry, &outcome) {
            self.gw
                .resource_cache
                .offer(ticket, &backend, &uri, &self.auth, raw);
        }
        outcome
    }

    async fn run_uncached(&self, call: &Call) -> Outcome {
        match call.method() {
            Method::Ping => raw(&json!({})),
            Method::ServerDiscover => self.discover(),
            Method::ToolsList => self.page(call, ListKind::Tools, "tools"),
            Method::PromptsList => self.page(call, ListKind::Prompts, "prompts"),
            Method::ResourcesList => self.page(call, ListKind::Resources, "resources"),
            Method::ResourcesTemplatesList => {
                self.page(call, ListKind::ResourceTemplates, "resourceTemplates")
            }
            Method::LoggingSetLevel => self.set_level(call),
            Method::ResourcesSubscribe => self.subscribe(call, true),
            Method::ResourcesUnsubscribe => self.subscribe(call, false),
            Method::ToolsCall if self.gateway_tool(call).is_some() => {
                self.answer_gateway_tool(call)
            }
            Method::ToolsCall if self.down_tool(call).is_some() => self.answer_down_tool(call),
            Method::ToolsCall
            | Method::PromptsGet
            | Method::ResourcesRead
            | Method::CompletionComplete => match self.backend_request(call) {
                Ok((
                    backend,
                    request,
                    FromState {
                        replay,
                        single_use,
                        url,
                    },
                )) => {
                    if let Err(e) = self.claim_state(single_use).await {
                        return Outcome::Error(e);
                    }
                    if let Some(url::Answered::Refused(why)) = url {
                        return url::refused(&backend, &why);
                    }
                    let request = match self.exchanged(&backend, request).await {
                        Ok(request) => request,
                        Err(failed) => return failed,
                    };
                    let (request, sent) = match self.per_user(call, &backend, request).await {
                        per_user::Prepared::Other(request) => (request, None),
                        per_user::Prepared::Ready(request) => {
                            let sent = request.clone();
                            (request, Some(sent))
                        }
                        per_user::Prepared::Answered(outcome) => return outcome,
                    };
                    let outcome = if self.replays(call, &backend) {
                        let began = Instant::now();
                        let replay = replay.unwrap_or_default();
                        let outcome = replay::forward(self, call, &backend, request, replay).await;
                        self.waited(began.elapsed());
                        outcome
                    } else {
                        let outcome = self.forward(backend.clone(), request).await;
                        self.seal_state(call, &backend, outcome)
                    };
                    let outcome = match sent {
                        Some(sent) => self.after_per_user(call, &backend, sent, outcome).await,
                        None => outcome,
                    };
                    self.url_required(call, outcome)
                }
                Err(e) => Outcome::Error(e),
            },
            other => Outcome::Error(Error::new(
                ErrorCode::MethodNotFound,
                format!("method not found: {other} is not served by this gateway"),
            )),
        }
    }

    /// The request with its principal's exchanged token, for a backend that exchanges the client's token
    /// (RFC 8693); unchanged for the others. A token that cannot be had fails the request (a tool error for
    /// `tools/call`), never sends it without one.
    async fn exchanged(
        &self,
        backend: &str,
        mut request: BackendRequest,
    ) -> Result<BackendRequest, Outcome> {
        let Some(exchanger) = self.gw.live().exchanges.get(backend).cloned() else {
            return Ok(request);
        };
        let unavailable = |reason: String| {
            Outcome::Failed(protocol::shape::Failure::Unavailable {
                backend: backend.to_owned(),
                reason,
            })
        };
        let Some(subject) = &self.subject else {
            return Err(unavailable(format!(
                "backend {backend} takes the client's exchanged token, and this request presented none"
            )));
        };
        match exchanger.credential(subject).await {
            Ok(value) => {
                request.credential = Some(value);
                Ok(request)
            }
            Err(why) => {
                tracing::warn!(%backend, %why, "the client's token could not be exchanged");
                Err(unavailable(format!(
                    "the client's token could not be exchanged for backend {backend}"
                )))
            }
        }
    }

    /// Records the backend on the request's span and for the access log.
    fn routed_to(&self, backend: &str) {
        tracing::Span::current().record("backend", backend);
        crate::telemetry::spans::record_backend(backend);
        let _ = self.backend.set(backend.to_owned());
    }

    fn discover(&self) -> Outcome {
        let mut result = json!({
            "supportedVersions": self.gw.validation.served.version_strings(),
            "capabilities": self.gw.capabilities(),
            // Not reusable, since a backend (re)connecting changes `instructions`; the same for every client
            // unless a `[[policy]]` makes what it names differ by principal.
            "ttlMs": 0,
            "cacheScope": if self.snapshot.is_private() { "private" } else { "public" },
        });
        if let Some(instructions) = self
            .endpoint
            .instructions(self.gw.instructions(self.snapshot))
        {
            result["instructions"] = Value::String(instructions);
        }
        if let Some(degraded) = self.snapshot.degraded() {
            result["_meta"] = json!({ DEGRADED: degraded });
        }
        raw(&result)
    }

    fn page(&self, call: &Call, kind: ListKind, field: &str) -> Outcome {
        #[derive(Deserialize)]
        struct Cursor {
            cursor: Option<String>,
        }
        let cursor = match call.request().params_as::<Cursor>() {
            Ok(c) => c.cursor,
            Err(e) => return Outcome::Error(e),
        };
        match self
            .snapshot
            .page(kind, cursor.as_deref(), self.gw.config.server.page_size)
        {
            Ok(page) => {
                let mut result = Map::new();
                result.insert(field.to_owned(), Value::Array(page.items));
                if let Some(next) = page.next_cursor {
                    result.insert("nextCursor".to_owned(), Value::String(next));
                }
                // Kept on 2026-07-28 results only (the shaper drops them for legacy sessions).
                let fresh = self.snapshot.freshness(kind, std::time::Instant::now());
                result.insert("ttlMs".to_owned(), Value::from(fresh.ttl_ms));
                result.insert("cacheScope".to_owned(), Value::from(fresh.scope()));
                if let Some(degraded) = self.snapshot.degraded() {
                    result.insert("_meta".to_owned(), json!({ DEGRADED: degraded }));
                }
                raw(&Value::Object(result))
            }
            Err(e) => Outcome::Error(Error::new(ErrorCode::InvalidParams, e.to_string())),
        }
    }

    /// A legacy session's `resources/subscribe` (or `unsubscribe`): recorded for the session, and the
    /// owning backend's subscription brought in line.
    fn subscribe(&self, call: &Call, on: bool) -> Outcome {
        let (Some(session), Some(Target::Resource { uri, route })) = (self.session, call.target())
        else {
            return Outcome::Error(Error::new(
                ErrorCode::InvalidParams,
                "invalid params: resources/subscribe needs a session and a uri",
            ));
        };
        let Some(route) = self.snapshot.resource_at(*route) else {
            return Outcome::Error(stale_route());
        };
        let backend = route.backend.to_owned();
        self.routed_to(&backend);
        if on {
            let subscribed =
                self.gw
                    .subscriptions
                    .subscribe_as(self.caller, &session.id, uri, &backend);
            if let Err(e) = subscribed {
                return Outcome::Error(Error::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params: {e}"),
                ));
            }
        } else {
            self.gw.subscriptions.unsubscribe(&session.id, uri);
        }
        self.gw
            .sessions
            .subscription_changed(session, uri, &backend, on);
        crate::notify::changes::sync_backend(self.gw, &backend);
        raw(&json!({}))
    }

    fn set_level(&self, call: &Call) -> Outcome {
        #[derive(Deserialize)]
        struct Level {
            level: LoggingLevel,
        }
        match (call.request().params_as::<Level>(), self.session) {
            (Ok(l), Some(s)) => {
                s.set_log_level(l.level);
                self.gw.sessions.level_changed(s);
                raw(&json!({}))
            }
            (Ok(_), None) => raw(&json!({})),
            (Err(e), _) => Outcome::Error(e),
        }
    }

    async fn forward(&self, backend: String, mut request: BackendRequest) -> Outcome {
        let Some(handle) = self.gw.live().backend(&backend).cloned() else {
            return Outcome::Failed(Failure::Unavailable {
                backend,
                reason: "not configured any more".into(),
            });
        };
        let span = backend_span(&backend, &mut request);
        let method = request.method;
        let tool = self.counted_tool(&request);
        let began = Instant::now();
        let result = handle.call(request).await;
        let took = began.elapsed();
        if let Some(span) = span {
            span.end(result.as_ref().map(|_| ()).map_err(Failure::kind));
        }
        self.waited(took);
        let outcome = backend_outcome(method, &result);
        self.gw
            .metrics
            .backend_call(&backend, tool.as_deref(), outcome, took);
        match result {
            Ok(result) => Outcome::Result(result),
            Err(failure) => Outcome::Failed(failure),
        }
    }

    /// Adds to the time the call waited on backends.
    fn waited(&self, took: Duration) {
        self.backend_time.set(self.backend_time.get() + took);
    }

    /// The tool a backend request calls, when calls are counted per tool: the backend's own name of it,
    /// which validation found in the catalog (never a name the catalog does not hold).
    pub(crate) fn counted_tool(&self, request: &BackendRequest) -> Option<String> {
        (self.gw.metrics.per_tool() && request.method == Method::ToolsCall)
            .then(|| request.name.clone())
            .flatten()
    }
}

/// With `[traces]`, the span of one backend call (a child of the request's), whose context the request
/// carries to the backend instead of anything the client sent.
pub(crate) fn backend_span(
    backend: &str,
    request: &mut BackendRequest,
) -> Option<crate::telemetry::spans::BackendSpan> {
    let span = crate::telemetry::spans::BackendSpan::start(
        backend,
        request.method.as_str(),
        request.name.as_deref(),
    )?;
    request.trace = Some(span.trace_context());
    Some(span)
}

/// A route validation resolved that is not in the snapshot it was resolved in: cannot happen (a request
/// carries the snapshot it was validated against), answered as an internal error rather than a panic.
fn stale_route() -> Error {
    Error::new(
        ErrorCode::InternalError,
        "internal error: the route validation resolved is not in its catalog",
    )
}

fn raw(v: &Value) -> Outcome {
    match serde_json::value::to_raw_value(v) {
        Ok(r) => Outcome::Result(r),
        Err(e) => Outcome::Error(Error::new(
            ErrorCode::InternalError,
            format!("internal error: {e}"),
        )),
    }
}

/// A result built by the gateway, as raw JSON.
pub fn raw_value(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v)
        .unwrap_or_else(|_| RawValue::from_string("{}".into()).expect("valid JSON"))
}
