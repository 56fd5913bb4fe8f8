//! Routing lookups on a snapshot: tools and prompts by exposed name, resources by URI (exact first, then
//! templates), completion references, and the [`protocol::validate::Catalog`] facts validation needs.

use protocol::validate::{Catalog, RouteKey, ToolRoute};
use serde_json::Value;

use super::snapshot::{CatalogSnapshot, PromptEntry, ResourceMatch, ResourceRoute, ToolEntry};

impl CatalogSnapshot {
    /// The tool clients know as `exposed`.
    pub fn tool(&self, exposed: &str) -> Option<&ToolEntry> {
        self.tool_index(exposed).and_then(|i| self.tools.get(i))
    }

    /// The prompt clients know as `exposed`.
    pub fn prompt(&self, exposed: &str) -> Option<&PromptEntry> {
        self.prompt_index(exposed).and_then(|i| self.prompts.get(i))
    }

    /// The backend serving a resource URI: a listed resource with exactly this URI first, then the first
    /// template that matches, templates taken longest literal prefix first, then by `uriTemplate` (so
    /// `file:///logs/{name}` is tried before `file:///{+path}`).
    pub fn resource(&self, uri: &str) -> Option<ResourceRoute<'_>> {
        self.resource_key(uri).and_then(|k| self.resource_at(k))
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

/// A resource key with this bit set names a template (its index below it), else a listed resource.
const TEMPLATE_KEY: u32 = 1 << 31;

impl CatalogSnapshot {
    fn tool_index(&self, exposed: &str) -> Option<usize> {
        self.tools
            .binary_search_by(|t| t.exposed_name.as_str().cmp(exposed))
            .ok()
    }

    fn prompt_index(&self, exposed: &str) -> Option<usize> {
        self.prompts
            .binary_search_by(|p| p.exposed_name.as_str().cmp(exposed))
            .ok()
    }

    /// Where a URI routes, as a key: an exact resource first, then the first matching template (in a
    /// restricted view, only when the view keeps the URI).
    fn resource_key(&self, uri: &str) -> Option<RouteKey> {
        if let Ok(i) = self.resources.binary_search_by(|r| r.uri.as_str().cmp(uri)) {
            return u32::try_from(i).ok().map(RouteKey);
        }
        self.template_order
            .iter()
            .copied()
            .find(|&i| {
                self.templates.get(i).is_some_and(|t| {
                    // In a restricted view the URI itself must be allowed too, not only its template.
                    t.parsed.as_ref().is_some_and(|p| p.is_match(uri))
                        && self.keeps_uri(uri, &t.backend)
                })
            })
            .and_then(|i| u32::try_from(i).ok())
            .filter(|i| i & TEMPLATE_KEY == 0)
            .map(|i| RouteKey(i | TEMPLATE_KEY))
    }

    /// The tool validation resolved (`None` only for a key of another snapshot).
    pub fn tool_at(&self, key: RouteKey) -> Option<&ToolEntry> {
        self.tools.get(key.0 as usize)
    }

    /// The prompt validation resolved.
    pub fn prompt_at(&self, key: RouteKey) -> Option<&PromptEntry> {
        self.prompts.get(key.0 as usize)
    }

    /// The resource route validation resolved.
    pub fn resource_at(&self, key: RouteKey) -> Option<ResourceRoute<'_>> {
        if key.0 & TEMPLATE_KEY == 0 {
            return self.resources.get(key.0 as usize).map(|r| ResourceRoute {
                backend: &r.backend,
                matched: ResourceMatch::Exact,
            });
        }
        self.templates
            .get((key.0 & !TEMPLATE_KEY) as usize)
            .map(|t| ResourceRoute {
                backend: &t.backend,
                matched: ResourceMatch::Template(&t.uri_template),
            })
    }
}

impl Catalog for CatalogSnapshot {
    fn tool(&self, name: &str) -> Option<ToolRoute<'_>> {
        if let Some(key) = self.gateway_route(name) {
            return Some(ToolRoute {
                key,
                header_params: &[],
                required_capabilities: None,
            });
        }
        let Some(i) = self.tool_index(name) else {
            // Not served: a down backend's tool is still routed, to be answered with a tool error.
            return self.down_route(name).map(|key| ToolRoute {
                key,
                header_params: &[],
                required_capabilities: None,
            });
        };
        let entry = self.tools.get(i)?;
        Some(ToolRoute {
            key: RouteKey(u32::try_from(i).ok()?),
            header_params: &entry.client_headers,
            required_capabilities: None,
        })
    }

    fn resource(&self, uri: &str) -> Option<RouteKey> {
        self.resource_key(uri)
    }

    fn prompt(&self, name: &str) -> Option<RouteKey> {
        u32::try_from(self.prompt_index(name)?).ok().map(RouteKey)
    }
}
