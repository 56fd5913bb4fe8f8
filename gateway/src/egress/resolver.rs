//! The DNS resolver of every egress [`super::Client`]: it resolves a name, then keeps only the addresses
//! the rule lets the name reach, so the connection is made to an address judged at that moment.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::{Egress, Origin};

/// How a name becomes addresses (the system's resolver; a table in tests).
pub(super) type Lookup = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>
        + Send
        + Sync,
>;

/// Resolves and filters.
pub(super) struct Resolver {
    egress: Arc<Egress>,
    origin: Origin,
    lookup: Lookup,
}

impl Resolver {
    /// With the system's resolver (`getaddrinfo`, off the runtime's threads).
    pub(super) fn system(egress: Arc<Egress>, origin: Origin) -> Resolver {
        let lookup: Lookup = Arc::new(|host: String| {
            Box::pin(async move {
                Ok(tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect())
            })
        });
        Resolver::with(egress, origin, lookup)
    }

    pub(super) fn with(egress: Arc<Egress>, origin: Origin, lookup: Lookup) -> Resolver {
        Resolver {
            egress,
            origin,
            lookup,
        }
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let (egress, origin, lookup) = (Arc::clone(&self.egress), self.origin, self.lookup.clone());
        Box::pin(async move {
            egress.check_host(&host)?;
            let mut refused = None;
            let allowed: Vec<SocketAddr> = lookup(host.clone())
                .await?
                .into_iter()
                .filter(|addr| match egress.check_addr(&host, *addr, origin) {
                    Ok(()) => true,
                    Err(why) => {
                        tracing::debug!(%host, %addr, "egress: a resolved address is dropped");
                        refused.get_or_insert(why);
                        false
                    }
                })
                .map(|addr| SocketAddr::new(addr, 0))
                .collect();
            match refused {
                Some(why) if allowed.is_empty() => Err(why.into()),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}
