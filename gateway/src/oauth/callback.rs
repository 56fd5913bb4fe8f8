//! The consent link opened and the authorization server's callback: the sign-in checked against the link's
//! principal, the backend's code exchanged and the grant stored. A link is claimed once, by the flow that
//! completes (a link scanner or prefetcher that opens it first does not use it up); each flow's state once.

use super::link::{FlowKind, Refusal, open_flow, open_link};
use super::store::Grant;
use super::{Authorizations, Callback, Failed, flow};
use crate::config::LinkProof;

impl Authorizations {
    /// A consent link opened: where the browser goes next.
    pub async fn open_link(&self, sealed: &str) -> Result<String, Failed> {
        let now = flow::now_ms();
        let link =
            open_link(&self.keys.ring(), sealed, now).ok_or(Failed::Link("forged or expired"))?;
        self.backend(&link.b)?;
        match self.proof {
            LinkProof::SignIn => self.sign_in(link).await,
            LinkProof::Link => self.begin(link).await,
        }
    }

    async fn claim(&self, id: &str, principal: &str, expiry: u64, now: u64) -> Result<(), Failed> {
        self.claimed
            .claim(self.redis.as_deref(), id, principal, expiry, now)
            .await
            .map_err(|r| match r {
                Refusal::Used => Failed::Link("it was used already"),
                Refusal::Full => Failed::Link("too many consents are in progress; try again later"),
                Refusal::Unavailable => Failed::Store,
            })
    }

    /// The authorization server's callback: `state` opened (once), then either the sign-in checked (the
    /// principal it signed in as must be the link's) or the backend's code exchanged and stored.
    pub async fn callback(
        &self,
        state: &str,
        code: &str,
        iss: Option<&str>,
    ) -> Result<Callback, Failed> {
        let now = flow::now_ms();
        let flow =
            open_flow(&self.keys.ring(), state, now).ok_or(Failed::Link("forged or expired"))?;
        self.claim(&flow.j, &flow.l.p, flow.e, now).await?;
        if flow.k == FlowKind::Backend {
            let link = format!("link:{}", flow.l.j);
            self.claim(&link, &flow.l.p, flow.e.max(flow.l.e), now)
                .await?;
        }
        let tokens = self.exchange_code(&flow, code, iss).await?;
        match flow.k {
            FlowKind::SignIn => {
                let authenticator = self.authenticator.as_ref().ok_or_else(|| {
                    Failed::Internal("no [auth] to check the sign-in with".into())
                })?;
                let mut headers = actix_web::http::header::HeaderMap::new();
                let value = actix_web::http::header::HeaderValue::from_str(&format!(
                    "Bearer {}",
                    tokens.access
                ))
                .map_err(|_| Failed::Refused("the sign-in gave an unusable token".into()))?;
                headers.insert(actix_web::http::header::AUTHORIZATION, value);
                let who = authenticator.authenticate(&headers).await.map_err(|r| {
                    Failed::Refused(format!("the sign-in was not accepted: {}", r.describe()))
                })?;
                if who.id() != flow.l.p {
                    tracing::warn!(backend = %flow.l.b, "a consent link was opened by another user than the one it was made for: refused");
                    return Err(Failed::Link("it was made for another user"));
                }
                self.begin(flow.l).await.map(Callback::Continue)
            }
            FlowKind::Backend => {
                let grant = Grant {
                    principal: flow.l.p.clone(),
                    backend: flow.l.b.clone(),
                    access: tokens.access,
                    refresh: tokens.refresh,
                    expires: tokens.expires,
                    scope: flow.s.clone(),
                    resource: flow.r.clone(),
                    issuer: flow.i.clone(),
                    token_endpoint: flow.t.clone(),
                    client: flow.c.clone(),
                    stored: now / 1000,
                };
                self.store.put(&grant).await.map_err(|_| Failed::Store)?;
                tracing::info!(backend = %grant.backend, "a user authorized the gateway at a backend");
                let listing = self.adopt_lister(&grant);
                Ok(Callback::Connected {
                    backend: grant.backend,
                    elicitation_id: flow.l.x,
                    listing,
                })
            }
        }
    }
}
