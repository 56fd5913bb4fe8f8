//! Each user's own authorization to backends (`[backend.auth] grant = "authorization_code"`): the gateway
//! is an OAuth client of the backend's authorization server on each principal's behalf. A principal that
//! holds no token for such a backend is asked to open a consent link on the gateway (the dispatch shapes
//! the question for its client: -32042, `input_required`, or a tool error with the link); the link runs
//! the authorization code flow with PKCE for that principal, and the callback stores the token in the
//! [`store::TokenStore`], keyed by (principal, backend). Calls then carry that principal's token, and a
//! backend's 401 or 403 `insufficient_scope` leads to a refresh, a step-up, or a new consent.
//!
//! Links and callbacks come from `[authorization] public_url`, never a request's `Host`. Whose view: a
//! grant is filled only by a callback whose sealed state names the principal its link was made for, and
//! (with `link_proof = "sign_in"`) only after the browser signed in as that principal; it is read only for
//! that principal's requests to that backend. The one exception, said in the docs: the backend's catalog
//! (tools, prompts, templates — never resources) is listed with one connected principal's token, the
//! backend's *lister*, since the gateway has no token of its own there.
//!
//! It must not log a token, a code, a verifier or a link, and it sends a token only to the backend (and the
//! authorization server) it was issued for.

mod callback;
mod discovery;
mod fetch;
mod flow;
mod link;
mod lister;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use reqwest::Url;
use reqwest::header::HeaderValue;

pub use discovery::Challenge;
use link::{Claimed, LinkClaims, random_id, seal_link};
use store::{ClientAuth, Grant, GrantSummary, Registration, TokenStore, now};

use crate::cluster::ClusterKeys;
use crate::cluster::redis::RedisLink;
use crate::config::{Config, LinkProof};
use crate::egress::Egress;

/// A token is refreshed this long before it expires, in seconds.
const REFRESH_MARGIN: u64 = 60;
/// Dynamic registrations remembered at most (one per issuer).
const MAX_REGISTRATIONS: usize = 256;
/// The names of the two tools the gateway adds to a per-user backend's listing (after its prefix).
pub const CONNECT_TOOL: &str = "mcpgw_connect";
/// See [`CONNECT_TOOL`].
pub const DISCONNECT_TOOL: &str = "mcpgw_disconnect";

/// Why a step of the flow failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failed {
    /// The flow was refused or cannot go on (said to the user).
    #[error("{0}")]
    Refused(String),
    /// A server of the flow could not be reached.
    #[error("{0}")]
    Unreachable(String),
    /// The link or state is not valid (forged, expired, used, of another principal).
    #[error("this link is not valid: {0}")]
    Link(&'static str),
    /// The token store cannot be reached.
    #[error("the token store is unreachable")]
    Store,
    /// A fault of the gateway's own.
    #[error("{0}")]
    Internal(String),
}

/// A backend whose principals authorize it themselves.
#[derive(Debug)]
pub(crate) struct PerUser {
    url: Url,
    resource: Option<String>,
    scope: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    /// The backend-wide credential its catalog is listed with.
    listing: handlers::Credential,
}

/// Sign-in at the gateway's own authorization server.
#[derive(Debug)]
struct SignIn {
    issuer: String,
    resource: Url,
    client: Registration,
    scope: Option<String>,
}

/// What the dispatch asks the user to do: open `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consent {
    /// The consent link.
    pub url: String,
    /// The elicitation's id (a legacy client's completion names it).
    pub elicitation_id: String,
    /// What the user is told.
    pub message: String,
}

/// What a backend's refusal of a principal's token leads to.
#[derive(Debug)]
pub enum AfterRefusal {
    /// Refreshed: send the request again with this.
    Retry(HeaderValue),
    /// Ask the user.
    Ask(Consent),
    /// Nothing more to try: the reason.
    GiveUp(String),
}

/// A finished callback.
#[derive(Debug)]
pub enum Callback {
    /// The browser signed in; it goes on to the backend's page.
    Continue(String),
    /// The principal's token is stored.
    Connected {
        /// The backend.
        backend: String,
        /// The elicitation it answers.
        elicitation_id: String,
        /// Whether the backend's catalog is now listed with this token (it should connect now).
        listing: bool,
    },
}

/// Per-user authorization for every backend that has it.
pub struct Authorizations {
    base: String,
    proof: LinkProof,
    link_ttl_ms: u64,
    client_metadata_url: Option<String>,
    keys: Arc<ClusterKeys>,
    redis: Option<Arc<RedisLink>>,
    store: TokenStore,
    egress: Arc<Egress>,
    backends: BTreeMap<String, PerUser>,
    sign_in: Option<SignIn>,
    registrations: Mutex<HashMap<String, Registration>>,
    claimed: Claimed,
    authenticator: Option<Arc<crate::auth::Authenticator>>,
    listers: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Authorizations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizations")
            .field("backends", &self.backends.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Authorizations {
    /// For the backends of `config` with `grant = "authorization_code"` (`None` when there are none), given
    /// each one's backend-wide credential (`credentials`, by name).
    pub fn new(
        config: &Config,
        keys: Arc<ClusterKeys>,
        redis: Option<Arc<RedisLink>>,
        credentials: &BTreeMap<String, handlers::Credential>,
        authenticator: Option<Arc<crate::auth::Authenticator>>,
    ) -> Result<Option<Arc<Authorizations>>, String> {
        let mut backends = BTreeMap::new();
        for b in &config.backends {
            let Some(auth) = b.auth.as_ref().filter(|a| a.is_authorization_code()) else {
                continue;
            };
            let url = b
                .url
                .as_deref()
                .and_then(|u| Url::parse(u).ok())
                .ok_or_else(|| format!("backend {}: authorization_code needs its url", b.name))?;
            // The same reading as every other backend secret (`auth::backend`).
            let client_secret = match (&auth.client_secret_env, &auth.client_secret_file) {
                (None, None) => None,
                (env, file) => Some(crate::auth::backend::read_secret(
                    env.as_deref(),
                    file.as_deref(),
                    &format!("backend {} auth client secret", b.name),
                )?),
            };
            backends.insert(
                b.name.clone(),
                PerUser {
                    url,
                    resource: auth.resource.clone(),
                    scope: auth.scope.clone(),
                    client_id: auth.client_id.clone(),
                    client_secret,
                    listing: credentials.get(&b.name).cloned().unwrap_or_default(),
                },
            );
        }
        if backends.is_empty() {
            return Ok(None);
        }
        let a = &config.authorization;
        let gateway_oauth = config.auth.oauth.as_ref();
        let proof = a
            .proof(gateway_oauth.is_some())
            .ok_or("[authorization] link_proof is not set")?;
        let sign_in = match (proof, gateway_oauth) {
            (LinkProof::SignIn, Some(oauth)) => Some(SignIn {
                issuer: oauth
                    .authorization_servers
                    .first()
                    .cloned()
                    .ok_or("[auth.oauth] names no authorization server to sign in at")?,
                resource: Url::parse(&oauth.resource)
                    .map_err(|e| format!("[auth.oauth] resource: {e}"))?,
                client: Registration {
                    id: a.sign_in_client_id.clone().unwrap_or_default(),
                    secret: match &a.sign_in_client_secret_env {
                        Some(var) => Some(crate::auth::backend::read_secret(
                            Some(var),
                            None,
                            "[authorization] sign_in_client_secret_env",
                        )?),
                        None => None,
                    },
                    method: if a.sign_in_client_secret_env.is_some() {
                        ClientAuth::ClientSecretBasic
                    } else {
                        ClientAuth::None
                    },
                },
                scope: None,
            }),
            _ => None,
        };
        let store = TokenStore::new(
            keys.clone(),
            redis.clone(),
            a.max_tokens,
            a.token_days.saturating_mul(86_400),
        );
        Ok(Some(Arc::new(Authorizations {
            base: a.base().unwrap_or_default().to_owned(),
            proof,
            link_ttl_ms: a.link_ttl_secs.saturating_mul(1000),
            client_metadata_url: a.client_metadata_url.clone(),
            keys,
            redis,
            store,
            egress: Arc::new(Egress::from_config(&config.egress)),
            backends,
            sign_in,
            registrations: Mutex::new(HashMap::new()),
            claimed: Claimed::default(),
            authenticator,
            listers: Mutex::new(HashMap::new()),
        })))
    }

    /// Whether `backend`'s principals authorize it themselves.
    pub fn is_per_user(&self, backend: &str) -> bool {
        self.backends.contains_key(backend)
    }

    fn backend(&self, name: &str) -> Result<&PerUser, Failed> {
        self.backends
            .get(name)
            .ok_or_else(|| Failed::Internal(format!("backend {name} takes no user authorization")))
    }

    fn callback_url(&self) -> String {
        format!("{}/oauth/callback", self.base)
    }

    /// The `client_id` of the gateway's Client ID Metadata Document.
    pub fn client_metadata_url(&self) -> String {
        self.client_metadata_url
            .clone()
            .unwrap_or_else(|| format!("{}/oauth/client", self.base))
    }

    /// The Client ID Metadata Document served at `/oauth/client`.
    pub fn client_metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "client_id": self.client_metadata_url(),
            "client_name": "mcpgw",
            "client_uri": self.base,
            "redirect_uris": [self.callback_url()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        })
    }

    /// The backend URL whose origin is configured, for a token request about `resource` (its own).
    fn origin_for(&self, resource: &str) -> Option<Url> {
        self.backends
            .values()
            .find(|b| resource.starts_with(b.url.origin().ascii_serialization().as_str()))
            .map(|b| b.url.clone())
    }

    fn registered(&self, issuer: &str) -> Option<Registration> {
        self.registrations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(issuer)
            .cloned()
    }

    fn remember_registration(&self, issuer: &str, registration: Registration) {
        let mut known = self
            .registrations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if known.len() >= MAX_REGISTRATIONS && !known.contains_key(issuer) {
            known.clear();
        }
        known.insert(issuer.to_owned(), registration);
    }

    /// A consent link for `principal` at `backend`, asking `scope` (a step-up) where known.
    pub fn consent(
        &self,
        principal: &str,
        backend: &str,
        scope: Option<String>,
        challenge: Option<&Challenge>,
    ) -> Consent {
        let elicitation_id = format!("mcpgw-oauth-{}", random_id(12));
        let claims = LinkClaims {
            p: principal.to_owned(),
            b: backend.to_owned(),
            s: scope,
            m: challenge
                .and_then(|c| c.get("resource_metadata"))
                .map(str::to_owned),
            x: elicitation_id.clone(),
            e: flow::now_ms() + self.link_ttl_ms,
            j: random_id(12),
        };
        let sealed = seal_link(&self.keys.ring(), &claims);
        Consent {
            url: format!("{}/oauth/connect/{sealed}", self.base),
            elicitation_id,
            message: format!(
                "Authorize mcpgw to use {backend} on your behalf: open the link, sign in there and consent."
            ),
        }
    }

    /// The principal's token for `backend` as a header value, refreshed when it is about to expire;
    /// `Ok(None)` when it holds none (it must consent).
    pub async fn credential(
        &self,
        principal: &str,
        backend: &str,
    ) -> Result<Option<HeaderValue>, Failed> {
        let Some(grant) = self
            .store
            .get(principal, backend)
            .await
            .map_err(|_| Failed::Store)?
        else {
            return Ok(None);
        };
        if !grant.stale(now(), REFRESH_MARGIN) {
            return Ok(Some(bearer(&grant.access)?));
        }
        match self.refresh(&grant).await {
            Ok(fresh) => {
                self.store.put(&fresh).await.map_err(|_| Failed::Store)?;
                self.listing_refreshed(&fresh);
                Ok(Some(bearer(&fresh.access)?))
            }
            Err(Failed::Unreachable(why)) => Err(Failed::Unreachable(why)),
            Err(why) => {
                tracing::info!(%backend, %why, "a user's token could not be refreshed: asking for consent again");
                let _ = self.store.remove(principal, backend).await;
                Ok(None)
            }
        }
    }

    /// What to do after `backend` refused `principal`'s token (`status`, its `challenge`).
    pub async fn refused(
        &self,
        principal: &str,
        backend: &str,
        status: u16,
        challenge: Option<&str>,
    ) -> Result<AfterRefusal, Failed> {
        let challenge = challenge.and_then(Challenge::parse);
        let grant = self
            .store
            .get(principal, backend)
            .await
            .map_err(|_| Failed::Store)?;
        if status == 403
            || challenge
                .as_ref()
                .is_some_and(Challenge::insufficient_scope)
        {
            let had = grant
                .as_ref()
                .and_then(|g| g.scope.clone())
                .unwrap_or_default();
            let wanted = challenge.as_ref().and_then(Challenge::scope).unwrap_or("");
            let mut union: Vec<&str> = had.split(' ').filter(|s| !s.is_empty()).collect();
            let before = union.len();
            for s in wanted.split(' ').filter(|s| !s.is_empty()) {
                if !union.contains(&s) {
                    union.push(s);
                }
            }
            if union.len() == before {
                return Ok(AfterRefusal::GiveUp(format!(
                    "backend {backend} refuses this user's token even with every scope it asked for"
                )));
            }
            return Ok(AfterRefusal::Ask(self.consent(
                principal,
                backend,
                Some(union.join(" ")),
                challenge.as_ref(),
            )));
        }
        // 401: refresh once if it can be; else consent again (the authorization server may have changed).
        if let Some(grant) = grant {
            self.store
                .remove(principal, backend)
                .await
                .map_err(|_| Failed::Store)?;
            if let Ok(fresh) = self.refresh(&grant).await {
                self.store.put(&fresh).await.map_err(|_| Failed::Store)?;
                self.listing_refreshed(&fresh);
                return Ok(AfterRefusal::Retry(bearer(&fresh.access)?));
            }
        }
        Ok(AfterRefusal::Ask(self.consent(
            principal,
            backend,
            None,
            challenge.as_ref(),
        )))
    }

    /// Forgets `principal`'s token for `backend` (the user's own disconnect, or an operator's); whether it
    /// had one.
    pub async fn revoke(&self, principal: &str, backend: &str) -> Result<bool, Failed> {
        let had = self
            .store
            .remove(principal, backend)
            .await
            .map_err(|_| Failed::Store)?;
        if had {
            tracing::info!(%backend, "a user's authorization at a backend was revoked");
            self.lister_revoked(principal, backend).await;
        }
        Ok(had)
    }

    /// Which principals connected which backends (the admin view): never a token.
    pub async fn summaries(&self) -> Result<Vec<GrantSummary>, Failed> {
        let mut all: Vec<GrantSummary> = self
            .store
            .all()
            .await
            .map_err(|_| Failed::Store)?
            .iter()
            .map(Grant::summary)
            .collect();
        all.sort_by(|a, b| (&a.backend, &a.principal).cmp(&(&b.backend, &b.principal)));
        Ok(all)
    }
}

/// `Bearer TOKEN`, marked sensitive.
fn bearer(token: &str) -> Result<HeaderValue, Failed> {
    let mut v = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| Failed::Refused("the token is not a valid header value".into()))?;
    v.set_sensitive(true);
    Ok(v)
}
