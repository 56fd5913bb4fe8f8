//! The immutable catalog snapshot: sorted entries, the content version and the backends left out. Built only
//! by [`CatalogBuilder`](super::CatalogBuilder) (or [`CatalogSnapshot::empty`]); shared as an `Arc`.

use std::ops::Range;
use std::time::Instant;

use protocol::headers::ParamHeader;
use serde_json::Value;

use super::ListKind;
use super::freshness::{self, ListFreshness, ListsFreshness};
use super::template::UriTemplate;
use super::version::ContentHasher;

/// A tool as the catalog routes and lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The backend that owns the tool.
    pub backend: String,
    /// The name the backend knows the tool by.
    pub original_name: String,
    /// The name clients see (`{prefix}__{original}`, or the original with an empty prefix).
    pub exposed_name: String,
    /// The `x-mcp-header` annotations as the gateway advertises them (the listed `inputSchema` is the
    /// backend's, so the argument paths are the same).
    pub client_headers: Vec<ParamHeader>,
    /// The annotations as the backend's own `inputSchema` declares them (for the backend hop's headers).
    pub backend_headers: Vec<ParamHeader>,
    /// The backend's Tool object with `name` rewritten to the exposed name.
    pub tool: Value,
}

/// A prompt as the catalog routes and lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEntry {
    /// The backend that owns the prompt.
    pub backend: String,
    /// The name the backend knows the prompt by.
    pub original_name: String,
    /// The name clients see.
    pub exposed_name: String,
    /// The backend's Prompt object with `name` rewritten to the exposed name.
    pub prompt: Value,
}

/// A resource with a fixed URI.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ResourceEntry {
    pub(super) backend: String,
    pub(super) uri: String,
    pub(super) resource: Value,
}

/// A resource template.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TemplateEntry {
    pub(super) backend: String,
    pub(super) uri_template: String,
    pub(super) template: Value,
    /// `None` when the template is not supported by the matcher: it is listed but matches no URI.
    pub(super) parsed: Option<UriTemplate>,
}

/// Where a resource URI is routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceRoute<'a> {
    /// The backend that serves the URI.
    pub backend: &'a str,
    /// How the URI matched.
    pub matched: ResourceMatch<'a>,
}

/// How a resource URI matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceMatch<'a> {
    /// A listed resource has exactly this URI.
    Exact,
    /// The URI matches this `uriTemplate`.
    Template(&'a str),
}

/// The aggregated catalog at one moment: immutable, `Send + Sync`, shared as an `Arc`.
#[derive(Debug, Clone)]
pub struct CatalogSnapshot {
    /// Sorted by exposed name.
    pub(super) tools: Vec<ToolEntry>,
    /// Sorted by exposed name.
    pub(super) prompts: Vec<PromptEntry>,
    /// Sorted by URI.
    pub(super) resources: Vec<ResourceEntry>,
    /// Sorted by `uriTemplate`.
    pub(super) templates: Vec<TemplateEntry>,
    /// Indexes into `templates` in routing order: longest literal prefix first, then by `uriTemplate`.
    pub(super) template_order: Vec<usize>,
    pub(super) version: u64,
    /// Sorted, without duplicates.
    pub(super) missing: Vec<String>,
    /// The backends listed from their last good listing; sorted, without duplicates.
    pub(super) stale: Vec<String>,
    /// Per list (see `freshness::index`): how long it may be reused from `listed_at`.
    pub(super) freshness: [ListFreshness; 4],
    /// When the backends were asked (set by the caller that fetched the listings).
    pub(super) listed_at: Option<Instant>,
    /// Set on a restricted view (module `view`): what it keeps.
    pub(super) restriction: Option<super::restriction::Restricted>,
    /// Set on a searching view (module `searching`): the index over its tools.
    pub(super) search: Option<std::sync::Arc<super::search::ToolIndex>>,
    /// The missing backends a `tools/call` can be recognised for by prefix (module `down`), by name.
    pub(super) down: std::sync::Arc<Vec<super::down::DownBackend>>,
}

impl Default for CatalogSnapshot {
    fn default() -> Self {
        CatalogSnapshot::empty()
    }
}

impl CatalogSnapshot {
    /// A catalog with nothing in it (what the gateway routes with before the first build).
    pub fn empty() -> Self {
        CatalogSnapshot::from_sorted(Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new())
    }

    /// Assembles a snapshot from lists already sorted by key and free of duplicate keys.
    pub(super) fn from_sorted(
        tools: Vec<ToolEntry>,
        prompts: Vec<PromptEntry>,
        resources: Vec<ResourceEntry>,
        templates: Vec<TemplateEntry>,
        mut missing: Vec<String>,
    ) -> Self {
        missing.sort();
        missing.dedup();
        let mut template_order: Vec<usize> = (0..templates.len()).collect();
        template_order.sort_by(|&a, &b| {
            let prefix = |i: usize| {
                templates
                    .get(i)
                    .and_then(|t| t.parsed.as_ref())
                    .map_or(0, UriTemplate::literal_prefix_len)
            };
            let key = |i: usize| templates.get(i).map(|t| t.uri_template.as_str());
            prefix(b).cmp(&prefix(a)).then_with(|| key(a).cmp(&key(b)))
        });
        let mut snapshot = CatalogSnapshot {
            tools,
            prompts,
            resources,
            templates,
            template_order,
            version: 0,
            missing,
            stale: Vec::new(),
            freshness: ListsFreshness::NONE,
            listed_at: None,
            restriction: None,
            search: None,
            down: std::sync::Arc::default(),
        };
        snapshot.version = snapshot.content_hash();
        snapshot
    }

    /// See [`super::version`] for what is hashed.
    fn content_hash(&self) -> u64 {
        let mut h = ContentHasher::new();
        h.tag(b'T');
        h.count(self.tools.len());
        for t in &self.tools {
            h.str(&t.backend);
            h.str(&t.exposed_name);
            h.str(&t.original_name);
            h.json(&t.tool);
        }
        h.tag(b'P');
        h.count(self.prompts.len());
        for p in &self.prompts {
            h.str(&p.backend);
            h.str(&p.exposed_name);
            h.str(&p.original_name);
            h.json(&p.prompt);
        }
        h.tag(b'R');
        h.count(self.resources.len());
        for r in &self.resources {
            h.str(&r.backend);
            h.str(&r.uri);
            h.json(&r.resource);
        }
        h.tag(b'U');
        h.count(self.templates.len());
        for t in &self.templates {
            h.str(&t.backend);
            h.str(&t.uri_template);
            h.json(&t.template);
        }
        h.finish()
    }

    /// The content hash of the snapshot: equal for equal content (whatever order backends were added in),
    /// stable within and across processes. Cursors are bound to it.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// How long `list` may still be reused at `now`, and by whom (the `ttlMs` / `cacheScope` of its pages).
    pub fn freshness(&self, list: ListKind, now: Instant) -> ListFreshness {
        freshness::at(self.freshness[freshness::index(list)], self.listed_at, now)
    }

    /// When the first list with a positive `ttlMs` goes stale: the gateway asks its backends again then.
    pub fn expires_at(&self) -> Option<Instant> {
        freshness::first_expiry(&self.freshness, self.listed_at)
    }

    /// The backends the caller marked as left out (down), sorted.
    pub fn backends_missing(&self) -> &[String] {
        &self.missing
    }

    /// The backends listed from their last good listing (listing them again failed), sorted.
    pub fn backends_stale(&self) -> &[String] {
        &self.stale
    }

    pub(super) fn set_stale(&mut self, mut stale: Vec<String>) {
        stale.sort();
        stale.dedup();
        self.stale = stale;
    }

    /// What the lists and `server/discover` put in `_meta["io.mcpgw/degraded"]` while a backend is left
    /// out or stale: `{"missing": [names], "stale": [names]}`; `None` when every backend is listed fresh.
    pub fn degraded(&self) -> Option<serde_json::Value> {
        if self.missing.is_empty() && self.stale.is_empty() {
            return None;
        }
        Some(serde_json::json!({ "missing": self.missing, "stale": self.stale }))
    }

    /// The `notifications/*/list_changed` a client holding `before`'s lists should get for these: one per
    /// list (tools, prompts, resources with their templates) whose items differ.
    pub fn changed_lists(&self, before: &CatalogSnapshot) -> Vec<protocol::Method> {
        let mut changed = Vec::new();
        if self.tools != before.tools {
            changed.push(protocol::Method::NotificationsToolsListChanged);
        }
        if self.prompts != before.prompts {
            changed.push(protocol::Method::NotificationsPromptsListChanged);
        }
        if self.resources != before.resources || self.templates != before.templates {
            changed.push(protocol::Method::NotificationsResourcesListChanged);
        }
        changed
    }

    /// What `backend` contributes: its tools, prompts, resources and resource templates.
    pub fn counts_of(&self, backend: &str) -> [u64; 4] {
        let n = |it: &mut dyn Iterator<Item = &str>| it.filter(|b| *b == backend).count() as u64;
        [
            n(&mut self.tools.iter().map(|t| t.backend.as_str())),
            n(&mut self.prompts.iter().map(|p| p.backend.as_str())),
            n(&mut self.resources.iter().map(|r| r.backend.as_str())),
            n(&mut self.templates.iter().map(|t| t.backend.as_str())),
        ]
    }

    /// Whether nothing at all is listed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resources.is_empty()
            && self.templates.is_empty()
    }

    /// Every tool, sorted by exposed name.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// Every prompt, sorted by exposed name.
    pub fn prompts(&self) -> &[PromptEntry] {
        &self.prompts
    }

    /// Every resource with a fixed URI as `(backend, uri)`, sorted by URI.
    pub fn resource_uris(&self) -> impl Iterator<Item = (&str, &str)> {
        self.resources
            .iter()
            .map(|r| (r.backend.as_str(), r.uri.as_str()))
    }

    /// Every resource template as `(backend, uriTemplate)`, sorted by template.
    pub fn resource_templates(&self) -> impl Iterator<Item = (&str, &str)> {
        self.templates
            .iter()
            .map(|t| (t.backend.as_str(), t.uri_template.as_str()))
    }

    /// The length of a list.
    pub(super) fn list_len(&self, list: ListKind) -> usize {
        match list {
            ListKind::Tools => self.listed_tools().map_or(self.tools.len(), <[Value]>::len),
            ListKind::Prompts => self.prompts.len(),
            ListKind::Resources => self.resources.len(),
            ListKind::ResourceTemplates => self.templates.len(),
        }
    }

    /// Copies of the listed objects in `range` (clamped to the list).
    pub(super) fn list_values(&self, list: ListKind, range: Range<usize>) -> Vec<Value> {
        fn slice<T>(items: &[T], range: Range<usize>) -> &[T] {
            let end = range.end.min(items.len());
            items.get(range.start.min(end)..end).unwrap_or_default()
        }
        match list {
            ListKind::Tools => match self.listed_tools() {
                Some(gateway) => slice(gateway, range).to_vec(),
                None => slice(&self.tools, range)
                    .iter()
                    .map(|t| t.tool.clone())
                    .collect(),
            },
            ListKind::Prompts => slice(&self.prompts, range)
                .iter()
                .map(|p| p.prompt.clone())
                .collect(),
            ListKind::Resources => slice(&self.resources, range)
                .iter()
                .map(|r| r.resource.clone())
                .collect(),
            ListKind::ResourceTemplates => slice(&self.templates, range)
                .iter()
                .map(|t| t.template.clone())
                .collect(),
        }
    }
}
