//! Building the catalog from the backends: every backend lists its tools, prompts, resources and templates
//! (all pages), each backend within its own deadline and all of them at once; a backend that is down or too
//! slow is left out with a warning instead of failing the catalog.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use handlers::{BackendHandle, BackendRequest};
use protocol::Method;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::catalog::{
    BackendListing, CatalogBuilder, CatalogError, CatalogSnapshot, ListFreshness, ListsFreshness,
};
use crate::state::Gateway;

/// The most pages read from one backend for one list (a backend that pages forever is cut off here).
const MAX_PAGES: usize = 100;

/// Lists every backend and builds a snapshot. A collision is an error naming both backends.
pub async fn build_catalog(gw: &Gateway) -> Result<CatalogSnapshot, CatalogError> {
    let deadline = Duration::from_millis(gw.config.server.list_timeout_ms);
    let listed_at = std::time::Instant::now();
    let prefixes = gw
        .config
        .backends
        .iter()
        .map(|b| (b.name.clone(), b.prefix().to_owned()));
    let fetches = prefixes.filter_map(|(name, prefix)| {
        let handle = gw.backends.get(&name)?.clone();
        Some(async move {
            let result = tokio::time::timeout(deadline, list_backend(&handle, &prefix)).await;
            (name, result)
        })
    });
    let mut builder = CatalogBuilder::new();
    builder.listed_at(listed_at);
    for (name, result) in join_all(fetches).await {
        match result {
            Ok(Ok(listing)) => builder.add(listing),
            Ok(Err(reason)) => builder.missing(&name, &reason),
            Err(_) => builder.missing(
                &name,
                &format!("did not list within {} ms", deadline.as_millis()),
            ),
        }
    }
    builder.build()
}

/// Rebuilds the catalog and swaps it in; on a collision the old catalog stays and the error is logged.
pub async fn refresh(gw: &Arc<Gateway>) {
    match build_catalog(gw).await {
        Ok(snapshot) => {
            tracing::info!(
                version = snapshot.version(),
                missing = ?snapshot.backends_missing(),
                "catalog refreshed"
            );
            gw.catalog.replace(Arc::new(snapshot));
        }
        Err(e) => tracing::error!(error = %e, "catalog not refreshed; the previous one stays"),
    }
}

/// Everything one backend offers (all pages of each list its capabilities announce), as a listing for the
/// catalog; `mcpgw check` reports it. Not bounded here: callers put their deadline on it.
pub async fn list_backend(handle: &BackendHandle, prefix: &str) -> Result<BackendListing, String> {
    let Some(description) = handle.description() else {
        return Err("not connected".to_owned());
    };
    let caps = &description.capabilities;
    let mut listing = BackendListing {
        backend: handle.name().to_owned(),
        prefix: prefix.to_owned(),
        tools: Vec::new(),
        prompts: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        freshness: ListsFreshness::default(),
    };
    let fresh = &mut listing.freshness;
    if caps.tools.is_some() {
        let (items, f) = list_all(handle, Method::ToolsList, "tools").await?;
        (listing.tools, fresh.tools) = (items, Some(f));
    }
    if caps.prompts.is_some() {
        let (items, f) = list_all(handle, Method::PromptsList, "prompts").await?;
        (listing.prompts, fresh.prompts) = (items, Some(f));
    }
    if caps.resources.is_some() {
        let (items, f) = list_all(handle, Method::ResourcesList, "resources").await?;
        (listing.resources, fresh.resources) = (items, Some(f));
        let (items, f) =
            list_all(handle, Method::ResourcesTemplatesList, "resourceTemplates").await?;
        (listing.resource_templates, fresh.resource_templates) = (items, Some(f));
    }
    Ok(listing)
}

/// Every page of one list, and what the pages said about their reuse (the least fresh page wins).
async fn list_all(
    handle: &BackendHandle,
    method: Method,
    field: &str,
) -> Result<(Vec<Value>, ListFreshness), String> {
    let mut items = Vec::new();
    let mut freshness: Option<ListFreshness> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .as_ref()
            .map(|c| serde_json::value::to_raw_value(&serde_json::json!({ "cursor": c })))
            .transpose()
            .map_err(|e| e.to_string())?;
        let request = BackendRequest {
            method,
            params,
            client_capabilities: None,
            name: None,
            param_headers: Vec::new(),
            related: None,
        };
        let raw: Box<RawValue> = handle.call(request).await.map_err(|f| f.to_string())?;
        let mut page: serde_json::Map<String, Value> =
            serde_json::from_str(raw.get()).map_err(|e| format!("{method} result: {e}"))?;
        let page_freshness = ListFreshness::of_page(&page);
        freshness = Some(freshness.map_or(page_freshness, |f| f.and(page_freshness)));
        match page.remove(field) {
            Some(Value::Array(list)) => items.extend(list),
            Some(_) => return Err(format!("{method} result: {field} is not an array")),
            None => {}
        }
        cursor = match page.remove("nextCursor") {
            Some(Value::String(c)) if !c.is_empty() => Some(c),
            _ => return Ok((items, freshness.unwrap_or(ListFreshness::NONE))),
        };
    }
    tracing::warn!(backend = handle.name(), %method, "stopped listing after {MAX_PAGES} pages");
    Ok((items, freshness.unwrap_or(ListFreshness::NONE)))
}
