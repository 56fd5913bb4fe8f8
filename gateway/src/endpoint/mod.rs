//! Endpoints: `/mcp`, the default with everything, and the virtual servers of `[[endpoint]]` on the same
//! listener. Each has its own `serverInfo` (in `initialize` results and, on 2026-07-28, every result's
//! `_meta`), its own instructions, its own selection of the catalog — a view every client of the endpoint
//! shares (validated against like the full catalog, so what it leaves out is answered exactly as an
//! unregistered name), under which a principal's `[[policy]]` view is made — and optionally who may use it.
//!
//! A legacy session belongs to the endpoint that started it: the endpoint is folded into the session's
//! binding (sealed into its id, like its principal), so the id presented at another endpoint is unknown there,
//! on every replica.
//!
//! It must not do I/O or decide per request what a view already decided.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use protocol::payload::Implementation;
use protocol::shape::{CachePolicy, Stamp};
use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::catalog::{CatalogSnapshot, Item, Restriction};
use crate::config::{AccessEntry, Config, EndpointEntry, SelectionEntry};
use crate::glob::glob_match;

/// The path of the default endpoint.
pub const DEFAULT_PATH: &str = "/mcp";

/// One endpoint.
#[derive(Debug)]
pub struct Endpoint {
    /// Its place: 0 is `/mcp`, then the `[[endpoint]]` tables in order.
    pub index: usize,
    /// Where it is served.
    pub path: String,
    /// Its `serverInfo`.
    pub server_info: Implementation,
    /// What it stamps on 2026-07-28 results.
    pub stamp: Stamp,
    /// Its own instructions (before its backends').
    pub instructions: Option<String>,
    /// What of the catalog it serves (`None`: everything).
    selection: Option<Arc<Selection>>,
    /// Who may use it (`None`: whoever may use `/mcp`).
    access: Option<AccessEntry>,
    /// What its sessions' bindings are mixed with (`None` for `/mcp`: its bindings are the principal's).
    salt: Option<[u8; 32]>,
}

/// Why a principal may not use an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Neither its name nor any of its groups is admitted.
    #[error("endpoint {path} is not open to this principal")]
    NotAdmitted {
        /// The endpoint's path.
        path: String,
    },
    /// Its credential lacks scopes the endpoint requires.
    #[error("endpoint {path} requires scopes this credential does not grant: {}", missing.join(" "))]
    InsufficientScope {
        /// The endpoint's path.
        path: String,
        /// The scopes it lacks.
        missing: Vec<String>,
    },
}

impl Endpoint {
    fn default_of(server_info: &Implementation) -> Endpoint {
        Endpoint {
            index: 0,
            path: DEFAULT_PATH.to_owned(),
            server_info: server_info.clone(),
            stamp: Stamp::new(server_info, CachePolicy::NONE),
            instructions: None,
            selection: None,
            access: None,
            salt: None,
        }
    }

    /// `/mcp` with a default `serverInfo`, for tests of what borrows a request's context.
    #[cfg(test)]
    pub(crate) fn default_for_tests() -> Endpoint {
        Endpoint::default_of(&Implementation::default())
    }

    fn configured(index: usize, e: &EndpointEntry, gateway: &Implementation) -> Endpoint {
        let server_info = Implementation {
            name: e.name.clone(),
            version: e.version.clone().unwrap_or_else(|| gateway.version.clone()),
            title: e.title.clone(),
            ..Implementation::default()
        };
        let mut hasher = Sha256::new();
        hasher.update(b"mcpgw endpoint\0");
        hasher.update(e.path.as_bytes());
        Endpoint {
            index,
            path: e.path.clone(),
            stamp: Stamp::new(&server_info, CachePolicy::NONE),
            server_info,
            instructions: e.instructions.clone().filter(|i| !i.trim().is_empty()),
            selection: Some(Arc::new(Selection {
                backends: e.backends.clone(),
                tools: e.tools.clone().unwrap_or_default(),
                prompts: e.prompts.clone().unwrap_or_default(),
                resources: e.resources.clone().unwrap_or_default(),
            })),
            access: e.access.clone(),
            salt: Some(hasher.finalize().into()),
        }
    }

    /// Whether this is `/mcp`.
    pub fn is_default(&self) -> bool {
        self.index == 0
    }

    /// The catalog as this endpoint serves it: `full` itself for `/mcp`, else the view of its selection
    /// (the same for every client, so its lists stay as reusable as the catalog's).
    pub fn view(&self, full: &Arc<CatalogSnapshot>) -> Arc<CatalogSnapshot> {
        match &self.selection {
            None => full.clone(),
            Some(s) => Arc::new(full.selected(s.clone())),
        }
    }

    /// What a session started here is bound to, given the principal's binding: the same for `/mcp`; for
    /// another endpoint, one mixed with its path (so a session belongs to the endpoint that started it).
    pub fn bind(&self, binding: Option<[u8; 16]>) -> Option<[u8; 16]> {
        let Some(salt) = &self.salt else {
            return binding;
        };
        let mut hasher = Sha256::new();
        hasher.update(salt);
        hasher.update(binding.unwrap_or_default());
        let digest: [u8; 32] = hasher.finalize().into();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        Some(out)
    }

    /// Whether `principal` may use this endpoint (`[endpoint.access]`; with none, anyone who may use `/mcp`).
    pub fn admits(&self, principal: Option<&Principal>) -> Result<(), Refused> {
        let Some(access) = &self.access else {
            return Ok(());
        };
        let not_admitted = || Refused::NotAdmitted {
            path: self.path.clone(),
        };
        let Some(p) = principal else {
            return Err(not_admitted());
        };
        let conditions = !access.principals.is_empty() || !access.groups.is_empty();
        let named = access.principals.iter().any(|g| p.is_named(g))
            || access.groups.iter().any(|g| p.in_group(g));
        if conditions && !named {
            return Err(not_admitted());
        }
        let missing: Vec<String> = access
            .scopes
            .iter()
            .filter(|s| !p.scopes.contains(s))
            .cloned()
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Refused::InsufficientScope {
                path: self.path.clone(),
                missing,
            })
        }
    }

    /// Instructions for the model: the endpoint's own, then those of the backends `seen` may name.
    pub fn instructions(&self, backends: Option<String>) -> Option<String> {
        match (&self.instructions, backends) {
            (Some(own), Some(theirs)) => Some(format!("{own}\n\n{theirs}")),
            (Some(own), None) => Some(own.clone()),
            (None, theirs) => theirs,
        }
    }
}

/// An endpoint's selection, as the catalog's views apply it.
#[derive(Debug)]
struct Selection {
    backends: Option<Vec<String>>,
    tools: SelectionEntry,
    prompts: SelectionEntry,
    resources: SelectionEntry,
}

impl Selection {
    fn has_backend(&self, backend: &str) -> bool {
        self.backends
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| glob_match(g, backend)))
    }
}

impl Restriction for Selection {
    fn keeps(&self, item: Item<'_>) -> bool {
        match item {
            Item::Tool { name, backend, .. } => {
                self.has_backend(backend) && self.tools.selects(name)
            }
            Item::Prompt { name, backend } => {
                self.has_backend(backend) && self.prompts.selects(name)
            }
            Item::Resource { uri, backend } => {
                self.has_backend(backend) && self.resources.selects(uri)
            }
            Item::Template {
                uri_template,
                backend,
            } => self.has_backend(backend) && self.resources.selects(uri_template),
            Item::Backend(backend) => self.has_backend(backend),
        }
    }
}

/// Every endpoint of a gateway: `/mcp` first.
#[derive(Debug)]
pub struct Endpoints {
    all: Vec<Arc<Endpoint>>,
}

impl Endpoints {
    /// `/mcp` with the gateway's `server_info`, then the configured ones.
    pub fn new(config: &Config, server_info: &Implementation) -> Endpoints {
        let mut all = vec![Arc::new(Endpoint::default_of(server_info))];
        all.extend(
            config
                .endpoints
                .iter()
                .enumerate()
                .map(|(i, e)| Arc::new(Endpoint::configured(i + 1, e, server_info))),
        );
        Endpoints { all }
    }

    /// `/mcp`.
    pub fn default_endpoint(&self) -> &Arc<Endpoint> {
        &self.all[0]
    }

    /// Every endpoint, `/mcp` first.
    pub fn all(&self) -> &[Arc<Endpoint>] {
        &self.all
    }
}
