//! What a middleware answers ([`Response`]: an error, a result, a tool error, a refusal, or the dispatch's
//! outcome), for which request, and what it is in a word ([`Summary`]). It must not shape anything:
//! `pipeline::response` does, through `protocol::shape`.

use protocol::shape::Refusal;
use protocol::{Error, ErrorCode, RequestId};

use crate::pipeline::response::{Outcome, is_tool_error};

/// What a middleware (or the dispatch at the end of the chain) answers.
#[derive(Debug)]
pub struct Response {
    pub(crate) outcome: Outcome,
    /// The backend the request was routed to, when it reached one.
    pub(crate) backend: Option<String>,
    /// The request a middleware answered, by its id (`None`: the dispatch's answer). Checked against the
    /// request's own: an answer to another id is never sent.
    answers: Option<RequestId>,
}

impl Response {
    /// A JSON-RPC error for request `id`, shaped for the client's generation (its code rewritten by
    /// `wire_code`, 400 on 2026-07-28 for the codes that are the request's fault).
    ///
    /// ```
    /// use mcpgw::{Error, ErrorCode, Response, RequestId};
    ///
    /// let id = RequestId::number(7);
    /// let answer = Response::error(&id, Error::new(ErrorCode::InvalidParams, "Unauthorized"));
    /// assert_eq!(answer.id(), Some(&id));
    /// ```
    pub fn error(id: &RequestId, err: Error) -> Response {
        Response::answering(id, Outcome::Error(err))
    }

    /// A successful result for request `id`, answered instead of the backend's: a JSON object, stamped and
    /// shaped for the client's generation like a backend's (for `tools/call`, a `CallToolResult`:
    /// `{"content": [...]}`, a missing `content` repaired). Anything but an object is answered -32603.
    ///
    /// ```
    /// use mcpgw::{Response, RequestId, Summary};
    ///
    /// let id = RequestId::number(1);
    /// let answer = Response::result(&id, serde_json::json!({"content": [{"type": "text", "text": "cached"}]}));
    /// assert_eq!(answer.summary(), Summary::Ok);
    /// ```
    pub fn result(id: &RequestId, result: serde_json::Value) -> Response {
        if !result.is_object() {
            return Response::error(
                id,
                Error::new(
                    ErrorCode::InternalError,
                    "internal error: a middleware answered a result that is not an object",
                ),
            );
        }
        match serde_json::value::to_raw_value(&result) {
            Ok(raw) => Response::answering(id, Outcome::Result(raw)),
            Err(e) => Response::error(
                id,
                Error::new(ErrorCode::InternalError, format!("internal error: {e}")),
            ),
        }
    }

    /// A JSON-RPC error with its own HTTP status (401, 403, 429, 503 …); add headers with
    /// [`Response::with_header`].
    pub fn refuse(id: &RequestId, status: u16, err: Error) -> Response {
        Response::answering(
            id,
            Outcome::Refused(Refusal::Status {
                status,
                error: err,
                headers: Vec::new(),
            }),
        )
    }

    /// A tool error (`isError: true`) the model can read, for a `tools/call`; other methods get a JSON-RPC
    /// error with the same text. `meta` (an object) goes into the result's `_meta`.
    pub fn tool_error(
        id: &RequestId,
        message: impl Into<String>,
        meta: Option<serde_json::Value>,
    ) -> Response {
        Response::answering(
            id,
            Outcome::Refused(Refusal::ToolError {
                message: message.into(),
                meta,
            }),
        )
    }

    fn answering(id: &RequestId, outcome: Outcome) -> Response {
        Response {
            outcome,
            backend: None,
            answers: Some(id.clone()),
        }
    }

    /// The request a middleware's answer is for (`None` for the dispatch's own).
    pub fn id(&self) -> Option<&RequestId> {
        self.answers.as_ref()
    }

    /// Adds a header to a [`Response::refuse`] answer (ignored by the others, and on stdio).
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        if let Outcome::Refused(Refusal::Status { headers, .. }) = &mut self.outcome {
            headers.push((name, value.into()));
        }
        self
    }

    /// The dispatch's outcome.
    pub(crate) fn dispatched(outcome: Outcome, backend: Option<String>) -> Response {
        Response {
            outcome,
            backend,
            answers: None,
        }
    }

    /// The backend the request reached, if any.
    pub fn backend(&self) -> Option<&str> {
        self.backend.as_deref()
    }

    /// What it is, for logs: `ok`, `tool_error`, `error` (with the JSON-RPC code) or `refused` (with the
    /// HTTP status).
    pub fn summary(&self) -> Summary {
        match &self.outcome {
            Outcome::Result(raw) if is_tool_error(raw) => Summary::ToolError,
            Outcome::Result(_) => Summary::Ok,
            Outcome::Failed(f) => Summary::Failed(f.kind()),
            Outcome::Error(e) => Summary::Error(e.code().code()),
            Outcome::Refused(Refusal::ToolError { .. }) => Summary::ToolError,
            Outcome::Refused(Refusal::Status { status, error, .. }) => {
                Summary::Refused(*status, error.code().code())
            }
        }
    }
}

/// A response in a word, for the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary {
    /// A result.
    Ok,
    /// A tool error (the backend's `isError`, or a middleware's).
    ToolError,
    /// A handler failure of this kind (a tool error for `tools/call`, a JSON-RPC error otherwise).
    Failed(&'static str),
    /// A JSON-RPC error with this code.
    Error(i64),
    /// A refusal with this HTTP status and JSON-RPC code.
    Refused(u16, i64),
}

