//! The egress rule: every URL the gateway fetches on its own — a JWK set, a token endpoint, an OpenAPI
//! document, and any URL it learns at run time — goes through a [`Client`] built here, never a bare
//! `reqwest::Client`. `[egress] deny_hosts` and `deny_networks` refuse a fetch whatever its origin; a URL
//! that did not come from the configuration ([`Origin::Discovered`]: a `jwks_uri` from a discovery
//! document, a token endpoint from metadata, a URL inside a fetched document) is also refused a private,
//! loopback, link-local, unique-local or unspecified address unless `allow_hosts` or `allow_networks`
//! names it. A configured URL (an operator's own JWK set on loopback) keeps working.
//!
//! The address is judged where the connection is made, not only the name: the client's DNS resolver
//! ([`resolver`]) drops every resolved address the rule refuses, so a name that resolves to a public
//! address when checked and to 169.254.169.254 when connecting (DNS rebinding) cannot pass; an address
//! written in the URL is judged before the request is sent. A discovered URL never goes through a proxy
//! from the environment (the proxy would connect where the rule cannot see).
//!
//! Backends' MCP transports and an openapi backend's API calls are not fetches of the gateway's own: the
//! operator configured each one to be reached, often on a private network, so they are not judged here.

mod resolver;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;

use crate::config::{EgressConfig, parse_proxy_block};

/// Where a URL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The configuration: only the denials apply.
    Configured,
    /// Learned at run time (a document, a discovery answer): internal addresses are refused too.
    Discovered,
}

/// Why a fetch was refused (the host named, never the URL's path or query).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    /// The host is in `deny_hosts`.
    #[error("egress refused: the host {0} is in [egress] deny_hosts")]
    DeniedHost(String),
    /// The address is in `deny_networks`.
    #[error("egress refused: {host} is at {addr}, in [egress] deny_networks")]
    DeniedNetwork {
        /// The URL's host.
        host: String,
        /// The address it is at.
        addr: IpAddr,
    },
    /// An internal address for a URL the configuration did not give.
    #[error(
        "egress refused: {host} is at {addr}, a private, loopback or link-local address, and the URL did not come from the configuration (allow it in [egress] allow_hosts or allow_networks)"
    )]
    Internal {
        /// The URL's host.
        host: String,
        /// The address it is at.
        addr: IpAddr,
    },
    /// A URL without a host.
    #[error("egress refused: the URL has no host")]
    NoHost,
}

/// `[egress]`, compiled.
#[derive(Debug, Clone, Default)]
pub struct Egress {
    allow_hosts: Vec<String>,
    deny_hosts: Vec<String>,
    allow_networks: Vec<IpNet>,
    deny_networks: Vec<IpNet>,
}

impl Egress {
    /// From `[egress]` (validated: an entry that does not parse is skipped).
    pub fn from_config(config: &EgressConfig) -> Egress {
        let hosts = |list: &[String]| list.iter().map(|h| normal(h).to_owned()).collect();
        let nets = |list: &[String]| list.iter().filter_map(|n| parse_proxy_block(n)).collect();
        Egress {
            allow_hosts: hosts(&config.allow_hosts),
            deny_hosts: hosts(&config.deny_hosts),
            allow_networks: nets(&config.allow_networks),
            deny_networks: nets(&config.deny_networks),
        }
    }

    /// The rule on a host name, before it is resolved.
    pub fn check_host(&self, host: &str) -> Result<(), Refused> {
        if matches_any(&self.deny_hosts, host) {
            return Err(Refused::DeniedHost(normal(host).to_owned()));
        }
        Ok(())
    }

    /// The rule on an address `host` is at.
    pub fn check_addr(&self, host: &str, addr: IpAddr, origin: Origin) -> Result<(), Refused> {
        let addr = addr.to_canonical();
        let host = normal(host).to_owned();
        if self.deny_networks.iter().any(|n| n.contains(&addr)) {
            return Err(Refused::DeniedNetwork { host, addr });
        }
        let allowed = || {
            self.allow_networks.iter().any(|n| n.contains(&addr))
                || matches_any(&self.allow_hosts, &host)
        };
        if origin == Origin::Discovered && internal(addr) && !allowed() {
            return Err(Refused::Internal { host, addr });
        }
        Ok(())
    }

    /// The rule on a URL before it is requested: its host name, or the address written in it (which no
    /// resolver sees).
    pub fn check_url(&self, url: &reqwest::Url, origin: Origin) -> Result<(), Refused> {
        let host = url.host_str().ok_or(Refused::NoHost)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match bare.parse::<IpAddr>() {
            Ok(addr) => self.check_addr(bare, addr, origin),
            Err(_) => self.check_host(bare),
        }
    }
}

/// A host as compared: lower case, without a final dot.
fn normal(host: &str) -> &str {
    host.strip_suffix('.').unwrap_or(host)
}

/// Whether `host` is one of `patterns` (`name`, or `*.name` for every name below it).
fn matches_any(patterns: &[String], host: &str) -> bool {
    let host = normal(host).to_ascii_lowercase();
    patterns.iter().any(|p| {
        let p = p.to_ascii_lowercase();
        match p.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => host == p,
        }
    })
}

/// Private, loopback, link-local, unique-local, unspecified, shared (CGNAT), multicast or reserved: an
/// address a URL learned from elsewhere must not make the gateway reach. IPv4 in IPv6 (mapped,
/// compatible, NAT64) is judged as the IPv4 address.
pub fn internal(addr: IpAddr) -> bool {
    match addr.to_canonical() {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            a == 0
                || v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || (a == 100 && (b & 0xc0) == 64)
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b & 0xfe) == 18)
                || a >= 224
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = || {
                let o = v6.octets();
                IpAddr::from([o[12], o[13], o[14], o[15]])
            };
            (s[..6] == [0; 6]) // ::, ::1 and IPv4-compatible ::a.b.c.d
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] & 0xfe00) == 0xfc00 // unique-local
                || (s[0] & 0xff00) == 0xff00 // multicast
                || (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && internal(embedded())) // NAT64
        }
    }
}

/// An HTTP client for the gateway's own fetches under the egress rule: its resolver judges every address
/// it connects to, [`Client::request`] the URL first, its redirect policy (if it follows any) each target.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    egress: Arc<Egress>,
    origin: Origin,
}

impl Client {
    /// A client for URLs of `origin` like `url`, with these TLS settings and `timeout` for connecting and
    /// for the whole request; no redirect is followed.
    pub fn new(
        egress: &Arc<Egress>,
        origin: Origin,
        tls: &handlers::TlsClient,
        url: &str,
        timeout: Duration,
    ) -> Result<Client, String> {
        Client::build(egress, origin, tls, url, timeout, None)
    }

    /// [`Client::new`], following at most `max` redirects, each only when `follow` accepts its target and
    /// the rule lets it through (its address is judged again at connect): any other is returned as it is.
    pub fn following(
        egress: &Arc<Egress>,
        origin: Origin,
        tls: &handlers::TlsClient,
        url: &str,
        timeout: Duration,
        follow: impl Fn(&reqwest::Url) -> bool + Send + Sync + 'static,
        max: usize,
    ) -> Result<Client, String> {
        let rule = Arc::clone(egress);
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > max {
                attempt.error("too many redirects")
            } else if follow(attempt.url()) && rule.check_url(attempt.url(), origin).is_ok() {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        Client::build(egress, origin, tls, url, timeout, Some(policy))
    }

    fn build(
        egress: &Arc<Egress>,
        origin: Origin,
        tls: &handlers::TlsClient,
        url: &str,
        timeout: Duration,
        redirect: Option<reqwest::redirect::Policy>,
    ) -> Result<Client, String> {
        let resolver = resolver::Resolver::system(Arc::clone(egress), origin);
        let http = handlers::outbound_client_with(tls, url, timeout, |builder| {
            let builder = builder.dns_resolver(resolver);
            let builder = match redirect {
                Some(policy) => builder.redirect(policy),
                None => builder,
            };
            match origin {
                Origin::Configured => builder,
                Origin::Discovered => builder.no_proxy(),
            }
        })?;
        Ok(Client {
            http,
            egress: Arc::clone(egress),
            origin,
        })
    }

    /// A request to `url`, if the rule lets the URL through (its addresses are judged again at connect).
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        self.egress
            .check_url(&parsed, self.origin)
            .map_err(|e| e.to_string())?;
        Ok(self.http.request(method, parsed))
    }
}

#[cfg(test)]
mod tests;
