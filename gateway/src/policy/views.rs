//! The views of the catalog one worker serves from: one per audience, built the first time that audience
//! asks after a catalog change and kept until the next (bounded in number: past [`MAX_VIEWS`], the least
//! recently used one is dropped and built again when asked for). Owned by the worker's routing actor: no
//! lock, nothing shared between workers.
//!
//! [`Seen`] is the catalog validation reads through: the view, and — only for a name the view lacks but
//! the full catalog has — the decision logged at info with the principal and the rule.

use std::collections::HashMap;
use std::sync::Arc;

use protocol::validate::{Catalog, RouteKey, ToolRoute};

use super::{Audience, Decision, Policy, Subject};
use crate::auth::Principal;
use crate::catalog::{CatalogSnapshot, Item};

/// Views a worker keeps at most.
pub const MAX_VIEWS: usize = 1024;

/// A view and the rules it was made with.
#[derive(Debug, Clone)]
pub struct View {
    /// The restricted snapshot: what validation, dispatch and the lists read.
    pub snapshot: Arc<CatalogSnapshot>,
    /// The audience's rules (for the decisions logged).
    pub subject: Arc<Subject>,
}

#[derive(Debug)]
struct Kept {
    view: View,
    used: u64,
}

/// One worker's views.
#[derive(Debug)]
pub struct Views {
    policy: Arc<Policy>,
    /// The catalog the views were made of.
    base: Option<Arc<CatalogSnapshot>>,
    kept: HashMap<Audience, Kept>,
    bound: usize,
    clock: u64,
    built: u64,
}

impl Views {
    /// No view yet, at most [`MAX_VIEWS`].
    pub fn new(policy: Arc<Policy>) -> Views {
        Views::bounded(policy, MAX_VIEWS)
    }

    /// Whether these are views of `policy` (a reload that keeps the policy keeps the views).
    pub fn is_of(&self, policy: &Arc<Policy>) -> bool {
        Arc::ptr_eq(&self.policy, policy)
    }

    /// No view yet, at most `bound` (at least 1).
    pub fn bounded(policy: Arc<Policy>, bound: usize) -> Views {
        Views {
            policy,
            base: None,
            kept: HashMap::new(),
            bound: bound.max(1),
            clock: 0,
            built: 0,
        }
    }

    /// The view of `full` for `principal`: the kept one, or one built now.
    pub fn view(&mut self, full: &Arc<CatalogSnapshot>, principal: Option<&Principal>) -> View {
        if !self.base.as_ref().is_some_and(|b| Arc::ptr_eq(b, full)) {
            self.kept.clear();
            self.base = Some(full.clone());
        }
        self.clock += 1;
        let audience = self.policy.audience(principal);
        if let Some(kept) = self.kept.get_mut(&audience) {
            kept.used = self.clock;
            return kept.view.clone();
        }
        if self.kept.len() >= self.bound {
            let oldest = self
                .kept
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(a, _)| a.clone());
            if let Some(oldest) = oldest {
                self.kept.remove(&oldest);
            }
        }
        let subject = Arc::new(self.policy.subject(audience.clone()));
        let view = View {
            snapshot: Arc::new(full.restricted(subject.clone())),
            subject,
        };
        self.built += 1;
        self.kept.insert(
            audience,
            Kept {
                view: view.clone(),
                used: self.clock,
            },
        );
        view
    }

    /// How many views were built (each audience once per catalog, unless dropped past the bound).
    #[cfg(any(test, feature = "internals"))]
    pub fn built(&self) -> u64 {
        self.built
    }

    /// How many are kept.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// The catalog as one request's principal sees it, for validation: its view's answers; when the view lacks
/// a name the full catalog has, the decision is logged (principal and rule, never arguments) and the answer
/// is the view's — the same as for a name nobody serves.
#[derive(Debug)]
pub struct Seen<'a> {
    /// The view.
    pub view: &'a View,
    /// The full catalog.
    pub full: &'a CatalogSnapshot,
    /// Who asks (for the log line).
    pub principal: Option<&'a Principal>,
}

impl Seen<'_> {
    /// Logs why the view lacks `item`, which the full catalog has under `name`.
    fn denied(&self, name: &str, item: Item<'_>) {
        let decision = self.view.subject.decide(item);
        if decision != Decision::Allowed {
            tracing::info!(
                principal = %self.principal.map_or("-", |p| p.name.as_str()),
                kind = item.kind(),
                %name,
                rule = %decision,
                "denied by policy"
            );
        }
    }
}

impl Catalog for Seen<'_> {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        let route = Catalog::tool(self.view.snapshot.as_ref(), name);
        if route.is_none()
            && let Some(t) = self.full.tool(name)
        {
            let (backend, tool) = (&t.backend, &t.tool);
            self.denied(
                name,
                Item::Tool {
                    name,
                    backend,
                    tool,
                },
            );
        }
        route
    }

    fn resource(&self, uri: &str) -> Option<RouteKey> {
        let route = Catalog::resource(self.view.snapshot.as_ref(), uri);
        if route.is_none()
            && let Some(r) = self.full.resource(uri)
        {
            let backend = r.backend;
            // Refused though its raw form is allowed: its normalized form is what was denied.
            let normal = crate::catalog::normalized_uri(uri);
            let raw_allowed =
                self.view.subject.decide(Item::Resource { uri, backend }) == Decision::Allowed;
            let judged = if raw_allowed { &*normal } else { uri };
            self.denied(
                uri,
                Item::Resource {
                    uri: judged,
                    backend,
                },
            );
        }
        route
    }

    fn prompt(&self, name: &str) -> Option<RouteKey> {
        let route = Catalog::prompt(self.view.snapshot.as_ref(), name);
        if route.is_none()
            && let Some(p) = self.full.prompt(name)
        {
            let backend = &p.backend;
            self.denied(name, Item::Prompt { name, backend });
        }
        route
    }
}
