//! `[egress]`: the one rule for every URL the gateway fetches on its own (a JWK set, a token endpoint, an
//! OpenAPI document, and any URL learned at run time rather than read from the configuration). Denials
//! apply to every such fetch; private, loopback and link-local addresses are refused only for URLs the
//! configuration did not give, unless allowed here.

use serde::{Deserialize, Serialize};

use super::{ConfigError, invalid, parse_proxy_block};

/// `[egress]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EgressConfig {
    /// Hosts (`idp.example.com`, or `*.example.com` for every name below it) a URL learned at run time may
    /// reach even on a private, loopback or link-local address.
    pub allow_hosts: Vec<String>,
    /// Hosts no fetch reaches, configured or learned.
    pub deny_hosts: Vec<String>,
    /// Address blocks (`10.20.0.0/16`, or one address) a URL learned at run time may reach although they
    /// are private, loopback or link-local.
    pub allow_networks: Vec<String>,
    /// Address blocks no fetch connects to, configured or learned (`169.254.169.254/32`).
    pub deny_networks: Vec<String>,
}

/// A host pattern: a DNS name, or `*.` and one (every name below it, not itself).
pub fn valid_host_pattern(pattern: &str) -> bool {
    let name = pattern.strip_prefix("*.").unwrap_or(pattern);
    !name.is_empty()
        && name.len() <= 253
        && name.parse::<std::net::IpAddr>().is_err()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl EgressConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (key, hosts) in [
            ("allow_hosts", &self.allow_hosts),
            ("deny_hosts", &self.deny_hosts),
        ] {
            for (i, h) in hosts.iter().enumerate() {
                if !valid_host_pattern(h) {
                    return Err(invalid(
                        format!("egress.{key}[{i}]"),
                        format!(
                            "{h:?} is not a host name or *.name (addresses go in allow_networks / deny_networks)"
                        ),
                    ));
                }
            }
        }
        for (key, nets) in [
            ("allow_networks", &self.allow_networks),
            ("deny_networks", &self.deny_networks),
        ] {
            for (i, n) in nets.iter().enumerate() {
                if parse_proxy_block(n).is_none() {
                    return Err(invalid(
                        format!("egress.{key}[{i}]"),
                        format!("{n:?} is not an address or a CIDR block (10.0.0.0/8, fd00::/8)"),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn egress_entries_are_host_names_and_address_blocks() {
        // (pattern, valid)
        for (p, ok) in [
            ("idp.example.com", true),
            ("*.example.com", true),
            ("localhost", true),
            ("*", false),
            ("*.", false),
            ("a.*.example", false),
            ("10.0.0.1", false),
            ("idp.example.com/path", false),
            ("", false),
        ] {
            assert_eq!(valid_host_pattern(p), ok, "{p:?}");
        }
        let parse = |text: &str| {
            crate::config::Config::from_toml_str(text, std::path::Path::new("t.toml"))
                .map_err(|e| e.to_string())
        };
        let ok = parse(
            "[egress]\nallow_hosts = ['*.corp.example']\ndeny_hosts = ['evil.example']\nallow_networks = ['10.20.0.0/16']\ndeny_networks = ['169.254.169.254', 'fd00::/8']\n",
        )
        .unwrap();
        assert_eq!(ok.egress.deny_networks.len(), 2);
        let err = parse("[egress]\ndeny_networks = ['10.0.0.0/33']\n").unwrap_err();
        assert!(err.contains("egress.deny_networks[0]"), "{err}");
        let err = parse("[egress]\nallow_hosts = ['x', '10.0.0.1']\n").unwrap_err();
        assert!(err.contains("egress.allow_hosts[1]"), "{err}");
    }
}
