//! [`BackendEvent`]s, and the [`Notifier`] that delivers them to the gateway without ever blocking.
//!
//! Backend notifications are many and expendable: they go to the gateway's channel with `try_send` and are
//! dropped (with a warning) when it is full. Lifecycle events (`Ready`, `Down`) are few and matter: they go
//! through a small per-backend queue to a forwarder task that waits for room in the gateway's channel, so
//! neither the actor nor a reader task ever waits on the gateway.

use std::sync::Arc;

use protocol::Notification;
use tokio::sync::mpsc;

use tracing::warn;

use crate::callers::Callers;
use crate::related::ProgressRoutes;

use crate::description::ServerDescription;

/// Something a backend did that the gateway may want to know.
#[derive(Debug, Clone)]
pub enum BackendEvent {
    /// The backend finished its handshake and serves requests (after every connect and reconnect).
    Ready {
        /// The backend's name.
        backend: String,
        /// What it said at the handshake.
        description: Arc<ServerDescription>,
    },
    /// The backend stopped serving (it exited, its connection broke, it could not be reached, or it was shut
    /// down). Sent once per outage, not once per failed reconnect.
    Down {
        /// The backend's name.
        backend: String,
        /// Why, for people.
        reason: String,
    },
    /// A notification the backend sent (list changes, progress, log messages, ...).
    Notification {
        /// The backend's name.
        backend: String,
        /// The notification as received.
        notification: Notification,
    },
}

/// How many lifecycle events may wait for room in the gateway's channel.
const LIFECYCLE_QUEUE: usize = 32;

/// Delivers one backend's events. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Notifier {
    backend: Arc<str>,
    /// Progress tokens of requests in flight, routed back to their callers.
    progress: Arc<ProgressRoutes>,
    /// Requests in flight and their callers, to which the backend's own requests are relayed.
    callers: Arc<Callers>,
    events: mpsc::Sender<BackendEvent>,
    lifecycle: mpsc::Sender<BackendEvent>,
}

impl Notifier {
    /// A notifier for `backend`; starts its lifecycle forwarder on the current arbiter. It ends when every
    /// clone of the notifier is gone or the gateway drops its receiver.
    /// `callers` holds what the backend's own requests are answered from (its configured roots).
    pub(crate) fn start(
        backend: &str,
        callers: Callers,
        events: mpsc::Sender<BackendEvent>,
    ) -> Notifier {
        let (lifecycle, mut queue) = mpsc::channel::<BackendEvent>(LIFECYCLE_QUEUE);
        let out = events.clone();
        actix_rt::spawn(async move {
            while let Some(event) = queue.recv().await {
                if out.send(event).await.is_err() {
                    break;
                }
            }
        });
        Notifier {
            backend: Arc::from(backend),
            progress: Arc::default(),
            callers: Arc::new(callers),
            events,
            lifecycle,
        }
    }

    /// The backend's name.
    pub(crate) fn backend(&self) -> &str {
        &self.backend
    }

    /// The progress routes of this backend's requests in flight.
    pub(crate) fn progress(&self) -> &Arc<ProgressRoutes> {
        &self.progress
    }

    /// This backend's requests in flight and their callers.
    pub(crate) fn callers(&self) -> &Arc<Callers> {
        &self.callers
    }

    /// Passes on a backend notification: progress for a request in flight to that request's caller, anything
    /// else to the gateway (dropped when its channel is full).
    pub(crate) fn notification(&self, notification: Notification) {
        let Err(notification) = self.progress.deliver(notification) else {
            return;
        };
        let event = BackendEvent::Notification {
            backend: self.backend.to_string(),
            notification,
        };
        if let Err(mpsc::error::TrySendError::Full(BackendEvent::Notification {
            notification,
            ..
        })) = self.events.try_send(event)
        {
            warn!(backend = %self.backend, method = %notification.method,
                "event channel full: dropping a backend notification");
        }
    }

    /// The backend is ready.
    pub(crate) fn ready(&self, description: Arc<ServerDescription>) {
        self.lifecycle(BackendEvent::Ready {
            backend: self.backend.to_string(),
            description,
        });
    }

    /// The backend is down.
    pub(crate) fn down(&self, reason: &str) {
        self.lifecycle(BackendEvent::Down {
            backend: self.backend.to_string(),
            reason: reason.to_owned(),
        });
    }

    fn lifecycle(&self, event: BackendEvent) {
        if let Err(mpsc::error::TrySendError::Full(event)) = self.lifecycle.try_send(event) {
            warn!(backend = %self.backend, ?event, "lifecycle queue full: dropping an event");
        }
    }
}
