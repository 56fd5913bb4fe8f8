//! The client's address behind proxies (`[server] trusted_proxies`, `[server] forwarded_header`). Only on a
//! connection from a trusted proxy is a forwarding header believed, and only the one the proxies are
//! configured to write (`X-Forwarded-For` by default, or `Forwarded`, or `X-Real-IP`): a proxy passes the
//! others through as the client sent them, so believing them would let a client pick its own address. In
//! a list the client is the rightmost hop that is not itself a trusted proxy: hops to its left were written
//! by whoever sent the request and can be anything. Otherwise the headers are ignored and the socket's peer
//! is the client. What logs and per-client limits use for requests without a principal.

use std::net::IpAddr;

use ipnet::IpNet;

pub use crate::config::ForwardedHeader;
pub use crate::config::parse_proxy_block as parse_block;

/// The trusted proxies, and the header they write.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    blocks: Vec<IpNet>,
    header: ForwardedHeader,
}

impl TrustedProxies {
    /// From `[server] trusted_proxies` (validated; an unparsable entry is left out), believing
    /// `X-Forwarded-For`.
    pub fn new(blocks: &[String]) -> TrustedProxies {
        TrustedProxies {
            blocks: blocks.iter().filter_map(|b| parse_block(b)).collect(),
            header: ForwardedHeader::default(),
        }
    }

    /// Believing `header` (`[server] forwarded_header`) instead.
    pub fn with_header(self, header: ForwardedHeader) -> TrustedProxies {
        TrustedProxies { header, ..self }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.blocks.iter().any(|n| n.contains(&ip))
    }

    /// The client's address for a connection from `peer` with these headers.
    pub fn client(&self, peer: IpAddr, headers: &actix_web::http::header::HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if self.blocks.is_empty() || !self.trusts(peer) {
            return peer;
        }
        let lines = headers
            .get_all(self.header.name())
            .map(|v| v.to_str().ok())
            .collect::<Option<Vec<&str>>>()
            .unwrap_or_default();
        // One unreadable hop and the whole header is not believed (the peer is the client).
        let hops: Vec<IpAddr> = match self.header {
            ForwardedHeader::XForwardedFor => lines
                .iter()
                .flat_map(|v| v.split(','))
                .map(|h| parse_hop(h.trim()))
                .collect::<Option<_>>()
                .unwrap_or_default(),
            ForwardedHeader::Forwarded => lines
                .iter()
                .flat_map(|v| v.split(','))
                .map(forwarded_for)
                .collect::<Option<_>>()
                .unwrap_or_default(),
            // Set, not appended, by the proxy: exactly one address, or not believed.
            ForwardedHeader::XRealIp => match lines.as_slice() {
                [one] => parse_hop(one.trim()).into_iter().collect(),
                _ => Vec::new(),
            },
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

/// The address per-address tables count a client under: an IPv4 address itself, an IPv6 address as its
/// /64 (one client usually holds a whole /64 and can pick any address in it; a v4-mapped one as IPv4).
pub fn limited_as(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(bits))
        }
        v4 => v4,
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
    fn the_client_is_the_rightmost_untrusted_hop_of_the_configured_header_and_only_behind_a_trusted_proxy()
     {
        use ForwardedHeader::{Forwarded as Fwd, XForwardedFor as Xff, XRealIp as Xri};
        let blocks = ["10.0.0.0/8".to_owned(), "192.168.1.1".to_owned()];
        type Case<'a> = (
            &'a str,
            ForwardedHeader,
            &'a [(&'a str, &'a str)],
            &'a str,
            &'a str,
        );
        let cases: &[Case] = &[
            ("no headers", Xff, &[], "10.1.1.1", "10.1.1.1"),
            ("no headers, forwarded", Fwd, &[], "10.1.1.1", "10.1.1.1"),
            ("no headers, x-real-ip", Xri, &[], "10.1.1.1", "10.1.1.1"),
            (
                "an untrusted peer's x-forwarded-for is ignored",
                Xff,
                &[("x-forwarded-for", "1.2.3.4")],
                "8.8.8.8",
                "8.8.8.8",
            ),
            (
                "an untrusted peer's forwarded is ignored",
                Fwd,
                &[("forwarded", "for=1.2.3.4")],
                "8.8.8.8",
                "8.8.8.8",
            ),
            (
                "an untrusted peer's x-real-ip is ignored",
                Xri,
                &[("x-real-ip", "1.2.3.4")],
                "8.8.8.8",
                "8.8.8.8",
            ),
            (
                "one hop",
                Xff,
                &[("x-forwarded-for", "1.2.3.4")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "a spoofed left hop loses",
                Xff,
                &[("x-forwarded-for", "6.6.6.6, 1.2.3.4")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "trusted hops are skipped",
                Xff,
                &[("x-forwarded-for", "1.2.3.4, 192.168.1.1")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "all trusted: the leftmost",
                Xff,
                &[("x-forwarded-for", "10.9.9.9, 10.0.0.2")],
                "10.0.0.5",
                "10.9.9.9",
            ),
            (
                "two header lines",
                Xff,
                &[
                    ("x-forwarded-for", "6.6.6.6"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "with a port",
                Xff,
                &[("x-forwarded-for", "1.2.3.4:5678")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "garbage is not believed",
                Xff,
                &[("x-forwarded-for", "1.2.3.4, nonsense")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "x-forwarded-for: a client's forwarded and x-real-ip are ignored",
                Xff,
                &[
                    ("forwarded", "for=9.9.9.9;proto=https"),
                    ("x-real-ip", "8.8.4.4"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "x-forwarded-for: only a client's forwarded: the peer",
                Xff,
                &[("forwarded", "for=9.9.9.9")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "forwarded: a client's x-forwarded-for is ignored",
                Fwd,
                &[
                    ("forwarded", "for=9.9.9.9;proto=https"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "10.0.0.5",
                "9.9.9.9",
            ),
            (
                "forwarded: only a client's x-forwarded-for: the peer",
                Fwd,
                &[("x-forwarded-for", "1.2.3.4")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "forwarded ipv6",
                Fwd,
                &[("forwarded", "for=\"[2001:db8::1]:4711\"")],
                "10.0.0.5",
                "2001:db8::1",
            ),
            (
                "forwarded: a spoofed left hop loses",
                Fwd,
                &[("forwarded", "for=6.6.6.6, for=5.5.5.5;by=10.0.0.5")],
                "10.0.0.5",
                "5.5.5.5",
            ),
            (
                "forwarded: a spoofed left line loses",
                Fwd,
                &[("forwarded", "for=6.6.6.6"), ("forwarded", "for=5.5.5.5")],
                "10.0.0.5",
                "5.5.5.5",
            ),
            (
                "forwarded obfuscated",
                Fwd,
                &[("forwarded", "for=_hidden")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "x-real-ip: one address",
                Xri,
                &[("x-real-ip", "1.2.3.4"), ("x-forwarded-for", "6.6.6.6")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "x-real-ip: a client's forwarded is ignored",
                Xri,
                &[("forwarded", "for=9.9.9.9"), ("x-real-ip", "1.2.3.4")],
                "10.0.0.5",
                "1.2.3.4",
            ),
            (
                "x-real-ip: a list is not believed",
                Xri,
                &[("x-real-ip", "6.6.6.6, 1.2.3.4")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "x-real-ip: two lines are not believed",
                Xri,
                &[("x-real-ip", "6.6.6.6"), ("x-real-ip", "1.2.3.4")],
                "10.0.0.5",
                "10.0.0.5",
            ),
            (
                "x-real-ip ipv6",
                Xri,
                &[("x-real-ip", "2001:db8::1")],
                "10.0.0.5",
                "2001:db8::1",
            ),
            (
                "a v4-mapped peer",
                Xff,
                &[("x-forwarded-for", "1.2.3.4")],
                "::ffff:10.0.0.5",
                "1.2.3.4",
            ),
        ];
        for (what, header, h, peer, want) in cases {
            let trusted = TrustedProxies::new(&blocks).with_header(*header);
            assert_eq!(trusted.client(ip(peer), &headers(h)), ip(want), "{what}");
        }
        for header in [Xff, Fwd, Xri] {
            let none = TrustedProxies::new(&[]).with_header(header);
            let sent = headers(&[
                ("x-forwarded-for", "1.2.3.4"),
                ("forwarded", "for=1.2.3.4"),
                ("x-real-ip", "1.2.3.4"),
            ]);
            assert_eq!(
                none.client(ip("10.0.0.5"), &sent),
                ip("10.0.0.5"),
                "without trusted proxies the headers are ignored ({header:?})"
            );
        }
    }

    #[test]
    fn a_clients_own_forwarded_header_does_not_beat_the_proxys_x_forwarded_for() {
        // nginx appends the peer to X-Forwarded-For and passes a client's own `Forwarded` through.
        let trusted = TrustedProxies::new(&["10.0.0.0/8".into()]);
        let sent = headers(&[("forwarded", "for=9.9.9.9"), ("x-forwarded-for", "1.2.3.4")]);
        assert_eq!(trusted.client(ip("10.0.0.5"), &sent), ip("1.2.3.4"));
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
