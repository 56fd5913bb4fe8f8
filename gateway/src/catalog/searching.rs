//! A searching view (`[catalog] search`): a snapshot that lists the gateway's `find_tools` and `call_tool`
//! instead of its tools, resolves those two names for validation (with route keys no backend tool has), and
//! holds the [`ToolIndex`] over its own tools that `find_tools` ranks. Everything else — its tools by name,
//! prompts, resources — is the view it was made of, so a direct `tools/call` of a tool it holds works as
//! before and one it does not hold is answered as unregistered.
//!
//! Pure like the rest of the catalog; made once per view and catalog, never per request.

use std::sync::{Arc, LazyLock};

use protocol::validate::RouteKey;
use serde_json::Value;

use super::freshness::ListFreshness;
use super::search::{CALL_TOOL, FIND_TOOLS, ToolIndex, found, gateway_tools};
use super::snapshot::CatalogSnapshot;

/// The route key validation gives `find_tools` in a searching view.
const FIND_KEY: RouteKey = RouteKey(u32::MAX);
/// The route key validation gives `call_tool` (reached only when its arguments name no tool to call).
const CALL_KEY: RouteKey = RouteKey(u32::MAX - 1);

static LISTED: LazyLock<[Value; 2]> = LazyLock::new(gateway_tools);

/// One of the gateway's own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayTool {
    /// `find_tools`.
    FindTools,
    /// `call_tool`.
    CallTool,
}

/// The tool names the gateway reserves: its own two with search on, none without.
pub fn reserved(search: bool) -> Vec<String> {
    if search {
        vec![FIND_TOOLS.to_owned(), CALL_TOOL.to_owned()]
    } else {
        Vec::new()
    }
}

impl CatalogSnapshot {
    /// This view as a searching one (see the module docs); its lists `private` when search applies to some
    /// principals only (a shared cache must not give another client the two tools).
    pub fn searching(&self, private: bool) -> CatalogSnapshot {
        let mut view = self.clone();
        view.search = Some(Arc::new(ToolIndex::build(&self.tools)));
        if private {
            view.freshness = view.freshness.map(|f| ListFreshness { public: false, ..f });
        }
        view
    }

    /// Whether this is a searching view.
    pub fn is_searching(&self) -> bool {
        self.search.is_some()
    }

    /// The gateway tool a route validation resolved names, in a searching view.
    pub fn gateway_tool(&self, key: RouteKey) -> Option<GatewayTool> {
        self.search.as_ref()?;
        match key {
            FIND_KEY => Some(GatewayTool::FindTools),
            CALL_KEY => Some(GatewayTool::CallTool),
            _ => None,
        }
    }

    /// `find_tools`' result: the best matches of `query` among this view's tools (of `backend` only, when
    /// given), at most `limit`; `None` outside a searching view.
    pub fn find_tools(&self, query: &str, backend: Option<&str>, limit: usize) -> Option<Value> {
        let index = self.search.as_ref()?;
        Some(found(&self.tools, &index.find(query, backend, limit)))
    }

    /// In a searching view, the route of one of the gateway's tools by name.
    pub(super) fn gateway_route(&self, name: &str) -> Option<RouteKey> {
        self.search.as_ref()?;
        match name {
            FIND_TOOLS => Some(FIND_KEY),
            CALL_TOOL => Some(CALL_KEY),
            _ => None,
        }
    }

    /// In a searching view, what `tools/list` lists: the gateway's two tools.
    pub(super) fn listed_tools(&self) -> Option<&'static [Value]> {
        self.search.as_ref().map(|_| LISTED.as_slice())
    }
}
