//! DNS-rebinding protection: a request whose `Host` is not one the gateway answers to, or whose `Origin` is
//! present and not allowed, is refused with 403 before anything else. A gateway listening on loopback answers
//! only to loopback names by default; one listening elsewhere checks only what the config lists. An origin
//! allowed for CORS (`cors_allowed_origins`) is always allowed here too, so the two never disagree. A request
//! naming its host or origin twice is refused with 400 before that, on every route ([`single_host_and_origin`],
//! applied by `http::guard`).

use actix_web::HttpRequest;
use actix_web::http::header::{HOST, HeaderMap, ORIGIN};
use protocol::validate::Rejection;

use crate::config::{ServerConfig, normalize_origin};

/// The Host and Origin policy of one deployment.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    hosts: Option<Vec<String>>,
    origins: Option<Vec<String>>,
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
        let mut origins = server.allowed_origins.clone().or_else(|| {
            loopback.then(|| {
                LOOPBACK_NAMES
                    .iter()
                    .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                    .collect()
            })
        });
        // An origin allowed for CORS passes this check too (in its normal form: exactly that origin).
        if let Some(list) = &mut origins {
            let cors = server.cors_allowed_origins.iter();
            list.extend(cors.filter_map(|o| normalize_origin(o).ok()));
        }
        OriginPolicy { hosts, origins }
    }

    /// Refuses a request with a Host or Origin outside the policy.
    pub fn check(&self, req: &HttpRequest) -> Result<(), Rejection> {
        let headers = req.headers();
        if let Some(allowed) = &self.hosts {
            // HTTP/2 carries the host as the `:authority` pseudo-header, which is the URI's authority here.
            let host = headers
                .get("host")
                .and_then(|v| v.to_str().ok())
                .or_else(|| req.uri().authority().map(|a| a.as_str()))
                .unwrap_or_default();
            if !allowed.iter().any(|a| a == "*" || host_matches(a, host)) {
                return Err(forbidden(format!("host {host:?} is not allowed")));
            }
        }
        if let Some(origin) = headers.get("origin") {
            let origin = origin.to_str().unwrap_or_default();
            if !self.origin_allowed(origin) {
                return Err(forbidden(format!("origin {origin:?} is not allowed")));
            }
        }
        Ok(())
    }

    /// Whether a request carrying this `Origin` passes.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let Some(allowed) = &self.origins else {
            return true;
        };
        let normal = normalize_origin(origin).ok();
        allowed.iter().any(|a| {
            a == "*" || origin_matches(a, origin) || normal.as_deref().is_some_and(|n| n == a)
        })
    }
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
mod tests {
    use super::*;

    #[test]
    fn host_and_origin_matching() {
        // (allowed, received, matches)
        let hosts = [
            ("localhost", "localhost:7800", true),
            ("localhost", "localhost", true),
            ("127.0.0.1", "127.0.0.1:1", true),
            ("[::1]", "[::1]:7800", true),
            ("localhost", "evil.example:7800", false),
            ("localhost", "localhost.evil.example", false),
        ];
        for (allowed, host, want) in hosts {
            assert_eq!(host_matches(allowed, host), want, "{allowed} {host}");
        }
        let origins = [
            ("http://localhost", "http://localhost:3000", true),
            ("http://localhost", "https://localhost:3000", false),
            ("http://localhost", "http://evil.example", false),
            ("https://app.example", "https://app.example", true),
            ("http://localhost", "null", false),
        ];
        for (allowed, origin, want) in origins {
            assert_eq!(origin_matches(allowed, origin), want, "{allowed} {origin}");
        }
    }

    #[test]
    fn a_host_or_origin_named_twice_is_refused() {
        use actix_web::http::header::{HeaderName, HeaderValue};
        // (headers, authority of the target, refused)
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, bool);
        let table: [Case; 9] = [
            (&[("host", "localhost:7800")], None, false),
            (&[], Some("localhost:7800"), false),
            (&[("host", "LOCALHOST:7800")], Some("localhost:7800"), false),
            (
                &[("origin", "http://localhost"), ("host", "localhost")],
                None,
                false,
            ),
            (
                &[("host", "localhost"), ("host", "evil.example")],
                None,
                true,
            ),
            (&[("host", "localhost"), ("host", "localhost")], None, true),
            (
                &[
                    ("origin", "http://localhost"),
                    ("origin", "http://evil.example"),
                ],
                None,
                true,
            ),
            (
                &[("host", "localhost:7800")],
                Some("evil.example:7800"),
                true,
            ),
            (&[("host", "evil.example")], Some("localhost"), true),
        ];
        for (pairs, authority, refused) in table {
            let mut headers = HeaderMap::new();
            for (k, v) in pairs {
                headers.append(
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            let got = single_host_and_origin(&headers, authority);
            assert_eq!(got.is_err(), refused, "{pairs:?} {authority:?}");
            if let Err(r) = got {
                assert_eq!(r.status, 400);
            }
        }
    }

    #[test]
    fn an_origin_allowed_for_cors_passes_the_origin_check() {
        // (listen, allowed_origins, cors_allowed_origins, origin received, passes)
        type Case<'a> = (&'a str, Option<&'a [&'a str]>, &'a [&'a str], &'a str, bool);
        let table: [Case; 7] = [
            (
                "127.0.0.1:7800",
                None,
                &["https://app.example"],
                "https://app.example",
                true,
            ),
            (
                "127.0.0.1:7800",
                None,
                &["https://app.example:443"],
                "https://app.example",
                true,
            ),
            (
                "127.0.0.1:7800",
                None,
                &["https://app.example"],
                "https://evil.example",
                false,
            ),
            (
                "127.0.0.1:7800",
                None,
                &["https://app.example"],
                "http://localhost:5173",
                true,
            ),
            (
                "127.0.0.1:7800",
                Some(&["https://other.example"]),
                &["https://app.example"],
                "https://app.example",
                true,
            ),
            (
                "127.0.0.1:7800",
                Some(&["https://other.example"]),
                &[],
                "https://app.example",
                false,
            ),
            ("0.0.0.0:7800", None, &[], "https://anything.example", true),
        ];
        for (listen, allowed, cors, origin, want) in table {
            let server = ServerConfig {
                listen: listen.parse().unwrap(),
                allowed_origins: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
                cors_allowed_origins: cors.iter().map(|s| s.to_string()).collect(),
                ..ServerConfig::default()
            };
            let policy = OriginPolicy::from_config(&server);
            assert_eq!(
                policy.origin_allowed(origin),
                want,
                "{listen} {allowed:?} {cors:?} {origin}"
            );
        }
    }
}
