//! The aggregated catalog of tools, prompts, resources and resource templates across backends.
//!
//! Pure: no I/O, no async, no lock. The caller fetches every backend's lists (all pages), hands each one to a
//! [`CatalogBuilder`] as a [`BackendListing`] (or marks the backend [`missing`](CatalogBuilder::missing)), and
//! [`build`](CatalogBuilder::build)s an immutable [`CatalogSnapshot`] that is shared as an `Arc` by every
//! routing actor and the front door until the next (re)build.
//!
//! - Names (DESIGN §4): a backend's tool `t` is exposed as `{prefix}__t`, or `t` with an empty prefix; prompts
//!   likewise ([`names`]). Resources and templates keep their URIs. A collision across backends is a
//!   [`CatalogError::Collision`] naming both backends, never a silent shadow.
//! - Untrusted backend JSON: an item of the wrong shape, a tool with invalid `x-mcp-header` annotations, or a
//!   duplicate within one backend is left out with a `tracing::warn`, never a panic.
//! - Every list is deterministically ordered (by exposed name, `uri` or `uriTemplate`), whatever the order
//!   the backends were added in, and [`CatalogSnapshot::version`] is a content hash (module `version`).
//! - Downstream pagination uses opaque cursors bound to the snapshot version and the list (module `cursor`).
//! - Resource URIs are routed exactly first, then through RFC 6570 templates ([`template`]).
//! - Each list says how long it may be reused: the least fresh contributor wins ([`freshness`]).
//! - [`CatalogSnapshot`] implements [`protocol::validate::Catalog`] (module `lookup`).
//! - Each backend's listing is shaped by its configured [`Shaping`] first (module `shaping`): what it does
//!   not select is absent, renamed tools and prompts are prefixed under their new name.
//! - A view of it for one audience ([`CatalogSnapshot::restricted`], module `view`) is a snapshot too.
//! - [`search`]: the `find_tools` / `call_tool` pair listed instead of a huge catalog, and the BM25 index
//!   `find_tools` ranks a view's tools with; a searching view of a snapshot (module `searching`) lists the
//!   pair and resolves them for validation.

mod builder;
mod cursor;
mod down;
mod freshness;
pub mod ledger;
mod lookup;
pub mod names;
mod restriction;
pub mod search;
mod searching;
pub mod shaping;
mod snapshot;
pub mod template;
mod uri;
pub(crate) use uri::normalize as normalized_uri;
mod version;
mod view;

#[cfg(test)]
mod tests;

pub use builder::CatalogBuilder;
pub use cursor::{ListKind};
#[cfg(any(test, feature = "internals"))]
pub use cursor::{CursorError, Page};
pub use down::{DownBackend, client_reason};
pub use freshness::{ListFreshness, ListsFreshness};
pub use restriction::{Item, Restriction};
pub use searching::{GatewayTool, reserved};
pub use shaping::{Selection, Shaping};
pub use snapshot::{CatalogSnapshot, ToolEntry};
#[cfg(any(test, feature = "internals"))]
pub use snapshot::{PromptEntry, ResourceMatch, ResourceRoute};

/// What one backend listed (all pages already fetched by the caller), as raw JSON objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendListing {
    /// The configured backend name.
    pub backend: String,
    /// The prefix of its tool and prompt names; `""` = no prefix.
    pub prefix: String,
    /// Raw `Tool` objects as the backend sent them.
    pub tools: Vec<serde_json::Value>,
    /// Raw `Prompt` objects.
    pub prompts: Vec<serde_json::Value>,
    /// Raw `Resource` objects.
    pub resources: Vec<serde_json::Value>,
    /// Raw `ResourceTemplate` objects.
    pub resource_templates: Vec<serde_json::Value>,
    /// What the backend's pages said about their reuse (`ttlMs` / `cacheScope`), per list.
    pub freshness: ListsFreshness,
    /// Its configured selection, renames and descriptions, applied as the listing becomes entries.
    pub shaping: std::sync::Arc<Shaping>,
}

/// Why a catalog cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Two backends expose the same tool or prompt name, resource URI or URI template.
    #[error("{kind} {what} {name} collides: backends {first} and {second} both expose it", what = collision_subject(kind))]
    Collision {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The exposed name, URI or URI template.
        name: String,
        /// The backend that exposed it first (backends are taken in name order).
        first: String,
        /// The other backend.
        second: String,
    },
    /// A backend exposes a tool name the gateway reserves for itself.
    #[error("tool name {name} of backend {backend} is reserved by the gateway's [catalog] search")]
    Reserved {
        /// The exposed name.
        name: String,
        /// The backend that exposes it.
        backend: String,
    },
}

/// What a collision is about, for the message: "tool name …", "resource uri …".
fn collision_subject(kind: &str) -> &'static str {
    match kind {
        "tool" | "prompt" => "name",
        _ => "uri",
    }
}
