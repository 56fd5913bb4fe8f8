//! Subscriptions towards a backend: resource updates and list changes, so that the gateway can offer
//! `resources/subscribe` (legacy clients) and `subscriptions/listen` (modern clients) over any backend.
//!
//! The gateway sets one [`ListenFilter`] per backend ([`crate::BackendHandle::listen`]); the latest one wins
//! (a `watch` channel: nothing queues). The actor runs one driver per connection ([`drive`]), started when
//! the connection is ready and dropped when it is lost, so the subscription is re-established after every
//! reconnect, restart or session renewal:
//!
//! - modern backends (2026-07-28) get one long-lived `subscriptions/listen` request with the part of the
//!   filter their capabilities support (`*.listChanged`, `resources.subscribe`). A new filter opens a new
//!   request; the previous one is ended only once the new one is acknowledged (no update is lost in
//!   between; one may arrive twice). A request that drops is re-sent after the backoff delay; one the
//!   backend refuses (a JSON-RPC error) waits for another filter. HTTP: the request's SSE response stream is
//!   the subscription, ended by dropping it. Stdio: the request stays in flight, its notifications are
//!   matched by `_meta["io.modelcontextprotocol/subscriptionId"]`, and it is ended by
//!   `notifications/cancelled`.
//! - legacy backends get `resources/subscribe` / `resources/unsubscribe` for the URIs added and removed;
//!   list changes need nothing (legacy servers send them unsolicited).
//!
//! What a subscription delivers goes to the gateway as ordinary [`crate::BackendEvent::Notification`]s,
//! without the subscription id; `notifications/subscriptions/acknowledged` is consumed here and read by
//! [`crate::BackendHandle::listening`].

mod driver;
mod stream;

pub(crate) use driver::{RenewFactory, drive};
pub(crate) use stream::{ListenRoute, SubscriptionRoutes, Tap};

use protocol::payload::{ServerCapabilities, SubscriptionFilter};
use serde_json::{Map, Value};

/// What to listen to (the 2026-07-28 `SubscriptionFilter`): list changes and resource URIs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_subscriptions: Vec<String>,
}

impl ListenFilter {
    /// Nothing to listen to: a subscription with this filter ends.
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resource_subscriptions.is_empty()
    }

    /// The same filter with its URIs sorted and without duplicates, so that equal filters compare equal.
    pub(crate) fn normalized(mut self) -> ListenFilter {
        self.resource_subscriptions.sort_unstable();
        self.resource_subscriptions.dedup();
        self
    }

    /// The part of the filter a backend with these capabilities can honour.
    pub(crate) fn supported_by(&self, capabilities: &ServerCapabilities) -> ListenFilter {
        let tools = capabilities.tools.as_ref();
        let prompts = capabilities.prompts.as_ref();
        let resources = capabilities.resources.as_ref();
        ListenFilter {
            tools_list_changed: self.tools_list_changed && flag(tools, "listChanged"),
            prompts_list_changed: self.prompts_list_changed && flag(prompts, "listChanged"),
            resources_list_changed: self.resources_list_changed && flag(resources, "listChanged"),
            resource_subscriptions: if flag(resources, "subscribe") {
                self.resource_subscriptions.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// The wire form: only what is asked for (no `false` flags, no empty URI list).
    pub(crate) fn to_wire(&self) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools_list_changed.then_some(true),
            prompts_list_changed: self.prompts_list_changed.then_some(true),
            resources_list_changed: self.resources_list_changed.then_some(true),
            resource_subscriptions: (!self.resource_subscriptions.is_empty())
                .then(|| self.resource_subscriptions.clone()),
            extra: Map::new(),
        }
    }

    /// A filter from its wire form (what a backend acknowledged).
    pub(crate) fn from_wire(wire: SubscriptionFilter) -> ListenFilter {
        ListenFilter {
            tools_list_changed: wire.tools_list_changed == Some(true),
            prompts_list_changed: wire.prompts_list_changed == Some(true),
            resources_list_changed: wire.resources_list_changed == Some(true),
            resource_subscriptions: wire.resource_subscriptions.unwrap_or_default(),
        }
        .normalized()
    }
}

/// Whether a capability section declares `key: true`.
fn flag(section: Option<&Map<String, Value>>, key: &str) -> bool {
    section
        .and_then(|s| s.get(key))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(tools: bool, prompts: bool, resources: bool, uris: &[&str]) -> ListenFilter {
        ListenFilter {
            tools_list_changed: tools,
            prompts_list_changed: prompts,
            resources_list_changed: resources,
            resource_subscriptions: uris.iter().map(|u| (*u).to_owned()).collect(),
        }
    }

    #[test]
    fn unsupported_parts_are_left_out() {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "prompts": {},
            "resources": {"subscribe": true, "listChanged": false}
        }))
        .unwrap();
        let all = filter(true, true, true, &["a", "b"]);
        assert_eq!(
            all.supported_by(&caps),
            filter(true, false, false, &["a", "b"])
        );
        let none = ServerCapabilities::default();
        assert!(all.supported_by(&none).is_empty());
        assert!(ListenFilter::default().is_empty());
        assert!(!filter(false, false, false, &["a"]).is_empty());
    }

    #[test]
    fn wire_form_holds_only_what_is_asked() {
        let wire = serde_json::to_value(filter(true, false, false, &["u"]).to_wire()).unwrap();
        assert_eq!(
            wire,
            json!({"toolsListChanged": true, "resourceSubscriptions": ["u"]})
        );
        let wire = serde_json::to_value(filter(false, true, false, &[]).to_wire()).unwrap();
        assert_eq!(wire, json!({"promptsListChanged": true}));
        let acked: SubscriptionFilter = serde_json::from_value(
            json!({"resourceSubscriptions": ["b", "a", "b"], "toolsListChanged": false, "taskIds": []}),
        )
        .unwrap();
        assert_eq!(
            ListenFilter::from_wire(acked),
            filter(false, false, false, &["a", "b"])
        );
    }
}
