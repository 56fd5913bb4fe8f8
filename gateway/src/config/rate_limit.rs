//! `[[rate_limit]]`: token buckets on the requests that pass the chain, per principal (or client address),
//! per backend and per tool. Off until configured: there is no default limit. Only the values are checked
//! here; the buckets are `limit`'s.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// What a bucket is kept per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitPer {
    /// The principal authentication established, else the client's address, else (stdio) one local client.
    Principal,
    /// The backend the request is routed to (`-` for the methods the gateway answers itself).
    Backend,
    /// The exposed tool name of a `tools/call` (`-` for other methods).
    Tool,
}

impl LimitPer {
    /// Its name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitPer::Principal => "principal",
            LimitPer::Backend => "backend",
            LimitPer::Tool => "tool",
        }
    }

    fn parse(s: &str) -> Option<LimitPer> {
        match s {
            "principal" => Some(LimitPer::Principal),
            "backend" => Some(LimitPer::Backend),
            "tool" => Some(LimitPer::Tool),
            _ => None,
        }
    }
}

/// One `[[rate_limit]]` table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Its name in logs (default: `rate_limit[i]`).
    #[serde(default)]
    pub name: Option<String>,
    /// What a bucket is kept per: any of `principal`, `backend`, `tool`; none: one bucket for every request.
    #[serde(default)]
    pub per: Vec<String>,
    /// Tokens added per second (above 0).
    pub rate: f64,
    /// The bucket's size: how many requests may come at once (at least 1).
    pub burst: u32,
    /// Only these methods (MCP wire names); default: every request through the chain.
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// Only requests routed to a backend whose name matches this glob (`*`, `?`).
    #[serde(default)]
    pub backend: Option<String>,
    /// Only `tools/call` of an exposed tool name matching this glob (`*`, `?`).
    #[serde(default)]
    pub tool: Option<String>,
}

impl RateLimitConfig {
    /// Its name in logs.
    pub fn display_name(&self, i: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("rate_limit[{i}]"))
    }

    /// The keys of `per`, valid after [`validate`].
    pub fn per_keys(&self) -> Vec<LimitPer> {
        self.per.iter().filter_map(|p| LimitPer::parse(p)).collect()
    }

    /// The methods it applies to (`None`: all), valid after [`validate`].
    pub fn method_set(&self) -> Option<Vec<protocol::Method>> {
        self.methods.as_ref().map(|m| {
            m.iter()
                .filter_map(|m| protocol::Method::parse(m))
                .collect()
        })
    }
}

/// Checks every `[[rate_limit]]` table; the first problem names its field.
pub(super) fn validate(limits: &[RateLimitConfig]) -> Result<(), ConfigError> {
    for (i, l) in limits.iter().enumerate() {
        let field = |f: &str| format!("rate_limit[{i}].{f}");
        if l.name.as_deref().is_some_and(str::is_empty) {
            return Err(invalid(field("name"), "must not be empty"));
        }
        let mut seen = Vec::new();
        for (j, p) in l.per.iter().enumerate() {
            let Some(per) = LimitPer::parse(p) else {
                return Err(invalid(
                    format!("rate_limit[{i}].per[{j}]"),
                    format!("{p:?} is not one of \"principal\", \"backend\", \"tool\""),
                ));
            };
            if seen.contains(&per) {
                return Err(invalid(
                    format!("rate_limit[{i}].per[{j}]"),
                    format!("{p:?} is named twice"),
                ));
            }
            seen.push(per);
        }
        if !(l.rate.is_finite() && l.rate > 0.0) {
            return Err(invalid(
                field("rate"),
                "must be above 0 (tokens per second)",
            ));
        }
        if l.burst == 0 {
            return Err(invalid(field("burst"), "must be at least 1"));
        }
        if let Some(methods) = &l.methods {
            if methods.is_empty() {
                return Err(invalid(
                    field("methods"),
                    "must name at least one method (leave it out for every method)",
                ));
            }
            for (j, name) in methods.iter().enumerate() {
                if !protocol::Method::parse(name).is_some_and(protocol::Method::is_client_request) {
                    return Err(invalid(
                        format!("rate_limit[{i}].methods[{j}]"),
                        format!("{name:?} is not a method an MCP client sends"),
                    ));
                }
            }
        }
        for (f, glob) in [("backend", &l.backend), ("tool", &l.tool)] {
            if glob.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(field(f), "must not be empty"));
            }
        }
        if l.tool.is_some()
            && l.methods
                .as_ref()
                .is_some_and(|m| !m.iter().any(|m| m == "tools/call"))
        {
            return Err(invalid(
                field("tool"),
                "only matches tools/call, which methods leaves out",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::Path;

    use crate::config::Config;

    fn load(table: &str) -> Result<Config, String> {
        Config::from_toml_str(
            &format!("[[rate_limit]]\n{table}\n"),
            Path::new("test.toml"),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_rate_limit_table_loads() {
        let c = load(
            "name = \"per-user\"\nper = [\"principal\", \"tool\"]\nrate = 2.5\nburst = 5\nmethods = [\"tools/call\"]\nbackend = \"m*\"\ntool = \"m__*\"",
        )
        .unwrap();
        let l = &c.rate_limits[0];
        assert_eq!(l.display_name(0), "per-user");
        assert_eq!(
            l.per_keys(),
            [super::LimitPer::Principal, super::LimitPer::Tool]
        );
        assert_eq!(l.method_set(), Some(vec![protocol::Method::ToolsCall]));
    }

    #[test]
    fn no_rate_limit_table_means_no_limit() {
        let c = Config::from_toml_str("", Path::new("test.toml")).unwrap();
        assert!(c.rate_limits.is_empty());
    }

    #[test]
    fn bad_rate_limit_values_are_refused_naming_the_field() {
        let cases = [
            (
                "per = [\"user\"]\nrate = 1.0\nburst = 1",
                "rate_limit[0].per[0]: \"user\" is not one of",
            ),
            (
                "per = [\"tool\", \"tool\"]\nrate = 1.0\nburst = 1",
                "rate_limit[0].per[1]: \"tool\" is named twice",
            ),
            (
                "rate = 0.0\nburst = 1",
                "rate_limit[0].rate: must be above 0",
            ),
            (
                "rate = -1.0\nburst = 1",
                "rate_limit[0].rate: must be above 0",
            ),
            (
                "rate = nan\nburst = 1",
                "rate_limit[0].rate: must be above 0",
            ),
            (
                "rate = 1.0\nburst = 0",
                "rate_limit[0].burst: must be at least 1",
            ),
            (
                "rate = 1.0\nburst = 1\nmethods = [\"tools/cal\"]",
                "rate_limit[0].methods[0]: \"tools/cal\" is not a method",
            ),
            (
                "rate = 1.0\nburst = 1\nmethods = []",
                "rate_limit[0].methods: must name at least one method",
            ),
            (
                "rate = 1.0\nburst = 1\nmethods = [\"tools/list\"]\ntool = \"x\"",
                "rate_limit[0].tool: only matches tools/call",
            ),
            (
                "rate = 1.0\nburst = 1\nname = \"\"",
                "rate_limit[0].name: must not be empty",
            ),
            ("rate = 1.0", "missing field `burst`"),
            (
                "rate = 1.0\nburst = 1\nwindow = 3",
                "unknown field `window`",
            ),
        ];
        for (table, want) in cases {
            let err = load(table).expect_err(table);
            assert!(err.contains(want), "{table}: {err}");
        }
    }
}
