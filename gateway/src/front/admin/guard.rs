//! Who may use the admin view, decided from a request's headers before any handler runs:
//!
//! 1. `Host`: without `[auth]` (the listener is on loopback then), a loopback name with the admin port —
//!    `127.0.0.1`, `[::1]`, `localhost` — else 403: a page whose DNS name was rebound to 127.0.0.1 must
//!    not read what the gateway holds. With `[auth]` and `[server] allowed_hosts`, a `Host` that is a name
//!    must be a loopback name or one of them (any port), else 403; an IP address always passes (a scraper
//!    names the pod's, and no page rebinds a name to an address to be sent an address).
//! 2. Cross-site: a request with an `Origin` other than the listener's own (`http://`, or `https://` over
//!    TLS, + its `Host`), or a `Sec-Fetch-Site` of `cross-site` or `same-site`, is 403; no response
//!    carries a CORS header, so preflights fail and no other origin reads a JSON view.
//! 3. `POST`: also the `X-Mcpgw-Admin` header, which a browser sends cross-origin only after a preflight
//!    (never granted here): 403 without it, naming it.
//! 4. With `[auth]`: the JSON views and `POST`s are authenticated by the gateway's own authenticator
//!    (401 with its challenge), and the principal must be in one of `[admin] groups` (403). The page's
//!    own files (HTML, JS, CSS: no data) are served without a credential, since a browser cannot present
//!    a bearer token when it navigates; the page asks for the token and sends it with each request.
//!
//! Every answer carries `Cache-Control: no-store`, `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer` and `X-Frame-Options: DENY`.
//!
//! It must not log a credential, and must not read a request's body.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use serde_json::json;

use crate::front::http::gate::Authenticated;

use super::{ADMIN_HEADER, Admin};

/// Why a request is refused, with its status and what the answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Not a loopback `Host` with the admin port (without `[auth]`).
    Host,
    /// A `Host` name neither loopback nor in `[server] allowed_hosts` (with `[auth]`).
    HostName,
    /// An `Origin` or `Sec-Fetch-Site` of another site.
    CrossSite,
    /// A `POST` without `X-Mcpgw-Admin`.
    MissingHeader,
    /// No acceptable credential: the challenge.
    Unauthenticated(String),
    /// Authenticated, in none of `[admin] groups`.
    NotAdmin,
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Refusal::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            _ => StatusCode::FORBIDDEN,
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Refusal::Host => {
                "the admin view answers loopback host names only (127.0.0.1, [::1], localhost) with its own port"
            }
            Refusal::HostName => {
                "the admin view answers IP addresses, loopback names and [server] allowed_hosts only"
            }
            Refusal::CrossSite => "the admin view is not readable from another origin",
            Refusal::MissingHeader => {
                "a POST to the admin view needs the header X-Mcpgw-Admin (any value)"
            }
            Refusal::Unauthenticated(_) => "authentication required",
            Refusal::NotAdmin => {
                "the principal is in none of [admin] groups (scrape_groups read only GET /metrics and /readyz)"
            }
        }
    }
}

/// The guard, as an actix middleware on every admin route.
pub(super) async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(admin) = req.app_data::<web::Data<Admin>>().cloned() else {
        return Err(actix_web::error::ErrorInternalServerError(
            "the admin app has no state",
        ));
    };
    let verdict = check(&admin, req.method(), req.path(), req.headers()).await;
    let mut res = match verdict {
        Ok(principal) => {
            // The operator, for what acts as them (the playground's calls go through their view), where
            // the front door's gate puts a principal.
            if let Some(principal) = principal {
                req.extensions_mut()
                    .insert(Authenticated(std::sync::Arc::new(principal)));
            }
            next.call(req).await?.map_into_left_body()
        }
        Err(refusal) => {
            tracing::debug!(
                path = req.path(),
                why = refusal.describe(),
                "admin: refused"
            );
            let mut answer = HttpResponse::build(refusal.status());
            if let Refusal::Unauthenticated(challenge) = &refusal {
                answer.insert_header((header::WWW_AUTHENTICATE, challenge.as_str()));
            }
            let body = json!({ "error": refusal.describe() });
            req.into_response(answer.json(body)).map_into_right_body()
        }
    };
    let headers = res.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    Ok(res)
}

/// The checks of the module docs, in order.
pub(super) async fn check(
    admin: &Admin,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<Option<crate::auth::Principal>, Refusal> {
    let auth = admin.gw.auth.as_deref();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if auth.is_none() && !loopback_host(host, admin.addr.port()) {
        return Err(Refusal::Host);
    }
    if auth.is_some()
        && let Some(allowed) = &admin.gw.config.server.allowed_hosts
        && !host_allowed(host, allowed)
    {
        return Err(Refusal::HostName);
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = format!("{}://{host}", admin.scheme());
        if !origin.as_bytes().eq_ignore_ascii_case(own.as_bytes()) {
            return Err(Refusal::CrossSite);
        }
    }
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return Err(Refusal::CrossSite);
    }
    if method == Method::POST && !headers.contains_key(ADMIN_HEADER) {
        return Err(Refusal::MissingHeader);
    }
    let Some(auth) = auth else {
        return Ok(None);
    };
    if page_file(method, path) {
        return Ok(None);
    }
    let scraping = method == Method::GET && matches!(path, "/metrics" | "/readyz");
    let config = &admin.gw.config.admin;
    match auth.authenticate(headers).await {
        Err(reason) => Err(Refusal::Unauthenticated(auth.challenge(reason))),
        Ok(principal) if config.admits(principal.source.qualifier(), &principal.groups) => {
            Ok(Some(principal))
        }
        Ok(principal)
            if scraping
                && config.admits_scraper(principal.source.qualifier(), &principal.groups) =>
        {
            Ok(None)
        }
        Ok(principal) => {
            tracing::info!(principal = %principal.name, "admin: refused, in none of [admin] groups");
            Err(Refusal::NotAdmin)
        }
    }
}

/// The page's own files, which hold no data.
fn page_file(method: &Method, path: &str) -> bool {
    method == Method::GET
        && matches!(
            path,
            "/" | "/admin"
                | "/admin/"
                | "/admin/admin.js"
                | "/admin/admin.css"
                | "/admin/favicon.svg"
                | "/favicon.ico"
        )
}

/// With `[auth]`: an IP address, a loopback name, or a name of `allowed` (`"*"`: any), with any port.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_ok()
        || bare.eq_ignore_ascii_case("localhost")
        || allowed
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(name))
}

/// `127.0.0.1:PORT`, `[::1]:PORT` or `localhost:PORT` (any case), with the admin listener's port.
fn loopback_host(host: &str, port: u16) -> bool {
    let Some((name, given)) = host.rsplit_once(':') else {
        return false;
    };
    if given.parse::<u16>().ok() != Some(port) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_auth_a_host_name_must_be_allowed_and_an_address_passes() {
        let allowed = vec!["mcp.example.com".to_owned()];
        for ok in [
            "10.1.2.3:7801",
            "[fd00::7]:7801",
            "127.0.0.1:7801",
            "localhost:7801",
            "MCP.example.com:7801",
            "mcp.example.com",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "attacker.example:7801",
            "mcp.example.com.attacker.example",
            "",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
        assert!(host_allowed("anything.example", &["*".to_owned()]));
    }

    #[test]
    fn loopback_hosts_with_the_port_pass_and_others_do_not() {
        for ok in [
            "127.0.0.1:7801",
            "[::1]:7801",
            "localhost:7801",
            "LOCALHOST:7801",
            "127.0.0.2:7801",
        ] {
            assert!(loopback_host(ok, 7801), "{ok}");
        }
        for bad in [
            "127.0.0.1:7800",
            "evil.example:7801",
            "localhost",
            "127.0.0.1",
            "10.0.0.1:7801",
            "",
        ] {
            assert!(!loopback_host(bad, 7801), "{bad}");
        }
    }
}
