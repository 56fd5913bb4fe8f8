//! Every outcome — a backend's result, a handler failure, an error the gateway raises while dispatching, a
//! middleware's answer — is shaped here through `protocol::shape` for the client's generation, stamped as
//! the request's endpoint answers.
//!
//! The design card's response actor was this function behind a mailbox: it owned no state, so each request
//! paid a mailbox turn for a function call (the design card's rule: a hop that carries no state is a
//! function call). It must not decide anything about an outcome: `protocol::shape` does.

use protocol::shape::{Failure, Refusal, Shaped, Stamp, gateway_error, refusal, shape};
use protocol::{Error, Generation, Method, RequestId};
use serde_json::value::RawValue;

/// What a dispatched request ended in.
#[derive(Debug)]
pub enum Outcome {
    /// A result (raw JSON) to stamp and send.
    Result(Box<RawValue>),
    /// A handler failure: a tool error for tools, a JSON-RPC error otherwise.
    Failed(Failure),
    /// An error the gateway raises itself while dispatching (an invalid cursor, an unsupported method).
    Error(Error),
    /// A middleware answered instead of the handler (a status with headers, or a tool error).
    Refused(Refusal),
}

impl Outcome {
    /// What the outcome counts as in `mcpgw_requests_total` for a request of `method`.
    pub fn metric(&self, method: Method) -> crate::metrics::Outcome {
        use crate::metrics::{Code, Outcome as Counted};
        match self {
            Outcome::Result(raw) if method == Method::ToolsCall && is_tool_error(raw) => {
                Counted::ToolError
            }
            Outcome::Result(_) => Counted::Ok,
            Outcome::Failed(f) => Counted::of_failure(method, f),
            Outcome::Error(e) => Counted::JsonRpcError(Code::of(e.code())),
            Outcome::Refused(Refusal::Status { status, error, .. }) => {
                Counted::of_refusal(*status, error.code())
            }
            Outcome::Refused(Refusal::ToolError { .. }) => {
                Counted::Rejection(Code::of(protocol::ErrorCode::Other(0)))
            }
        }
    }
}

/// What a backend call's result counts as in `mcpgw_backend_requests_total`.
pub fn backend_outcome(
    method: Method,
    result: &Result<Box<RawValue>, Failure>,
) -> crate::metrics::BackendOutcome {
    use crate::metrics::BackendOutcome;
    match result {
        Ok(raw) if method == Method::ToolsCall && is_tool_error(raw) => BackendOutcome::TOOL_ERROR,
        Ok(_) => BackendOutcome::OK,
        Err(f) => BackendOutcome::of_failure(f),
    }
}

/// Shapes an outcome with an endpoint's stamp.
pub fn shape_outcome(
    stamp: &Stamp,
    id: &RequestId,
    method: Method,
    g: Generation,
    outcome: Outcome,
) -> Shaped {
    match outcome {
        Outcome::Result(raw) => shape(id, method, g, Ok(&raw), stamp),
        Outcome::Failed(f) => shape(id, method, g, Err(&f), stamp),
        Outcome::Error(e) => gateway_error(id, e, g),
        Outcome::Refused(r) => refusal(id, method, g, &r, stamp),
    }
}

/// A backend's `isError: true` (top-level key only; results are not parsed further, and one that does not
/// hold the text `"isError"` not at all).
pub(crate) fn is_tool_error(raw: &RawValue) -> bool {
    if !raw.get().contains("\"isError\"") {
        return false;
    }
    protocol::raw::RawObject::parse(raw)
        .and_then(|o| o.get("isError").map(|v| v.get() == "true"))
        .unwrap_or(false)
}
