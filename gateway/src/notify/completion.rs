//! A backend's `notifications/elicitation/complete`: to the one legacy session its URL elicitation was
//! relayed to (`bridge::url`), whether it arrives outside any request or on another request's stream, and
//! never to anyone else — not to a session the backend names by a guessed or reused id, not to a 2026-07-28
//! client (that generation has no such notification).

use protocol::raw::RawObject;
use protocol::{Message, Notification};

use crate::session::{Session, sse_event};
use crate::state::Gateway;

/// Where a completion went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// To the session of the request it arrived in: the caller sends it on that request's stream.
    Here,
    /// To another session, on its own stream (or that session is gone).
    Elsewhere,
    /// Nowhere: no relayed elicitation has that id, from that backend.
    Nowhere,
}

/// The `elicitationId` of a completion notification.
pub fn elicitation_id(n: &Notification) -> Option<String> {
    let params = RawObject::parse(n.params.as_deref()?)?;
    serde_json::from_str(params.get("elicitationId")?.get()).ok()
}

/// Routes `backend`'s completion `n`: `here` is the session of the request it arrived in, if any.
pub fn deliver(gw: &Gateway, backend: &str, n: &Notification, here: Option<&Session>) -> Delivered {
    let Some(id) = elicitation_id(n) else {
        return Delivered::Nowhere;
    };
    let Some(session) = gw.url_completions.complete(backend, &id) else {
        tracing::debug!(%backend, "an elicitation completion for no relayed elicitation: dropped");
        return Delivered::Nowhere;
    };
    if here.is_some_and(|s| s.id == session) {
        return Delivered::Here;
    }
    if let Some(session) = gw.sessions.peek(&session) {
        let event = sse_event(&Message::Notification(n.clone()).to_bytes());
        if session.handle.push(event).is_err() {
            tracing::debug!(%backend, "an elicitation completion found its session's stream closed");
        }
    }
    Delivered::Elsewhere
}

/// The gateway's own URL elicitation (a consent link of `oauth`) completed: its
/// `notifications/elicitation/complete` to the legacy session it was relayed to, if that session is held on
/// this replica (elsewhere, or gone: the client's retry finds the consent all the same).
pub fn consented(gw: &Gateway, backend: &str, elicitation_id: &str) -> Delivered {
    let n = Notification::new(
        "notifications/elicitation/complete",
        Some(&serde_json::json!({ "elicitationId": elicitation_id })),
    );
    deliver(gw, backend, &n, None)
}
