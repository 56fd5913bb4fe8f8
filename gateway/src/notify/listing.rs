//! Building the catalog from the backends: every backend asked lists its tools, prompts, resources and
//! templates (all pages), each within its own deadline and all of them at once, on the backend's control
//! bulkhead (never competing with calls). What each attempt came to is settled in the [`Ledger`]: a backend
//! that fails to list keeps its last good listing (stale) and is retried with backoff; one that is down is
//! left out once its grace period ends.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use handlers::{BackendHandle, BackendRequest};
use protocol::shape::Failure;
use serde_json::Value;
use serde_json::value::RawValue;

pub use crate::catalog::ledger::{Attempt, FailedList};
#[cfg(any(test, feature = "internals"))]
pub use crate::catalog::ledger::{BackendReport, Ledger, Standing};

use crate::catalog::{
    BackendListing, CatalogError, CatalogSnapshot, ListFreshness, ListKind, ListsFreshness,
    Selection, Shaping,
};
use crate::config::{BackendEntry, SelectionEntry};
use crate::state::Gateway;

/// The most pages read from one backend for one list (a backend that pages forever is cut off here).
const MAX_PAGES: usize = 100;

/// How one backend's listings are named and shaped, from its config entry alone (never from which backends
/// are up): its prefix and its compiled [`Shaping`], shared by every listing of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Naming {
    /// The prefix of its tool and prompt names.
    pub prefix: String,
    /// Its selection, renames and descriptions.
    pub shaping: Arc<Shaping>,
    /// Each principal authorizes it (`grant = "authorization_code"`): its listing is made with one
    /// principal's token, so its resources are not listed, and the gateway adds its connect tools.
    pub per_user: bool,
}

impl Naming {
    /// The naming `[[backend]]` `entry` configures.
    pub fn of(entry: &BackendEntry) -> Naming {
        let selection = |s: &Option<SelectionEntry>| {
            s.as_ref().map_or_else(Selection::default, |s| Selection {
                allow: s.allow.clone(),
                deny: s.deny.clone(),
            })
        };
        Naming {
            prefix: entry.prefix().to_owned(),
            shaping: Arc::new(Shaping {
                tools: selection(&entry.tools),
                prompts: selection(&entry.prompts),
                resources: selection(&entry.resources),
                rename: entry.rename.clone(),
                describe: entry.describe.clone(),
            }),
            per_user: entry
                .auth
                .as_ref()
                .is_some_and(crate::config::BackendAuth::is_authorization_code),
        }
    }
}

/// Which backends a build asks; the others keep what the ledger holds for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every backend (the catalog's lists went stale).
    All,
    /// These (one came up, went down, announced a list change, or is due for a retry).
    Only(BTreeSet<String>),
}

impl Scope {
    fn includes(&self, name: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Only(names) => names.contains(name),
        }
    }

    /// Both scopes' backends.
    #[must_use]
    pub fn and(self, other: Scope) -> Scope {
        match (self, other) {
            (Scope::Only(mut a), Scope::Only(b)) => {
                a.extend(b);
                Scope::Only(a)
            }
            _ => Scope::All,
        }
    }
}

/// The first catalog: every backend gets `list_timeout_ms` in all to connect and list; those that did not
/// are left out (down) and join when they come up.
pub async fn first_catalog(gw: &Gateway) -> Result<CatalogSnapshot, CatalogError> {
    build(gw, &Scope::All, true).await
}

async fn build(
    gw: &Gateway,
    scope: &Scope,
    wait_connect: bool,
) -> Result<CatalogSnapshot, CatalogError> {
    let deadline = Duration::from_millis(gw.config.server.list_timeout_ms);
    let listed_at = Instant::now();
    let live = gw.live();
    let fetches = live.config.backends.iter().filter_map(|b| {
        if !scope.includes(&b.name) {
            return None;
        }
        let handle = live.backend(&b.name)?.clone();
        let (name, naming) = (b.name.clone(), Naming::of(b));
        Some(async move {
            let attempt = if wait_connect {
                settle_and_list(&handle, &naming, deadline).await
            } else {
                within(&handle, deadline, attempt(&handle, &naming)).await
            };
            (name, attempt)
        })
    });
    let attempts: BTreeMap<String, Attempt> = join_all(fetches).await.into_iter().collect();
    let asked = |name: &str| scope.includes(name);
    let asked: Option<&dyn Fn(&str) -> bool> = (!wait_connect).then_some(&asked);
    let built = gw
        .ledger
        .build(attempts, listed_at, Instant::now(), asked)?;
    Ok(knowing_down(built, &gw.ledger, &live.config))
}

/// `snapshot` knowing which of `config`'s backends are down and why (from `ledger`), so that a call of one
/// of their tools is answered with a tool error naming the backend (`catalog::down`).
pub fn knowing_down(
    snapshot: CatalogSnapshot,
    ledger: &crate::catalog::ledger::Ledger,
    config: &crate::config::Config,
) -> CatalogSnapshot {
    let reports = ledger.report(Instant::now());
    let down = config
        .backends
        .iter()
        .map(|b| {
            let reason = reports
                .iter()
                .find(|r| r.name == b.name)
                .and_then(|r| r.standing.reason())
                .map_or_else(
                    || "it has not started".to_owned(),
                    crate::catalog::client_reason,
                );
            crate::catalog::DownBackend {
                backend: b.name.clone(),
                prefix: b.prefix().to_owned(),
                reason,
            }
        })
        .collect();
    snapshot.with_down(down)
}

/// One backend's first listing (at start, or a backend a reload started): it gets `deadline` in all to
/// connect and list.
pub async fn settle_and_list(
    handle: &BackendHandle,
    naming: &Naming,
    deadline: Duration,
) -> Attempt {
    within(handle, deadline, async {
        handle.wait_settled(deadline).await;
        attempt(handle, naming).await
    })
    .await
}

/// `attempt` within `deadline`: past it, down when the backend never connected, else a failed listing.
async fn within(
    handle: &BackendHandle,
    deadline: Duration,
    attempt: impl std::future::Future<Output = Attempt>,
) -> Attempt {
    tokio::time::timeout(deadline, attempt)
        .await
        .unwrap_or_else(|_| {
            let ms = deadline.as_millis();
            if handle.description().is_none() {
                Attempt::Down(format!("not connected within {ms} ms"))
            } else {
                Attempt::Failed(format!("did not list within {ms} ms"))
            }
        })
}

/// One backend's listing attempt; a per-user backend's is then [`per_user`]'s.
async fn attempt(handle: &BackendHandle, naming: &Naming) -> Attempt {
    let attempt = attempt_as_listed(handle, naming).await;
    if naming.per_user {
        per_user(attempt, handle.name(), naming)
    } else {
        attempt
    }
}

/// A per-user backend's listing: without its resources (listed with one principal's token, they are that
/// principal's), with the gateway's connect and disconnect tools; down (no one connected yet, or the
/// token it is listed with was refused), the connect tool alone, so that a first user can connect.
fn per_user(attempt: Attempt, backend: &str, naming: &Naming) -> Attempt {
    let tools = || {
        [
            (
                crate::oauth::CONNECT_TOOL,
                format!(
                    "Connect your own account at {backend}: asks you to open a link and authorize mcpgw there. \
                     Its tools use your account once you have."
                ),
            ),
            (
                crate::oauth::DISCONNECT_TOOL,
                format!("Disconnect your account at {backend}: mcpgw forgets your token there."),
            ),
        ]
        .into_iter()
        .map(|(name, description)| {
            serde_json::json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                "annotations": {"readOnlyHint": false, "openWorldHint": true},
            })
        })
        .collect::<Vec<_>>()
    };
    let shaped = |mut listing: BackendListing| {
        listing.resources.clear();
        listing.tools.retain(|t| {
            let name = t.get("name").and_then(serde_json::Value::as_str);
            name != Some(crate::oauth::CONNECT_TOOL) && name != Some(crate::oauth::DISCONNECT_TOOL)
        });
        listing.tools.extend(tools());
        listing
    };
    match attempt {
        Attempt::Listed(l) => Attempt::Listed(shaped(l)),
        Attempt::Partial(l, failed) => Attempt::Partial(shaped(l), failed),
        Attempt::Failed(why) => Attempt::Failed(why),
        Attempt::Down(_) => Attempt::Listed(BackendListing {
            backend: backend.to_owned(),
            prefix: naming.prefix.clone(),
            shaping: naming.shaping.clone(),
            tools: tools().into_iter().take(1).collect(),
            prompts: Vec::new(),
            resources: Vec::new(),
            resource_templates: Vec::new(),
            freshness: ListsFreshness::default(),
        }),
    }
}

/// One backend's listing attempt: down when it is not connected, else what listing it came to.
async fn attempt_as_listed(handle: &BackendHandle, naming: &Naming) -> Attempt {
    if handle.description().is_none() {
        let reason = handle
            .down_reason()
            .unwrap_or_else(|| "not connected".to_owned());
        return Attempt::Down(reason);
    }
    match list_backend(handle, naming).await {
        Ok((listing, failed)) if failed.is_empty() => Attempt::Listed(listing),
        Ok((listing, failed)) => Attempt::Partial(listing, failed),
        // Lost between the check and the listing: down, not a failed listing.
        Err(_) if handle.description().is_none() => Attempt::Down(
            handle
                .down_reason()
                .unwrap_or_else(|| "not connected".to_owned()),
        ),
        Err(reason) => Attempt::Failed(reason),
    }
}

/// Lists the backends in `scope` again and swaps the new catalog in: the catalog before and after. On a
/// collision the old catalog stays and the error is logged (`None`).
pub async fn refresh(
    gw: &Arc<Gateway>,
    scope: &Scope,
) -> Option<(Arc<CatalogSnapshot>, Arc<CatalogSnapshot>)> {
    match build(gw, scope, false).await {
        Ok(snapshot) => {
            tracing::info!(
                version = snapshot.version(),
                missing = %snapshot.backends_missing().join(","),
                stale = %snapshot.backends_stale().join(","),
                "catalog refreshed"
            );
            let before = gw.catalog.snapshot();
            let after = Arc::new(snapshot);
            gw.catalog.replace(after.clone());
            Some((before, after))
        }
        Err(e) => {
            tracing::error!(error = %e, "catalog not refreshed; the previous one stays");
            None
        }
    }
}

/// Everything one backend offers (all pages of each list its capabilities announce), as a listing for the
/// catalog, and the lists that failed; `mcpgw check` reports it. A list the backend answers "method not
/// found" (a hand-written server declaring `resources` without `resources/templates/list`) counts as empty;
/// a list that fails otherwise is reported and never takes the others with it. Only when every announced
/// list fails is the whole listing an error. Not bounded here: callers put their deadline on it.
pub async fn list_backend(
    handle: &BackendHandle,
    naming: &Naming,
) -> Result<(BackendListing, Vec<FailedList>), String> {
    let Some(description) = handle.description() else {
        return Err("not connected".to_owned());
    };
    let caps = &description.capabilities;
    let mut listing = BackendListing {
        backend: handle.name().to_owned(),
        prefix: naming.prefix.clone(),
        shaping: naming.shaping.clone(),
        tools: Vec::new(),
        prompts: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        freshness: ListsFreshness::default(),
    };
    let mut announced = Vec::new();
    if caps.tools.is_some() {
        announced.push(ListKind::Tools);
    }
    if caps.prompts.is_some() {
        announced.push(ListKind::Prompts);
    }
    if caps.resources.is_some() {
        announced.extend([ListKind::Resources, ListKind::ResourceTemplates]);
    }
    let mut failed = Vec::new();
    for &kind in &announced {
        let (items, freshness) = match list_all(handle, kind).await {
            Ok(read) => read,
            Err(ListError::NotImplemented) => {
                // An empty list, as if it were not announced.
                tracing::debug!(
                    backend = handle.name(),
                    method = kind.method(),
                    "the backend does not implement it: counted as empty"
                );
                continue;
            }
            Err(ListError::Failed(reason)) => {
                failed.push(FailedList { kind, reason });
                continue;
            }
        };
        let fresh = &mut listing.freshness;
        match kind {
            ListKind::Tools => (listing.tools, fresh.tools) = (items, Some(freshness)),
            ListKind::Prompts => (listing.prompts, fresh.prompts) = (items, Some(freshness)),
            ListKind::Resources => (listing.resources, fresh.resources) = (items, Some(freshness)),
            ListKind::ResourceTemplates => {
                (listing.resource_templates, fresh.resource_templates) = (items, Some(freshness));
            }
        }
    }
    if !announced.is_empty() && failed.len() == announced.len() {
        let reasons: Vec<String> = failed.iter().map(ToString::to_string).collect();
        return Err(reasons.join("; "));
    }
    Ok((listing, failed))
}

/// Why a list was not read.
enum ListError {
    /// The backend answered its first page "method not found": it has no such list.
    NotImplemented,
    /// Anything else.
    Failed(String),
}

/// Every page of `handle`'s tools, as it sent them (`mcpgw tools`): "method not found" is no tools, any
/// other failure says what went wrong.
pub async fn list_tools(handle: &BackendHandle) -> Result<Vec<Value>, String> {
    match list_all(handle, ListKind::Tools).await {
        Ok((tools, _)) => Ok(tools),
        Err(ListError::NotImplemented) => Ok(Vec::new()),
        Err(ListError::Failed(reason)) => Err(reason),
    }
}

/// Every page of one list, and what the pages said about their reuse (the least fresh page wins).
async fn list_all(
    handle: &BackendHandle,
    kind: ListKind,
) -> Result<(Vec<Value>, ListFreshness), ListError> {
    let (method, field) = (kind.list_method(), kind.field());
    let failed = ListError::Failed;
    let mut items = Vec::new();
    let mut freshness: Option<ListFreshness> = None;
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .as_ref()
            .map(|c| serde_json::value::to_raw_value(&serde_json::json!({ "cursor": c })))
            .transpose()
            .map_err(|e| failed(e.to_string()))?;
        let first = cursor.is_none();
        let request = BackendRequest::new(method, params);
        let raw: Box<RawValue> = handle.call(request).await.map_err(|f| match f {
            Failure::Backend { error, .. }
                if first && error.code() == protocol::ErrorCode::MethodNotFound =>
            {
                ListError::NotImplemented
            }
            f => failed(f.to_string()),
        })?;
        let mut page: serde_json::Map<String, Value> =
            serde_json::from_str(raw.get()).map_err(|e| failed(format!("{method} result: {e}")))?;
        let page_freshness = ListFreshness::of_page(&page);
        freshness = Some(freshness.map_or(page_freshness, |f| f.and(page_freshness)));
        match page.remove(field) {
            Some(Value::Array(list)) => items.extend(list),
            Some(_) => return Err(failed(format!("{method} result: {field} is not an array"))),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn naming() -> Naming {
        Naming {
            prefix: "n__".into(),
            shaping: Arc::new(Shaping::default()),
            per_user: true,
        }
    }

    fn names(listing: &BackendListing) -> Vec<&str> {
        listing
            .tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect()
    }

    #[test]
    fn a_per_user_backends_listing_never_shares_its_resources_and_offers_its_connect_tools() {
        let listed = BackendListing {
            backend: "n".into(),
            prefix: "n__".into(),
            shaping: Arc::new(Shaping::default()),
            // A backend's own tool of the gateway's name is replaced by the gateway's.
            tools: vec![
                json!({"name": "search"}),
                json!({"name": "mcpgw_connect", "description": "x"}),
            ],
            prompts: vec![json!({"name": "p"})],
            resources: vec![json!({"uri": "notes://alice/diary", "name": "alice's diary"})],
            resource_templates: vec![json!({"uriTemplate": "notes://{id}", "name": "t"})],
            freshness: ListsFreshness::default(),
        };
        let Attempt::Listed(l) = per_user(Attempt::Listed(listed), "n", &naming()) else {
            panic!("listed");
        };
        assert!(
            l.resources.is_empty(),
            "listed with one user's token: never shared"
        );
        assert_eq!(l.resource_templates.len(), 1);
        assert_eq!(l.prompts.len(), 1);
        assert_eq!(names(&l), ["search", "mcpgw_connect", "mcpgw_disconnect"]);
        assert_ne!(l.tools[1]["description"], "x");
        // No one connected yet (down): the connect tool alone, so a first user can.
        let Attempt::Listed(l) = per_user(Attempt::Down("401".into()), "n", &naming()) else {
            panic!("listed");
        };
        assert_eq!(names(&l), ["mcpgw_connect"]);
        assert!(matches!(
            per_user(Attempt::Failed("x".into()), "n", &naming()),
            Attempt::Failed(_)
        ));
    }
}
