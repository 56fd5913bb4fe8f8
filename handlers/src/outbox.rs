//! Best-effort messages to a backend that nobody waits for: `notifications/cancelled`, and answers to the
//! backend's own requests. Each transport delivers them through a bounded queue; a full queue drops the
//! message with a warning instead of making anyone wait.

use tracing::debug;

use crate::wire;

/// Where best-effort messages to one backend go.
pub(crate) trait Outbox: Send + Sync + std::fmt::Debug {
    /// Queues one JSON-RPC message (without framing); false when it was dropped.
    fn deliver(&self, message: Vec<u8>) -> bool;
}

/// Sends `notifications/cancelled` for a request when dropped while still armed: when its deadline passed,
/// or when the caller went away before the answer came.
pub(crate) struct CancelGuard<'a> {
    outbox: &'a dyn Outbox,
    request_id: i64,
    reason: &'static str,
    armed: bool,
}

impl<'a> CancelGuard<'a> {
    /// Armed (if `armed`), with the reason "request cancelled by the gateway".
    pub(crate) fn new(outbox: &'a dyn Outbox, request_id: i64, armed: bool) -> CancelGuard<'a> {
        CancelGuard {
            outbox,
            request_id,
            reason: "request cancelled by the gateway",
            armed,
        }
    }

    /// The request was answered (or the connection is gone): nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    /// The request timed out: cancel it now, saying so.
    pub(crate) fn timed_out(mut self) {
        self.reason = "request timed out";
    }
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let delivered = self
                .outbox
                .deliver(wire::cancelled(self.request_id, self.reason));
            debug!(
                request_id = self.request_id,
                reason = self.reason,
                delivered,
                "cancelling a backend request"
            );
        }
    }
}

impl std::fmt::Debug for CancelGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelGuard")
            .field("request_id", &self.request_id)
            .field("armed", &self.armed)
            .finish()
    }
}
