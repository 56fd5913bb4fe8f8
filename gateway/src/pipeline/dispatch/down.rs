//! A `tools/call` routed to a backend that is down (`catalog::down`: its prefix, the backend left out of the
//! catalog, the caller's view able to name it): answered as that backend being unavailable, which the
//! response actor shapes as every failure of a `tools/call` — a tool error naming the backend and why.

use protocol::shape::Failure;
use protocol::validate::{Call, Target};

use super::Dispatch;
use crate::catalog::DownBackend;
use crate::pipeline::response::Outcome;

impl Dispatch<'_> {
    /// The down backend a validated `tools/call` names by its prefix.
    pub(super) fn down_tool(&self, call: &Call) -> Option<&DownBackend> {
        match call.target()? {
            Target::Tool { route, .. } => self.snapshot.down_tool(*route),
            _ => None,
        }
    }

    /// Answers a call [`Dispatch::down_tool`] names.
    pub(super) fn answer_down_tool(&self, call: &Call) -> Outcome {
        match self.down_tool(call) {
            Some(down) => Outcome::Failed(Failure::Unavailable {
                backend: down.backend.clone(),
                reason: format!("{}; its tools are back when it is", down.reason),
            }),
            None => Outcome::Error(super::stale_route()),
        }
    }
}
