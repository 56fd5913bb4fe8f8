//! The target: its URL, and the rule that a load generator only loads this machine unless told otherwise.
//! A host name is resolved once, every address it resolves to must be loopback (127.0.0.0/8, ::1, also
//! IPv4-mapped), and the HTTP client is then pinned to exactly those addresses, so that a second
//! resolution cannot point the load elsewhere; redirects are not followed.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::HeaderValue;

use super::LoadError;

/// How long resolving the target's host may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A checked target.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) url: Url,
    /// The host name and the addresses the client must use for it (none for an IP literal).
    pub(crate) pinned: Option<(String, Vec<SocketAddr>)>,
}

/// Parses `url` and, unless `allow_remote`, checks that it names this machine.
pub(crate) fn check(url: &str, allow_remote: bool) -> Result<Target, LoadError> {
    let bad = |why: String| LoadError::InvalidUrl {
        url: url.to_owned(),
        why,
    };
    let parsed = Url::parse(url).map_err(|e| bad(e.to_string()))?;
    match parsed.scheme() {
        "http" => {}
        "https" => {
            return Err(bad(
                "https is not supported by this build (no TLS); use http://".into(),
            ));
        }
        other => return Err(bad(format!("scheme {other:?} is not http"))),
    }
    let port = parsed
        .port_or_known_default()
        .ok_or_else(|| bad("no port".into()))?;
    let host = match parsed.host_str() {
        None | Some("") => return Err(bad("no host".into())),
        Some(h) => {
            let bare = h.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<IpAddr>() {
                Ok(ip) => Host::Ip(ip),
                Err(_) => Host::Name(h.to_owned()),
            }
        }
    };
    let pinned = match host {
        Host::Ip(ip) => {
            if !allow_remote {
                refuse_remote(url, &ip.to_string(), &[SocketAddr::new(ip, port)])?;
            }
            None
        }
        Host::Name(name) => {
            if allow_remote {
                None
            } else {
                let addrs = resolve(&name, port)?;
                refuse_remote(url, &name, &addrs)?;
                Some((name, addrs))
            }
        }
    };
    Ok(Target {
        url: parsed,
        pinned,
    })
}

enum Host {
    Ip(IpAddr),
    Name(String),
}

/// Whether `ip` is this machine's loopback (127.0.0.0/8, ::1, or IPv4-mapped 127.x).
pub(crate) fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// An error naming the first address that is not loopback; `Ok` when all are (and there is one at least).
pub(crate) fn refuse_remote(url: &str, host: &str, addrs: &[SocketAddr]) -> Result<(), LoadError> {
    if addrs.is_empty() {
        return Err(LoadError::Resolve {
            host: host.to_owned(),
            why: "it resolves to no address".into(),
        });
    }
    match addrs.iter().find(|a| !is_loopback(a.ip())) {
        None => Ok(()),
        Some(a) => Err(LoadError::RemoteTarget {
            url: url.to_owned(),
            host: host.to_owned(),
            addr: a.ip(),
        }),
    }
}

/// Every address of `name`, resolved on a helper thread so that a hanging resolver cannot hang the run.
fn resolve(name: &str, port: u16) -> Result<Vec<SocketAddr>, LoadError> {
    let (tx, rx) = mpsc::channel();
    let query = (name.to_owned(), port);
    std::thread::Builder::new()
        .name("mcpgw-load-dns".into())
        .spawn(move || {
            let r = query.to_socket_addrs().map(Iterator::collect::<Vec<_>>);
            let _ = tx.send(r);
        })
        .map_err(|e| LoadError::Resolve {
            host: name.to_owned(),
            why: e.to_string(),
        })?;
    match rx.recv_timeout(RESOLVE_TIMEOUT) {
        Ok(Ok(addrs)) => Ok(addrs),
        Ok(Err(e)) => Err(LoadError::Resolve {
            host: name.to_owned(),
            why: e.to_string(),
        }),
        Err(_) => Err(LoadError::Resolve {
            host: name.to_owned(),
            why: format!("no answer within {} s", RESOLVE_TIMEOUT.as_secs()),
        }),
    }
}

/// A header value that is known to be valid (ASCII built here); falls back to an empty value.
pub(crate) fn header_value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_addresses() {
        for ok in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ok.parse().unwrap()), "{ok}");
        }
        for no in [
            "0.0.0.0",
            "10.0.0.1",
            "192.168.1.1",
            "8.8.8.8",
            "::",
            "::ffff:10.0.0.1",
            "fe80::1",
            "2001:db8::1",
        ] {
            assert!(!is_loopback(no.parse().unwrap()), "{no}");
        }
    }

    #[test]
    fn every_address_must_be_loopback() {
        let u = "http://x/mcp";
        assert!(refuse_remote(u, "x", &[sa("127.0.0.1:80"), sa("[::1]:80")]).is_ok());
        let err = refuse_remote(u, "x", &[sa("127.0.0.1:80"), sa("10.1.2.3:80")]).unwrap_err();
        assert!(
            matches!(err, LoadError::RemoteTarget { addr, .. } if addr == sa("10.1.2.3:80").ip())
        );
        let msg = err.to_string();
        assert!(
            msg.contains("10.1.2.3") && msg.contains("--allow-remote"),
            "{msg}"
        );
        assert!(matches!(
            refuse_remote(u, "x", &[]),
            Err(LoadError::Resolve { .. })
        ));
    }

    #[test]
    fn urls() {
        let t = check("http://127.0.0.1:7800/mcp", false).unwrap();
        assert!(t.pinned.is_none());
        assert_eq!(t.url.port(), Some(7800));
        assert!(check("http://[::1]:7800/mcp", false).is_ok());
        assert!(check("http://127.3.4.5/mcp", false).is_ok());
        // localhost resolves (from /etc/hosts) to loopback addresses only, and is pinned to them.
        let t = check("http://localhost:7800/mcp", false).unwrap();
        let (name, addrs) = t.pinned.unwrap();
        assert_eq!(name, "localhost");
        assert!(!addrs.is_empty() && addrs.iter().all(|a| is_loopback(a.ip())));
        for remote in [
            "http://10.0.0.1:7800/mcp",
            "http://[2001:db8::1]/mcp",
            "http://0.0.0.0:80/",
        ] {
            let err = check(remote, false).unwrap_err();
            assert!(
                matches!(err, LoadError::RemoteTarget { .. }),
                "{remote}: {err}"
            );
            assert!(check(remote, true).is_ok(), "{remote} with --allow-remote");
        }
        // Names are not resolved with --allow-remote (the client resolves them).
        assert!(
            check("http://example.invalid/mcp", true)
                .unwrap()
                .pinned
                .is_none()
        );
        for broken in ["not a url", "ftp://127.0.0.1/", "https://127.0.0.1/mcp"] {
            assert!(
                matches!(check(broken, false), Err(LoadError::InvalidUrl { .. })),
                "{broken}"
            );
        }
    }
}
