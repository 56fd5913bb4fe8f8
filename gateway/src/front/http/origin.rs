//! DNS-rebinding protection: a request whose `Host` is not one the gateway answers to, or whose `Origin` is
//! present and not allowed, is refused with 403 before anything else, whatever the listen address.
//!
//! - **Host**: checked against `allowed_hosts`, or, with none configured, against loopback names when the
//!   gateway listens on loopback; a gateway listening elsewhere with no `allowed_hosts` takes any `Host`.
//! - **Origin** (only on a request that carries one: SDK clients send none and are served as before): it
//!   passes when `allowed_origins` lists it (`"*"`: any), or when `cors_allowed_origins` does (so the two
//!   never disagree). With no `allowed_origins` configured, the default list is the loopback origins on a
//!   loopback listener and empty elsewhere, and a **same-origin** request passes too: an `http`/`https`
//!   Origin whose host and port are the request's `Host` (the scheme's default port when either omits it),
//!   where that `Host` is one `allowed_hosts` (or the loopback default) names — not `"*"`, and not "any
//!   host" beyond loopback, since a rebound name is same-origin with itself. So beyond loopback with
//!   neither list configured, every request carrying an `Origin` is refused: a web page cannot drive the
//!   tools through DNS rebinding, whatever the bind address.
//!
//! A request naming its host or origin twice is refused with 400 before that, on every route
//! ([`single_host_and_origin`], applied by `http::guard`).

use actix_web::HttpRequest;
use actix_web::http::header::{HOST, HeaderMap, ORIGIN};
use protocol::validate::Rejection;

use crate::config::{ServerConfig, normalize_origin};

/// The Host and Origin policy of one deployment.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    /// The `Host` names accepted; `None`: any.
    hosts: Option<Vec<String>>,
    /// The origins accepted (`"*"`: any).
    origins: Vec<String>,
    /// Whether a same-origin request under a listed host passes too (no `allowed_origins` configured).
    same_origin: bool,
}

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl OriginPolicy {
    /// The policy for a server config: the configured lists, or loopback names when listening on loopback.
    pub fn from_config(server: &ServerConfig) -> OriginPolicy {
        let loopback = server.listen.ip().is_loopback();
        let hosts = server
            .allowed_hosts
            .clone()
            .or_else(|| loopback.then(|| LOOPBACK_NAMES.iter().map(|h| h.to_string()).collect()));
        let same_origin = server.allowed_origins.is_none();
        let mut origins = server.allowed_origins.clone().unwrap_or_else(|| {
            if loopback {
                LOOPBACK_NAMES
                    .iter()
                    .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                    .collect()
            } else {
                Vec::new()
            }
        });
        // An origin allowed for CORS passes this check too (in its normal form: exactly that origin).
        let cors = server.cors_allowed_origins.iter();
        origins.extend(cors.filter_map(|o| normalize_origin(o).ok()));
        OriginPolicy {
            hosts,
            origins,
            same_origin,
        }
    }

    /// Refuses a request with a Host or Origin outside the policy.
    pub fn check(&self, req: &HttpRequest) -> Result<(), Rejection> {
        let headers = req.headers();
        // HTTP/2 carries the host as the `:authority` pseudo-header, which is the URI's authority here.
        let host = headers
            .get("host")
            .and_then(|v| v.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()))
            .unwrap_or_default();
        if let Some(allowed) = &self.hosts {
            if !allowed.iter().any(|a| a == "*" || host_matches(a, host)) {
                return Err(forbidden(format!(
                    "host {host:?} is not allowed (see [server] allowed_hosts)"
                )));
            }
        }
        if let Some(origin) = headers.get("origin") {
            let origin = origin.to_str().unwrap_or_default();
            if !self.origin_allowed(origin, host) {
                return Err(forbidden(format!(
                    "origin {origin:?} is not allowed (see [server] allowed_origins)"
                )));
            }
        }
        Ok(())
    }

    /// Whether a request carrying this `Origin`, sent to this `Host`, passes.
    pub fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let normal = normalize_origin(origin).ok();
        let listed = self.origins.iter().any(|a| {
            a == "*" || origin_matches(a, origin) || normal.as_deref().is_some_and(|n| n == a)
        });
        listed
            || (self.same_origin
                && self.names_host(host)
                && normal.is_some_and(|n| same_origin(&n, host)))
    }

    /// Whether the host list names `host` (a `"*"` entry or no list names nothing: any host would pass).
    fn names_host(&self, host: &str) -> bool {
        self.hosts
            .as_ref()
            .is_some_and(|list| list.iter().any(|a| a != "*" && host_matches(a, host)))
    }
}

/// Whether `origin` (in its normal form: lower-case, the scheme's default port dropped) is an http(s) origin
/// whose host and port are those of `host` (a `Host` header: `name[:port]`).
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme {
        "http" => "80",
        "https" => "443",
        _ => return false,
    };
    let host = host.to_ascii_lowercase();
    let name = strip_port(&host);
    let port = host[name.len()..].strip_prefix(':');
    let host = match port {
        Some(p) if p == default_port => name,
        _ => host.as_str(),
    };
    !host.is_empty() && host == authority
}

/// Refuses a request that names its host or its origin more than once: several `Host` or several `Origin`
/// headers, or a `Host` header naming another host than `authority` (the target's: HTTP/2's `:authority`, an
/// absolute-form HTTP/1.1 target). A check reading one value while another hop reads the other is what DNS
/// rebinding needs; the same value twice is still refused (no client sends it).
pub fn single_host_and_origin(
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Rejection> {
    let mut hosts = headers.get_all(HOST);
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(bad_request("several host headers"));
    }
    if headers.get_all(ORIGIN).nth(1).is_some() {
        return Err(bad_request("several origin headers"));
    }
    if let (Some(host), Some(authority)) = (host, authority) {
        if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) {
            return Err(bad_request(
                "the host header names another host than the request's authority",
            ));
        }
    }
    Ok(())
}

fn bad_request(why: &str) -> Rejection {
    Rejection::bad_host(why)
}

/// `allowed` names a host (any port): `localhost` allows `localhost` and `localhost:7800`.
fn host_matches(allowed: &str, host: &str) -> bool {
    let name = strip_port(host);
    name.eq_ignore_ascii_case(allowed) || host.eq_ignore_ascii_case(allowed)
}

/// `allowed` is scheme and host (any port), or an exact origin.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    if origin.eq_ignore_ascii_case(allowed) {
        return true;
    }
    match origin.split_once("://") {
        Some((scheme, rest)) => {
            format!("{scheme}://{}", strip_port(rest)).eq_ignore_ascii_case(allowed)
        }
        None => false,
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn forbidden(why: String) -> Rejection {
    Rejection::forbidden_origin(&why)
}

#[cfg(test)]
mod tests;
