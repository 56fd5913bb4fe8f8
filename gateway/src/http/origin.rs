//! DNS-rebinding protection: a request whose `Host` is not one the gateway answers to, or whose `Origin` is
//! present and not allowed, is refused with 403 before anything else. A gateway listening on loopback answers
//! only to loopback names by default; one listening elsewhere checks only what the config lists. An origin
//! allowed for CORS (`cors_allowed_origins`) is always allowed here too, so the two never disagree.

use actix_web::HttpRequest;
use protocol::validate::Rejection;
use protocol::{Error, ErrorCode};

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
    Rejection {
        status: 403,
        id: None,
        error: Error::new(ErrorCode::InvalidRequest, format!("forbidden: {why}")),
        generation: None,
        allow: None,
    }
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
