//! Who hears what a backend sends outside any request: only readers whose view shows it (see
//! [`readers`](super::readers) for what "shows" means).
//!
//! - a log message (`notifications/message`): the legacy sessions whose `logging/setLevel` admits it and
//!   whose view shows the backend that sent it;
//! - a resource update: the sessions and listen streams subscribed to that URI whose view routes the URI
//!   to the backend that sent it;
//! - a list change: the legacy sessions (unsolicited, as their era does) and the listen streams that asked
//!   for that kind, each only when its view's list changed between the catalog before and after.
//!
//! Every view is its audience's, made once per catalog; what one view pair's lists changed is worked out once
//! per call, not per reader. Every delivery is a `try_send` into a bounded queue.

use std::collections::HashMap;
use std::sync::Arc;

use protocol::payload::LoggingLevel;
use protocol::raw::RawObject;
use protocol::{Message, Method, Notification};

use super::readers::ReaderViews;
use crate::catalog::CatalogSnapshot;
use crate::session::{Reader, sse_event};
use crate::state::Gateway;

/// A log message a backend sent outside any request, to every legacy session that asked for logging at or
/// below its level and whose view shows `backend`. 2026-07-28 clients ask per request only, and log messages
/// never go on their listen streams.
pub fn log(gw: &Gateway, views: &mut ReaderViews, backend: &str, n: &Notification) {
    // `[redaction]` judges it before anyone hears it (withheld from all in `refuse` mode).
    let n = match &gw.live().redaction {
        Some(redactor) => match redactor.notification(&gw.metrics, backend, "-", n) {
            Some(judged) => judged,
            None => return,
        },
        None => std::borrow::Cow::Borrowed(n),
    };
    let n = n.as_ref();
    let full = gw.catalog.snapshot();
    let event = sse_event(&Message::Notification(n.clone()).to_bytes());
    let (mut sent, mut withheld) = (0usize, 0usize);
    for session in gw.sessions.all() {
        if !level_passes(n, session.log_level()) {
            continue;
        }
        let shown = views
            .view(&gw.endpoints, &full, session.reader().as_deref())
            .is_some_and(|v| v.shows_backend(backend));
        if !shown {
            withheld += 1;
            continue;
        }
        if session.handle.push(event.clone()).is_ok() {
            sent += 1;
        }
    }
    tracing::debug!(%backend, sent, withheld, "relayed a backend's log message sent outside a request");
}

/// A `notifications/resources/updated` from `backend` for `uri`: to the subscribers of `uri` whose view
/// routes it to `backend`; a session gone meanwhile loses its subscriptions.
pub fn update(gw: &Gateway, views: &mut ReaderViews, backend: &str, uri: &str, n: &Notification) {
    let recipients = gw.subscriptions.recipients(Some(backend), n);
    let full = gw.catalog.snapshot();
    let mut routes_here = |reader: Option<&Reader>| {
        views
            .view(&gw.endpoints, &full, reader)
            .is_some_and(|v| v.resource(uri).is_some_and(|r| r.backend == backend))
    };
    let event = sse_event(&Message::Notification(n.clone()).to_bytes());
    for id in recipients.sessions {
        match gw.sessions.peek(&id) {
            Some(session) => {
                if routes_here(session.reader().as_deref()) {
                    let _ = session.handle.push(event.clone());
                }
            }
            None => gw.subscriptions.end_session(&id),
        }
    }
    for (tx, message, reader) in recipients.listens {
        if routes_here(Some(&reader)) && tx.try_send(message).is_err() {
            crate::session::note_stream_dropped("a subscription stream is full");
        }
    }
}

/// The catalog as readers saw it before a change, or see it after: the catalog and the readers' views.
#[derive(Debug)]
pub struct Seen<'a> {
    /// The full catalog.
    pub full: &'a Arc<CatalogSnapshot>,
    /// The views of it (under the policy in force then).
    pub views: &'a mut ReaderViews,
}

/// What changed for one reader: its view before and after (held so their addresses stay theirs), and the
/// lists that differ.
type Changed = (
    Option<Arc<CatalogSnapshot>>,
    Option<Arc<CatalogSnapshot>>,
    Vec<Method>,
);

/// The lists that changed between two views (a reader shown nothing before or after: none).
fn diff(before: Option<&CatalogSnapshot>, after: Option<&CatalogSnapshot>) -> Vec<Method> {
    match (before, after) {
        (Some(b), Some(a)) => a.changed_lists(b),
        _ => Vec::new(),
    }
}

/// What changed for `reader`, worked out once per pair of views.
fn changed_for<'c>(
    gw: &Gateway,
    before: &mut Seen<'_>,
    after: &mut Seen<'_>,
    cache: &'c mut HashMap<(usize, usize), Changed>,
    reader: Option<&Reader>,
) -> &'c [Method] {
    let old = before.views.view(&gw.endpoints, before.full, reader);
    let new = after.views.view(&gw.endpoints, after.full, reader);
    let key = (
        old.as_ref().map_or(0, |v| Arc::as_ptr(v) as usize),
        new.as_ref().map_or(0, |v| Arc::as_ptr(v) as usize),
    );
    &cache
        .entry(key)
        .or_insert_with(|| {
            let lists = diff(old.as_deref(), new.as_deref());
            (old, new, lists)
        })
        .2
}

/// The catalog (or the policy) changed from `before` to `after`: every legacy session hears
/// `notifications/*/list_changed` for each list of its view that changed, and every listen stream for each
/// such list it asked for. A reader whose view did not change hears nothing. Returns the lists that changed
/// for some reader.
pub fn list_changes(gw: &Gateway, mut before: Seen<'_>, mut after: Seen<'_>) -> Vec<Method> {
    let mut cache: HashMap<(usize, usize), Changed> = HashMap::new();
    let mut heard: Vec<Method> = Vec::new();
    let events: HashMap<Method, bytes::Bytes> = [
        Method::NotificationsToolsListChanged,
        Method::NotificationsPromptsListChanged,
        Method::NotificationsResourcesListChanged,
    ]
    .into_iter()
    .map(|m| {
        let n = Notification::new(m.to_string(), None);
        (m, sse_event(&Message::Notification(n).to_bytes()))
    })
    .collect();
    for session in gw.sessions.all() {
        let reader = session.reader();
        let changed = changed_for(gw, &mut before, &mut after, &mut cache, reader.as_deref());
        for method in changed {
            if let Some(event) = events.get(method) {
                // A failure is counted and logged by the handle.
                let _ = session.handle.push(event.clone());
            }
            if !heard.contains(method) {
                heard.push(*method);
            }
        }
    }
    for method in events.keys() {
        let n = Notification::new(method.to_string(), None);
        for (tx, message, reader) in gw.subscriptions.recipients(None, &n).listens {
            let changed = changed_for(gw, &mut before, &mut after, &mut cache, Some(&reader));
            if !changed.contains(method) {
                continue;
            }
            if !heard.contains(method) {
                heard.push(*method);
            }
            if tx.try_send(message).is_err() {
                crate::session::note_stream_dropped("a subscription stream is full");
            }
        }
    }
    heard
}

/// A log message passes when the client asked for logging and its level is at least the client's.
pub fn level_passes(n: &Notification, wanted: Option<LoggingLevel>) -> bool {
    let Some(wanted) = wanted else {
        return false;
    };
    let level = n
        .params
        .as_deref()
        .and_then(RawObject::parse)
        .and_then(|p| {
            p.get("level")
                .and_then(|l| serde_json::from_str::<LoggingLevel>(l.get()).ok())
        });
    level.is_some_and(|l| l >= wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn log_messages_pass_at_or_above_the_level() {
        let msg = |level: &str| {
            Notification::new(
                "notifications/message",
                Some(&json!({"level": level, "data": "x"})),
            )
        };
        // (message level, wanted, passes)
        let table = [
            ("error", Some(LoggingLevel::Warning), true),
            ("warning", Some(LoggingLevel::Warning), true),
            ("info", Some(LoggingLevel::Warning), false),
            ("debug", Some(LoggingLevel::Debug), true),
            ("error", None, false),
            ("loud", Some(LoggingLevel::Debug), false),
        ];
        for (level, wanted, passes) in table {
            assert_eq!(
                level_passes(&msg(level), wanted),
                passes,
                "{level} {wanted:?}"
            );
        }
    }
}
