//! The Host and Origin checks: matching, a host or origin named twice, CORS origins, and what passes by
//! listen address and lists (DNS rebinding).

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

fn policy(
    listen: &str,
    hosts: Option<&[&str]>,
    origins: Option<&[&str]>,
    cors: &[&str],
) -> OriginPolicy {
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    OriginPolicy::from_config(&ServerConfig {
        listen: listen.parse().unwrap(),
        allowed_hosts: hosts.map(list),
        allowed_origins: origins.map(list),
        cors_allowed_origins: list(cors),
        ..ServerConfig::default()
    })
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
        (
            "0.0.0.0:7800",
            None,
            &["https://app.example"],
            "https://app.example",
            true,
        ),
    ];
    for (listen, allowed, cors, origin, want) in table {
        let policy = policy(listen, None, allowed, cors);
        assert_eq!(
            policy.origin_allowed(origin, "localhost:7800"),
            want,
            "{listen} {allowed:?} {cors:?} {origin}"
        );
    }
}

/// Before: beyond loopback with no `allowed_origins`, every `Origin` passed, so a page whose name was
/// rebound to the gateway's address (Host and Origin both its own name) called every tool.
#[test]
fn dns_rebinding_beyond_loopback_without_allowed_origins_is_refused() {
    // (listen, allowed_hosts, allowed_origins, Host received, Origin received, passes)
    type Case<'a> = (
        &'a str,
        Option<&'a [&'a str]>,
        Option<&'a [&'a str]>,
        &'a str,
        &'a str,
        bool,
    );
    let rebound = ("evil.example:7800", "http://evil.example:7800");
    let table: [Case; 16] = [
        // The rebinding page itself: same-origin with a name nobody listed.
        ("0.0.0.0:7800", None, None, rebound.0, rebound.1, false),
        ("[::]:7800", None, None, rebound.0, rebound.1, false),
        ("10.1.2.3:7800", None, None, rebound.0, rebound.1, false),
        // Any other page, to any host.
        (
            "0.0.0.0:7800",
            None,
            None,
            "10.1.2.3:7800",
            "https://evil.example",
            false,
        ),
        ("0.0.0.0:7800", None, None, "10.1.2.3:7800", "null", false),
        // `"*"` for hosts names none: same-origin proves nothing then.
        (
            "0.0.0.0:7800",
            Some(&["*"]),
            None,
            rebound.0,
            rebound.1,
            false,
        ),
        // Same-origin under a listed host passes (the gateway's own page, a same-origin proxy).
        (
            "0.0.0.0:7800",
            Some(&["mcp.example.com"]),
            None,
            "mcp.example.com:7800",
            "http://mcp.example.com:7800",
            true,
        ),
        (
            "0.0.0.0:443",
            Some(&["mcp.example.com"]),
            None,
            "MCP.example.com",
            "https://mcp.example.com",
            true,
        ),
        (
            "0.0.0.0:443",
            Some(&["mcp.example.com"]),
            None,
            "mcp.example.com:443",
            "https://mcp.example.com",
            true,
        ),
        // Another port or scheme's default port of a listed host is another origin.
        (
            "0.0.0.0:7800",
            Some(&["mcp.example.com"]),
            None,
            "mcp.example.com:7800",
            "http://mcp.example.com:9999",
            false,
        ),
        (
            "0.0.0.0:7800",
            Some(&["mcp.example.com"]),
            None,
            "mcp.example.com",
            "https://mcp.example.com:80",
            false,
        ),
        // A listed host does not let other origins in.
        (
            "0.0.0.0:7800",
            Some(&["mcp.example.com"]),
            None,
            "mcp.example.com:7800",
            "https://evil.example",
            false,
        ),
        // Listed origins pass; with a list, only the list (and CORS's).
        (
            "0.0.0.0:7800",
            None,
            Some(&["https://app.example"]),
            "10.1.2.3:7800",
            "https://app.example",
            true,
        ),
        (
            "0.0.0.0:7800",
            Some(&["mcp.example.com"]),
            Some(&["https://app.example"]),
            "mcp.example.com:7800",
            "http://mcp.example.com:7800",
            false,
        ),
        // `["*"]` brings the old behaviour back.
        (
            "0.0.0.0:7800",
            None,
            Some(&["*"]),
            rebound.0,
            rebound.1,
            true,
        ),
        // Loopback as before: its own names.
        (
            "127.0.0.1:7800",
            None,
            None,
            "localhost:7800",
            "http://localhost:7800",
            true,
        ),
    ];
    for (listen, hosts, origins, host, origin, want) in table {
        let policy = policy(listen, hosts, origins, &[]);
        let req = actix_web::test::TestRequest::default()
            .insert_header(("host", host))
            .insert_header(("origin", origin))
            .to_http_request();
        let got = policy.check(&req);
        let why = format!("{listen} hosts {hosts:?} origins {origins:?}: {host} {origin}");
        assert_eq!(got.is_ok(), want, "{why}: {got:?}");
        if let Err(refused) = got {
            assert_eq!(refused.status, 403, "{why}");
        }
        // SDK clients send no Origin: served whatever the listen address (the Host check aside).
        let sdk = actix_web::test::TestRequest::default()
            .insert_header(("host", host))
            .to_http_request();
        let host_ok = hosts.is_none_or(|h| h.iter().any(|a| *a == "*" || host_matches(a, host)));
        assert_eq!(policy.check(&sdk).is_ok(), host_ok, "{why}, no origin");
    }
}
