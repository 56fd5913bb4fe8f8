//! The http(s) URLs of the configuration as the HTTP client will read them: parsed with reqwest's own
//! (WHATWG) parser, so that a check and the connection agree on the host.

/// An absolute http(s) URL without a fragment.
pub(super) fn is_http_url(u: &str) -> bool {
    (u.starts_with("https://") || u.starts_with("http://")) && !u.contains('#') && u.len() > 8
}

/// An http (not https) URL whose host is not loopback, judged on the URL as the HTTP client parses it (the
/// WHATWG parser reqwest uses: `http://evil\@127.0.0.1/` is the host `evil`). Only `localhost` and loopback
/// addresses (`127.0.0.0/8`, `::1`, `::ffff:127.0.0.0/104`) count as loopback: `localhost.` or
/// `x.localhost` are names a resolver may send anywhere. A URL that does not parse is not known to stay on
/// loopback.
pub(super) fn plain_beyond_loopback(u: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(u) else {
        return true;
    };
    if url.scheme() != "http" {
        return false;
    }
    // The parser gives an IPv6 host in brackets, an IPv4 one (in any of its forms) as dotted decimal.
    match url.host_str() {
        None => true,
        Some("localhost") => false,
        Some(host) => !host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_jwks_url_beyond_loopback_is_told_apart() {
        let cases = [
            ("http://127.0.0.1:9/jwks", false),
            ("http://localhost/jwks", false),
            ("http://[::1]:8/x", false),
            ("http://user@10.0.0.1/x", true),
            ("http://issuer.example.com/jwks", true),
            ("https://issuer.example.com/jwks", false),
        ];
        for (url, want) in cases {
            assert_eq!(plain_beyond_loopback(url), want, "{url}");
        }
    }

    #[test]
    fn a_plain_url_is_judged_on_the_host_the_http_client_connects_to() {
        // (url, beyond loopback): what reqwest's parser makes of each, not what a split on '@' or ':' says.
        let cases = [
            (r"http://evil\@127.0.0.1/jwks", true), // a backslash ends the authority: the host is `evil`
            (r"http://evil\@localhost/jwks", true),
            ("http://127.0.0.1.evil.com/jwks", true),
            ("http://localhost.evil.com/jwks", true),
            ("http://localhost./jwks", true),
            ("http://x.localhost/jwks", true),
            ("http://127.0.0.1@evil.com/jwks", true),
            ("http://localhost:80@evil.com/jwks", true),
            ("http://user:pw@127.0.0.1:8/jwks", false),
            ("http://evil.com#@127.0.0.1/", true),
            ("http://evil.com?@127.0.0.1/", true),
            ("http://127.0.0.1\t.evil.com/", true), // tabs are dropped before parsing
            ("http://[::1]/jwks", false),
            ("http://[::ffff:127.0.0.1]/jwks", false),
            ("http://[::ffff:10.0.0.1]/jwks", true),
            ("http://0x7f.1/jwks", false), // 127.0.0.1 to the parser, and so to the client
            ("http://2130706433/jwks", false),
            ("http://LOCALHOST/jwks", false),
            ("HTTP://evil.com/jwks", true),
            ("http:/evil.com/jwks", true),
            ("http://0.0.0.0/jwks", true),
            ("http://", true),
            ("https://127.0.0.1.evil.com/jwks", false),
        ];
        for (url, want) in cases {
            assert_eq!(plain_beyond_loopback(url), want, "{url}");
        }
    }
}
