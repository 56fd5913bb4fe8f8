//! `subscriptions/listen` (2026-07-28): a long-lived stream for one client. It is acknowledged first with the
//! part of the filter the gateway honours (list changes of every kind; the resource URIs some backend serves),
//! then carries the matching notifications, each tagged with the subscription id, and keep-alives while quiet.
//! It ends when the client closes it; the backends' subscriptions then shrink to what others still want.

use std::sync::Arc;
use std::time::Duration;

use protocol::payload::{SubscriptionFilter, SubscriptionsListenRequestParams};
use protocol::validate::Call;
use protocol::{Error, ErrorCode, Notification};
use tokio::sync::mpsc;

use crate::catalog::CatalogSnapshot;
use crate::notify::changes::sync_backend;
use crate::session::Reader;
use crate::session::subscriptions::{Filter, tagged};
use crate::state::Gateway;

/// Messages a listen stream buffers before notifications to it are dropped.
const BUFFER: usize = 256;
/// How often a quiet listen stream gets a keep-alive (an empty message: the transport writes a comment).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Opens a listen stream; its messages arrive on the returned channel until the client goes away. The
/// resource URIs honoured are those some backend serves in `snapshot`, the catalog as the client may see it;
/// what reaches the stream later is judged by `reader`'s view then (`notify::fanout`).
pub fn open(
    gw: &Arc<Gateway>,
    snapshot: &CatalogSnapshot,
    call: &Call,
    reader: Reader,
) -> Result<mpsc::Receiver<Vec<u8>>, Error> {
    let params: SubscriptionsListenRequestParams = call.request().params_as()?;
    let asked = params.notifications;
    let uris: Vec<String> = asked
        .resource_subscriptions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|u| snapshot.resource(u).is_some())
        .collect();
    let filter = Filter {
        tools: asked.tools_list_changed == Some(true),
        prompts: asked.prompts_list_changed == Some(true),
        resources: asked.resources_list_changed == Some(true),
        uris: uris.iter().cloned().collect(),
    };
    let honoured = SubscriptionFilter {
        tools_list_changed: filter.tools.then_some(true),
        prompts_list_changed: filter.prompts.then_some(true),
        resources_list_changed: filter.resources.then_some(true),
        resource_subscriptions: (!uris.is_empty()).then_some(uris),
        ..SubscriptionFilter::default()
    };
    let ack = Notification::new(
        "notifications/subscriptions/acknowledged",
        Some(&serde_json::json!({ "notifications": honoured })),
    );
    let (tx, rx) = mpsc::channel(BUFFER);
    let id = call.request().id.clone();
    tx.try_send(tagged(&ack, &id)).map_err(|_| {
        Error::new(
            ErrorCode::InternalError,
            "internal error: listen stream closed",
        )
    })?;
    let backends: Vec<String> = filter
        .uris
        .iter()
        .filter_map(|u| snapshot.resource(u).map(|r| r.backend.to_owned()))
        .collect();
    let gw = gw.clone();
    actix_rt::spawn(async move {
        let guard = match gw
            .subscriptions
            .listen(id, filter, tx.clone(), Arc::new(reader))
        {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!(error = %e, "subscription stream refused");
                return;
            }
        };
        for b in &backends {
            sync_backend(&gw, b);
        }
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
