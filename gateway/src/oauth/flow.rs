//! The authorization code flow with PKCE (S256) for one principal and one backend: from an opened consent
//! link to the authorization server's page ([`Authorizations::begin`]), and from its callback to a stored
//! grant ([`Authorizations::finish`]); refreshing a grant; the client's registration — pre-registered, a
//! Client ID Metadata Document (the gateway's URL as `client_id`), or RFC 7591 dynamic registration, kept
//! per issuer — and its authentication at the token endpoint.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::auth::backend::form_encode;

use super::discovery::{Challenge, ServerMetadata, same_issuer, scopes_to_ask};
use super::fetch::{Fetcher, shown};
use super::link::{FlowClaims, FlowKind, LinkClaims, random_id, seal_flow};
use super::store::{ClientAuth, Grant, Registration, now};
use super::{Authorizations, Failed, PerUser};

/// How long the authorization server's page may take before its callback, in milliseconds.
const FLOW_MS: u64 = 10 * 60 * 1000;
/// The scope asking for a refresh token (SEP-2207), asked only where the server lists it.
const OFFLINE: &str = "offline_access";

/// A token endpoint's answer.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// RFC 7591's answer.
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The PKCE S256 challenge of a verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl Authorizations {
    /// Where the browser goes for the backend's consent: its authorization server's page, with a sealed
    /// state the callback opens.
    pub(super) async fn begin(&self, link: LinkClaims) -> Result<String, Failed> {
        let backend = self.backend(&link.b)?;
        let fetcher = Fetcher::new(self.egress.clone(), backend.url.clone());
        let challenge = match &link.m {
            Some(url) => Some(Challenge::from_metadata_url(url)),
            None => fetcher.challenge().await,
        };
        let resource_doc = fetcher
            .resource_metadata(challenge.as_ref())
            .await
            .map_err(Failed::Refused)?;
        let (server, resource) = match &resource_doc {
            Some(doc) => {
                let issuer = doc.authorization_servers.first().ok_or_else(|| {
                    Failed::Refused(
                        "the backend's resource metadata names no authorization server".into(),
                    )
                })?;
                let server = fetcher
                    .server_metadata(issuer)
                    .await
                    .map_err(Failed::Refused)?;
                (
                    server,
                    backend
                        .resource
                        .clone()
                        .unwrap_or_else(|| doc.resource.clone()),
                )
            }
            None => (
                fetcher.origin_metadata().await,
                backend
                    .resource
                    .clone()
                    .unwrap_or_else(|| backend.url.to_string()),
            ),
        };
        if let Some(methods) = &server.code_challenge_methods_supported
            && !methods.iter().any(|m| m == "S256")
        {
            return Err(Failed::Refused(
                "the authorization server does not support PKCE with S256".into(),
            ));
        }
        let client = self.registration(backend, &server, &fetcher).await?;
        let mut scope = link
            .s
            .clone()
            .or_else(|| backend.scope.clone())
            .or_else(|| scopes_to_ask(challenge.as_ref(), resource_doc.as_ref()));
        if server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == OFFLINE))
            && !scope
                .as_deref()
                .unwrap_or("")
                .split(' ')
                .any(|s| s == OFFLINE)
        {
            scope = Some(match scope {
                Some(s) if !s.is_empty() => format!("{s} {OFFLINE}"),
                _ => OFFLINE.to_owned(),
            });
        }
        Ok(self.authorize_url(FlowKind::Backend, link, &server, client, resource, scope))
    }

    /// Where the browser signs in at the gateway's own authorization server (`link_proof = "sign_in"`).
    pub(super) async fn sign_in(&self, link: LinkClaims) -> Result<String, Failed> {
        let sign_in = self
            .sign_in
            .as_ref()
            .ok_or_else(|| Failed::Internal("sign-in is not configured".into()))?;
        let fetcher = Fetcher::new(self.egress.clone(), sign_in.resource.clone());
        let server = fetcher
            .server_metadata(&sign_in.issuer)
            .await
            .map_err(Failed::Refused)?;
        Ok(self.authorize_url(
            FlowKind::SignIn,
            link,
            &server,
            sign_in.client.clone(),
            sign_in.resource.to_string(),
            sign_in.scope.clone(),
        ))
    }

    fn authorize_url(
        &self,
        kind: FlowKind,
        link: LinkClaims,
        server: &ServerMetadata,
        client: Registration,
        resource: String,
        scope: Option<String>,
    ) -> String {
        let verifier = random_id(32);
        let claims = FlowClaims {
            k: kind,
            l: link,
            v: verifier.clone(),
            c: client,
            t: server.token_endpoint.clone(),
            i: server.issuer.clone(),
            n: server.authorization_response_iss_parameter_supported,
            r: resource,
            s: scope,
            e: now_ms() + FLOW_MS,
            j: random_id(12),
        };
        let state = seal_flow(&self.keys.ring(), &claims);
        let mut params = vec![
            ("response_type", "code".to_owned()),
            ("client_id", claims.c.id.clone()),
            ("redirect_uri", self.callback_url()),
            ("code_challenge", pkce_challenge(&verifier)),
            ("code_challenge_method", "S256".to_owned()),
            ("state", state),
            ("resource", claims.r.clone()),
        ];
        if let Some(scope) = claims.s.as_ref().filter(|s| !s.is_empty()) {
            params.push(("scope", scope.clone()));
        }
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect();
        let sep = if server.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        format!("{}{sep}{}", server.authorization_endpoint, query.join("&"))
    }

    /// The callback's code exchanged: `iss` checked (RFC 9207), the code, verifier and `resource` sent.
    pub(super) async fn exchange_code(
        &self,
        flow: &FlowClaims,
        code: &str,
        iss: Option<&str>,
    ) -> Result<TokenSet, Failed> {
        match (iss, flow.n) {
            (Some(iss), _) if !same_issuer(iss, &flow.i) => {
                return Err(Failed::Refused(format!(
                    "the authorization response names issuer {iss:?}, not {:?}: a mix-up, refused (RFC 9207)",
                    flow.i
                )));
            }
            (None, true) => {
                return Err(Failed::Refused(
                    "the authorization server says its responses carry iss, and this one did not: refused (RFC 9207)"
                        .into(),
                ));
            }
            _ => {}
        }
        let callback = self.callback_url();
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", callback.as_str()),
            ("code_verifier", flow.v.as_str()),
            ("resource", flow.r.as_str()),
        ];
        self.token_request(&flow.t, &flow.c, &form, &flow.r).await
    }

    /// A grant refreshed at its token endpoint (the new refresh token replaces the old, when given).
    pub(super) async fn refresh(&self, grant: &Grant) -> Result<Grant, Failed> {
        let Some(refresh) = &grant.refresh else {
            return Err(Failed::Refused("no refresh token".into()));
        };
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
            ("resource", grant.resource.as_str()),
        ];
        let set = self
            .token_request(&grant.token_endpoint, &grant.client, &form, &grant.resource)
            .await?;
        Ok(Grant {
            access: set.access,
            refresh: set.refresh.or_else(|| grant.refresh.clone()),
            expires: set.expires,
            stored: now(),
            ..grant.clone()
        })
    }

    async fn token_request(
        &self,
        endpoint: &str,
        client: &Registration,
        form: &[(&str, &str)],
        resource: &str,
    ) -> Result<TokenSet, Failed> {
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        let secret = client.secret.as_deref().unwrap_or("");
        match client.method {
            ClientAuth::ClientSecretBasic => {}
            ClientAuth::ClientSecretPost => {
                fields.push(("client_id", &client.id));
                fields.push(("client_secret", secret));
            }
            ClientAuth::None => fields.push(("client_id", &client.id)),
        }
        let body = fields
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let base = self
            .origin_for(resource)
            // No backend's: every URL it fetches is judged as discovered.
            .or_else(|| reqwest::Url::parse("http://invalid.invalid/").ok())
            .ok_or_else(|| Failed::Internal("no base URL".into()))?;
        let fetcher = Fetcher::new(self.egress.clone(), base);
        let basic = (client.method == ClientAuth::ClientSecretBasic).then(|| {
            STANDARD.encode(format!(
                "{}:{}",
                form_encode(&client.id),
                form_encode(secret)
            ))
        });
        let answer = fetcher
            .send(reqwest::Method::POST, endpoint, |r| {
                let r = r
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .header(reqwest::header::ACCEPT, "application/json")
                    .body(body);
                match basic {
                    Some(b) => r.header(reqwest::header::AUTHORIZATION, format!("Basic {b}")),
                    None => r,
                }
            })
            .await
            .map_err(Failed::Unreachable)?;
        if answer.status != 200 {
            #[derive(Deserialize)]
            struct Refusal {
                error: String,
            }
            let error = serde_json::from_slice::<Refusal>(&answer.body)
                .map_or_else(|_| format!("HTTP {}", answer.status), |r| r.error);
            return Err(Failed::Refused(format!(
                "the token endpoint {} refused: {error}",
                shown(endpoint)
            )));
        }
        let token: TokenAnswer = serde_json::from_slice(&answer.body).map_err(|e| {
            Failed::Refused(format!("the token endpoint's answer is not a token: {e}"))
        })?;
        if token.access_token.is_empty() {
            return Err(Failed::Refused(
                "the token endpoint gave an empty token".into(),
            ));
        }
        Ok(TokenSet {
            access: token.access_token,
            refresh: token.refresh_token,
            expires: token.expires_in.map_or(0, |s| now().saturating_add(s)),
        })
    }

    /// The client the gateway is at `server`: pre-registered (the backend's `client_id`), else its Client
    /// ID Metadata Document where the server takes one, else registered dynamically (once per issuer).
    async fn registration(
        &self,
        backend: &PerUser,
        server: &ServerMetadata,
        fetcher: &Fetcher,
    ) -> Result<Registration, Failed> {
        let supported = |m: ClientAuth| {
            server
                .token_endpoint_auth_methods_supported
                .as_ref()
                .map_or(m == ClientAuth::ClientSecretBasic, |l| {
                    l.iter().any(|x| x == m.name())
                })
        };
        if let Some(id) = &backend.client_id {
            let method = match &backend.client_secret {
                None => ClientAuth::None,
                Some(_) if supported(ClientAuth::ClientSecretBasic) => {
                    ClientAuth::ClientSecretBasic
                }
                Some(_) if supported(ClientAuth::ClientSecretPost) => ClientAuth::ClientSecretPost,
                Some(_) => ClientAuth::ClientSecretBasic,
            };
            return Ok(Registration {
                id: id.clone(),
                secret: backend.client_secret.clone(),
                method,
            });
        }
        if server.client_id_metadata_document_supported {
            return Ok(Registration {
                id: self.client_metadata_url(),
                secret: None,
                method: ClientAuth::None,
            });
        }
        if let Some(known) = self.registered(&server.issuer) {
            return Ok(known);
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(Failed::Refused(
                "the authorization server takes no dynamic registration nor client metadata documents: \
                 give the backend a pre-registered client_id"
                    .into(),
            ));
        };
        let method = [
            ClientAuth::ClientSecretBasic,
            ClientAuth::ClientSecretPost,
            ClientAuth::None,
        ]
        .into_iter()
        .find(|m| supported(*m))
        .unwrap_or(ClientAuth::ClientSecretBasic);
        let document = serde_json::json!({
            "client_name": "mcpgw",
            "redirect_uris": [self.callback_url()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method.name(),
            "application_type": "web",
        });
        let answer = fetcher
            .send(reqwest::Method::POST, endpoint, |r| {
                r.header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(document.to_string())
            })
            .await
            .map_err(Failed::Unreachable)?;
        if !(200..300).contains(&answer.status) {
            return Err(Failed::Refused(format!(
                "dynamic registration at {} answered HTTP {}",
                shown(endpoint),
                answer.status
            )));
        }
        let registered: Registered = serde_json::from_slice(&answer.body)
            .map_err(|e| Failed::Refused(format!("dynamic registration's answer: {e}")))?;
        let method = registered
            .token_endpoint_auth_method
            .as_deref()
            .and_then(ClientAuth::from_name)
            .unwrap_or(if registered.client_secret.is_some() {
                method
            } else {
                ClientAuth::None
            });
        let registration = Registration {
            id: registered.client_id,
            secret: registered.client_secret,
            method,
        };
        self.remember_registration(&server.issuer, registration.clone());
        Ok(registration)
    }
}

/// Tokens a token endpoint issued.
#[derive(Debug)]
pub(super) struct TokenSet {
    pub access: String,
    pub refresh: Option<String>,
    pub expires: u64,
}

/// Unix milliseconds now.
pub(super) fn now_ms() -> u64 {
    now().saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkce_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
