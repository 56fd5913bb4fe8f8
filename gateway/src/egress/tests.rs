//! The egress rule: table-driven decisions, the resolver's filter, and fetches over loopback.

use std::collections::HashMap;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::resolver::{Lookup, Resolver};
use super::*;
use crate::config::EgressConfig;

fn rule(
    allow_hosts: &[&str],
    deny_hosts: &[&str],
    allow_nets: &[&str],
    deny_nets: &[&str],
) -> Egress {
    let list = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
    Egress::from_config(&EgressConfig {
        allow_hosts: list(allow_hosts),
        deny_hosts: list(deny_hosts),
        allow_networks: list(allow_nets),
        deny_networks: list(deny_nets),
    })
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn internal_addresses_are_told_apart_from_public_ones() {
    let cases = [
        ("169.254.169.254", true), // the cloud metadata address
        ("127.0.0.1", true),
        ("10.1.2.3", true),
        ("172.16.0.1", true),
        ("192.168.1.1", true),
        ("100.64.0.1", true),
        ("0.0.0.0", true),
        ("255.255.255.255", true),
        ("::", true),
        ("::1", true),
        ("fe80::1", true),
        ("fd00::1", true),
        ("::ffff:169.254.169.254", true),
        ("::ffff:127.0.0.1", true),
        ("64:ff9b::a9fe:a9fe", true), // NAT64 of 169.254.169.254
        ("93.184.216.34", false),
        ("172.32.0.1", false),
        ("2606:4700::1111", false),
        ("64:ff9b::5db8:d822", false),
    ];
    for (addr, want) in cases {
        assert_eq!(internal(ip(addr)), want, "{addr}");
    }
}

#[test]
fn the_egress_rule_decides_by_host_address_and_origin() {
    use Origin::{Configured as C, Discovered as D};
    let r = rule(
        &["idp.corp.example", "*.svc.example"],
        &["evil.example", "*.blocked.example"],
        &["10.20.0.0/16"],
        &["169.254.169.254/32", "203.0.113.0/24"],
    );
    // (host, address, origin, allowed)
    let cases = [
        ("jwks.example", "93.184.216.34", D, true),
        ("jwks.example", "169.254.169.254", D, false),
        ("jwks.example", "127.0.0.1", D, false),
        ("jwks.example", "fe80::1", D, false),
        ("jwks.example", "::ffff:10.0.0.1", D, false),
        ("jwks.example", "127.0.0.1", C, true), // the operator's own URL on loopback
        ("jwks.example", "10.0.0.1", C, true),
        ("jwks.example", "169.254.169.254", C, false), // denied for every origin
        ("jwks.example", "203.0.113.9", C, false),
        ("jwks.example", "10.20.3.4", D, true), // allow_networks
        ("jwks.example", "10.21.3.4", D, false),
        ("idp.corp.example", "10.0.0.1", D, true), // allow_hosts
        ("IDP.corp.example.", "10.0.0.1", D, true),
        ("a.b.svc.example", "10.0.0.1", D, true),
        ("svc.example", "10.0.0.1", D, false), // *.x is below x, not x
        ("xsvc.example", "10.0.0.1", D, false),
        ("idp.corp.example", "169.254.169.254", D, false), // a denial beats an allowance
    ];
    for (host, addr, origin, want) in cases {
        let got = r.check_addr(host, ip(addr), origin);
        assert_eq!(got.is_ok(), want, "{host} at {addr} ({origin:?}): {got:?}");
    }
    for (host, want) in [
        ("evil.example", false),
        ("EVIL.example.", false),
        ("x.blocked.example", false),
        ("blocked.example", true),
        ("fine.example", true),
    ] {
        assert_eq!(r.check_host(host).is_ok(), want, "{host}");
    }
}

#[test]
fn an_address_written_in_a_discovered_url_is_judged_before_any_request() {
    let r = rule(&[], &["evil.example"], &[], &[]);
    let url = |u: &str| reqwest::Url::parse(u).unwrap();
    // (url, origin, allowed)
    let cases = [
        (
            "http://169.254.169.254/latest/meta-data/",
            Origin::Discovered,
            false,
        ),
        ("http://[::1]:8080/jwks", Origin::Discovered, false),
        ("http://[::ffff:a9fe:a9fe]/", Origin::Discovered, false),
        ("http://2130706433/jwks", Origin::Discovered, false), // 127.0.0.1 to the parser
        ("http://0x7f.1/jwks", Origin::Discovered, false),
        ("http://127.0.0.1:9/jwks", Origin::Configured, true),
        ("https://evil.example/jwks", Origin::Configured, false),
        ("https://93.184.216.34/jwks", Origin::Discovered, true),
        ("https://idp.example/jwks", Origin::Discovered, true), // a name: judged when resolved
    ];
    for (u, origin, want) in cases {
        assert_eq!(
            r.check_url(&url(u), origin).is_ok(),
            want,
            "{u} ({origin:?})"
        );
    }
}

/// A lookup from a fixed table (no DNS).
fn table(entries: &[(&str, &[&str])]) -> Lookup {
    let map: HashMap<String, Vec<IpAddr>> = entries
        .iter()
        .map(|(name, addrs)| ((*name).to_owned(), addrs.iter().map(|a| ip(a)).collect()))
        .collect();
    let map = Arc::new(map);
    Arc::new(move |host: String| {
        let found = map.get(&host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    })
}

fn resolve(resolver: &Resolver, name: &str) -> Result<Vec<IpAddr>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let name = reqwest::dns::Name::from_str(name).unwrap();
    rt.block_on(reqwest::dns::Resolve::resolve(resolver, name))
        .map(|addrs| addrs.map(|a| a.ip()).collect())
        .map_err(|e| e.to_string())
}

#[test]
fn a_discovered_name_resolving_to_the_metadata_address_or_loopback_is_refused_at_resolution() {
    let lookup = table(&[
        ("metadata.attacker.example", &["169.254.169.254"]),
        ("loop.attacker.example", &["127.0.0.1", "::1"]),
        (
            "mixed.attacker.example",
            &["169.254.169.254", "93.184.216.34"],
        ),
        ("idp.example", &["93.184.216.34"]),
    ]);
    let egress = Arc::new(Egress::default());
    let discovered = Resolver::with(egress.clone(), Origin::Discovered, lookup.clone());
    for name in ["metadata.attacker.example", "loop.attacker.example"] {
        let err = resolve(&discovered, name).unwrap_err();
        assert!(err.contains("egress refused"), "{name}: {err}");
    }
    assert_eq!(
        resolve(&discovered, "mixed.attacker.example").unwrap(),
        vec![ip("93.184.216.34")],
        "only the addresses the rule allows are connected to"
    );
    assert_eq!(
        resolve(&discovered, "idp.example").unwrap(),
        vec![ip("93.184.216.34")]
    );
    let configured = Resolver::with(egress, Origin::Configured, lookup);
    assert_eq!(
        resolve(&configured, "loop.attacker.example").unwrap(),
        vec![ip("127.0.0.1"), ip("::1")]
    );
}

/// A loopback server answering every request 200 `{}`; counts the connections it accepted. At most
/// eight connections.
async fn loopback_server(accepted: Arc<AtomicUsize>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for _ in 0..8 {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16384 {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                    )
                    .await;
            });
        }
    });
    port
}

#[test]
fn a_configured_url_on_loopback_is_fetched_and_a_discovered_one_is_refused_unconnected() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let accepted = Arc::new(AtomicUsize::new(0));
        let port = loopback_server(accepted.clone()).await;
        let egress = Arc::new(Egress::default());
        let client = |origin| {
            let url = format!("http://localhost:{port}/");
            Client::new(
                &egress,
                origin,
                &handlers::TlsClient::default(),
                &url,
                Duration::from_secs(30),
            )
            .unwrap()
        };
        let get = |c: &Client, url: String| {
            let request = c.request(reqwest::Method::GET, &url);
            async move {
                match request {
                    Ok(r) => r
                        .send()
                        .await
                        .map(|a| a.status().as_u16())
                        .map_err(|e| handlers::error_chain(&e)),
                    Err(why) => Err(why),
                }
            }
        };

        let configured = client(Origin::Configured);
        for url in [
            format!("http://127.0.0.1:{port}/jwks"),
            format!("http://localhost:{port}/jwks"),
        ] {
            assert_eq!(get(&configured, url.clone()).await, Ok(200), "{url}");
        }
        let served = accepted.load(Ordering::SeqCst);
        assert_eq!(served, 2);

        let discovered = client(Origin::Discovered);
        for url in [
            format!("http://127.0.0.1:{port}/jwks"),
            format!("http://localhost:{port}/jwks"),
        ] {
            let err = get(&discovered, url.clone()).await.unwrap_err();
            assert!(err.contains("egress refused"), "{url}: {err}");
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            served,
            "no connection was made"
        );

        // A denial holds for a configured URL too.
        let denying = Arc::new(rule(&[], &[], &[], &["127.0.0.0/8", "::1/128"]));
        let denied = Client::new(
            &denying,
            Origin::Configured,
            &handlers::TlsClient::default(),
            "http://localhost/",
            Duration::from_secs(30),
        )
        .unwrap();
        let err = get(&denied, format!("http://localhost:{port}/jwks"))
            .await
            .unwrap_err();
        assert!(err.contains("deny_networks"), "{err}");
        assert_eq!(accepted.load(Ordering::SeqCst), served);
    });
}
