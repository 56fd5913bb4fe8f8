//! CORS for browser-based MCP clients (`[server] cors_allowed_origins`). Off by default: without origins
//! configured no response carries a CORS header and preflights get what any other `OPTIONS` gets.
//!
//! When on, a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) to `/mcp`, `/sse` or
//! `/messages` is answered here, before any handler: 204 with the origin echoed, the methods, the request
//! headers MCP uses (and the `Mcp-Param-*` ones the browser asks for) and a max age — or 403 with no CORS
//! header for an origin not listed. Every other response to a listed origin gets `Access-Control-Allow-Origin`
//! and exposes `Mcp-Session-Id`, `MCP-Protocol-Version` and `WWW-Authenticate` to the page. No
//! `Access-Control-Allow-Credentials`: the gateway uses no cookies, and `Authorization` is an allowed request
//! header. The policy ([`CorsPolicy`]) is pure; [`middleware`] applies it to actix requests.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue, VARY};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

use super::Worker;
use crate::config::{ServerConfig, normalize_origin};

/// The methods of the MCP endpoints.
pub const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// The request headers an MCP client sends (`Mcp-Param-*` are allowed by prefix, see [`CorsPolicy`]).
pub const ALLOW_HEADERS: [&str; 8] = [
    "Content-Type",
    "Accept",
    "Authorization",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Last-Event-ID",
];
/// The response headers a page may read.
pub const EXPOSE_HEADERS: &str = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate";
/// How long a browser may reuse a preflight's answer, in seconds.
pub const MAX_AGE_SECS: u32 = 600;
/// The prefix of the 2026-07-28 per-argument routing headers.
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// One response header: a name and its value.
pub type Header = (&'static str, String);

/// What a preflight gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preflight {
    /// 204 with these headers.
    Allowed(Vec<Header>),
    /// 403, no CORS header.
    Refused,
}

/// The CORS policy of one deployment: the origins allowed, in their normal form.
#[derive(Debug, Clone, Default)]
pub struct CorsPolicy {
    origins: Vec<String>,
}

impl CorsPolicy {
    /// The policy of a (validated) server config.
    pub fn from_config(server: &ServerConfig) -> CorsPolicy {
        CorsPolicy::new(&server.cors_allowed_origins)
    }

    /// A policy allowing these origins (entries that are not origins are ignored: the config refuses them).
    pub fn new(origins: &[String]) -> CorsPolicy {
        CorsPolicy {
            origins: origins
                .iter()
                .filter_map(|o| normalize_origin(o).ok())
                .collect(),
        }
    }

    /// Whether any origin is configured (otherwise CORS is off).
    pub fn is_on(&self) -> bool {
        !self.origins.is_empty()
    }

    /// Whether a browser page of `origin` (an `Origin` header's value) may call the gateway.
    pub fn allows(&self, origin: &str) -> bool {
        normalize_origin(origin).is_ok_and(|n| self.origins.contains(&n))
    }

    /// The answer to a preflight from `origin` asking for `request_headers` (its
    /// `Access-Control-Request-Headers`, if any). The headers asked for are echoed when every one is
    /// allowed; otherwise the allowed list is sent and the browser refuses the request itself.
    pub fn preflight(&self, origin: &str, request_headers: Option<&str>) -> Preflight {
        if !self.allows(origin) {
            return Preflight::Refused;
        }
        let asked: Vec<&str> = request_headers
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .collect();
        let allow_headers = if !asked.is_empty() && asked.iter().all(|h| header_allowed(h)) {
            asked.join(", ")
        } else {
            ALLOW_HEADERS.join(", ")
        };
        Preflight::Allowed(vec![
            ("access-control-allow-origin", origin.to_owned()),
            ("vary", "Origin".to_owned()),
            ("access-control-allow-methods", ALLOW_METHODS.to_owned()),
            ("access-control-allow-headers", allow_headers),
            ("access-control-max-age", MAX_AGE_SECS.to_string()),
        ])
    }

    /// The headers added to an actual response to a request from `origin`: none for an origin not allowed.
    pub fn response_headers(&self, origin: &str) -> Vec<Header> {
        if !self.allows(origin) {
            return Vec::new();
        }
        vec![
            ("access-control-allow-origin", origin.to_owned()),
            ("vary", "Origin".to_owned()),
            ("access-control-expose-headers", EXPOSE_HEADERS.to_owned()),
        ]
    }
}

/// A request header a page may send: one MCP uses, or any `Mcp-Param-*`.
fn header_allowed(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ALLOW_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
        || (lower.len() > PARAM_HEADER_PREFIX.len() && lower.starts_with(PARAM_HEADER_PREFIX))
}

/// The actix middleware of the MCP endpoints: answers preflights, decorates responses to allowed origins.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let worker = req.app_data::<web::Data<Worker>>().cloned();
    let Some(worker) = worker.filter(|w| w.cors.is_on()) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    };
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let Some(origin) = header("origin") else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    };
    if req.method() == Method::OPTIONS
        && req.headers().contains_key("access-control-request-method")
    {
        let answer = match worker.origin.check(req.request()) {
            Ok(()) => worker
                .cors
                .preflight(&origin, header("access-control-request-headers").as_deref()),
            Err(_) => Preflight::Refused,
        };
        let response = match answer {
            Preflight::Allowed(headers) => with_headers(HttpResponse::NoContent(), &headers),
            Preflight::Refused => HttpResponse::Forbidden().finish(),
        };
        return Ok(req.into_response(response).map_into_right_body());
    }
    let added = worker.cors.response_headers(&origin);
    let mut res = next.call(req).await?;
    for (name, value) in added {
        if let Ok(value) = HeaderValue::from_str(&value) {
            let name = HeaderName::from_static(name);
            if name == VARY {
                res.headers_mut().append(name, value);
            } else {
                res.headers_mut().insert(name, value);
            }
        }
    }
    Ok(res.map_into_left_body())
}

fn with_headers(mut builder: actix_web::HttpResponseBuilder, headers: &[Header]) -> HttpResponse {
    for (name, value) in headers {
        builder.append_header((*name, value.as_str()));
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CorsPolicy {
        CorsPolicy::new(&[
            "https://app.example".to_owned(),
            "http://localhost:6274".to_owned(),
        ])
    }

    fn get<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn no_origins_configured_means_cors_is_off() {
        let off = CorsPolicy::new(&[]);
        assert!(!off.is_on());
        assert!(!off.allows("https://app.example"));
        assert!(off.response_headers("https://app.example").is_empty());
        assert!(policy().is_on());
    }

    #[test]
    fn preflights_are_answered_for_listed_origins_only() {
        // (origin, allowed)
        let table = [
            ("https://app.example", true),
            ("https://APP.example:443", true),
            ("http://localhost:6274", true),
            ("http://localhost:6275", false),
            ("http://app.example", false),
            ("https://evil.example", false),
            ("https://app.example.evil.example", false),
            ("null", false),
            ("", false),
        ];
        for (origin, allowed) in table {
            match policy().preflight(origin, None) {
                Preflight::Allowed(h) => {
                    assert!(allowed, "{origin} allowed");
                    assert_eq!(get(&h, "access-control-allow-origin"), Some(origin));
                    assert_eq!(get(&h, "vary"), Some("Origin"));
                    assert_eq!(get(&h, "access-control-allow-methods"), Some(ALLOW_METHODS));
                    assert_eq!(get(&h, "access-control-max-age"), Some("600"));
                }
                Preflight::Refused => assert!(!allowed, "{origin} refused"),
            }
        }
    }

    #[test]
    fn requested_headers_are_echoed_when_every_one_is_allowed() {
        let all = ALLOW_HEADERS.join(", ");
        // (Access-Control-Request-Headers, Access-Control-Allow-Headers)
        let table = [
            (None, all.as_str()),
            (Some(""), all.as_str()),
            (Some("content-type"), "content-type"),
            (
                Some("content-type, mcp-protocol-version, mcp-method, mcp-name"),
                "content-type, mcp-protocol-version, mcp-method, mcp-name",
            ),
            (
                Some("authorization,mcp-session-id,last-event-id,accept"),
                "authorization, mcp-session-id, last-event-id, accept",
            ),
            (
                Some("content-type, Mcp-Param-Region, mcp-param-x"),
                "content-type, Mcp-Param-Region, mcp-param-x",
            ),
            (Some("content-type, x-custom"), all.as_str()),
            (Some("mcp-param-"), all.as_str()),
            (Some("cookie"), all.as_str()),
        ];
        for (asked, want) in table {
            let Preflight::Allowed(h) = policy().preflight("https://app.example", asked) else {
                panic!("refused");
            };
            assert_eq!(
                get(&h, "access-control-allow-headers"),
                Some(want),
                "{asked:?}"
            );
        }
    }

    #[test]
    fn actual_responses_to_listed_origins_expose_the_mcp_headers() {
        let h = policy().response_headers("http://localhost:6274");
        assert_eq!(
            get(&h, "access-control-allow-origin"),
            Some("http://localhost:6274")
        );
        assert_eq!(get(&h, "vary"), Some("Origin"));
        let exposed = get(&h, "access-control-expose-headers").unwrap();
        for name in ["Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate"] {
            assert!(exposed.contains(name), "{name}");
        }
        assert!(policy().response_headers("https://evil.example").is_empty());
        assert!(get(&h, "access-control-allow-credentials").is_none());
    }
}
