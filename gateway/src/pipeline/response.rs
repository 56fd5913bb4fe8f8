//! The response actor: one per HTTP worker. Every outcome — a backend's result, a handler failure, an error the
//! gateway raises while dispatching — is shaped here through `protocol::shape` for the client's generation,
//! and framed as the client accepts it (a JSON body or SSE events).

use std::sync::Arc;

use actix::prelude::*;
use protocol::shape::{Failure, Refusal, Shaped, Stamp, gateway_error, refusal, shape};
use protocol::{Error, Generation, Method, RequestId};
use serde_json::value::RawValue;

use crate::endpoint::Endpoint;
use crate::pipeline::middleware::is_tool_error;

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

/// How long a request waits for its worker's response actor.
const SHAPE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

struct ResponseActor;

impl Actor for ResponseActor {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "Shaped")]
struct Shape {
    id: RequestId,
    method: Method,
    generation: Generation,
    outcome: Outcome,
    endpoint: Arc<Endpoint>,
}

impl Handler<Shape> for ResponseActor {
    // Shaping is synchronous CPU work on bytes in memory: answered at once, in mailbox order.
    type Result = MessageResult<Shape>;

    fn handle(&mut self, msg: Shape, _: &mut Self::Context) -> Self::Result {
        MessageResult(shape_outcome(
            &msg.endpoint.stamp,
            &msg.id,
            msg.method,
            msg.generation,
            msg.outcome,
        ))
    }
}

/// Shapes an outcome with an endpoint's stamp (also used directly where no actor runs, e.g. inside the
/// stdio loop's fallback).
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

/// The response actor's handle. Shaping never waits on anything, so a full or stopped actor is bypassed:
/// the handle shapes inline rather than queueing without bound.
#[derive(Clone)]
pub struct ResponseHandle {
    addr: Addr<ResponseActor>,
}

impl std::fmt::Debug for ResponseHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseHandle")
    }
}

impl ResponseHandle {
    /// Starts a response actor on the current arbiter.
    pub fn start() -> ResponseHandle {
        let addr = ResponseActor.start();
        ResponseHandle { addr }
    }

    /// Shapes an outcome for the client, stamped as `endpoint` answers. The actor's mailbox is bounded by the routing permits of this worker
    /// (every request holds one from validation to its answer); the deadline bounds the wait.
    pub async fn shape(
        &self,
        id: RequestId,
        method: Method,
        generation: Generation,
        outcome: Outcome,
        endpoint: &Arc<Endpoint>,
    ) -> Shaped {
        let msg = Shape {
            id: id.clone(),
            method,
            generation,
            outcome,
            endpoint: endpoint.clone(),
        };
        match tokio::time::timeout(SHAPE_DEADLINE, self.addr.send(msg)).await {
            Ok(Ok(shaped)) => shaped,
            Ok(Err(_)) | Err(_) => {
                let failure = Failure::Internal {
                    reason: "the response could not be shaped in time".into(),
                };
                shape_outcome(
                    &endpoint.stamp,
                    &id,
                    method,
                    generation,
                    Outcome::Failed(failure),
                )
            }
        }
    }
}
