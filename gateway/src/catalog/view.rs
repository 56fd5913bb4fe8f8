//! A restricted view of a snapshot: what one audience (the principals one set of `[[policy]]` rules applies
//! to) may see and use. It is a [`CatalogSnapshot`] like any other — validation, routing, the lists and
//! completion references read it unchanged — holding only the entries the [`Restriction`] keeps, its lists
//! marked `cacheScope: "private"` (they differ by principal), and the restriction itself for what cannot be
//! decided ahead of a request: a URI reached through a template is checked when it is looked up.
//!
//! A resource URI is kept only when the restriction keeps both its raw form and its normalized form
//! ([`super::uri`]): the decision is the normalized form's, and a URI whose two forms the restriction judges
//! differently (`mock://m/%73ecret` when `mock://m/secret` is denied) is not in the view — answered exactly as
//! a URI nobody serves. A URI kept is routed and sent to its backend as the client wrote it.
//!
//! Pure like the rest of the catalog: the restriction decides, the view only keeps what it is told.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::freshness::ListFreshness;
use super::restriction::{Item, Restricted, Restriction};
use super::snapshot::CatalogSnapshot;
use super::uri::normalize;

/// Two restrictions at once: a view of a view keeps only what both keep (an endpoint's selection, then a
/// principal's policy), also for a URI reached through a template.
#[derive(Debug)]
struct Both(Arc<dyn Restriction>, Arc<dyn Restriction>);

impl Restriction for Both {
    fn keeps(&self, item: Item<'_>) -> bool {
        self.0.keeps(item) && self.1.keeps(item)
    }
}

impl CatalogSnapshot {
    /// The view of this snapshot that `to` allows: only the entries it keeps (built once per audience and
    /// catalog, never per request); the backends named as missing or stale only when the view may name them;
    /// every list `private`. A view of a view keeps what both restrictions keep.
    pub fn restricted(&self, to: Arc<dyn Restriction>) -> CatalogSnapshot {
        self.view_of(to, true)
    }

    /// The view of this snapshot that `to` selects for every client alike (an endpoint's selection): as
    /// [`CatalogSnapshot::restricted`], its lists as reusable as the snapshot's.
    pub fn selected(&self, to: Arc<dyn Restriction>) -> CatalogSnapshot {
        self.view_of(to, false)
    }

    fn view_of(&self, to: Arc<dyn Restriction>, private: bool) -> CatalogSnapshot {
        let (to, private) = match &self.restriction {
            Some(before) => (
                Arc::new(Both(before.to.clone(), to)) as Arc<dyn Restriction>,
                private || before.private,
            ),
            None => (to, private),
        };
        let tools = kept(&self.tools, &*to, |t| Item::Tool {
            name: &t.exposed_name,
            backend: &t.backend,
            tool: &t.tool,
        });
        let prompts = kept(&self.prompts, &*to, |p| Item::Prompt {
            name: &p.exposed_name,
            backend: &p.backend,
        });
        let resources: Vec<_> = self
            .resources
            .iter()
            .filter(|r| keeps_resource(&*to, &r.uri, &r.backend))
            .cloned()
            .collect();
        let templates = kept(&self.templates, &*to, |t| Item::Template {
            uri_template: &t.uri_template,
            backend: &t.backend,
        });
        let mut backends: BTreeSet<String> = tools
            .iter()
            .map(|t| &t.backend)
            .chain(prompts.iter().map(|p| &p.backend))
            .chain(resources.iter().map(|r| &r.backend))
            .chain(templates.iter().map(|t| &t.backend))
            .cloned()
            .collect();
        for b in self.missing.iter().chain(&self.stale) {
            if to.keeps(Item::Backend(b)) {
                backends.insert(b.clone());
            }
        }
        let named = |list: &[String]| -> Vec<String> {
            list.iter()
                .filter(|b| backends.contains(*b))
                .cloned()
                .collect()
        };
        let (missing, stale) = (named(&self.missing), named(&self.stale));
        let mut view = CatalogSnapshot::from_sorted(tools, prompts, resources, templates, missing);
        view.set_stale(stale);
        view.down = self.down_kept(&view.missing);
        view.freshness = if private {
            self.freshness.map(|f| ListFreshness { public: false, ..f })
        } else {
            self.freshness
        };
        view.listed_at = self.listed_at;
        view.restriction = Some(Restricted {
            to,
            backends: Arc::new(backends),
            private,
        });
        view
    }

    /// Whether this view may name `backend` (always, for an unrestricted snapshot).
    pub fn shows_backend(&self, backend: &str) -> bool {
        self.restriction
            .as_ref()
            .is_none_or(|r| r.backends.contains(backend))
    }

    /// Whether the view differs by principal (a policy's: its lists and discovery are then `private`).
    pub fn is_private(&self) -> bool {
        self.restriction.as_ref().is_some_and(|r| r.private)
    }

    /// Whether a URI a template matched may be used in this view.
    pub(super) fn keeps_uri(&self, uri: &str, backend: &str) -> bool {
        self.restriction
            .as_ref()
            .is_none_or(|r| keeps_resource(&*r.to, uri, backend))
    }
}

/// Whether `to` keeps the resource `uri` of `backend`: its raw form and its normalized form both.
fn keeps_resource(to: &dyn Restriction, uri: &str, backend: &str) -> bool {
    to.keeps(Item::Resource { uri, backend })
        && match normalize(uri) {
            Cow::Borrowed(_) => true,
            Cow::Owned(normal) => to.keeps(Item::Resource {
                uri: &normal,
                backend,
            }),
        }
}

/// The entries of one list that `to` keeps, in their order.
fn kept<T: Clone>(items: &[T], to: &dyn Restriction, item: fn(&T) -> Item<'_>) -> Vec<T> {
    items
        .iter()
        .filter(|i| to.keeps(item(i)))
        .cloned()
        .collect()
}
