//! The subscription of one connection, as the actor runs it beside the connection: it follows the filter
//! the gateway sets and keeps the backend subscribed to it (modern: `subscriptions/listen`; legacy:
//! `resources/subscribe` and `resources/unsubscribe`), and publishes what the backend honours.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use protocol::method::Method;
use protocol::payload::{ServerCapabilities, SubscriptionsListenRequestParams};
use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::stream::{End, Subscription};
use super::{ListenFilter, ListenRoute};
use crate::backoff::Backoff;
use crate::description::ServerDescription;
use crate::inbound::Inbound;
use crate::link::{Link, LinkContext, Renew};
use crate::request::BackendRequest;
use crate::shared::Shared;

/// Makes the session renewer a legacy HTTP request needs (one per request).
pub(crate) type RenewFactory = Box<dyn Fn() -> Renew>;

/// Keeps the backend of `link` subscribed to the filter in `shared` until dropped (by the actor, when the
/// connection is lost or replaced, or the actor stops).
pub(crate) async fn drive(
    link: Link,
    ctx: Arc<LinkContext>,
    description: Arc<ServerDescription>,
    shared: Arc<Shared>,
    renew: Option<RenewFactory>,
) {
    let desired = shared.desired_filter();
    let capabilities = &description.capabilities;
    if description.generation.is_modern() {
        modern(&link, &ctx, capabilities, desired, &shared).await;
    } else {
        legacy(
            &link,
            &ctx,
            capabilities,
            desired,
            &shared,
            renew.as_deref(),
        )
        .await;
    }
}

/// Modern backends: one `subscriptions/listen` request at a time, replaced make-before-break.
async fn modern(
    link: &Link,
    ctx: &Arc<LinkContext>,
    capabilities: &ServerCapabilities,
    mut desired: watch::Receiver<ListenFilter>,
    shared: &Shared,
) {
    let mut backoff = Backoff::default();
    let ack_limit = ctx.config.request_timeout;
    let mut current: Option<Subscription> = None;
    loop {
        let requested = desired.borrow_and_update().clone();
        let want = requested.supported_by(capabilities);
        if want.is_empty() {
            // Nothing (the backend supports) to listen to: no request at all.
            current = None;
            shared.set_listening((!requested.is_empty()).then(ListenFilter::default));
            if desired.changed().await.is_err() {
                return;
            }
            continue;
        }
        if current.as_ref().map(|c| &c.filter) != Some(&want) {
            let mut candidate = open(link, ctx, want);
            // The current subscription (of the previous filter) serves until this one is acknowledged.
            let acked = tokio::select! {
                acked = tokio::time::timeout(ack_limit, candidate.acked()) => acked.unwrap_or_else(|_| {
                    Err(End::Dropped(format!(
                        "no acknowledgement within {} ms",
                        ack_limit.as_millis()
                    )))
                }),
                changed = desired.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue;
                }
            };
            match acked {
                Ok(honoured) => {
                    info!(?honoured, "the backend acknowledged the subscription");
                    current = Some(candidate);
                    shared.set_listening(Some(honoured));
                }
                Err(end) => {
                    if matches!(end, End::Refused(_)) {
                        current = None;
                        shared.set_listening(None);
                    }
                    if !wait_after(end, &mut backoff, &mut desired).await {
                        return;
                    }
                    continue;
                }
            }
        }
        let Some(subscription) = current.as_mut() else {
            continue;
        };
        let end = tokio::select! {
            changed = desired.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
            end = subscription.ended() => end,
        };
        backoff.connection_lost_after(subscription.age());
        current = None;
        shared.set_listening(None);
        if !wait_after(end, &mut backoff, &mut desired).await {
            return;
        }
    }
}

/// After a subscription request ended: a refused one waits for another filter; a dropped one is sent again
/// after the backoff delay, or at once when the filter changes. False when the handle is gone.
async fn wait_after(
    end: End,
    backoff: &mut Backoff,
    desired: &mut watch::Receiver<ListenFilter>,
) -> bool {
    match end {
        End::Refused(why) => {
            warn!(%why, "the backend refused the subscription: waiting for another filter");
            desired.changed().await.is_ok()
        }
        End::Dropped(why) => {
            let delay = backoff.next_delay();
            debug!(%why, delay_ms = delay.as_millis() as u64, "the subscription dropped: listening again later");
            tokio::select! {
                changed = desired.changed() => changed.is_ok(),
                () = tokio::time::sleep(delay) => true,
            }
        }
    }
}

/// Sends one `subscriptions/listen` for `filter` (already limited to what the backend supports).
fn open(link: &Link, ctx: &Arc<LinkContext>, filter: ListenFilter) -> Subscription {
    let params = SubscriptionsListenRequestParams {
        notifications: filter.to_wire(),
        ..SubscriptionsListenRequestParams::default()
    };
    let params = serde_json::value::to_raw_value(&params).ok();
    let request = BackendRequest::new(Method::SubscriptionsListen, params);
    let notifier = ctx.notifier.clone();
    match link {
        Link::Modern(link) => {
            let link = link.clone();
            let open_by = Instant::now() + ctx.config.request_timeout;
            let inbound = Inbound::new(notifier.clone(), None, None);
            Subscription::spawn(notifier, filter, move |tap| async move {
                let inbound = inbound.with_listen(ListenRoute::Stream(tap));
                end_of(link.stream(request, open_by, &inbound).await)
            })
        }
        Link::Stdio(link) => {
            let link = link.clone();
            Subscription::spawn(notifier, filter, move |tap| async move {
                end_of(link.listen(request, tap).await)
            })
        }
        Link::Legacy(_) | Link::Sse(_) => Subscription::spawn(notifier, filter, |_| async {
            End::Refused("a legacy connection has no subscriptions/listen".to_owned())
        }),
        Link::InProcess(_) => Subscription::spawn(notifier, filter, |_| async {
            End::Refused("an in-process server sends no notifications".to_owned())
        }),
    }
}

/// How a listen request ended, from what its final answer was.
fn end_of(outcome: Result<Box<RawValue>, Failure>) -> End {
    match outcome {
        Ok(_) => End::Dropped("the backend closed the subscription".to_owned()),
        Err(Failure::Backend { error, .. }) => End::Refused(error.to_string()),
        Err(Failure::Internal { reason }) => End::Refused(reason),
        Err(other) => End::Dropped(other.to_string()),
    }
}

/// Legacy backends: `resources/subscribe` and `resources/unsubscribe` for the URIs added and removed, one
/// at a time; list changes come unsolicited.
async fn legacy(
    link: &Link,
    ctx: &LinkContext,
    capabilities: &ServerCapabilities,
    mut desired: watch::Receiver<ListenFilter>,
    shared: &Shared,
    renew: Option<&dyn Fn() -> Renew>,
) {
    // What this connection subscribed (a new connection or session starts with nothing).
    let mut subscribed = BTreeSet::new();
    let timeout = ctx.config.request_timeout;
    loop {
        let requested = desired.borrow_and_update().clone();
        let want = requested.supported_by(capabilities);
        let wanted: BTreeSet<&String> = want.resource_subscriptions.iter().collect();
        let removed: Vec<String> = subscribed
            .iter()
            .filter(|uri| !wanted.contains(uri))
            .cloned()
            .collect();
        for uri in removed {
            let outcome =
                resource_request(link, Method::ResourcesUnsubscribe, &uri, timeout, renew).await;
            if let Err(failure) = outcome {
                debug!(%uri, %failure, "resources/unsubscribe failed");
            }
            subscribed.remove(&uri);
        }
        for uri in &want.resource_subscriptions {
            if subscribed.contains(uri) {
                continue;
            }
            match resource_request(link, Method::ResourcesSubscribe, uri, timeout, renew).await {
                Ok(()) => {
                    subscribed.insert(uri.clone());
                }
                Err(failure) => warn!(%uri, %failure, "resources/subscribe failed"),
            }
        }
        let honoured = ListenFilter {
            resource_subscriptions: subscribed.iter().cloned().collect(),
            ..want
        };
        shared.set_listening((!requested.is_empty()).then_some(honoured));
        if desired.changed().await.is_err() {
            return;
        }
    }
}

/// `resources/subscribe` or `resources/unsubscribe` of one URI.
async fn resource_request(
    link: &Link,
    method: Method,
    uri: &str,
    timeout: Duration,
    renew: Option<&dyn Fn() -> Renew>,
) -> Result<(), Failure> {
    let params = serde_json::value::to_raw_value(&serde_json::json!({ "uri": uri })).ok();
    let request = BackendRequest::new(method, params);
    link.call(request, Instant::now() + timeout, renew.map(|make| make()))
        .await
        .map(drop)
}
