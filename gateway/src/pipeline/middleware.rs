//! The founding document's middleware, by its names: `async fn mw(ctx: MwContext, next: Next) -> Response`.
//!
//! A middleware reads the request's context ([`MwContext`]: its id, method, params, `_meta`, generation,
//! transport, and the principal, which it may also set), then either goes on down the chain with
//! `next(ctx).await` or answers at once without calling it — `Response::error(ctx.id(), err)`, a status
//! with headers ([`Response::refuse`]) or a tool error ([`Response::tool_error`]). Whatever it answers is
//! shaped for the client's generation and transport, like any handler's outcome (`pipeline::response`). The
//! chain's last step is the dispatch to the backend.
//!
//! ```
//! use mcpgw::{Error, ErrorCode, MwContext, Next, Response};
//!
//! async fn auth_check(ctx: MwContext, next: Next) -> Response {
//!     if ctx.principal().is_none() {
//!         let err = Error::new(ErrorCode::InvalidParams, "Unauthorized");
//!         return Response::error(ctx.id(), err);
//!     }
//!     next(ctx).await
//! }
//! let _builder = mcpgw::Gateway::builder().middleware(auth_check);
//! ```
//!
//! A middleware that panics is answered with -32603 and logged, never left hanging. Middlewares run on the
//! worker's thread (their futures need not be `Send`) and must not block it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use protocol::payload::InitializeRequestParams;
use protocol::validate::{Call, Target};
use protocol::{Error, ErrorCode, Generation, Method, RequestId};

use crate::endpoint::Endpoint;
use crate::pipeline::context::RequestContext;

pub use crate::auth::Principal;
pub use response::{Response, Summary};
pub use crate::session::Transport;

/// The request a middleware sees: a call to route, or a legacy `initialize`.
#[derive(Debug)]
enum Asked {
    Call(Call),
    Initialize {
        id: RequestId,
        params: Box<InitializeRequestParams>,
    },
}

/// What a middleware sees of one JSON-RPC request: a view of the request's context (who is asking, from
/// where, at which endpoint, the catalog it was validated against) and the request itself.
#[derive(Debug)]
pub struct MwContext {
    asked: Asked,
    request: Rc<RequestContext>,
    /// A principal a middleware set (`None`: the one authentication established, if any).
    principal: Option<Arc<Principal>>,
    started: Instant,
}

impl MwContext {
    /// The context of a validated call.
    pub(crate) fn new(call: Call, request: &Rc<RequestContext>) -> MwContext {
        MwContext::of(Asked::Call(call), request)
    }

    /// The context of a validated legacy `initialize`.
    pub(crate) fn initialize(
        id: RequestId,
        params: Box<InitializeRequestParams>,
        request: &Rc<RequestContext>,
    ) -> MwContext {
        MwContext::of(Asked::Initialize { id, params }, request)
    }

    fn of(asked: Asked, request: &Rc<RequestContext>) -> MwContext {
        MwContext {
            asked,
            request: Rc::clone(request),
            principal: None,
            started: Instant::now(),
        }
    }

    /// The request's context (crate-internal: the dispatch borrows it).
    pub(crate) fn request(&self) -> &Rc<RequestContext> {
        &self.request
    }

    /// The request id.
    pub fn id(&self) -> &RequestId {
        match &self.asked {
            Asked::Call(call) => &call.request().id,
            Asked::Initialize { id, .. } => id,
        }
    }

    /// The method.
    pub fn method(&self) -> Method {
        match &self.asked {
            Asked::Call(call) => call.method(),
            Asked::Initialize { .. } => Method::Initialize,
        }
    }

    /// The validated call: the request (its params), its `_meta`, what it names; `None` for `initialize`.
    pub fn call(&self) -> Option<&Call> {
        match &self.asked {
            Asked::Call(call) => Some(call),
            Asked::Initialize { .. } => None,
        }
    }

    /// A legacy `initialize`'s params (the client's info and capabilities); `None` for any other request.
    pub fn initialize_params(&self) -> Option<&InitializeRequestParams> {
        match &self.asked {
            Asked::Initialize { params, .. } => Some(params),
            Asked::Call(_) => None,
        }
    }

    /// The generation the client speaks.
    pub fn generation(&self) -> Generation {
        self.request.generation()
    }

    /// How it arrived.
    pub fn transport(&self) -> Transport {
        self.request.transport()
    }

    /// The endpoint it arrived at (`/mcp`, or an `[[endpoint]]`).
    pub fn endpoint(&self) -> &Endpoint {
        self.request.endpoint()
    }

    /// The legacy session it belongs to, by its id's prefix (never the whole id: it is a credential).
    pub fn session(&self) -> Option<String> {
        self.request
            .session()
            .map(|s| crate::session::ShortId(&s.id).to_string())
    }

    /// Who is asking: the principal authentication established (`[auth]`), or one a middleware set.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal
            .as_deref()
            .or_else(|| self.request.principal().map(|p| &**p))
    }

    /// Who is asking, shared (a stage that needs it after `next` keeps this instead of a copy).
    pub(crate) fn principal_shared(&self) -> Option<Arc<Principal>> {
        self.principal
            .clone()
            .or_else(|| self.request.principal().cloned())
    }

    /// Records who is asking (for the middlewares after this one, and the dispatch).
    pub fn set_principal(&mut self, principal: Principal) {
        self.principal = Some(Arc::new(principal));
    }

    /// The client's IP address (behind a trusted proxy, the client it names), for a request over HTTP;
    /// `None` on stdio.
    pub fn client(&self) -> Option<std::net::IpAddr> {
        self.request.client()
    }

    /// The backend the call is routed to — a tool's, prompt's, resource's or completion reference's —
    /// looked up in the snapshot it was validated against; `None` for what the gateway answers itself.
    pub fn backend(&self) -> Option<&str> {
        let call = self.call()?;
        let snapshot = self.request.view();
        match call.target() {
            Some(Target::Tool { route, .. }) => {
                snapshot.tool_at(*route).map(|t| t.backend.as_str())
            }
            Some(Target::Prompt { route, .. }) => {
                snapshot.prompt_at(*route).map(|p| p.backend.as_str())
            }
            Some(Target::Resource { route, .. }) => snapshot.resource_at(*route).map(|r| r.backend),
            None if call.method() == Method::CompletionComplete => {
                let params = call.request().params.as_deref()?;
                let params = protocol::raw::RawObject::parse(params)?;
                let reference: serde_json::Value =
                    serde_json::from_str(params.get("ref")?.get()).ok()?;
                snapshot.completion_backend(&reference).map(|(b, _)| b)
            }
            None => None,
        }
    }

    /// What the request names: a `tools/call`'s tool or a `prompts/get`'s prompt (their exposed names), a
    /// resource request's URI; `None` for the others.
    pub fn name(&self) -> Option<&str> {
        self.call()?.target().map(Target::name)
    }

    /// A request header, when the binary's builder let middlewares read it (`Builder::read_header`) and
    /// the client sent it (HTTP only); `name` in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.request.header(&name.to_ascii_lowercase());
        }
        self.request.header(name)
    }

    /// The `arguments` of a `tools/call` or `prompts/get`, parsed; `None` when there are none.
    pub fn arguments(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        let raw = self.call()?.arguments()?;
        serde_json::from_str(raw.get()).ok()
    }

    /// Replaces the `arguments` of a `tools/call` or `prompts/get` for the middlewares after this one and
    /// the backend; the tool (or prompt) stays the one the request named. An error for any other method.
    pub fn set_arguments(
        &mut self,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        let raw = serde_json::value::to_raw_value(&arguments)
            .map_err(|e| Error::new(ErrorCode::InternalError, e.to_string()))?;
        match &mut self.asked {
            Asked::Call(call) => call.set_arguments(raw),
            Asked::Initialize { .. } => Err(Error::new(
                ErrorCode::InternalError,
                "initialize has no arguments to set",
            )),
        }
    }

    /// The exposed tool name of a `tools/call`.
    pub fn tool(&self) -> Option<&str> {
        match self.call()?.target() {
            Some(Target::Tool { name, .. }) => Some(name),
            _ => None,
        }
    }

    /// When the gateway took the request up.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The call, for the dispatch at the end of the chain (`None` for `initialize`).
    pub(crate) fn into_call(self) -> Option<Call> {
        match self.asked {
            Asked::Call(call) => Some(call),
            Asked::Initialize { .. } => None,
        }
    }
}

/// The rest of the chain: call it with the context to go on (`next(ctx).await`).
pub type Next = Box<dyn FnOnce(MwContext) -> LocalBoxFuture<'static, Response>>;

/// One middleware. Any `async fn(MwContext, Next) -> Response` is one; a type with state implements it.
pub trait Middleware: Send + Sync + 'static {
    /// Its name in logs and in `[[middleware]] kind = "library"` tables: by default its type's own name
    /// (a function's: `auth_check`), without the module path.
    fn name(&self) -> &str {
        short_name(std::any::type_name::<Self>())
    }

    /// Answers the request, calling `next` to go on down the chain.
    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response>;
}

impl<F, Fut> Middleware for F
where
    F: Fn(MwContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + 'static,
{
    fn handle(&self, ctx: MwContext, next: Next) -> LocalBoxFuture<'static, Response> {
        Box::pin(self(ctx, next))
    }
}

/// `a::b::auth_check` → `auth_check`; `a::Limit<b::C>` → `Limit`.
fn short_name(full: &'static str) -> &'static str {
    let plain = full.split('<').next().unwrap_or(full);
    plain.rsplit("::").next().unwrap_or(plain)
}

/// The configured middlewares, in order, shared by every worker.
#[derive(Clone, Default)]
pub struct Chain(Arc<[Arc<dyn Middleware>]>);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|m| m.name()))
            .finish()
    }
}

impl Chain {
    /// A chain of these middlewares, the first outermost.
    pub fn new(middlewares: Vec<Arc<dyn Middleware>>) -> Chain {
        Chain(middlewares.into())
    }

    /// Whether it holds no middleware.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs the request through every middleware to `last` (the dispatch). With no middleware, `last` runs
    /// directly (no allocation for the chain).
    pub async fn run<L, Fut>(&self, ctx: MwContext, last: L) -> Response
    where
        L: FnOnce(MwContext) -> Fut + 'static,
        Fut: Future<Output = Response> + 'static,
    {
        if self.0.is_empty() {
            return last(ctx).await;
        }
        let last: Next = Box::new(move |ctx| Box::pin(last(ctx)));
        link(self.0.clone(), 0, last)(ctx).await
    }
}

/// The middlewares a library user added (`Builder::middleware`), in the order added: placed by name where a
/// `[[middleware]] kind = "library"` table says, the others after the tables (`builtin::chain`).
#[derive(Clone, Default)]
pub struct Added(Arc<[Arc<dyn Middleware>]>);

impl std::fmt::Debug for Added {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|m| m.name()))
            .finish()
    }
}

impl Added {
    /// These middlewares, in the order added.
    pub fn new(middlewares: Vec<Arc<dyn Middleware>>) -> Added {
        Added(middlewares.into())
    }

    /// The one named `name`.
    pub fn named(&self, name: &str) -> Option<&Arc<dyn Middleware>> {
        self.0.iter().find(|m| m.name() == name)
    }

    /// Every one, in the order added.
    pub fn all(&self) -> impl Iterator<Item = &Arc<dyn Middleware>> {
        self.0.iter()
    }
}

/// The chain from middleware `at` on, ending in `last`.
fn link(chain: Arc<[Arc<dyn Middleware>]>, at: usize, last: Next) -> Next {
    if at >= chain.len() {
        return last;
    }
    Box::new(move |ctx: MwContext| {
        let next = link(chain.clone(), at + 1, last);
        let id = ctx.id().clone();
        let Some(mw) = chain.get(at).cloned() else {
            return next(ctx);
        };
        // A panic in the middleware (while it builds its future or while it runs) is answered, not
        // propagated: the client gets -32603 at once and the panic is logged with the middleware's name.
        match std::panic::catch_unwind(AssertUnwindSafe(|| mw.handle(ctx, next))) {
            Ok(running) => Box::pin(async move {
                match AssertUnwindSafe(running).catch_unwind().await {
                    Ok(response) => same_id(&*mw, &id, response),
                    Err(panic) => panicked(&*mw, &id, &*panic),
                }
            }),
            Err(panic) => {
                let response = panicked(&*mw, &id, &*panic);
                Box::pin(async move { response })
            }
        }
    })
}

/// A middleware's answer to another request's id would leave the client waiting for its own: it is answered
/// -32603 instead, and logged with the middleware's name.
fn same_id(mw: &dyn Middleware, id: &RequestId, response: Response) -> Response {
    match response.id() {
        Some(answered) if answered != id => {
            tracing::error!(middleware = mw.name(), "a middleware answered another request's id");
            Response::error(
                id,
                Error::new(
                    ErrorCode::InternalError,
                    format!(
                        "internal error: middleware {} answered another request",
                        mw.name()
                    ),
                ),
            )
        }
        _ => response,
    }
}

fn panicked(mw: &dyn Middleware, id: &RequestId, panic: &(dyn std::any::Any + Send)) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(middleware = mw.name(), panic = %what, "a middleware panicked");
    Response::error(
        id,
        Error::new(
            ErrorCode::InternalError,
            format!("internal error: middleware {} failed", mw.name()),
        ),
    )
}

mod response;
#[cfg(test)]
mod tests;
