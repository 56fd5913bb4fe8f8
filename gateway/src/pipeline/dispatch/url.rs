//! A backend's URL elicitations on their way to the client of the request they arrived in.
//!
//! The founding error model's one exception: a backend's -32042 on `tools/call` stays that JSON-RPC error for
//! a 2025-11-25 client that declared `elicitation.url`, becomes an `input_required` result with URL-mode input
//! requests for a 2026-07-28 client that declared it (the gateway seals which keys it asked; the retry that
//! accepts them all sends the original request to the backend again, on any replica), and is said in words
//! (a tool error on `tools/call`) to a client that can do neither (`protocol::elicitation`).
//!
//! Before any of that, whose consent is it? A backend that serves every principal on one session and one
//! credential cannot tell who opened its link, so a consent one user gives would serve the next: its URL
//! elicitations are relayed only when it sees each principal apart (`[backend.auth] grant =
//! "token_exchange"`: its own token, and towards a legacy Streamable HTTP backend its own backend session),
//! when the gateway has one client (`serve --stdio`), or when the operator says `url_elicitation = "shared"`.
//! Otherwise the client is told that the backend asked and why mcpgw did not relay it — without the URL.

use protocol::ErrorCode;
use protocol::elicitation::{self, Delivery, UrlElicitation};
use protocol::raw::RawObject;
use protocol::shape::Failure;
use protocol::validate::Call;
use protocol::{Error, Generation};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::Dispatch;
use crate::bridge::input::AskedRequest;
use crate::bridge::url::Full;
use crate::config::UrlElicitation as Relay;
use crate::pipeline::response::Outcome;
use crate::session::Transport;

/// The `requestState` key of the URL elicitations the gateway asked a 2026-07-28 client on a legacy
/// backend's behalf.
const URL_KEY: &str = "mcpgw/url";

/// What the gateway seals when it asks a 2026-07-28 client to open a legacy backend's URLs: the keys of its
/// input requests.
#[derive(Serialize, Deserialize)]
struct UrlState {
    #[serde(rename = "mcpgw/url")]
    keys: Vec<String>,
}

/// What a 2026-07-28 client's retry said to the URL elicitations the gateway asked.
#[derive(Debug)]
pub(super) enum Answered {
    /// Every URL accepted: the original request goes to the backend again.
    Accepted,
    /// Declined, cancelled or left unanswered: the request is answered with that, not sent.
    Refused(String),
}

impl Dispatch<'_> {
    /// Whether `backend`'s URL elicitations may reach this request's client, else why not.
    pub(crate) fn url_relay(&self, backend: &str) -> Result<(), String> {
        let live = self.gw.live();
        let relay = live
            .config
            .backends
            .iter()
            .find(|b| b.name == backend)
            .map(|b| b.url_elicitation)
            .unwrap_or_default();
        match relay {
            Relay::Shared => Ok(()),
            Relay::Off => Err(format!(
                "backend {backend}'s url elicitations are not relayed (url_elicitation = \"off\")"
            )),
            Relay::PerPrincipal
                if self.transport == Transport::Stdio
                    || live.exchanges.contains_key(backend)
                    || self
                        .gw
                        .oauth
                        .as_ref()
                        .is_some_and(|o| o.is_per_user(backend)) =>
            {
                Ok(())
            }
            Relay::PerPrincipal => Err(format!(
                "backend {backend} serves every user on one session and one credential, so a consent given \
                 at its url would count for every user; mcpgw relays its url elicitations only where it sees \
                 each user apart ([backend.auth] grant = \"token_exchange\") or where the operator sets \
                 url_elicitation = \"shared\""
            )),
        }
    }

    /// A backend's -32042 shaped for this client (any other outcome as it is).
    pub(crate) fn url_required(&self, call: &Call, outcome: Outcome) -> Outcome {
        let Outcome::Failed(Failure::Backend { backend, error }) = &outcome else {
            return outcome;
        };
        let Some(listed) = elicitation::required(error) else {
            return outcome;
        };
        let elicitations = match listed {
            Ok(listed) => listed,
            Err(why) => {
                return not_relayed(backend, format!("its -32042 cannot be relayed: {why}"));
            }
        };
        if let Err(why) = self.url_relay(backend) {
            return not_relayed(backend, why);
        }
        match elicitation::delivery(self.generation, self.declared(call.meta())) {
            Delivery::Legacy => match self.route_completions(backend, &elicitations) {
                Ok(()) => Outcome::Error(error.clone()),
                Err(full) => described(backend, &elicitations, &full.to_string()),
            },
            Delivery::InputRequired => self.ask_urls(call, backend, &elicitations),
            Delivery::Described => described(backend, &elicitations, &self.cannot_ask()),
        }
    }

    /// Remembers where each relayed elicitation's completion goes: this request's legacy session.
    pub(crate) fn route_completions(
        &self,
        backend: &str,
        elicitations: &[UrlElicitation],
    ) -> Result<(), Full> {
        let Some(session) = self.session else {
            return Ok(());
        };
        for id in elicitations.iter().filter_map(|e| e.id.as_deref()) {
            self.gw
                .url_completions
                .record(backend, id, &session.id, &self.holder)?;
        }
        Ok(())
    }

    /// Why this client is not asked, for [`described`].
    pub(crate) fn cannot_ask(&self) -> String {
        if self.generation < Generation::V2025_11_25 {
            format!(
                "this client speaks {}, which has no url elicitation",
                self.generation
            )
        } else {
            "this client did not declare elicitation.url, so mcpgw cannot ask it".to_owned()
        }
    }

    /// An `input_required` result asking a 2026-07-28 client to open a legacy backend's URLs, its state
    /// sealed to this request and client.
    fn ask_urls(&self, call: &Call, backend: &str, elicitations: &[UrlElicitation]) -> Outcome {
        let keys: Vec<String> = (0..elicitations.len()).map(|i| format!("u{i}")).collect();
        let requests: serde_json::Map<String, Value> = keys
            .iter()
            .zip(elicitations)
            .map(|(key, e)| {
                let request = json!({"method": "elicitation/create", "params": e.modern_params()});
                (key.clone(), request)
            })
            .collect();
        let state = match serde_json::value::to_raw_value(&UrlState { keys }) {
            Ok(state) => state,
            Err(e) => {
                return Outcome::Failed(Failure::Internal {
                    reason: e.to_string(),
                });
            }
        };
        let sealed = self.seal(call, backend, &state);
        super::raw(&json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": sealed,
        }))
    }

    /// A 2026-07-28 backend's `input_required` result for a 2026-07-28 client: one that asks for a URL to be
    /// opened passes only where the backend's URL elicitations may be relayed.
    pub(crate) fn url_input_refused(
        &self,
        backend: &str,
        result: &RawObject<'_>,
    ) -> Option<Outcome> {
        let requests = result.get("inputRequests")?;
        if !requests.get().contains("\"url\"") {
            return None;
        }
        let requests: serde_json::Map<String, Value> = serde_json::from_str(requests.get()).ok()?;
        let asks_url = requests.values().any(|r| {
            r.get("method").and_then(Value::as_str) == Some("elicitation/create")
                && r.pointer("/params/mode").and_then(Value::as_str) == Some("url")
        });
        if !asks_url {
            return None;
        }
        self.url_relay(backend)
            .err()
            .map(|why| not_relayed(backend, why))
    }
}

/// A backend's `elicitation/create` in the middle of a request, judged for its client.
pub(crate) enum UrlAsk {
    /// Not URL mode: asked as any other question.
    Form,
    /// A URL the client may be asked to open (its route for the completion recorded, on a legacy session).
    Ask(UrlElicitation),
    /// Not asked: the backend's answer, and what the client hears instead where it can be told at once.
    Refused {
        /// The error the backend gets.
        to_backend: Error,
        /// The request's outcome for a 2026-07-28 client, which is answered instead of asked.
        to_client: Outcome,
    },
}

impl Dispatch<'_> {
    /// Judges a backend's question in the middle of `call`: a URL-mode elicitation is asked only where the
    /// backend's URL elicitations may be relayed, of a client that can be asked one, with a URL that may be
    /// shown.
    pub(crate) fn url_asked(
        &self,
        call: &Call,
        backend: &str,
        request: &protocol::Request,
    ) -> UrlAsk {
        if request.method != "elicitation/create" {
            return UrlAsk::Form;
        }
        let params: Value = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        let Some(parsed) = UrlElicitation::from_value(&params) else {
            return UrlAsk::Form;
        };
        let refused = |why: String, to_client: Outcome| UrlAsk::Refused {
            to_backend: Error::new(
                ErrorCode::InvalidParams,
                format!("mcpgw did not relay the url elicitation: {why}"),
            ),
            to_client,
        };
        let asked = match parsed {
            Ok(asked) => asked,
            Err(why) => return refused(why.to_string(), not_relayed(backend, why.to_string())),
        };
        if let Err(why) = self.url_relay(backend) {
            return refused(why.clone(), not_relayed(backend, why));
        }
        match elicitation::delivery(self.generation, self.declared(call.meta())) {
            Delivery::InputRequired => UrlAsk::Ask(asked),
            Delivery::Legacy => match self.route_completions(backend, std::slice::from_ref(&asked))
            {
                Ok(()) => UrlAsk::Ask(asked),
                Err(full) => {
                    let to_client =
                        described(backend, std::slice::from_ref(&asked), &full.to_string());
                    refused(full.to_string(), to_client)
                }
            },
            Delivery::Described => UrlAsk::Refused {
                to_backend: Error::new(
                    ErrorCode::MissingRequiredClientCapability,
                    "the client did not declare elicitation.url",
                )
                .with_data(json!({"requiredCapabilities": {"elicitation": {"url": {}}}})),
                to_client: described(backend, std::slice::from_ref(&asked), &self.cannot_ask()),
            },
        }
    }
}

impl Dispatch<'_> {
    /// A 2026-07-28 backend's URL input requests for a legacy client: each gets an `elicitationId` the gateway
    /// mints (it sends their completion when the backend's retry is answered), where the client can be asked
    /// one; else the outcome the client gets instead.
    pub(crate) fn url_ids(
        &self,
        call: &Call,
        backend: &str,
        requests: &mut std::collections::BTreeMap<String, AskedRequest>,
    ) -> Result<Vec<String>, Outcome> {
        let mut ids = Vec::new();
        for asked in requests.values_mut() {
            if asked.method() != "elicitation/create" {
                continue;
            }
            let Some(parsed) = asked.params().and_then(UrlElicitation::from_value) else {
                continue;
            };
            let url = parsed.map_err(|why| not_relayed(backend, why.to_string()))?;
            self.url_relay(backend)
                .map_err(|why| not_relayed(backend, why))?;
            if elicitation::delivery(self.generation, self.declared(call.meta()))
                != Delivery::Legacy
            {
                return Err(described(backend, &[url], &self.cannot_ask()));
            }
            let id = minted_id();
            asked.set_params(url.legacy_params(&id));
            ids.push(id);
        }
        Ok(ids)
    }
}

/// An `elicitationId` the gateway gives a URL elicitation it asks on a 2026-07-28 backend's behalf.
fn minted_id() -> String {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 16];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().fold(String::from("mcpgw-"), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Whether an opened state is the gateway's own URL elicitation.
pub(super) fn is_url_state(state: &RawValue) -> bool {
    RawObject::parse(state).is_some_and(|o| o.get(URL_KEY).is_some())
}

/// What a retry's `inputResponses` said to the URL elicitations a state names.
pub(super) fn answered(state: &RawValue, responses: Option<&RawValue>) -> Answered {
    let Ok(state) = serde_json::from_str::<UrlState>(state.get()) else {
        return Answered::Refused("the request state is not readable".into());
    };
    let responses = responses.and_then(RawObject::parse).unwrap_or_default();
    for key in &state.keys {
        let action = responses
            .get(key)
            .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
            .and_then(|r| r.get("action").and_then(Value::as_str).map(str::to_owned));
        match action.as_deref() {
            Some("accept") => {}
            Some("decline") => return Answered::Refused("the user declined to open it".into()),
            Some("cancel") => return Answered::Refused("the user dismissed it".into()),
            _ => {
                return Answered::Refused(format!(
                    "the retry did not answer the url elicitation {key}"
                ));
            }
        }
    }
    Answered::Accepted
}

/// A URL the user did not agree to open, for the request's own shape (a tool error on `tools/call`).
pub(super) fn refused(backend: &str, why: &str) -> Outcome {
    Outcome::Failed(Failure::Backend {
        backend: backend.to_owned(),
        error: Error::new(
            ErrorCode::UrlElicitationRequiredError,
            format!("the backend needs the user to open a url, and {why}"),
        ),
    })
}

/// The URLs said in words, with why the client was not asked.
pub(crate) fn described(backend: &str, elicitations: &[UrlElicitation], why: &str) -> Outcome {
    Outcome::Failed(Failure::Backend {
        backend: backend.to_owned(),
        error: Error::new(
            ErrorCode::UrlElicitationRequiredError,
            format!(
                "url elicitation required: {}; {why}",
                elicitation::describe(elicitations)
            ),
        ),
    })
}

/// A URL elicitation mcpgw does not relay: said, with why, and without the URL.
pub(crate) fn not_relayed(backend: &str, why: String) -> Outcome {
    Outcome::Failed(Failure::Backend {
        backend: backend.to_owned(),
        error: Error::new(
            ErrorCode::UrlElicitationRequiredError,
            format!("the backend asked the user to open a url, which mcpgw did not pass on: {why}"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn a_retry_must_accept_every_url() {
        let state = raw(r#"{"mcpgw/url":["u0","u1"]}"#);
        assert!(is_url_state(&state));
        // (inputResponses, accepted)
        let table = [
            (
                r#"{"u0":{"action":"accept"},"u1":{"action":"accept"}}"#,
                None,
            ),
            (
                r#"{"u0":{"action":"accept"},"u1":{"action":"decline"}}"#,
                Some("declined"),
            ),
            (r#"{"u0":{"action":"cancel"}}"#, Some("dismissed")),
            (r#"{"u0":{"action":"accept"}}"#, Some("did not answer")),
            (r#"{"u0":"accept","u1":{}}"#, Some("did not answer")),
        ];
        for (responses, refused) in table {
            let got = answered(&state, Some(&raw(responses)));
            match (got, refused) {
                (Answered::Accepted, None) => {}
                (Answered::Refused(why), Some(says)) => assert!(why.contains(says), "{why}"),
                (got, want) => panic!("{responses}: {got:?}, wanted {want:?}"),
            }
        }
        assert!(matches!(answered(&state, None), Answered::Refused(_)));
        assert!(!is_url_state(&raw(r#"{"mcpgw/replay":[]}"#)));
    }

    #[test]
    fn what_is_not_relayed_names_no_url() {
        let Outcome::Failed(f) = not_relayed("b", "why".into()) else {
            panic!()
        };
        assert_eq!(
            f.to_string(),
            "backend b failed: the backend asked the user to open a url, which mcpgw did not pass on: why"
        );
    }
}
