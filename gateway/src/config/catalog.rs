//! `[catalog]`: how the catalog is offered. `search = true` lists, to the clients it applies to (all, or the
//! principals and groups named), the gateway's `find_tools` and `call_tool` instead of the tools themselves
//! (see `catalog::search`). This module only reads and validates the table.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[catalog]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CatalogConfig {
    /// List `find_tools` and `call_tool` instead of the tools.
    pub search: bool,
    /// Only to these principals (globs); with `groups` empty too: to every client.
    pub principals: Vec<String>,
    /// Only to principals in these groups (globs).
    pub groups: Vec<String>,
}

impl CatalogConfig {
    /// Checks the table: `principals` and `groups` only with `search` and with authentication (without it no
    /// request has a principal), and no empty glob.
    pub(super) fn validate(&self, authenticated: bool) -> Result<(), ConfigError> {
        for (field, list) in [("principals", &self.principals), ("groups", &self.groups)] {
            if list.is_empty() {
                continue;
            }
            let at = format!("catalog.{field}");
            if !self.search {
                return Err(invalid(at, "applies only with search = true"));
            }
            if !authenticated {
                return Err(invalid(
                    at,
                    "names principals: configure [[auth.api_key]] or [auth.jwt]",
                ));
            }
            if list.iter().any(String::is_empty) {
                return Err(invalid(at, "globs must not be empty"));
            }
        }
        Ok(())
    }

    /// Whether search applies to anyone.
    pub fn searches(&self) -> bool {
        self.search
    }

    /// Whether search applies to a principal from `source` (`api_key`, `jwt`) named `name` in `groups`
    /// (`None`: a request without one); names and groups may be qualified ([`super::qualified`]).
    pub fn searches_for(&self, principal: Option<(&str, &str, &[String])>) -> bool {
        if !self.search {
            return false;
        }
        if self.principals.is_empty() && self.groups.is_empty() {
            return true;
        }
        let Some((source, name, groups)) = principal else {
            return false;
        };
        let named =
            |pattern: &String, name: &str| super::qualified::matches(pattern, source, name, true);
        self.principals.iter().any(|g| named(g, name))
            || self
                .groups
                .iter()
                .any(|g| groups.iter().any(|group| named(g, group)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(search: bool, principals: &[&str], groups: &[&str]) -> CatalogConfig {
        CatalogConfig {
            search,
            principals: principals.iter().map(|s| (*s).to_owned()).collect(),
            groups: groups.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn search_applies_to_everyone_or_the_principals_and_groups_named() {
        let ops = vec!["ops".to_owned()];
        let none: Vec<String> = Vec::new();
        let cases = [
            (with(false, &[], &[]), Some(("ada", &ops)), false),
            (with(true, &[], &[]), None, true),
            (with(true, &[], &[]), Some(("ada", &none)), true),
            (
                with(true, &["agent-*"], &[]),
                Some(("agent-7", &none)),
                true,
            ),
            (with(true, &["agent-*"], &[]), Some(("ada", &none)), false),
            (with(true, &["agent-*"], &[]), None, false),
            (with(true, &[], &["o*"]), Some(("ada", &ops)), true),
            (with(true, &[], &["dev"]), Some(("ada", &ops)), false),
            (with(true, &["jwt:ada"], &[]), Some(("ada", &none)), true),
            (
                with(true, &["api_key:ada"], &[]),
                Some(("ada", &none)),
                false,
            ),
            (
                with(true, &[], &["api_key:ops"]),
                Some(("ada", &ops)),
                false,
            ),
        ];
        for (config, principal, expected) in cases {
            let principal = principal.map(|(n, g)| ("jwt", n, g.as_slice()));
            assert_eq!(
                config.searches_for(principal),
                expected,
                "{config:?} {principal:?}"
            );
        }
    }

    #[test]
    fn principals_and_groups_need_search_and_authentication() {
        let err = |c: CatalogConfig, auth: bool| c.validate(auth).unwrap_err().to_string();
        assert!(err(with(false, &["a"], &[]), true).contains("catalog.principals"));
        assert!(err(with(true, &[], &["g"]), false).contains("catalog.groups"));
        assert!(err(with(true, &[""], &[]), true).contains("catalog.principals"));
        assert!(with(true, &["a"], &["g"]).validate(true).is_ok());
        assert!(with(true, &[], &[]).validate(false).is_ok());
    }
}
