//! Calls to a backend each principal authorizes itself (`grant = "authorization_code"`, `oauth`): the
//! request carries the principal's own token; a principal without one is asked to open a consent link —
//! a -32042 the URL elicitation path shapes for its client (`url`: kept for a 2025-11-25 client that
//! declared `elicitation.url`, `input_required` for a 2026-07-28 one, a tool error with the link
//! otherwise); a backend's 401 leads to one refresh or a new consent, its 403 `insufficient_scope` to a
//! step-up consent (the scopes held and the ones it names), never twice for the same scopes. The gateway's
//! two tools on such a backend, `mcpgw_connect` and `mcpgw_disconnect`, are answered here.

use handlers::BackendRequest;
use protocol::shape::Failure;
use protocol::validate::Call;
use protocol::{Error, ErrorCode, Method};
use serde_json::json;

use super::Dispatch;
use crate::oauth::{AfterRefusal, Authorizations, CONNECT_TOOL, Consent, DISCONNECT_TOOL, Failed};
use crate::pipeline::response::Outcome;

/// What a per-user call is, before it goes.
pub(super) enum Prepared {
    /// Not a per-user backend: as it is.
    Other(BackendRequest),
    /// With the principal's token.
    Ready(BackendRequest),
    /// Answered without the backend (a consent to ask, a gateway tool, a failure).
    Answered(Outcome),
}

impl Dispatch<'_> {
    fn per_user_backend(&self, backend: &str) -> Option<&std::sync::Arc<Authorizations>> {
        self.gw.oauth.as_ref().filter(|o| o.is_per_user(backend))
    }

    /// The request with its principal's token, or what answers it instead.
    pub(super) async fn per_user(
        &self,
        call: &Call,
        backend: &str,
        mut request: BackendRequest,
    ) -> Prepared {
        let Some(oauth) = self.per_user_backend(backend) else {
            return Prepared::Other(request);
        };
        let Some(principal) = self.principal.as_deref() else {
            return Prepared::Answered(unavailable(
                backend,
                "each user authorizes this backend, and this request has no principal",
            ));
        };
        let tool = (request.method == Method::ToolsCall)
            .then(|| request.name.clone())
            .flatten();
        if tool.as_deref() == Some(DISCONNECT_TOOL) {
            return Prepared::Answered(match oauth.revoke(principal, backend).await {
                Ok(true) => text(&format!(
                    "Disconnected: mcpgw forgot your token at {backend}."
                )),
                Ok(false) => text(&format!("You were not connected to {backend}.")),
                Err(e) => failed(backend, &e),
            });
        }
        let credential = oauth.credential(principal, backend).await;
        if matches!(credential, Ok(Some(_)))
            && oauth.adopt(principal, backend).await
            && let Some(handle) = self.gw.live().backend(backend)
        {
            handle.connect_now();
        }
        match credential {
            Ok(Some(token)) if tool.as_deref() == Some(CONNECT_TOOL) => Prepared::Answered(
                self.verify(call, oauth, principal, backend, token, &request)
                    .await,
            ),
            Ok(Some(token)) => {
                request.credential = Some(token);
                Prepared::Ready(request)
            }
            Ok(None) => {
                let consent = oauth.consent(principal, backend, None, None);
                Prepared::Answered(self.ask_consent(call, backend, &consent))
            }
            Err(e) => Prepared::Answered(failed(backend, &e)),
        }
    }

    /// After a per-user call: a refused token refreshed (and the call sent once more with it), or a
    /// consent asked; any other outcome as it is.
    pub(super) async fn after_per_user(
        &self,
        call: &Call,
        backend: &str,
        sent: BackendRequest,
        outcome: Outcome,
    ) -> Outcome {
        let Outcome::Failed(Failure::Unauthorized {
            status, challenge, ..
        }) = &outcome
        else {
            return outcome;
        };
        let (Some(oauth), Some(principal)) =
            (self.per_user_backend(backend), self.principal.as_deref())
        else {
            return outcome;
        };
        match oauth
            .refused(principal, backend, *status, challenge.as_deref())
            .await
        {
            Ok(AfterRefusal::Retry(token)) => {
                let mut again = sent;
                again.credential = Some(token);
                let outcome = self.forward(backend.to_owned(), again).await;
                if matches!(outcome, Outcome::Failed(Failure::Unauthorized { .. })) {
                    let consent = oauth.consent(principal, backend, None, None);
                    return self.ask_consent(call, backend, &consent);
                }
                outcome
            }
            Ok(AfterRefusal::Ask(consent)) => self.ask_consent(call, backend, &consent),
            Ok(AfterRefusal::GiveUp(why)) => unavailable(backend, &why),
            Err(e) => failed(backend, &e),
        }
    }

    /// `mcpgw_connect` for a principal the store says is connected: a `ping` with its token says whether
    /// the backend still takes it; a refusal refreshes it (one more ping) or asks again.
    async fn verify(
        &self,
        call: &Call,
        oauth: &Authorizations,
        principal: &str,
        backend: &str,
        token: reqwest::header::HeaderValue,
        request: &BackendRequest,
    ) -> Outcome {
        let ping = |token| {
            let mut probe = BackendRequest::new(Method::Ping, None);
            probe.caller = request.caller;
            probe.credential = Some(token);
            self.forward(backend.to_owned(), probe)
        };
        let connected = || {
            text(&format!(
                "You are connected to {backend}: its tools use your own account."
            ))
        };
        let (status, challenge) = match ping(token).await {
            Outcome::Failed(Failure::Unauthorized {
                status, challenge, ..
            }) => (status, challenge),
            // A backend without `ping` answered: it took the token.
            Outcome::Result(_) | Outcome::Failed(Failure::Backend { .. }) => return connected(),
            // Not connected yet (its first user's token was just stored): nothing says the token is bad.
            Outcome::Failed(Failure::Unavailable { .. }) => {
                return text(&format!(
                    "You are connected to {backend}; mcpgw is connecting to it: its tools appear in a moment."
                ));
            }
            other => return other,
        };
        match oauth
            .refused(principal, backend, status, challenge.as_deref())
            .await
        {
            Ok(AfterRefusal::Retry(token)) => match ping(token).await {
                Outcome::Result(_) | Outcome::Failed(Failure::Backend { .. }) => connected(),
                Outcome::Failed(Failure::Unauthorized { .. }) => {
                    let consent = oauth.consent(principal, backend, None, None);
                    self.ask_consent(call, backend, &consent)
                }
                other => other,
            },
            Ok(AfterRefusal::Ask(consent)) => self.ask_consent(call, backend, &consent),
            Ok(AfterRefusal::GiveUp(why)) => unavailable(backend, &why),
            Err(e) => failed(backend, &e),
        }
    }

    /// The consent asked as the backend's own -32042 would be, shaped for this client.
    fn ask_consent(&self, call: &Call, backend: &str, consent: &Consent) -> Outcome {
        let error = Error::new(
            ErrorCode::UrlElicitationRequiredError,
            format!("authorization required: {}", consent.message),
        )
        .with_data(json!({
            "elicitations": [{
                "mode": "url",
                "elicitationId": consent.elicitation_id,
                "url": consent.url,
                "message": consent.message,
            }]
        }));
        self.url_required(
            call,
            Outcome::Failed(Failure::Backend {
                backend: backend.to_owned(),
                error,
            }),
        )
    }
}

fn text(t: &str) -> Outcome {
    let result = json!({"content": [{"type": "text", "text": t}]});
    Outcome::Result(serde_json::value::to_raw_value(&result).unwrap_or_default())
}

fn unavailable(backend: &str, reason: &str) -> Outcome {
    Outcome::Failed(Failure::Unavailable {
        backend: backend.to_owned(),
        reason: reason.to_owned(),
    })
}

fn failed(backend: &str, e: &Failed) -> Outcome {
    tracing::warn!(%backend, error = %e, "a user's authorization could not be used");
    unavailable(backend, &e.to_string())
}
