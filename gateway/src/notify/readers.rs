//! The views what backends announce is judged by: a reader's (a legacy session's, a listen stream's) view is
//! its principal's `[[policy]]` view of its endpoint's selection, exactly the view its requests are validated
//! against. Like the routing actors' views they are made once per audience (per endpoint) and catalog, never
//! per message or per session, and bounded: one [`Views`] per endpoint (at most `policy::views::MAX_VIEWS`
//! audiences each, the least recently used dropped past it).
//!
//! A view **shows a backend** when it may name it (`CatalogSnapshot::shows_backend`): always in the full
//! catalog (`/mcp` with no `[[policy]]`); in a restricted view when it holds at least one of the backend's
//! tools, prompts, resources or resource templates, or — while the backend is missing or stale — when its
//! rules keep the backend by name (`backend:NAME`, or a bare glob that matches it). The same rule decides
//! which degraded backends and instructions a view names.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::CatalogSnapshot;
use crate::endpoint::Endpoints;
use crate::policy::Policy;
use crate::policy::views::Views;
use crate::session::Reader;

/// One endpoint's view of one catalog, and its principals' views of that.
#[derive(Debug)]
struct Served {
    of: Arc<CatalogSnapshot>,
    base: Arc<CatalogSnapshot>,
    views: Option<Views>,
}

/// The readers' views of the catalogs they are asked for, under one policy.
#[derive(Debug)]
pub struct ReaderViews {
    policy: Option<Arc<Policy>>,
    /// Per endpoint (by index; as many as the config has).
    served: HashMap<usize, Served>,
}

impl ReaderViews {
    /// No view yet; views made under `policy` (none: every reader of an endpoint sees its selection).
    pub fn new(policy: Option<Arc<Policy>>) -> ReaderViews {
        ReaderViews {
            policy,
            served: HashMap::new(),
        }
    }

    /// Follows a reload: views made under another policy are dropped.
    pub fn follow(&mut self, policy: Option<&Arc<Policy>>) {
        let same = match (&self.policy, policy) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            *self = ReaderViews::new(policy.cloned());
        }
    }

    /// The view of `full` that `reader` reads through; `None` for no reader (a session no request has
    /// presented itself in yet, on this replica) or an endpoint the config does not have: such a reader is
    /// shown nothing.
    pub fn view(
        &mut self,
        endpoints: &Endpoints,
        full: &Arc<CatalogSnapshot>,
        reader: Option<&Reader>,
    ) -> Option<Arc<CatalogSnapshot>> {
        let reader = reader?;
        let endpoint = endpoints.all().get(reader.endpoint)?;
        let policy = &self.policy;
        let served = self
            .served
            .entry(reader.endpoint)
            .or_insert_with(|| Served {
                of: full.clone(),
                base: endpoint.view(full),
                views: policy.clone().map(Views::new),
            });
        if !Arc::ptr_eq(&served.of, full) {
            served.base = endpoint.view(full);
            served.of = full.clone();
        }
        Some(match &mut served.views {
            Some(views) => views.view(&served.base, reader.principal.as_ref()).snapshot,
            None => served.base.clone(),
        })
    }

    /// How many policy views were built so far (each audience once per endpoint and catalog).
    #[cfg(test)]
    pub fn built(&self) -> u64 {
        self.served
            .values()
            .filter_map(|s| s.views.as_ref())
            .map(Views::built)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::auth::Principal;
    use crate::catalog::{BackendListing, CatalogBuilder};
    use crate::config::Config;

    const CONFIG: &str = r#"
# The rules name principals: they apply only with [auth] (the tests give each request its principal).
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "a"
builtin = ["mock-backend"]

[[backend]]
name = "b"
builtin = ["mock-backend"]

[[endpoint]]
path = "/only-a"
name = "only-a"
backends = ["a"]

[[policy]]
group = "ops"
allow = ["*"]

[[policy]]
principal = "guest"
allow = ["backend:a"]
"#;

    fn catalog() -> Arc<CatalogSnapshot> {
        let mut b = CatalogBuilder::new();
        for name in ["a", "b"] {
            b.add(BackendListing {
                backend: name.to_owned(),
                prefix: name.to_owned(),
                tools: vec![json!({"name": "echo", "inputSchema": {"type": "object"}})],
                ..BackendListing::default()
            });
        }
        Arc::new(b.build().unwrap())
    }

    fn reader(endpoint: usize, name: &str, groups: &[&str]) -> Reader {
        let p = Principal {
            name: name.to_owned(),
            source: crate::auth::PrincipalSource::ApiKey,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            scopes: Vec::new(),
            token: None,
        };
        Reader::new(endpoint, Some(&p))
    }

    #[test]
    fn a_readers_view_is_built_once_per_audience_and_catalog_and_shows_what_its_requests_see() {
        let config = Config::from_toml_str(CONFIG, std::path::Path::new("t.toml")).unwrap();
        let endpoints = Endpoints::new(&config, &crate::state::server_info());
        let mut views = ReaderViews::new(Policy::new(&config.policies));
        let full = catalog();
        // A thousand readers of one audience: one view.
        let first = views
            .view(&endpoints, &full, Some(&reader(0, "ops-0", &["ops"])))
            .unwrap();
        for i in 1..1000 {
            let again = views
                .view(
                    &endpoints,
                    &full,
                    Some(&reader(0, &format!("ops-{i}"), &["ops"])),
                )
                .unwrap();
            assert!(Arc::ptr_eq(&first, &again));
        }
        assert_eq!(views.built(), 1);
        assert!(first.shows_backend("a") && first.shows_backend("b"));
        // Another audience, another endpoint: a view each; what each shows is what its requests see.
        let guest = views
            .view(&endpoints, &full, Some(&reader(0, "guest", &[])))
            .unwrap();
        assert!(guest.shows_backend("a") && !guest.shows_backend("b"));
        let ops_at_a = views
            .view(&endpoints, &full, Some(&reader(1, "ops-0", &["ops"])))
            .unwrap();
        assert!(ops_at_a.shows_backend("a") && !ops_at_a.shows_backend("b"));
        assert_eq!(views.built(), 3);
        // No reader, or an endpoint the config lacks: shown nothing.
        assert!(views.view(&endpoints, &full, None).is_none());
        assert!(
            views
                .view(&endpoints, &full, Some(&reader(7, "ops-0", &["ops"])))
                .is_none()
        );
        // A new catalog: made again, once.
        let next = catalog();
        views.view(&endpoints, &next, Some(&reader(0, "ops-1", &["ops"])));
        views.view(&endpoints, &next, Some(&reader(0, "ops-2", &["ops"])));
        assert_eq!(views.built(), 4);
    }
}
