//! `subscriptions/listen` (2026-07-28): a long-lived stream for one client. It is acknowledged first with the
//! part of the filter the gateway honours (list changes of every kind; the resource URIs some backend serves),
//! then carries the matching notifications, each tagged with the subscription id, and keep-alives while quiet.
//! It ends when the client closes it; the backends' subscriptions then shrink to what others still want.
//! It is a request like any other until it is open: through the middleware chain, within its worker's
//! in-flight bound; open, it holds its place in the streams' own pool and its caller's bounds
//! (`session::subscriptions`) instead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use handlers::Caller;
use protocol::payload::{SubscriptionFilter, SubscriptionsListenRequestParams};
use protocol::validate::Call;
use protocol::{Error, ErrorCode, Notification};
use tokio::sync::mpsc;

use crate::catalog::CatalogSnapshot;
use crate::notify::changes::sync_backend;
use crate::session::Reader;
use crate::session::subscriptions::{Filter, MAX_PER_LISTEN, tagged};
use crate::state::Gateway;

/// Messages a listen stream buffers before notifications to it are dropped.
const BUFFER: usize = 256;
/// How often a quiet listen stream gets a keep-alive (an empty message: the transport writes a comment).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Why a listen stream was not opened.
#[derive(Debug)]
pub enum Refused {
    /// The request is at fault (its params, or the caller's bounds): a JSON-RPC error naming why.
    Invalid(Error),
    /// The gateway holds its maximum of streams.
    Full(String),
}

/// Opens a listen stream for `caller` (a `principal`'s streams are counted too); its messages arrive on the returned channel until the client goes
/// away. The resource URIs honoured are those `view` (the catalog as the client may see it) routes to a
/// backend; each is subscribed through that backend, and what reaches the stream later is judged by
/// `reader`'s view then (`notify::fanout`). The stream takes its place in the pool and in the
/// caller's bounds before anything is acknowledged, and holds it for its lifetime.
pub fn open(
    gw: &Arc<Gateway>,
    view: &CatalogSnapshot,
    call: &Call,
    caller: Option<Caller>,
    principal: bool,
    reader: Reader,
) -> Result<mpsc::Receiver<Vec<u8>>, Refused> {
    let params: SubscriptionsListenRequestParams =
        call.request().params_as().map_err(Refused::Invalid)?;
    let asked = params.notifications;
    let named = asked.resource_subscriptions.clone().unwrap_or_default();
    if named.len() > MAX_PER_LISTEN {
        return Err(Refused::Invalid(Error::new(
            ErrorCode::InvalidParams,
            format!(
                "invalid params: resourceSubscriptions names {} URIs; a subscriptions/listen request may name at most {MAX_PER_LISTEN}",
                named.len()
            ),
        )));
    }
    let routed: BTreeMap<String, String> = named
        .into_iter()
        .filter_map(|u| {
            let backend = view.resource(&u)?.backend.to_owned();
            Some((u, backend))
        })
        .collect();
    let filter = Filter {
        tools: asked.tools_list_changed == Some(true),
        prompts: asked.prompts_list_changed == Some(true),
        resources: asked.resources_list_changed == Some(true),
        uris: routed,
    };
    let uris: Vec<String> = filter.uris.keys().cloned().collect();
    let honoured = SubscriptionFilter {
        tools_list_changed: filter.tools.then_some(true),
        prompts_list_changed: filter.prompts.then_some(true),
        resources_list_changed: filter.resources.then_some(true),
        resource_subscriptions: (!uris.is_empty()).then_some(uris),
        ..SubscriptionFilter::default()
    };
    let backends: BTreeSet<String> = filter.uris.values().cloned().collect();
    let (tx, rx) = mpsc::channel(BUFFER);
    let id = call.request().id.clone();
    let guard = gw
        .subscriptions
        .listen(
            id.clone(),
            filter,
            caller,
            principal,
            tx.clone(),
            Arc::new(reader),
        )
        .map_err(|e| {
            if e.is_callers() {
                Refused::Invalid(Error::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params: {e}"),
                ))
            } else {
                tracing::warn!(error = %e, "subscription stream refused");
                Refused::Full(e.to_string())
            }
        })?;
    let ack = Notification::new(
        "notifications/subscriptions/acknowledged",
        Some(&serde_json::json!({ "notifications": honoured })),
    );
    // A new channel has room: the acknowledgement is its first message.
    let _ = tx.try_send(tagged(&ack, &id));
    for b in &backends {
        sync_backend(gw, b);
    }
    let gw = gw.clone();
    actix_rt::spawn(async move {
        let mut quiet = tokio::time::interval(KEEP_ALIVE);
        quiet.tick().await;
        // A shutdown ends the stream when the listener closes: the client reconnects elsewhere.
        let closing = gw.drain.reached(crate::drain::Phase::Closing);
        tokio::pin!(closing);
        loop {
            tokio::select! {
                () = tx.closed() => break,
                () = &mut closing => break,
                _ = quiet.tick() => {
                    let _ = tx.try_send(Vec::new());
                }
            }
        }
        drop(guard);
        for b in &backends {
            sync_backend(&gw, b);
        }
    });
    Ok(rx)
}
