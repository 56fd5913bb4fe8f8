//! Request-scoped messages: what a backend says about one request in flight (`notifications/progress` for
//! its progress token, on HTTP the notifications on that request's response stream, and the requests it
//! asks while serving it: sampling, elicitation, roots) goes back to the caller of that request only,
//! through the request's own bounded sink.
//!
//! Progress tokens are rewritten: one backend serves every client session, so the client's token is replaced
//! by a token minted here (unique per backend) and restored on the way back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use protocol::meta::PROGRESS_TOKEN;
use protocol::raw::RawObject;
use protocol::{Notification, Request};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tracing::debug;

/// Something a backend sent about one request in flight.
#[derive(Debug)]
pub enum Related {
    /// A notification (progress with the client's token restored, log messages, ...).
    Notification(Notification),
    /// An input request: a request the backend asks while serving the caller's request (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`), with the backend's own id. The caller answers through `reply`
    /// (the id is restored here); nobody answering (`reply` dropped) or a late answer makes the backend
    /// get an error.
    InputRequest {
        /// The backend's request, as received.
        request: Request,
        /// Where the answer goes: the result, or the JSON-RPC error to answer with.
        reply: oneshot::Sender<Result<Box<RawValue>, protocol::Error>>,
    },
}

/// Where a request's related messages go: a bounded channel the caller reads while it waits.
pub type RelatedSink = mpsc::Sender<Related>;

/// Notifications a backend sent for a request whose sink could not take them (full, or its client gone),
/// since start.
static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Notifications dropped so far because a request's sink could not take them.
pub fn notifications_dropped() -> u64 {
    DROPPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one notification a request's sink could not take, and says so: at warn for the 1st, 2nd, 4th,
/// 8th… (a flood of drops does not become a flood of log lines), at debug otherwise.
pub(crate) fn note_dropped(backend: Option<&str>, what: &str) {
    let backend = backend.unwrap_or("-");
    let n = DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        tracing::warn!(%backend, dropped = n, what, "notifications dropped: the request's stream could not take them");
    } else {
        tracing::debug!(%backend, dropped = n, what, "notification dropped: the request's stream could not take it");
    }
}

/// The progress tokens of one backend's requests in flight: minted token → the client's token and the sink.
#[derive(Debug, Default)]
pub(crate) struct ProgressRoutes {
    next: AtomicU64,
    routes: Mutex<HashMap<String, (Box<RawValue>, RelatedSink)>>,
}

/// Removes a route when the request it belongs to ends.
#[derive(Debug)]
pub(crate) struct ProgressRoute {
    routes: Arc<ProgressRoutes>,
    token: String,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.routes.routes.lock() {
            routes.remove(&self.token);
        }
    }
}

impl ProgressRoutes {
    /// Rewrites the progress token in `params._meta`: with a sink, to a minted token routed to it (the route
    /// lives as long as the returned guard); without one, the token is removed (nobody would hear progress).
    pub(crate) fn rewrite(
        self: &Arc<Self>,
        params: Option<Box<RawValue>>,
        sink: Option<&RelatedSink>,
    ) -> (Option<Box<RawValue>>, Option<ProgressRoute>) {
        let Some(params) = params else {
            return (None, None);
        };
        // Most calls carry no progress token: skip the parse when the text cannot hold one (a key written
        // with escapes, `progress\u0054oken`, is still found).
        if !protocol::raw::may_hold_key(params.get(), PROGRESS_TOKEN) {
            return (Some(params), None);
        }
        let (edited, route) = {
            let Some(mut object) = RawObject::parse(&params) else {
                return (Some(params), None);
            };
            let Some(mut meta) = object.get("_meta").and_then(RawObject::parse) else {
                return (Some(params), None);
            };
            let Some(client_token) = meta.get(PROGRESS_TOKEN).map(RawValue::to_owned) else {
                return (Some(params), None);
            };
            let route = match sink {
                Some(sink) => {
                    let token = format!("mcpgw-{}", self.next.fetch_add(1, Ordering::Relaxed));
                    meta.set_value(PROGRESS_TOKEN, &token);
                    if let Ok(mut routes) = self.routes.lock() {
                        routes.insert(token.clone(), (client_token, sink.clone()));
                    }
                    Some(ProgressRoute {
                        routes: Arc::clone(self),
                        token,
                    })
                }
                None => {
                    meta.remove(PROGRESS_TOKEN);
                    None
                }
            };
            object.set("_meta", meta.to_raw());
            (object.to_raw(), route)
        };
        (Some(edited), route)
    }

    /// A `notifications/progress` for a routed token goes to its request's sink with the client's token back
    /// in place; `Err` gives back any other notification.
    pub(crate) fn deliver(&self, notification: Notification) -> Result<(), Notification> {
        if notification.method != "notifications/progress" {
            return Err(notification);
        }
        let Some(token) = notification
            .params
            .as_deref()
            .and_then(RawObject::parse)
            .and_then(|p| {
                p.get(PROGRESS_TOKEN)
                    .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
            })
        else {
            return Err(notification);
        };
        let route = match self.routes.lock() {
            Ok(routes) => routes
                .get(&token)
                .map(|(client, sink)| (client.clone(), sink.clone())),
            Err(_) => None,
        };
        let Some((client_token, sink)) = route else {
            // A late notification of a request that already ended: nobody is listening.
            debug!(%token, "dropping progress for a request no longer in flight");
            return Ok(());
        };
        let params = notification
            .params
            .as_deref()
            .and_then(RawObject::parse)
            .map(|mut p| {
                p.set(PROGRESS_TOKEN, client_token);
                p.to_raw()
            });
        let restored = Notification {
            method: notification.method,
            params,
        };
        if sink.try_send(Related::Notification(restored)).is_err() {
            note_dropped(None, "progress");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn tokens_are_minted_routed_and_restored() {
        let routes = Arc::new(ProgressRoutes::default());
        let (tx, mut rx) = mpsc::channel(4);
        let params = raw(r#"{"name":"t","_meta":{"progressToken":123456789012345678901,"k":1}}"#);
        let (edited, guard) = routes.rewrite(Some(params), Some(&tx));
        let edited = edited.unwrap();
        assert!(
            edited.get().contains(r#""progressToken":"mcpgw-0""#),
            "{}",
            edited.get()
        );
        assert!(edited.get().contains(r#""k":1"#));
        let from_backend = Notification::new(
            "notifications/progress",
            Some(&serde_json::json!({"progressToken": "mcpgw-0", "progress": 1, "total": 2})),
        );
        assert!(routes.deliver(from_backend).is_ok());
        let Related::Notification(got) = rx.try_recv().unwrap() else {
            panic!("a notification")
        };
        assert!(
            got.params
                .unwrap()
                .get()
                .contains(r#""progressToken":123456789012345678901"#)
        );
        drop(guard);
        let late = Notification::new(
            "notifications/progress",
            Some(&serde_json::json!({"progressToken": "mcpgw-0", "progress": 2})),
        );
        assert!(routes.deliver(late).is_ok());
        assert!(rx.try_recv().is_err(), "no route after the request ended");
        let other = Notification::new("notifications/message", None);
        assert!(routes.deliver(other).is_err());
    }

    /// The fast path (no parse when the text cannot hold a token) must not let a token through unrewritten:
    /// a client's own `mcpgw-N` reaching the backend would route that backend's progress to another
    /// request's sink.
    #[test]
    fn a_token_under_an_escaped_key_is_still_rewritten_and_params_without_one_pass_untouched() {
        let routes = Arc::new(ProgressRoutes::default());
        let (tx, _rx) = mpsc::channel(4);
        let escaped = raw(r#"{"_meta":{"progress\u0054oken":"mcpgw-7"}}"#);
        let (edited, guard) = routes.rewrite(Some(escaped), Some(&tx));
        let edited = edited.unwrap();
        assert!(guard.is_some(), "{}", edited.get());
        assert!(!edited.get().contains("mcpgw-7"), "{}", edited.get());
        let plain = r#"{"name":"t","arguments":{"text":"no token here"}}"#;
        let (same, none) = routes.rewrite(Some(raw(plain)), Some(&tx));
        assert!(none.is_none());
        assert_eq!(same.unwrap().get(), plain);
    }

    #[test]
    fn without_a_sink_the_token_is_removed() {
        let routes = Arc::new(ProgressRoutes::default());
        let (edited, guard) =
            routes.rewrite(Some(raw(r#"{"_meta":{"progressToken":"p","k":1}}"#)), None);
        assert!(guard.is_none());
        assert_eq!(edited.unwrap().get(), r#"{"_meta":{"k":1}}"#);
    }
}
