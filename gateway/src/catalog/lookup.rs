//! Routing lookups on a snapshot: tools and prompts by exposed name, resources by URI (exact first, then
//! templates), completion references, and the [`protocol::validate::Catalog`] facts validation needs.

use protocol::validate::{Catalog, ToolRoute};
use serde_json::Value;

use super::snapshot::{CatalogSnapshot, PromptEntry, ResourceMatch, ResourceRoute, ToolEntry};

impl CatalogSnapshot {
    /// The tool clients know as `exposed`.
    pub fn tool(&self, exposed: &str) -> Option<&ToolEntry> {
        self.tools
            .binary_search_by(|t| t.exposed_name.as_str().cmp(exposed))
            .ok()
            .and_then(|i| self.tools.get(i))
    }

    /// The prompt clients know as `exposed`.
    pub fn prompt(&self, exposed: &str) -> Option<&PromptEntry> {
        self.prompts
            .binary_search_by(|p| p.exposed_name.as_str().cmp(exposed))
            .ok()
            .and_then(|i| self.prompts.get(i))
    }

    /// The backend serving a resource URI: a listed resource with exactly this URI first, then the first
    /// template that matches, templates taken longest literal prefix first, then by `uriTemplate` (so
    /// `file:///logs/{name}` is tried before `file:///{+path}`).
    pub fn resource(&self, uri: &str) -> Option<ResourceRoute<'_>> {
        if let Ok(i) = self.resources.binary_search_by(|r| r.uri.as_str().cmp(uri)) {
            return self.resources.get(i).map(|r| ResourceRoute {
                backend: &r.backend,
                matched: ResourceMatch::Exact,
            });
        }
        self.template_order
            .iter()
            .filter_map(|&i| self.templates.get(i))
            .find(|t| t.parsed.as_ref().is_some_and(|p| p.is_match(uri)))
            .map(|t| ResourceRoute {
                backend: &t.backend,
                matched: ResourceMatch::Template(&t.uri_template),
            })
    }

    /// The backend of a template whose `uriTemplate` is exactly `template`.
    fn template_by_string(&self, template: &str) -> Option<&str> {
        self.templates
            .binary_search_by(|t| t.uri_template.as_str().cmp(template))
            .ok()
            .and_then(|i| self.templates.get(i))
            .map(|t| t.backend.as_str())
    }

    /// Where a `completion/complete` reference goes, and the reference as that backend must see it:
    /// `ref/prompt` by exposed name (the name is rewritten to the backend's own); `ref/resource` by URI (a
    /// listed resource, then a template whose `uriTemplate` is exactly the URI, then a matching template; the
    /// URI is passed unchanged). Anything else is `None`.
    pub fn completion_backend(&self, reference: &Value) -> Option<(&str, Value)> {
        let obj = reference.as_object()?;
        match obj.get("type").and_then(Value::as_str)? {
            "ref/prompt" => {
                let entry = self.prompt(obj.get("name").and_then(Value::as_str)?)?;
                let mut rewritten = obj.clone();
                rewritten.insert(
                    "name".to_owned(),
                    Value::String(entry.original_name.clone()),
                );
                Some((entry.backend.as_str(), Value::Object(rewritten)))
            }
            "ref/resource" => {
                let uri = obj.get("uri").and_then(Value::as_str)?;
                let backend = match self.resources.binary_search_by(|r| r.uri.as_str().cmp(uri)) {
                    Ok(i) => self.resources.get(i).map(|r| r.backend.as_str()),
                    Err(_) => self
                        .template_by_string(uri)
                        .or_else(|| self.resource(uri).map(|r| r.backend)),
                }?;
                Some((backend, reference.clone()))
            }
            _ => None,
        }
    }
}

impl Catalog for CatalogSnapshot {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        CatalogSnapshot::tool(self, name).map(|entry| ToolRoute {
            header_params: &entry.client_headers,
            required_capabilities: None,
        })
    }

    fn has_resource(&self, uri: &str) -> bool {
        self.resource(uri).is_some()
    }

    fn has_prompt(&self, name: &str) -> bool {
        self.prompt(name).is_some()
    }
}
