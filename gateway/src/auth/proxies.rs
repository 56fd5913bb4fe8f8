//! The client's address behind proxies (`[server] trusted_proxies`). Only on a connection from a trusted
//! proxy are `Forwarded` (RFC 7239) or `X-Forwarded-For` believed, and then the client is the rightmost hop
//! that is not itself a trusted proxy: hops to its left were written by whoever sent the request and can be
//! anything. Otherwise the headers are ignored and the socket's peer is the client. What logs and per-client
//! limits use for requests without a principal.

use std::net::IpAddr;

use ipnet::IpNet;

pub use crate::config::parse_proxy_block as parse_block;

/// The trusted proxies.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// From `[server] trusted_proxies` (validated; an unparsable entry is left out).
    pub fn new(blocks: &[String]) -> TrustedProxies {
        TrustedProxies(blocks.iter().filter_map(|b| parse_block(b)).collect())
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The client's address for a connection from `peer` with these headers.
    pub fn client(&self, peer: IpAddr, headers: &actix_web::http::header::HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if self.0.is_empty() || !self.trusts(peer) {
            return peer;
        }
        let forwarded: Vec<&str> = headers
            .get_all("forwarded")
            .filter_map(|v| v.to_str().ok())
            .collect();
        let hops: Vec<IpAddr> = if forwarded.is_empty() {
            headers
                .get_all("x-forwarded-for")
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(|h| parse_hop(h.trim()))
                .collect::<Option<_>>()
                .unwrap_or_default()
        } else {
            forwarded
                .iter()
                .flat_map(|v| v.split(','))
                .map(forwarded_for)
                .collect::<Option<_>>()
                .unwrap_or_default()
        };
        // Rightmost first: the first hop that is not a trusted proxy is the client; all trusted: the leftmost.
        let mut client = peer;
        for hop in hops.iter().rev() {
            client = hop.to_canonical();
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// The `for=` of one `Forwarded` element (`for=192.0.2.60;proto=http`, `for="[2001:db8::1]:4711"`);
/// `None` for an obfuscated or unknown one (the whole header is then not believed).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        k.trim().eq_ignore_ascii_case("for").then_some(v.trim())
    })?;
    parse_hop(value.trim_matches('"'))
}

/// An address as hops write it: `192.0.2.1`, `192.0.2.1:8080`, `[2001:db8::1]`, `[2001:db8::1]:80`,
/// `2001:db8::1`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    let (host, port) = hop.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_hop_and_only_behind_a_trusted_proxy() {
        let trusted = TrustedProxies::new(&["10.0.0.0/8".into(), "192.168.1.1".into()]);
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case] = &[
            ("no headers", &[], "10.1.1.1", "10.1.1.1"),
            (
                "an untrusted peer's header is ignored",
                &[("x-forwarded-for", "1.2.3.4")],
                "8.8.8.8",
                "8.8.8.8",
            ),
            (
                "one hop",
                &[("x-forwarded-for", "1.2.3.4")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "a spoofed left hop loses",
                &[("x-forwarded-for", "6.6.6.6, 1.2.3.4")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "trusted hops are skipped",
                &[("x-forwarded-for", "1.2.3.4, 192.168.1.1")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "all trusted: the leftmost",
                &[("x-forwarded-for", "10.9.9.9, 10.0.0.2")],
                "10.0.0.5",
                "10.9.9.9",
            ),
            (
                "two header lines",
                &[
                    ("x-forwarded-for", "6.6.6.6"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "with a port",
                &[("x-forwarded-for", "1.2.3.4:5678")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "garbage is not believed",
                &[("x-forwarded-for", "1.2.3.4, nonsense")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "forwarded wins",
                &[
                    ("forwarded", "for=9.9.9.9;proto=https"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "10.0.0.5",
                "9.9.9.9",
            ),
            (
                "forwarded ipv6",
                &[("forwarded", "for=\"[2001:db8::1]:4711\"")],
                "10.0.0.5",
                "2001:db8::1",
            ),
            (
                "forwarded list",
                &[("forwarded", "for=6.6.6.6, for=5.5.5.5;by=10.0.0.5")],
                "10.0.0.5",
                "5.5.5.5",
            ),
            (
                "forwarded obfuscated",
                &[("forwarded", "for=_hidden")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "a v4-mapped peer",
                &[("x-forwarded-for", "1.2.3.4")],
                "::ffff:10.0.0.5",
                "1.2.3.4",
            ),
        ];
        for (what, h, peer, want) in cases {
            assert_eq!(trusted.client(ip(peer), &headers(h)), ip(want), "{what}");
        }
        let none = TrustedProxies::new(&[]);
        assert_eq!(
            none.client(ip("10.0.0.5"), &headers(&[("x-forwarded-for", "1.2.3.4")])),
            ip("10.0.0.5"),
            "without trusted proxies the headers are ignored"
        );
    }

    #[test]
    fn blocks_are_cidrs_or_addresses() {
        for (text, ok) in [
            ("10.0.0.0/8", true),
            ("10.0.0.1", true),
            ("fd00::/8", true),
            ("::1", true),
            ("10.0.0.0/33", false),
            ("proxy", false),
        ] {
            assert_eq!(parse_block(text).is_some(), ok, "{text}");
        }
    }
}
