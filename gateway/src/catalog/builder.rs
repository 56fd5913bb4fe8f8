//! Building a snapshot from the backends' raw listings: shape checks on untrusted JSON, the backend's
//! configured [`Shaping`] (selection, renames, descriptions), name prefixing,
//! `x-mcp-header` annotations, collision detection and deterministic ordering.
//!
//! Listings are taken in backend-name order (a stable sort), so the outcome — including which duplicate is
//! kept and which backend a collision names first — does not depend on the order they were added in.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Instant;

use protocol::headers::param_headers;
use serde_json::{Map, Value};

use super::names::exposed_name;
use super::snapshot::{CatalogSnapshot, PromptEntry, ResourceEntry, TemplateEntry, ToolEntry};
use super::template::UriTemplate;
use super::{BackendListing, CatalogError, ListFreshness, Shaping};

/// Collects the backends' listings and builds a [`CatalogSnapshot`].
#[derive(Debug, Default)]
pub struct CatalogBuilder {
    listings: Vec<BackendListing>,
    missing: Vec<String>,
    stale: Vec<String>,
    listed_at: Option<Instant>,
    /// Tool names no backend may expose (the gateway's own, with `[catalog] search`).
    reserved: Vec<String>,
}

impl CatalogBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        CatalogBuilder::default()
    }

    /// Adds what one backend listed.
    pub fn add(&mut self, listing: BackendListing) {
        self.listings.push(listing);
    }

    /// Adds a backend's last good listing when listing it again failed (or it is down for less than the
    /// grace period): it stays in the lists, and the snapshot names it in
    /// [`CatalogSnapshot::backends_stale`].
    pub fn stale(&mut self, listing: BackendListing) {
        self.stale.push(listing.backend.clone());
        self.listings.push(listing);
    }

    /// Records a backend that is down: it is left out of the lists instead of failing them, and the snapshot
    /// names it in [`CatalogSnapshot::backends_missing`].
    pub fn missing(&mut self, backend: &str, reason: &str) {
        tracing::debug!(backend, reason, "backend left out of the catalog");
        self.missing.push(backend.to_owned());
    }

    /// When the backends were asked for their lists: the lists' `ttlMs` count from then. Without it the
    /// snapshot's lists say `ttlMs: 0`.
    pub fn listed_at(&mut self, at: Instant) {
        self.listed_at = Some(at);
    }

    /// Reserves tool names for the gateway: a backend exposing one fails the build
    /// ([`CatalogError::Reserved`]).
    pub fn reserve(&mut self, names: &[String]) {
        self.reserved.extend_from_slice(names);
    }

    /// Builds the snapshot, or fails on the first collision across backends or with a reserved name (see
    /// [`CatalogError`]).
    pub fn build(self) -> Result<CatalogSnapshot, CatalogError> {
        let mut listings = self.listings;
        listings.sort_by(|a, b| a.backend.cmp(&b.backend));

        let mut tools: BTreeMap<String, ToolEntry> = BTreeMap::new();
        let mut prompts: BTreeMap<String, PromptEntry> = BTreeMap::new();
        let mut resources: BTreeMap<String, ResourceEntry> = BTreeMap::new();
        let mut templates: BTreeMap<String, TemplateEntry> = BTreeMap::new();
        let mut freshness = [None; 4];

        for listing in listings {
            let BackendListing {
                backend,
                prefix,
                tools: raw_tools,
                prompts: raw_prompts,
                resources: raw_resources,
                resource_templates: raw_templates,
                freshness: backend_freshness,
                shaping,
            } = listing;
            backend_freshness.fold_into(&mut freshness);
            for raw in raw_tools {
                if let Some(e) = tool_entry(&backend, &prefix, &shaping, raw) {
                    insert(&mut tools, "tool", e.exposed_name.clone(), e, |e| {
                        &e.backend
                    })?;
                }
            }
            for raw in raw_prompts {
                if let Some(e) = prompt_entry(&backend, &prefix, &shaping, raw) {
                    insert(&mut prompts, "prompt", e.exposed_name.clone(), e, |e| {
                        &e.backend
                    })?;
                }
            }
            for raw in raw_resources {
                if let Some(e) = resource_entry(&backend, &shaping, raw) {
                    insert(&mut resources, "resource", e.uri.clone(), e, |e| &e.backend)?;
                }
            }
            for raw in raw_templates {
                if let Some(e) = template_entry(&backend, &shaping, raw) {
                    let key = e.uri_template.clone();
                    insert(&mut templates, "resource template", key, e, |e| &e.backend)?;
                }
            }
        }

        if let Some(taken) = self.reserved.iter().find_map(|name| tools.get(name)) {
            return Err(CatalogError::Reserved {
                name: taken.exposed_name.clone(),
                backend: taken.backend.clone(),
            });
        }
        let mut snapshot = CatalogSnapshot::from_sorted(
            tools.into_values().collect(),
            prompts.into_values().collect(),
            resources.into_values().collect(),
            templates.into_values().collect(),
            self.missing,
        );
        snapshot.set_stale(self.stale);
        // A backend left out (or listed from its last good listing) may come back at any moment and change
        // every list: nothing is reusable then.
        if snapshot.missing.is_empty() && snapshot.stale.is_empty() {
            snapshot.freshness = freshness.map(|f| f.unwrap_or(ListFreshness::NONE));
        }
        snapshot.listed_at = self.listed_at;
        tracing::debug!(
            version = snapshot.version(),
            missing = %snapshot.backends_missing().join(","),
            stale = %snapshot.backends_stale().join(","),
            "catalog built"
        );
        Ok(snapshot)
    }
}

/// Inserts an entry under its key: a second entry of the same backend is dropped with a warning, one of
/// another backend is a collision.
fn insert<E>(
    map: &mut BTreeMap<String, E>,
    kind: &'static str,
    key: String,
    entry: E,
    backend_of: fn(&E) -> &str,
) -> Result<(), CatalogError> {
    match map.entry(key) {
        Entry::Vacant(slot) => {
            slot.insert(entry);
            Ok(())
        }
        Entry::Occupied(slot) => {
            let first = backend_of(slot.get());
            let second = backend_of(&entry);
            if first == second {
                tracing::warn!(
                    backend = first,
                    kind,
                    name = slot.key().as_str(),
                    "backend lists the same {kind} twice: keeping the first"
                );
                Ok(())
            } else {
                Err(CatalogError::Collision {
                    kind,
                    name: slot.key().clone(),
                    first: first.to_owned(),
                    second: second.to_owned(),
                })
            }
        }
    }
}

/// The object and the non-empty string at `key`, or a warning and `None`.
fn object_with_key(
    backend: &str,
    kind: &str,
    raw: Value,
    key: &str,
) -> Option<(Map<String, Value>, String)> {
    let Value::Object(obj) = raw else {
        tracing::warn!(
            backend,
            kind,
            "{kind} left out of the catalog: not a json object"
        );
        return None;
    };
    match obj.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => {
            let s = s.to_owned();
            Some((obj, s))
        }
        _ => {
            tracing::warn!(
                backend,
                kind,
                "{kind} left out of the catalog: no non-empty string {key:?}"
            );
            None
        }
    }
}

fn tool_entry(backend: &str, prefix: &str, shaping: &Shaping, raw: Value) -> Option<ToolEntry> {
    let (mut obj, name) = object_with_key(backend, "tool", raw, "name")?;
    if !shaping.tools.selects(&name) {
        return None;
    }
    let Some(schema) = obj.get("inputSchema").filter(|s| s.is_object()) else {
        tracing::warn!(
            backend,
            tool = name.as_str(),
            "tool left out of the catalog: inputSchema is missing or not an object"
        );
        return None;
    };
    let headers = match param_headers(schema) {
        Ok(h) => h,
        Err(error) => {
            tracing::warn!(
                backend,
                tool = name.as_str(),
                %error,
                "tool left out of the catalog: invalid x-mcp-header annotation"
            );
            return None;
        }
    };
    let exposed = exposed_name(prefix, shaping.renamed(&name));
    obj.insert("name".to_owned(), Value::String(exposed.clone()));
    if let Some(description) = shaping.description(&name) {
        obj.insert(
            "description".to_owned(),
            Value::String(description.to_owned()),
        );
    }
    Some(ToolEntry {
        backend: backend.to_owned(),
        original_name: name,
        exposed_name: exposed,
        client_headers: headers.clone(),
        backend_headers: headers,
        tool: Value::Object(obj),
    })
}

fn prompt_entry(backend: &str, prefix: &str, shaping: &Shaping, raw: Value) -> Option<PromptEntry> {
    let (mut obj, name) = object_with_key(backend, "prompt", raw, "name")?;
    if !shaping.prompts.selects(&name) {
        return None;
    }
    let exposed = exposed_name(prefix, shaping.renamed(&name));
    obj.insert("name".to_owned(), Value::String(exposed.clone()));
    Some(PromptEntry {
        backend: backend.to_owned(),
        original_name: name,
        exposed_name: exposed,
        prompt: Value::Object(obj),
    })
}

fn resource_entry(backend: &str, shaping: &Shaping, raw: Value) -> Option<ResourceEntry> {
    let (obj, uri) = object_with_key(backend, "resource", raw, "uri")?;
    if !shaping.resources.selects(&uri) {
        return None;
    }
    Some(ResourceEntry {
        backend: backend.to_owned(),
        uri,
        resource: Value::Object(obj),
    })
}

fn template_entry(backend: &str, shaping: &Shaping, raw: Value) -> Option<TemplateEntry> {
    let (obj, uri_template) = object_with_key(backend, "resource template", raw, "uriTemplate")?;
    if !shaping.resources.selects(&uri_template) {
        return None;
    }
    let parsed = match UriTemplate::parse(&uri_template) {
        Ok(t) => Some(t),
        Err(error) => {
            tracing::warn!(
                backend,
                uri_template = uri_template.as_str(),
                %error,
                "resource template is listed but routes no uri: the matcher does not support it"
            );
            None
        }
    };
    Some(TemplateEntry {
        backend: backend.to_owned(),
        uri_template,
        template: Value::Object(obj),
        parsed,
    })
}
