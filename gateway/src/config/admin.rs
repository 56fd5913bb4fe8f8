//! `[admin]`: the operator's listener (`front::admin`) — its address and, with `[auth]` on, the groups whose
//! principals may use it. Absent: no admin listener at all. Without `[auth]` it listens on loopback only.
//!
//! It must not hold a secret: who may use the admin view is decided by the same `[auth]` as the MCP
//! endpoints, by group.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid};

/// `[admin]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Where the admin view listens (`127.0.0.1:7801`, or `7801`, or `localhost:7801`); `None`: no admin
    /// listener.
    #[serde(default, deserialize_with = "super::listen::deserialize_option")]
    pub listen: Option<SocketAddr>,
    /// With `[auth]` on: the groups whose principals may use the admin view (at least one).
    pub groups: Vec<String>,
    /// With `[auth]` on: groups whose principals may only read `GET /metrics` and `GET /readyz` (a scraper's
    /// or a probe's credential, which then opens no view and reloads nothing).
    pub scrape_groups: Vec<String>,
}

impl AdminConfig {
    /// Loopback only unless authentication is on, and then at least one group; never the front door's
    /// own address.
    pub(super) fn validate(&self, auth_on: bool, front: SocketAddr) -> Result<(), ConfigError> {
        let Some(listen) = self.listen else {
            if !self.groups.is_empty() || !self.scrape_groups.is_empty() {
                return Err(invalid(
                    "admin.groups",
                    "groups apply to the admin listener: set admin.listen too",
                ));
            }
            return Ok(());
        };
        if !auth_on && !listen.ip().is_loopback() {
            return Err(invalid(
                "admin.listen",
                format!(
                    "{listen} is beyond loopback: without [auth] the admin view listens on loopback only (127.0.0.1 or [::1])"
                ),
            ));
        }
        if auth_on && self.groups.is_empty() {
            return Err(invalid(
                "admin.groups",
                "with [auth] on, name the groups whose principals may use the admin view",
            ));
        }
        let any_group = !self.groups.is_empty() || !self.scrape_groups.is_empty();
        if !auth_on && any_group {
            return Err(invalid(
                "admin.groups",
                "groups need [auth]: without it the admin view is open to loopback",
            ));
        }
        if let Some(i) = self.groups.iter().position(|g| g.trim().is_empty()) {
            return Err(invalid(format!("admin.groups[{i}]"), "must not be empty"));
        }
        if let Some(i) = self.scrape_groups.iter().position(|g| g.trim().is_empty()) {
            return Err(invalid(
                format!("admin.scrape_groups[{i}]"),
                "must not be empty",
            ));
        }
        if listen.port() != 0 && listen.port() == front.port() {
            return Err(invalid(
                "admin.listen",
                format!("{listen} is the port of server.listen: the admin view needs its own"),
            ));
        }
        Ok(())
    }

    /// Whether a principal from `source` (`api_key`, `jwt`) in `groups` may use the admin view (a group
    /// qualified `api_key:`/`jwt:` admits that source only: [`super::qualified`]).
    pub fn admits(&self, source: &str, groups: &[String]) -> bool {
        any_of(&self.groups, source, groups)
    }

    /// Whether such a principal may read what a scraper reads (`GET /metrics`, `GET /readyz`): one of
    /// `groups` or of `scrape_groups`.
    pub fn admits_scraper(&self, source: &str, groups: &[String]) -> bool {
        self.admits(source, groups) || any_of(&self.scrape_groups, source, groups)
    }
}

fn any_of(wanted: &[String], source: &str, groups: &[String]) -> bool {
    wanted.iter().any(|wanted| {
        groups
            .iter()
            .any(|g| super::qualified::matches(wanted, source, g, false))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front() -> SocketAddr {
        "127.0.0.1:7800".parse().unwrap()
    }

    fn admin(listen: &str, groups: &[&str]) -> AdminConfig {
        AdminConfig {
            listen: Some(listen.parse().unwrap()),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            scrape_groups: Vec::new(),
        }
    }

    fn field(r: Result<(), ConfigError>) -> String {
        match r {
            Err(ConfigError::Invalid { field, .. }) => field,
            other => panic!("expected an invalid field, got {other:?}"),
        }
    }

    #[test]
    fn without_auth_only_loopback_is_accepted() {
        assert!(
            admin("127.0.0.1:7801", &[])
                .validate(false, front())
                .is_ok()
        );
        assert!(admin("[::1]:7801", &[]).validate(false, front()).is_ok());
        assert_eq!(
            field(admin("0.0.0.0:7801", &[]).validate(false, front())),
            "admin.listen"
        );
        assert_eq!(
            field(admin("192.0.2.1:7801", &[]).validate(false, front())),
            "admin.listen"
        );
    }

    #[test]
    fn with_auth_any_address_with_groups() {
        assert!(
            admin("0.0.0.0:7801", &["ops"])
                .validate(true, front())
                .is_ok()
        );
        assert_eq!(
            field(admin("0.0.0.0:7801", &[]).validate(true, front())),
            "admin.groups"
        );
        assert_eq!(
            field(admin("127.0.0.1:7801", &[""]).validate(true, front())),
            "admin.groups[0]"
        );
    }

    #[test]
    fn groups_without_auth_or_listen_and_the_front_doors_port_are_refused() {
        assert_eq!(
            field(admin("127.0.0.1:7801", &["ops"]).validate(false, front())),
            "admin.groups"
        );
        let no_listen = AdminConfig {
            listen: None,
            groups: vec!["ops".into()],
            scrape_groups: Vec::new(),
        };
        assert_eq!(field(no_listen.validate(true, front())), "admin.groups");
        // A scraper's group, like the operators': with [auth] and a listener only, and never empty.
        let scrapers = |listen: Option<&str>, group: &str| AdminConfig {
            listen: listen.map(|l| l.parse().unwrap()),
            groups: vec!["ops".into()],
            scrape_groups: vec![group.into()],
        };
        assert_eq!(
            field(scrapers(None, "metrics").validate(true, front())),
            "admin.groups"
        );
        assert_eq!(
            field(scrapers(Some("127.0.0.1:7801"), "metrics").validate(false, front())),
            "admin.groups"
        );
        assert_eq!(
            field(scrapers(Some("127.0.0.1:7801"), " ").validate(true, front())),
            "admin.scrape_groups[0]"
        );
        assert!(
            scrapers(Some("0.0.0.0:7801"), "metrics")
                .validate(true, front())
                .is_ok()
        );
        assert_eq!(
            field(admin("127.0.0.1:7800", &[]).validate(false, front())),
            "admin.listen"
        );
        assert!(AdminConfig::default().validate(false, front()).is_ok());
    }

    #[test]
    fn a_principal_is_admitted_by_any_of_its_groups() {
        let a = admin("127.0.0.1:7801", &["ops", "sre"]);
        assert!(a.admits("jwt", &["dev".into(), "sre".into()]));
        assert!(!a.admits("jwt", &["dev".into()]));
        assert!(!a.admits("api_key", &[]));
        let keys_only = admin("127.0.0.1:7801", &["api_key:ops"]);
        assert!(keys_only.admits("api_key", &["ops".into()]));
        assert!(
            !keys_only.admits("jwt", &["ops".into()]),
            "a token's ops group is not the keys' ops group"
        );
    }
}
