//! What validation gives back: a [`ValidRequest`] (with its [`ValidKind`]) or a [`Rejection`].

use super::{Accepts, RouteKey};
use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::id::RequestId;
use crate::message::{MessageError, Notification, Request, Response};
use crate::meta::RequestMeta;
use crate::method::Method;
use crate::payload::InitializeRequestParams;
use crate::raw::RawObject;
use serde_json::value::RawValue;

/// A request that passed validation. Only [`validate`](super::validate) makes one.
#[derive(Debug)]
pub struct ValidRequest {
    pub(super) generation: Generation,
    pub(super) accepts: Accepts,
    pub(super) kind: ValidKind,
}

/// What a valid request asks for.
#[derive(Debug)]
pub enum ValidKind {
    /// A legacy `initialize`: start a session speaking `negotiated` (the request's generation).
    Initialize {
        /// The request id.
        id: RequestId,
        /// The params.
        params: Box<InitializeRequestParams>,
    },
    /// A request to route and answer.
    Call(Call),
    /// A notification: answer 202 and act on it.
    Notification(Notification),
    /// A legacy client's answer to a server-to-client request: answer 202 and route it.
    ClientResponse(Response),
    /// A 2025-03-26 batch: each entry valid or rejected on its own.
    Batch(Vec<Result<ValidKind, Rejection>>),
    /// A legacy GET: open the session's standalone SSE stream.
    OpenStream,
    /// A legacy DELETE: end the session.
    EndSession,
}

/// What a request is about, resolved: the name or URI as the client sent it and where the catalog it was
/// validated against routes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `tools/call` of this exposed tool name.
    Tool {
        /// The exposed name.
        name: String,
        /// Its route in the catalog.
        route: RouteKey,
    },
    /// `resources/read` (and subscribe) of this URI.
    Resource {
        /// The URI.
        uri: String,
        /// Its route in the catalog (a resource or a template).
        route: RouteKey,
    },
    /// `prompts/get` of this prompt name.
    Prompt {
        /// The exposed name.
        name: String,
        /// Its route in the catalog.
        route: RouteKey,
    },
}

impl Target {
    /// The name or URI the client sent.
    pub fn name(&self) -> &str {
        match self {
            Target::Tool { name, .. } | Target::Prompt { name, .. } => name,
            Target::Resource { uri, .. } => uri,
        }
    }
}

/// A request to answer, with everything routing needs. Only validation makes one (and
/// [`Call::retry`] from one), so a call that reaches a backend was validated.
#[derive(Debug)]
pub struct Call {
    pub(crate) request: Request,
    pub(crate) method: Method,
    pub(crate) meta: RequestMeta,
    pub(crate) target: Option<Target>,
}

impl Call {
    /// The request as received.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Its method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Its per-request metadata (`_meta`).
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// What it is about, resolved in the catalog it was validated against.
    pub fn target(&self) -> Option<&Target> {
        self.target.as_ref()
    }

    /// The `arguments` of a `tools/call` or `prompts/get` as received; `None` when there are none (or for
    /// another method).
    pub fn arguments(&self) -> Option<Box<RawValue>> {
        if !matches!(self.method, Method::ToolsCall | Method::PromptsGet) {
            return None;
        }
        let object = RawObject::parse(self.request.params.as_deref()?)?;
        object.get("arguments").map(|a| a.to_owned())
    }

    /// Replaces the `arguments` of a `tools/call` or `prompts/get` (a middleware rewriting them): a JSON
    /// object, or an error saying why not. What validation established (the method, the name and its
    /// route, `_meta`) stays as it was.
    pub fn set_arguments(&mut self, arguments: Box<RawValue>) -> Result<(), Error> {
        if !matches!(self.method, Method::ToolsCall | Method::PromptsGet) {
            return Err(Error::new(
                ErrorCode::InternalError,
                format!("{} has no arguments to set", self.method),
            ));
        }
        if !arguments.get().trim_start().starts_with('{') {
            return Err(Error::new(
                ErrorCode::InternalError,
                "arguments must be a JSON object",
            ));
        }
        let mut object =
            RawObject::parse_or_empty(self.request.params.as_deref()).unwrap_or_default();
        object.set("arguments", arguments);
        self.request.params = Some(object.to_raw());
        Ok(())
    }

    /// The same call retried with the client's `inputResponses` (keyed as the backend asked) and the
    /// backend's `requestState` (or none): everything validation established stays as it was.
    pub fn retry(
        &self,
        input_responses: impl IntoIterator<Item = (String, Box<RawValue>)>,
        request_state: Option<Box<RawValue>>,
    ) -> Call {
        let mut object =
            RawObject::parse_or_empty(self.request.params.as_deref()).unwrap_or_default();
        let mut answers = RawObject::default();
        for (key, result) in input_responses {
            answers.set(&key, result);
        }
        object.set("inputResponses", answers.to_raw());
        match request_state {
            Some(state) => object.set("requestState", state),
            None => {
                object.remove("requestState");
            }
        }
        Call {
            request: Request {
                id: self.request.id.clone(),
                method: self.request.method.clone(),
                params: Some(object.to_raw()),
            },
            method: self.method,
            meta: self.meta.clone(),
            target: self.target.clone(),
        }
    }
}

impl ValidKind {
    /// The HTTP status to answer at once, without a body: 202 for notifications and client responses (and a
    /// batch made only of them). `None` when the request needs a response.
    pub fn immediate_status(&self) -> Option<u16> {
        match self {
            ValidKind::Notification(_) | ValidKind::ClientResponse(_) => Some(202),
            ValidKind::Batch(items)
                if items
                    .iter()
                    .all(|i| matches!(i, Ok(k) if k.immediate_status().is_some())) =>
            {
                Some(202)
            }
            _ => None,
        }
    }
}

impl ValidRequest {
    /// The generation to answer in: the session's, the request's `_meta`'s, or the negotiated one.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// What the client accepts as a response body.
    pub fn accepts(&self) -> Accepts {
        self.accepts
    }

    /// What the request asks for.
    pub fn kind(&self) -> &ValidKind {
        &self.kind
    }

    /// Takes the request apart.
    pub fn into_kind(self) -> ValidKind {
        self.kind
    }
}

/// The `Retry-After` of an overload answer, in seconds.
pub const OVERLOAD_RETRY_AFTER_SECS: u32 = 1;

/// A refused request: the error, the id when it was readable, the HTTP status, and the generation to shape
/// the error for (when known).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// HTTP status.
    pub status: u16,
    /// The request id, when it could be read.
    pub id: Option<RequestId>,
    /// The error.
    pub error: Error,
    /// The generation the error is shaped for; `None` when the request named none.
    pub generation: Option<Generation>,
    /// For 405: the `Allow` header value.
    pub allow: Option<&'static str>,
    /// For 503: seconds after which the client may try again (`Retry-After`).
    pub retry_after_secs: Option<u32>,
}

impl Rejection {
    pub(crate) fn new(status: u16, id: Option<RequestId>, error: Error) -> Rejection {
        Rejection {
            status,
            id,
            error,
            generation: None,
            allow: None,
            retry_after_secs: None,
        }
    }

    /// A refusal before any JSON-RPC is read, shaped with no generation.
    fn transport(status: u16, message: String) -> Rejection {
        Rejection::new(status, None, Error::new(ErrorCode::InvalidRequest, message))
    }

    /// 413: the request body exceeds `max` bytes.
    pub fn body_too_large(max: usize) -> Rejection {
        Rejection::transport(
            413,
            format!("request body exceeds the limit of {max} bytes"),
        )
    }

    /// 400: the body could not be read (a broken chunked encoding, a connection error).
    pub fn bad_body(why: &str) -> Rejection {
        Rejection::transport(
            400,
            format!("bad request: the body could not be read: {why}"),
        )
    }

    /// 408: the body stalled or dragged on (`why` says which bound); the transport closes the connection.
    pub fn body_timeout(why: String) -> Rejection {
        Rejection::transport(408, why)
    }

    /// 400: a body framed two ways (RFC 9112 §6.1); the transport closes the connection.
    pub fn bad_framing(why: &str) -> Rejection {
        Rejection::transport(
            400,
            format!("bad request: {why} (rfc 9112 section 6.1); the connection is closed"),
        )
    }

    /// 400: `Host` or `Origin` given several times, or unlike the target's authority.
    pub fn bad_host(why: &str) -> Rejection {
        Rejection::transport(400, format!("bad request: {why}"))
    }

    /// 403: a `Host` or `Origin` the gateway does not serve (DNS-rebinding protection).
    pub fn forbidden_origin(why: &str) -> Rejection {
        Rejection::transport(403, format!("forbidden: {why}"))
    }

    /// 404: no live session by that id (`what` says how the client should start one).
    pub fn unknown_session(what: &str) -> Rejection {
        Rejection::transport(404, format!("session not found: {what}"))
    }

    /// 400: an `initialize` whose client state cannot be carried in a session id (`why` says why).
    pub fn unsealable_session(why: &str) -> Rejection {
        Rejection::transport(400, format!("invalid request: {why}"))
    }

    /// 400: an `initialize` on a session that is initialized already.
    pub fn already_initialized() -> Rejection {
        Rejection::transport(
            400,
            "invalid request: the session is already initialized".into(),
        )
    }

    /// A stdio line longer than `max` bytes: a parse error (id null), as the line cannot be read.
    pub fn line_too_long(max: usize) -> Rejection {
        Rejection::new(
            200,
            None,
            Error::new(
                ErrorCode::ParseError,
                format!("parse error: the line exceeds {max} bytes"),
            ),
        )
    }

    /// The gateway has no room for the request (its in-flight bound, or it is still starting): 503 with
    /// `Retry-After`, answered at once instead of queued.
    pub fn overloaded(why: &str, generation: Option<Generation>) -> Rejection {
        Rejection {
            status: 503,
            id: None,
            error: Error::new(
                ErrorCode::InternalError,
                format!("service unavailable: {why}"),
            ),
            generation,
            allow: None,
            retry_after_secs: Some(OVERLOAD_RETRY_AFTER_SECS),
        }
    }

    pub(crate) fn for_generation(mut self, g: Generation) -> Rejection {
        self.generation = Some(g);
        self
    }

    /// The response body: a JSON-RPC error object shaped for the rejection's generation.
    pub fn body(&self) -> Vec<u8> {
        crate::shape::rejection_body(self)
    }

    /// The whole answer: status, headers (`Allow`, `Retry-After`) and body.
    pub fn shaped(&self) -> crate::shape::Shaped {
        crate::shape::rejection(self)
    }
}

impl From<MessageError> for Rejection {
    fn from(e: MessageError) -> Rejection {
        Rejection::new(200, e.id, e.error)
    }
}
