//! `--source-addrs`: the local addresses the generator connects from, spread round robin. One source address
//! has about 28,000 ephemeral ports towards one target address and port (Linux's default
//! `ip_local_port_range`), which caps the connections one generator holds open — sessions that each hold a
//! stream need one each. Loopback gives 127.0.0.0/8 to spread over. It must not pick addresses itself: the
//! list is the user's, and a target on this machine takes only loopback sources.

use std::net::{IpAddr, Ipv4Addr};

/// The most source addresses one run spreads over (each is a client with a pool of its own).
pub(crate) const MAX_SOURCES: usize = 1024;

/// The addresses of `--source-addrs`, in order, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceAddrs(pub Vec<IpAddr>);

/// [`SourceAddrs`] from `--source-addrs`'s text.
pub fn parse(s: &str) -> Result<SourceAddrs, String> {
    parse_source_addrs(s).map(SourceAddrs)
}

/// `--source-addrs`: `127.0.0.1-127.0.0.32`, `127.0.1.0/24` (its hosts: the network and broadcast
/// addresses left out), single addresses, or several of those with commas.
pub(crate) fn parse_source_addrs(s: &str) -> Result<Vec<IpAddr>, String> {
    let mut out: Vec<IpAddr> = Vec::new();
    for item in s.split(',').map(str::trim) {
        let more =
            if let Some((a, b)) = item.split_once('-') {
                let (a, b) = (v4(a)?, v4(b)?);
                if u32::from(a) > u32::from(b) {
                    return Err(format!("{item}: the range ends before it starts"));
                }
                span(u32::from(a), u32::from(b))?
            } else if let Some((net, bits)) = item.split_once('/') {
                let net = v4(net)?;
                let bits: u32 = bits
                    .parse()
                    .ok()
                    .filter(|b| *b <= 32)
                    .ok_or_else(|| format!("{item}: a prefix length is 0 to 32"))?;
                let mask = if bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - bits)
                };
                let first = u32::from(net) & mask;
                let last = first | !mask;
                if bits >= 31 {
                    span(first, last)?
                } else {
                    span(first + 1, last - 1)?
                }
            } else {
                vec![item.parse::<IpAddr>().map_err(|_| {
                    format!("{item:?} is not an address, a range A-B or a prefix A/N")
                })?]
            };
        for ip in more {
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
        if out.len() > MAX_SOURCES {
            return Err(format!("at most {MAX_SOURCES} source addresses"));
        }
    }
    Ok(out)
}

fn v4(s: &str) -> Result<Ipv4Addr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv4 address (ranges and prefixes are IPv4)"))
}

/// The addresses from `a` to `b`, both included, at most [`MAX_SOURCES`].
fn span(a: u32, b: u32) -> Result<Vec<IpAddr>, String> {
    if u64::from(b - a) >= MAX_SOURCES as u64 {
        return Err(format!("at most {MAX_SOURCES} source addresses"));
    }
    Ok((a..=b).map(|n| IpAddr::V4(Ipv4Addr::from(n))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn ranges_prefixes_and_lists() {
        for (text, want) in [
            ("127.0.0.1", ips(&["127.0.0.1"])),
            (
                "127.0.0.1-127.0.0.3",
                ips(&["127.0.0.1", "127.0.0.2", "127.0.0.3"]),
            ),
            ("127.0.1.0/30", ips(&["127.0.1.1", "127.0.1.2"])),
            ("127.0.0.9/32", ips(&["127.0.0.9"])),
            (
                "127.0.0.1, 127.0.0.1-127.0.0.2",
                ips(&["127.0.0.1", "127.0.0.2"]),
            ),
            ("::1", ips(&["::1"])),
            ("127.0.0.255-127.0.1.0", ips(&["127.0.0.255", "127.0.1.0"])),
        ] {
            assert_eq!(parse_source_addrs(text), Ok(want), "{text}");
        }
        assert_eq!(parse_source_addrs("127.0.0.0/22").unwrap().len(), 1022);
    }

    #[test]
    fn what_is_not_a_list_of_addresses_is_refused_with_the_reason() {
        for (text, why) in [
            ("localhost", "is not an address"),
            ("127.0.0.3-127.0.0.1", "ends before it starts"),
            ("127.0.0.0/33", "a prefix length is 0 to 32"),
            ("127.0.0.0/8", "at most 1024 source addresses"),
            ("127.0.0.1-127.0.9.1", "at most 1024 source addresses"),
            ("::1-::2", "is not an IPv4 address"),
            ("", "is not an address"),
        ] {
            let err = parse_source_addrs(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
