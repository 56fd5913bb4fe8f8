//! MCP method names, which generations define them, who handles them and which are cacheable.

use std::fmt;

use crate::generation::Generation;

/// The kind of handler that answers a method. It decides the shape of an error (DESIGN §1): tool failures
/// become `isError` results, resource and prompt failures become JSON-RPC errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandlerKind {
    /// `tools/call`.
    Tool,
    /// `resources/*`.
    Resource,
    /// `prompts/*`.
    Prompt,
    /// Everything else (lists of tools, discovery, completion, ...).
    Other,
}

macro_rules! methods {
    ($( $variant:ident = $name:literal, $since:ident .. $until:ident, $kind:ident; )*) => {
        /// A method this crate knows (requests and notifications, both directions).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $( #[doc = $name] $variant, )*
        }

        impl Method {
            /// Every known method.
            pub const ALL: &'static [Method] = &[$(Method::$variant),*];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self { $( Method::$variant => $name, )* }
            }

            /// Parses an exact (case-sensitive) wire name.
            pub fn parse(name: &str) -> Option<Method> {
                match name { $( $name => Some(Method::$variant), )* _ => None }
            }

            /// Whether `generation` defines this method.
            pub fn exists_in(self, generation: Generation) -> bool {
                match self {
                    $( Method::$variant => Generation::$since <= generation && generation <= Generation::$until, )*
                }
            }

            /// Which kind of handler answers it.
            pub const fn handler_kind(self) -> HandlerKind {
                match self { $( Method::$variant => HandlerKind::$kind, )* }
            }
        }
    };
}

methods! {
    Initialize = "initialize", V2024_11_05..V2025_11_25, Other;
    Ping = "ping", V2024_11_05..V2025_11_25, Other;
    ServerDiscover = "server/discover", V2026_07_28..V2026_07_28, Other;
    ToolsList = "tools/list", V2024_11_05..V2026_07_28, Other;
    ToolsCall = "tools/call", V2024_11_05..V2026_07_28, Tool;
    ResourcesList = "resources/list", V2024_11_05..V2026_07_28, Resource;
    ResourcesTemplatesList = "resources/templates/list", V2024_11_05..V2026_07_28, Resource;
    ResourcesRead = "resources/read", V2024_11_05..V2026_07_28, Resource;
    ResourcesSubscribe = "resources/subscribe", V2024_11_05..V2025_11_25, Resource;
    ResourcesUnsubscribe = "resources/unsubscribe", V2024_11_05..V2025_11_25, Resource;
    PromptsList = "prompts/list", V2024_11_05..V2026_07_28, Prompt;
    PromptsGet = "prompts/get", V2024_11_05..V2026_07_28, Prompt;
    CompletionComplete = "completion/complete", V2024_11_05..V2026_07_28, Other;
    LoggingSetLevel = "logging/setLevel", V2024_11_05..V2025_11_25, Other;
    SubscriptionsListen = "subscriptions/listen", V2026_07_28..V2026_07_28, Other;
    TasksGet = "tasks/get", V2025_11_25..V2026_07_28, Other;
    TasksResult = "tasks/result", V2025_11_25..V2025_11_25, Other;
    TasksList = "tasks/list", V2025_11_25..V2025_11_25, Other;
    TasksCancel = "tasks/cancel", V2025_11_25..V2026_07_28, Other;
    TasksUpdate = "tasks/update", V2026_07_28..V2026_07_28, Other;
    SamplingCreateMessage = "sampling/createMessage", V2024_11_05..V2026_07_28, Other;
    ElicitationCreate = "elicitation/create", V2025_06_18..V2026_07_28, Other;
    RootsList = "roots/list", V2024_11_05..V2026_07_28, Other;
    NotificationsInitialized = "notifications/initialized", V2024_11_05..V2025_11_25, Other;
    NotificationsCancelled = "notifications/cancelled", V2024_11_05..V2026_07_28, Other;
    NotificationsProgress = "notifications/progress", V2024_11_05..V2026_07_28, Other;
    NotificationsMessage = "notifications/message", V2024_11_05..V2026_07_28, Other;
    NotificationsRootsListChanged = "notifications/roots/list_changed", V2024_11_05..V2025_11_25, Other;
    NotificationsToolsListChanged = "notifications/tools/list_changed", V2024_11_05..V2026_07_28, Other;
    NotificationsPromptsListChanged = "notifications/prompts/list_changed", V2024_11_05..V2026_07_28, Other;
    NotificationsResourcesListChanged = "notifications/resources/list_changed", V2024_11_05..V2026_07_28, Other;
    NotificationsResourcesUpdated = "notifications/resources/updated", V2024_11_05..V2026_07_28, Other;
    NotificationsSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", V2026_07_28..V2026_07_28, Other;
    NotificationsElicitationComplete = "notifications/elicitation/complete", V2025_11_25..V2025_11_25, Other;
    NotificationsTasksStatus = "notifications/tasks/status", V2025_11_25..V2025_11_25, Other;
    NotificationsTasks = "notifications/tasks", V2026_07_28..V2026_07_28, Other;
}

impl Method {
    /// Requests a client sends to a server (as opposed to server-to-client requests and notifications).
    pub const fn is_client_request(self) -> bool {
        matches!(
            self,
            Method::Initialize
                | Method::Ping
                | Method::ServerDiscover
                | Method::ToolsList
                | Method::ToolsCall
                | Method::ResourcesList
                | Method::ResourcesTemplatesList
                | Method::ResourcesRead
                | Method::ResourcesSubscribe
                | Method::ResourcesUnsubscribe
                | Method::PromptsList
                | Method::PromptsGet
                | Method::CompletionComplete
                | Method::LoggingSetLevel
                | Method::SubscriptionsListen
                | Method::TasksGet
                | Method::TasksResult
                | Method::TasksList
                | Method::TasksCancel
                | Method::TasksUpdate
        )
    }

    /// Notifications a client may send to a server.
    pub const fn is_client_notification(self) -> bool {
        matches!(
            self,
            Method::NotificationsInitialized
                | Method::NotificationsCancelled
                | Method::NotificationsProgress
                | Method::NotificationsRootsListChanged
        )
    }

    /// Methods whose `complete` result is cacheable on 2026-07-28 and must carry `ttlMs` and `cacheScope`.
    pub const fn is_cacheable(self) -> bool {
        matches!(
            self,
            Method::ServerDiscover
                | Method::ToolsList
                | Method::PromptsList
                | Method::ResourcesList
                | Method::ResourcesTemplatesList
                | Method::ResourcesRead
        )
    }

    /// Control traffic: what a gateway asks a server to keep its picture of it current (the lists, discovery,
    /// liveness, subscriptions, the log level), as opposed to the data path (calls, reads, gets,
    /// completions). A gateway must never let the one starve the other.
    pub const fn is_control(self) -> bool {
        matches!(
            self,
            Method::Initialize
                | Method::Ping
                | Method::ServerDiscover
                | Method::ToolsList
                | Method::PromptsList
                | Method::ResourcesList
                | Method::ResourcesTemplatesList
                | Method::ResourcesSubscribe
                | Method::ResourcesUnsubscribe
                | Method::SubscriptionsListen
                | Method::LoggingSetLevel
        )
    }

    /// Methods that carry `Mcp-Name` on 2026-07-28, and the params field it mirrors.
    pub const fn name_field(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            _ => None,
        }
    }

    /// Methods that may answer with an `input_required` result on 2026-07-28.
    pub const fn may_require_input(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        )
    }

    /// For the requests a server sends a client, the client capability that must have been declared for the
    /// client to be asked (`ClientCapabilities` field name).
    pub const fn client_capability(self) -> Option<&'static str> {
        match self {
            Method::SamplingCreateMessage => Some("sampling"),
            Method::ElicitationCreate => Some("elicitation"),
            Method::RootsList => Some("roots"),
            _ => None,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Generation::*;

    #[test]
    fn names_round_trip_and_are_case_sensitive() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.as_str()), Some(*m));
        }
        assert_eq!(Method::parse("TOOLS/CALL"), None);
        assert_eq!(Method::parse("tools/call "), None);
    }

    #[test]
    fn methods_per_generation() {
        // (method, generation, defined)
        let table = [
            (Method::Initialize, V2025_11_25, true),
            (Method::Initialize, V2026_07_28, false),
            (Method::Ping, V2026_07_28, false),
            (Method::ServerDiscover, V2025_11_25, false),
            (Method::ServerDiscover, V2026_07_28, true),
            (Method::ToolsCall, V2024_11_05, true),
            (Method::ToolsCall, V2026_07_28, true),
            (Method::ResourcesSubscribe, V2026_07_28, false),
            (Method::SubscriptionsListen, V2026_07_28, true),
            (Method::LoggingSetLevel, V2026_07_28, false),
            (Method::ElicitationCreate, V2025_03_26, false),
            (Method::ElicitationCreate, V2025_06_18, true),
            (Method::TasksResult, V2025_11_25, true),
            (Method::TasksResult, V2026_07_28, false),
        ];
        for (m, g, defined) in table {
            assert_eq!(m.exists_in(g), defined, "{m} on {g}");
        }
    }

    #[test]
    fn kinds_and_routing_fields() {
        assert_eq!(Method::ToolsCall.handler_kind(), HandlerKind::Tool);
        assert_eq!(Method::ResourcesRead.handler_kind(), HandlerKind::Resource);
        assert_eq!(Method::PromptsGet.handler_kind(), HandlerKind::Prompt);
        assert_eq!(Method::ToolsList.handler_kind(), HandlerKind::Other);
        assert_eq!(Method::ResourcesRead.name_field(), Some("uri"));
        assert_eq!(Method::ToolsList.name_field(), None);
        assert!(Method::ServerDiscover.is_cacheable());
        assert!(!Method::ToolsCall.is_cacheable());
    }

    #[test]
    fn control_traffic_is_told_from_the_data_path() {
        // (method, control)
        let table = [
            (Method::ToolsList, true),
            (Method::PromptsList, true),
            (Method::ResourcesList, true),
            (Method::ResourcesTemplatesList, true),
            (Method::ServerDiscover, true),
            (Method::Ping, true),
            (Method::SubscriptionsListen, true),
            (Method::ResourcesSubscribe, true),
            (Method::ToolsCall, false),
            (Method::ResourcesRead, false),
            (Method::PromptsGet, false),
            (Method::CompletionComplete, false),
            (Method::TasksGet, false),
        ];
        for (m, control) in table {
            assert_eq!(m.is_control(), control, "{m}");
        }
    }

    #[test]
    fn server_requests_name_the_client_capability_they_need() {
        // (method, capability)
        let table = [
            (Method::SamplingCreateMessage, Some("sampling")),
            (Method::ElicitationCreate, Some("elicitation")),
            (Method::RootsList, Some("roots")),
            (Method::Ping, None),
            (Method::ToolsCall, None),
        ];
        for (m, capability) in table {
            assert_eq!(m.client_capability(), capability, "{m}");
        }
    }
}
