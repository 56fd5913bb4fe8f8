//! Tools of a backend that is down: a `tools/call` of a name carrying a configured backend's prefix
//! (`{prefix}__…`) while that backend is left out of the catalog (it failed to start, or stayed down past
//! `down_grace_ms`) is answered with a tool error naming the backend and why, instead of "unknown tool"
//! (-32601), so that a model (and its user) learns the tool is coming back rather than that it never
//! existed. Only a view that may name the backend has it (a view keeps a missing backend only when its
//! restriction keeps the backend: [`CatalogSnapshot::restricted`]), so a principal that may not see the
//! backend still gets "unknown tool". The reason a client reads is redacted: addresses and URLs are removed.
//! A backend with `prefix = ""` cannot be recognised by name (`mcpgw check` says so).

use std::sync::Arc;

use protocol::validate::RouteKey;

use super::CatalogSnapshot;

/// Route keys of down backends' tools: this bit and the backend's index in [`CatalogSnapshot::down`]
/// (below the keys of the gateway's own tools, `u32::MAX` and `u32::MAX - 1`).
const DOWN_KEY: u32 = 1 << 30;

/// A backend left out of the catalog, as a client may be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownBackend {
    /// Its configured name.
    pub backend: String,
    /// Its tools' prefix (never empty here).
    pub prefix: String,
    /// Why it is down, redacted for clients.
    pub reason: String,
}

impl CatalogSnapshot {
    /// This snapshot knowing which backends are down (`down`: any order; a backend it does not name as
    /// missing is ignored, and so is an empty prefix).
    #[must_use]
    pub fn with_down(mut self, down: Vec<DownBackend>) -> CatalogSnapshot {
        let mut down: Vec<DownBackend> = down
            .into_iter()
            .filter(|d| !d.prefix.is_empty() && self.missing.binary_search(&d.backend).is_ok())
            .collect();
        down.sort_by(|a, b| a.backend.cmp(&b.backend));
        self.down = Arc::new(down);
        self
    }

    /// The route of a `tools/call` of `name` when it carries a down backend's prefix.
    pub(super) fn down_route(&self, name: &str) -> Option<RouteKey> {
        let i = self.down.iter().position(|d| {
            name.strip_prefix(d.prefix.as_str())
                .and_then(|rest| rest.strip_prefix("__"))
                .is_some_and(|tool| !tool.is_empty())
        })?;
        Some(RouteKey(DOWN_KEY | u32::try_from(i).ok()?))
    }

    /// The down backend a route from [`CatalogSnapshot::down_route`] names.
    pub fn down_tool(&self, key: RouteKey) -> Option<&DownBackend> {
        if key.0 & DOWN_KEY == 0 || key.0 >= u32::MAX - 1 {
            return None;
        }
        self.down.get((key.0 & !DOWN_KEY) as usize)
    }

    /// The down backends a view of this snapshot keeps: those its `missing` still names.
    pub(super) fn down_kept(&self, missing: &[String]) -> Arc<Vec<DownBackend>> {
        Arc::new(
            self.down
                .iter()
                .filter(|d| missing.binary_search(&d.backend).is_ok())
                .cloned()
                .collect(),
        )
    }
}

/// A down backend's reason as a client may read it: words naming an address (a URL, `host:port`, an IP)
/// replaced by `[address]`.
pub fn client_reason(reason: &str) -> String {
    reason
        .split(' ')
        .map(|word| {
            let bare = word
                .trim_start_matches(['(', '"', '\''])
                .trim_end_matches([')', ',', ';', ':', '"', '\'', '.']);
            let address = bare.contains("://")
                || bare.parse::<std::net::IpAddr>().is_ok()
                || bare.parse::<std::net::SocketAddr>().is_ok()
                || bare
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| host.contains('.') && port.parse::<u16>().is_ok());
            if address && !bare.is_empty() {
                word.replace(bare, "[address]")
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_removed_from_the_reason() {
        // (reason, as a client reads it)
        let table = [
            (
                "error sending request for url (http://10.0.0.5:8080/mcp): connection refused",
                "error sending request for url ([address]): connection refused",
            ),
            (
                "tcp connect to 10.1.2.3:443 failed",
                "tcp connect to [address] failed",
            ),
            (
                "dns: db.internal.example:5432 unknown",
                "dns: [address] unknown",
            ),
            (
                "the process exited with status 1",
                "the process exited with status 1",
            ),
            ("failed: [::1]:7 refused", "failed: [address] refused"),
        ];
        for (reason, shown) in table {
            assert_eq!(client_reason(reason), shown, "{reason}");
        }
    }

    #[test]
    fn only_a_missing_backends_prefix_routes_and_only_with_a_tool_name() {
        let snapshot = CatalogSnapshot::from_sorted(
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            vec!["crm".to_owned(), "bare".to_owned()],
        )
        .with_down(vec![
            DownBackend {
                backend: "crm".into(),
                prefix: "crm".into(),
                reason: "it did not start".into(),
            },
            DownBackend {
                backend: "bare".into(),
                prefix: String::new(),
                reason: "down".into(),
            },
            DownBackend {
                backend: "up".into(),
                prefix: "up".into(),
                reason: "not missing".into(),
            },
        ]);
        let route = snapshot.down_route("crm__create").expect("routed");
        assert_eq!(snapshot.down_tool(route).unwrap().backend, "crm");
        for name in ["crm__", "crm_create", "crmx__a", "up__a", "create", "__a"] {
            assert!(snapshot.down_route(name).is_none(), "{name}");
        }
        assert!(snapshot.down_tool(RouteKey(0)).is_none());
        assert!(snapshot.down_tool(RouteKey(u32::MAX)).is_none());
    }
}
