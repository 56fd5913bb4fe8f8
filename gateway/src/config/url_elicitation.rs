//! `[[backend]] url_elicitation`: whether the gateway relays a backend's URL elicitations (its -32042 errors
//! and URL-mode `elicitation/create`) to the client, given whose consent they collect.

use serde::{Deserialize, Serialize};

/// `[[backend]] url_elicitation`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UrlElicitation {
    /// Relayed only where the backend tells principals apart — each principal's own credential (and, for a
    /// legacy Streamable HTTP backend, its own backend session: `grant = "token_exchange"`) — or the gateway
    /// has one client (`serve --stdio`). Otherwise a consent one user gives would serve every user of the
    /// backend's one session and credential: the elicitation is not relayed, and the client is told why.
    #[default]
    PerPrincipal,
    /// Relayed to whoever asked, whatever the backend can tell apart: for a gateway with one user, or a
    /// backend whose URLs collect nothing that binds (the operator's decision, said in the config).
    Shared,
    /// Never relayed: the client is told the backend needs a URL opened and that the gateway does not relay it.
    Off,
}
