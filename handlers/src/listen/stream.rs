//! One `subscriptions/listen` request and what arrives for it: the [`Tap`] that consumes its
//! acknowledgement and passes every other notification on without the subscription id, the routes that
//! find a stdio subscription's notifications by that id, and the [`Subscription`] handle the driver holds
//! (dropping it ends the request).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use protocol::Notification;
use protocol::meta::SUBSCRIPTION_ID;
use protocol::payload::SubscriptionsAcknowledgedNotificationParams;
use protocol::raw::RawObject;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::debug;

use super::ListenFilter;
use crate::events::Notifier;

const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const CANCELLED: &str = "notifications/cancelled";

/// How a subscription request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The backend refused it (a JSON-RPC error): sending it again would not help.
    Refused(String),
    /// It dropped (the stream broke, the backend closed it, the connection failed): send it again later.
    Dropped(String),
}

#[derive(Debug, Clone)]
enum Status {
    Opening,
    Acked(ListenFilter),
    Ended(End),
}

/// The receiving end of one subscription request.
#[derive(Debug)]
pub(crate) struct Tap {
    notifier: Notifier,
    status: watch::Sender<Status>,
    /// What was asked for, taken as acknowledged when an acknowledgement cannot be read.
    requested: ListenFilter,
}

impl Tap {
    /// One notification of this subscription: the acknowledgement is consumed, `notifications/cancelled`
    /// (a stdio server tearing the subscription down) ends it, anything else goes to the gateway.
    pub(crate) fn notification(&self, notification: Notification) {
        match notification.method.as_str() {
            ACKNOWLEDGED => {
                let honoured = notification
                    .params_as::<SubscriptionsAcknowledgedNotificationParams>()
                    .map(|p| ListenFilter::from_wire(p.notifications))
                    .unwrap_or_else(|_| self.requested.clone());
                self.status.send_if_modified(|s| match s {
                    Status::Opening => {
                        *s = Status::Acked(honoured);
                        true
                    }
                    _ => false,
                });
            }
            CANCELLED => self.end(End::Dropped(
                "the backend ended the subscription".to_owned(),
            )),
            _ => self
                .notifier
                .notification(without_subscription_id(notification)),
        }
    }

    /// The request ended; the first end counts.
    pub(crate) fn end(&self, end: End) {
        self.status.send_if_modified(|s| match s {
            Status::Ended(_) => false,
            _ => {
                *s = Status::Ended(end);
                true
            }
        });
    }
}

/// A notification's params without `_meta[subscriptionId]` (and without `_meta`, or params, left empty by
/// that); everything else byte for byte.
fn without_subscription_id(notification: Notification) -> Notification {
    let Some(params) = notification.params.as_deref() else {
        return notification;
    };
    if !params.get().contains(SUBSCRIPTION_ID) {
        return notification;
    }
    let edited = RawObject::parse(params).and_then(|mut object| {
        let mut meta = object.get("_meta").and_then(RawObject::parse)?;
        if !meta.remove(SUBSCRIPTION_ID) {
            return None;
        }
        if meta.is_empty() {
            object.remove("_meta");
        } else {
            object.set("_meta", meta.to_raw());
        }
        Some((!object.is_empty()).then(|| object.to_raw()))
    });
    match edited {
        Some(params) => Notification {
            method: notification.method,
            params,
        },
        None => notification,
    }
}

/// The subscription id a stdio notification belongs to: `_meta[subscriptionId]`, or for
/// `notifications/cancelled` its `requestId`. `Some(None)` when it names one that is not an mcpgw id.
fn subscription_of(notification: &Notification) -> Option<Option<i64>> {
    let params = notification.params.as_deref()?;
    let object = RawObject::parse(params)?;
    if notification.method == CANCELLED {
        let id = object.get("requestId")?;
        return Some(serde_json::from_str(id.get()).ok());
    }
    if !params.get().contains(SUBSCRIPTION_ID) {
        return None;
    }
    let meta = object.get("_meta").and_then(RawObject::parse)?;
    let id = meta.get(SUBSCRIPTION_ID)?;
    Some(serde_json::from_str(id.get()).ok())
}

/// The subscriptions in flight on one stdio process, by request id. At most a few entries (a driver holds
/// at most two subscriptions); each is removed when its request ends.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionRoutes {
    taps: Mutex<HashMap<i64, Arc<Tap>>>,
}

/// Removes a route when its request ends.
#[derive(Debug)]
pub(crate) struct Route {
    routes: Arc<SubscriptionRoutes>,
    id: i64,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.id);
    }
}

impl SubscriptionRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<Tap>>> {
        self.taps.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Routes the notifications of request `id` to `tap` while the returned guard lives.
    pub(crate) fn insert(self: &Arc<Self>, id: i64, tap: Arc<Tap>) -> Route {
        self.lock().insert(id, tap);
        Route {
            routes: Arc::clone(self),
            id,
        }
    }

    /// A notification of a subscription goes to its tap, or nowhere once that subscription ended; `Err`
    /// gives back any other notification.
    fn deliver(&self, notification: Notification) -> Result<(), Notification> {
        let Some(id) = subscription_of(&notification) else {
            return Err(notification);
        };
        let tap = id.and_then(|id| self.lock().get(&id).cloned());
        match tap {
            Some(tap) => tap.notification(notification),
            // Some other request's cancellation: not a subscription's business.
            None if notification.method == CANCELLED => return Err(notification),
            None => debug!(method = %notification.method, ?id,
                "dropping a notification of a subscription no longer listened to"),
        }
        Ok(())
    }
}

/// Where the notifications of a stream go when subscriptions may arrive on it.
#[derive(Debug, Clone)]
pub(crate) enum ListenRoute {
    /// A multiplexed connection (stdio): by subscription id.
    Table(Arc<SubscriptionRoutes>),
    /// One subscription's own response stream (HTTP): all of them.
    Stream(Arc<Tap>),
}

impl ListenRoute {
    /// Takes a subscription's notification; `Err` gives back any other.
    pub(crate) fn deliver(&self, notification: Notification) -> Result<(), Notification> {
        match self {
            ListenRoute::Table(routes) => routes.deliver(notification),
            ListenRoute::Stream(tap) => {
                tap.notification(notification);
                Ok(())
            }
        }
    }
}

/// One subscription request, running beside the driver; dropping this ends it.
#[derive(Debug)]
pub(crate) struct Subscription {
    /// What was asked for.
    pub(crate) filter: ListenFilter,
    status: watch::Receiver<Status>,
    opened: Instant,
    _stop: DropGuard,
}

impl Subscription {
    /// Starts `run` on the current arbiter with a fresh tap; it runs until it returns how the request
    /// ended, or until this handle is dropped.
    pub(crate) fn spawn<F>(
        notifier: Notifier,
        filter: ListenFilter,
        run: impl FnOnce(Arc<Tap>) -> F,
    ) -> Subscription
    where
        F: Future<Output = End> + 'static,
    {
        let (status, rx) = watch::channel(Status::Opening);
        let tap = Arc::new(Tap {
            notifier,
            status,
            requested: filter.clone(),
        });
        let request = run(Arc::clone(&tap));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        actix_rt::spawn(async move {
            tokio::select! {
                end = request => tap.end(end),
                () = stopped.cancelled() => {}
            }
        });
        Subscription {
            filter,
            status: rx,
            opened: Instant::now(),
            _stop: stop.drop_guard(),
        }
    }

    /// What the backend acknowledged, or how the request ended before that.
    pub(crate) async fn acked(&mut self) -> Result<ListenFilter, End> {
        let status = self
            .status
            .wait_for(|s| !matches!(s, Status::Opening))
            .await
            .map(|s| s.clone());
        match status {
            Ok(Status::Acked(honoured)) => Ok(honoured),
            Ok(Status::Ended(end)) => Err(end),
            Ok(Status::Opening) | Err(_) => Err(gone()),
        }
    }

    /// How the request ended.
    pub(crate) async fn ended(&mut self) -> End {
        let status = self
            .status
            .wait_for(|s| matches!(s, Status::Ended(_)))
            .await
            .map(|s| s.clone());
        match status {
            Ok(Status::Ended(end)) => end,
            _ => gone(),
        }
    }

    /// How long ago it was sent.
    pub(crate) fn age(&self) -> Duration {
        self.opened.elapsed()
    }
}

fn gone() -> End {
    End::Dropped("the subscription's task ended".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(method: &str, params: serde_json::Value) -> Notification {
        Notification::new(method, Some(&params))
    }

    #[test]
    fn the_subscription_id_is_removed_and_nothing_else() {
        let n = without_subscription_id(note(
            "notifications/resources/updated",
            json!({"uri": "a", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}),
        ));
        assert_eq!(n.params.unwrap().get(), r#"{"uri":"a"}"#);
        let n = without_subscription_id(note(
            "notifications/resources/updated",
            json!({"_meta": {"k": 1.50, "io.modelcontextprotocol/subscriptionId": "s"}, "uri": "b"}),
        ));
        assert_eq!(n.params.unwrap().get(), r#"{"_meta":{"k":1.5},"uri":"b"}"#);
        let n = without_subscription_id(note(
            "notifications/tools/list_changed",
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 7}}),
        ));
        assert!(n.params.is_none());
        let untouched = r#"{"uri" : "c"}"#;
        let n = Notification {
            method: "notifications/resources/updated".into(),
            params: Some(serde_json::value::RawValue::from_string(untouched.into()).unwrap()),
        };
        assert_eq!(without_subscription_id(n).params.unwrap().get(), untouched);
    }

    #[test]
    fn subscription_ids_are_read_from_meta_or_cancellations() {
        let tagged = note(
            "notifications/tools/list_changed",
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 3}}),
        );
        assert_eq!(subscription_of(&tagged), Some(Some(3)));
        let foreign = note(
            "notifications/tools/list_changed",
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "x"}}),
        );
        assert_eq!(subscription_of(&foreign), Some(None));
        let cancelled = note(CANCELLED, json!({"requestId": 4, "reason": "bye"}));
        assert_eq!(subscription_of(&cancelled), Some(Some(4)));
        let plain = note("notifications/resources/updated", json!({"uri": "a"}));
        assert_eq!(subscription_of(&plain), None);
    }
}
