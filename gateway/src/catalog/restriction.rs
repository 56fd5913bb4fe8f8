//! What a view of the catalog is made with: a [`Restriction`] deciding on each [`Item`], and the
//! `Restricted` a view's snapshot keeps (the restriction, the backends it may name, whether it is
//! private). The snapshot holds one; `view` makes views with them.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

/// Something a restriction decides on.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A tool: its exposed name, its backend, and its Tool object (for its annotations).
    Tool {
        /// The exposed name.
        name: &'a str,
        /// Its backend.
        backend: &'a str,
        /// The Tool object as listed.
        tool: &'a Value,
    },
    /// A prompt by its exposed name.
    Prompt {
        /// The exposed name.
        name: &'a str,
        /// Its backend.
        backend: &'a str,
    },
    /// A resource by its URI (a listed one, or one read through a template).
    Resource {
        /// The URI.
        uri: &'a str,
        /// Its backend.
        backend: &'a str,
    },
    /// A resource template by its `uriTemplate`.
    Template {
        /// The `uriTemplate`.
        uri_template: &'a str,
        /// Its backend.
        backend: &'a str,
    },
    /// A backend by name (whether the view may name it: in `_meta` degraded lists, in instructions).
    Backend(&'a str),
}

impl Item<'_> {
    /// What kind of thing it is, for logs: `tool`, `prompt`, `resource`, `resource template`, `backend`.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Tool { .. } => "tool",
            Item::Prompt { .. } => "prompt",
            Item::Resource { .. } => "resource",
            Item::Template { .. } => "resource template",
            Item::Backend(_) => "backend",
        }
    }
}

/// What a view keeps.
pub trait Restriction: Send + Sync + std::fmt::Debug {
    /// Whether the view keeps `item`.
    fn keeps(&self, item: Item<'_>) -> bool;
}

/// The restriction a view was made with, and the backends it may name.
#[derive(Debug, Clone)]
pub(super) struct Restricted {
    pub(super) to: Arc<dyn Restriction>,
    /// Backends with an entry in the view, or kept by name.
    pub(super) backends: Arc<BTreeSet<String>>,
    /// Whether what it keeps differs by principal (a policy's view), not only by endpoint.
    pub(super) private: bool,
}
