//! A connection to a backend as the actor holds it ([`Link`], over the transports' links) and how a
//! connection is made ([`connect`]): the transport's handshake, which finds the backend's era. What every
//! transport shares is in [`context`], below the transports.

pub(crate) mod context;

use std::sync::Arc;

use protocol::shape::Failure;
use serde_json::value::RawValue;
use tokio::time::Instant;

use crate::config::{EraPin, Transport};
use crate::http::{LegacyLink, ModernLink, SseLink};
use crate::in_process::InProcessLink;
use crate::request::BackendRequest;
use crate::stdio::{self, StdioLink};
pub(crate) use context::{ConnectFailure, LinkContext, Renew, Verdict, VerdictUpdate};

/// A finished handshake, as the actor holds it.
pub(crate) type Connected = context::Connected<Link>;

/// A live connection. Cheap to clone; requests run on clones outside the actor.
#[derive(Debug, Clone)]
pub(crate) enum Link {
    Stdio(StdioLink),
    Modern(ModernLink),
    Legacy(LegacyLink),
    Sse(SseLink),
    InProcess(InProcessLink),
}

impl Link {
    /// Sends one request and returns the backend's result or a failure, by `deadline` at the latest.
    pub(crate) async fn call(
        &self,
        request: BackendRequest,
        deadline: Instant,
        renew: Option<Renew>,
    ) -> Result<Box<RawValue>, Failure> {
        match self {
            Link::Stdio(l) => l.call(request, deadline).await,
            Link::Modern(l) => l.call(request, deadline).await,
            Link::Legacy(l) => l.call(request, deadline, renew).await,
            Link::Sse(l) => l.call(request, deadline).await,
            Link::InProcess(l) => l.call(request, deadline).await,
        }
    }

    /// Closes the connection on purpose: in-flight requests are answered, the child process is stopped, the
    /// legacy session deleted (best effort).
    pub(crate) fn close(&self) {
        match self {
            Link::Stdio(l) => l.close(),
            Link::Modern(_) | Link::InProcess(_) => {}
            Link::Legacy(l) => l.close(),
            Link::Sse(l) => l.close(),
        }
    }
}

/// Connects to the backend and finds its era (or uses the remembered one).
pub(crate) async fn connect(
    ctx: Arc<LinkContext>,
    http: Option<reqwest::Client>,
    remembered: Option<Verdict>,
) -> Result<Connected, ConnectFailure> {
    let remembered = pinned(ctx.config.era, remembered);
    match (&ctx.config.transport, http) {
        (Transport::Stdio { .. }, _) => stdio::connect(ctx, remembered)
            .await
            .map(|c| c.map(Link::Stdio)),
        (Transport::Http { .. }, Some(client)) => {
            crate::http::connect(ctx, client, remembered).await
        }
        (Transport::Http { .. }, None) => {
            Err(ConnectFailure::outage(match crate::http::client(&ctx) {
                Err(why) => format!("the http client could not be built: {why}"),
                Ok(_) => "the http client could not be built".to_owned(),
            }))
        }
        (Transport::InProcess(server), _) => {
            let server = Arc::clone(&server.0);
            crate::in_process::connect(ctx, server)
                .await
                .map(|c| c.map(Link::InProcess))
        }
    }
}

impl From<ModernLink> for Link {
    fn from(link: ModernLink) -> Link {
        Link::Modern(link)
    }
}

impl From<LegacyLink> for Link {
    fn from(link: LegacyLink) -> Link {
        Link::Legacy(link)
    }
}

impl From<SseLink> for Link {
    fn from(link: SseLink) -> Link {
        Link::Sse(link)
    }
}

/// The era to connect with: the remembered one, unless `[[backend]] era` pins it (a pinned legacy backend
/// keeps the HTTP+SSE transport once it was found to need it).
fn pinned(pin: EraPin, remembered: Option<Verdict>) -> Option<Verdict> {
    match pin {
        EraPin::Auto => remembered,
        EraPin::Modern => Some(Verdict::Modern),
        EraPin::Legacy => match remembered {
            Some(Verdict::LegacySse) => Some(Verdict::LegacySse),
            _ => Some(Verdict::Legacy),
        },
    }
}

#[cfg(test)]
mod pin_tests {
    use super::*;

    #[test]
    fn a_pin_overrides_what_was_remembered() {
        use Verdict::*;
        // (pin, remembered, connected with)
        let table = [
            (EraPin::Auto, None, None),
            (EraPin::Auto, Some(Modern), Some(Modern)),
            (EraPin::Auto, Some(LegacySse), Some(LegacySse)),
            (EraPin::Legacy, None, Some(Legacy)),
            (EraPin::Legacy, Some(Modern), Some(Legacy)),
            (EraPin::Legacy, Some(LegacySse), Some(LegacySse)),
            (EraPin::Modern, None, Some(Modern)),
            (EraPin::Modern, Some(Legacy), Some(Modern)),
            (EraPin::Modern, Some(LegacySse), Some(Modern)),
        ];
        for (pin, remembered, expected) in table {
            assert_eq!(pinned(pin, remembered), expected, "{pin:?} {remembered:?}");
        }
    }
}
