//! The sealed `requestState` of a 2026-07-28 retry: opened (this gateway's, unaltered, unexpired, used once
//! across replicas, for this request and client), told apart (the gateway's own replay, its URL
//! elicitation, or a backend's state), and a backend's own `input_required` state sealed on its way out.

use protocol::raw::RawObject;
use protocol::validate::Call;
use protocol::{Error, ErrorCode};
use serde_json::value::RawValue;

use super::replay::{self, Replay};
use super::{Dispatch, url};
use crate::bridge::sealed_state::StateError;
use crate::pipeline::response::Outcome;

/// What a retry's sealed `requestState` gave.
#[derive(Default)]
pub(super) struct FromState {
    /// The replay it holds (a request whose backend question outlived its parked request).
    pub(super) replay: Option<Replay>,
    /// Its single-use id and expiry (Unix milliseconds), claimed across replicas before the call goes out.
    pub(super) single_use: Option<(String, u64)>,
    /// What it answered to the URL elicitations the gateway asked for a legacy backend.
    pub(super) url: Option<url::Answered>,
}

impl Dispatch<'_> {
    /// A 2026-07-28 retry carries the state the gateway sealed: it must open (this gateway's, unaltered, not
    /// expired, not used before, for this method, params and backend) and is replaced by the backend's own.
    /// A state that holds the gateway's own replay (a legacy backend's questions answered by the client) is
    /// returned as such, and the backend, which knows nothing of it, gets neither it nor `inputResponses`.
    pub(super) fn open_state(
        &self,
        call: &Call,
        backend: &str,
        obj: &mut RawObject<'_>,
    ) -> Result<FromState, Error> {
        let Some(sealed) = obj.get("requestState") else {
            return Ok(FromState::default());
        };
        let invalid = |why: String| {
            Error::new(
                ErrorCode::InvalidParams,
                format!("invalid requestState: {why}"),
            )
        };
        let sealed: String = serde_json::from_str(sealed.get())
            .map_err(|_| invalid("it must be a string".into()))?;
        let opened = self
            .gw
            .sealer
            .open(
                &self.auth,
                &self.holder,
                call.method().as_str(),
                call.request().params.as_deref(),
                &sealed,
            )
            .map_err(|e| match e {
                // Not the client's fault: the same state opens once the gateway has room.
                StateError::TooManyInUse => Error::new(ErrorCode::InternalError, e.to_string()),
                // The client's own doing, and not used up either: the same state opens later.
                StateError::TooManyHeld => Error::new(
                    ErrorCode::InvalidParams,
                    format!("requestState refused: {e}"),
                ),
                e => invalid(e.to_string()),
            })?;
        if opened.backend != backend {
            return Err(invalid(StateError::Mismatch.to_string()));
        }
        let single_use = Some(opened.single_use);
        if replay::is_replay(&opened.state) {
            let replay = Replay::from_opened(&opened.state, obj.get("inputResponses"));
            obj.remove("requestState");
            obj.remove("inputResponses");
            return Ok(FromState {
                replay,
                single_use,
                url: None,
            });
        }
        if url::is_url_state(&opened.state) {
            // The gateway asked the URLs for a legacy backend, which knows nothing of the state or the answers.
            let answered = url::answered(&opened.state, obj.get("inputResponses"));
            obj.remove("requestState");
            obj.remove("inputResponses");
            return Ok(FromState {
                replay: None,
                single_use,
                url: Some(answered),
            });
        }
        obj.set("requestState", opened.state);
        Ok(FromState {
            replay: None,
            single_use,
            url: None,
        })
    }

    /// A sealed state's single use, across every replica sharing a Redis (this replica has checked its own
    /// already): a state used on another replica is refused as a replay; with Redis unreachable the state
    /// cannot be checked and is refused at once (fail closed: a replay must not pass; the client starts
    /// the request again).
    pub(super) async fn claim_state(&self, single_use: Option<(String, u64)>) -> Result<(), Error> {
        let (Some((id, expires_ms)), Some(link)) = (single_use, self.gw.redis.as_ref()) else {
            return Ok(());
        };
        match link.use_once(&id, expires_ms).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::new(
                ErrorCode::InvalidParams,
                format!("invalid requestState: {}", StateError::Replayed),
            )),
            Err(e) => Err(Error::new(
                ErrorCode::InternalError,
                format!("requestState cannot be checked for reuse now: {e}"),
            )),
        }
    }

    /// An `input_required` result of the backend's own for a 2026-07-28 client: its `requestState` is
    /// sealed by the gateway.
    pub(crate) fn seal_state(&self, call: &Call, backend: &str, outcome: Outcome) -> Outcome {
        let Outcome::Result(raw) = &outcome else {
            return outcome;
        };
        if !self.generation.is_modern() || !call.method().may_require_input() {
            return outcome;
        }
        // Most results ask for no input: one that cannot spell `input_required` (its `resultType`) is not
        // parsed — one scan of the result.
        if !protocol::raw::may_hold_key(raw.get(), "input_required") {
            return outcome;
        }
        let Some(mut result) = RawObject::parse(raw) else {
            return outcome;
        };
        if result.get("resultType").map(RawValue::get) != Some("\"input_required\"") {
            return outcome;
        }
        if let Some(refused) = self.url_input_refused(backend, &result) {
            return refused;
        }
        let Some(state) = result.get("requestState").map(RawValue::to_owned) else {
            return outcome;
        };
        let sealed = self.seal(call, backend, &state);
        result.set_value("requestState", &sealed);
        Outcome::Result(result.to_raw())
    }

    /// `state` sealed for this request's client, bound to `backend` and the call's method and params.
    pub(super) fn seal(&self, call: &Call, backend: &str, state: &RawValue) -> String {
        self.gw.sealer.seal(
            &self.auth,
            backend,
            call.method().as_str(),
            call.request().params.as_deref(),
            state,
        )
    }
}
