//! The `asks` tool: it asks the client one elicitation (2025-06-18 and later) and one sampling question, only
//! those whose capabilities the client declared, and answers a text holding the answers.
//!
//! 2026-07-28, on any transport: the first call is answered with an `input_required` result whose
//! `requestState` is signed (HMAC-SHA256 under a key drawn when the mock starts) and says which questions were
//! asked and until when answers are taken; the retry with `inputResponses` and that state gets the result. A
//! forged, garbled or expired state, answers without a state, or a missing answer are refused with -32602.
//! The state is not single-use: the mock keeps nothing across requests.
//!
//! Legacy: only the HTTP transport can ask (`http::ask` sends the questions on the call's stream); this
//! module says what to ask and how the answers read. It does no I/O and must not wait.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use protocol::meta::CLIENT_CAPABILITIES;
use protocol::payload::{
    CallToolRequestParams, CallToolResponse, InputRequest, InputRequiredResult,
};
use protocol::{Error, ErrorCode, Generation};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use sha2::Sha256;

use super::tools::to_raw;

/// How long answers are waited for (legacy) or taken (2026-07-28, after the `input_required` result).
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// One question of the `asks` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Question {
    /// `elicitation/create`: a form asking for a name.
    Elicitation,
    /// `sampling/createMessage`: one line from the client's model.
    Sampling,
}

impl Question {
    /// Its key in `inputRequests` and in the result's text.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Question::Elicitation => "elicitation",
            Question::Sampling => "sampling",
        }
    }

    /// The request's method.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Question::Elicitation => "elicitation/create",
            Question::Sampling => "sampling/createMessage",
        }
    }

    /// The request's params.
    pub(crate) fn params(self) -> Value {
        match self {
            Question::Elicitation => json!({
                "message": "Who is calling the asks tool?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                    "required": ["name"]},
            }),
            Question::Sampling => json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say one line."}}],
                "maxTokens": 32,
            }),
        }
    }

    fn letter(self) -> char {
        match self {
            Question::Elicitation => 'e',
            Question::Sampling => 's',
        }
    }
}

/// The questions for a client of generation `g` that declared `capabilities` (a `ClientCapabilities` object).
pub(crate) fn questions(g: Generation, capabilities: Option<&Value>) -> Vec<Question> {
    let declared = |key: &str| capabilities.and_then(|c| c.get(key)).is_some();
    let mut asked = Vec::new();
    if g >= Generation::V2025_06_18 && declared("elicitation") {
        asked.push(Question::Elicitation);
    }
    if declared("sampling") {
        asked.push(Question::Sampling);
    }
    asked
}

/// The tool's result from the answers, in the order asked (an answer is a result or a refusal's message).
pub(crate) fn answered(answers: &[(Question, Result<Value, String>)]) -> CallToolResponse {
    if answers.is_empty() {
        return CallToolResponse::text(
            "nothing asked: the client declared neither elicitation nor sampling",
        );
    }
    let lines: Vec<String> = answers
        .iter()
        .map(|(q, a)| match a {
            Ok(result) => format!("{}: {result}", q.key()),
            Err(message) => format!("{}: refused: {message}", q.key()),
        })
        .collect();
    CallToolResponse::text(lines.join("\n"))
}

/// Signs and checks the `asks` tool's 2026-07-28 `requestState`: `LETTERS.UNTIL_MS.MAC`.
pub(crate) struct Signer {
    key: [u8; 32],
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer")
    }
}

impl Signer {
    /// A signer with a key from the operating system's randomness.
    pub(crate) fn new() -> Signer {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            tracing::warn!(
                "mock-backend: no randomness for the asks tool's key; its states are guessable"
            );
        }
        Signer { key }
    }

    fn mac(&self, plain: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(b"mcpgw mock asks v1|");
        mac.update(plain.as_bytes());
        mac
    }

    /// The state for `asked`, taken until `until_ms` (milliseconds since the Unix epoch).
    pub(crate) fn sign(&self, asked: &[Question], until_ms: u64) -> String {
        let letters: String = asked.iter().map(|q| q.letter()).collect();
        let plain = format!("{letters}.{until_ms}");
        let tag = URL_SAFE_NO_PAD.encode(self.mac(&plain).finalize().into_bytes());
        format!("{plain}.{tag}")
    }

    /// The questions a state this signer issued says were asked, if it is still taken at `now_ms`.
    pub(crate) fn verify(&self, state: &str, now_ms: u64) -> Result<Vec<Question>, Error> {
        let forged = || {
            invalid(
                "requestState is not one this server issued (forged or garbled); call asks again without it",
            )
        };
        let (plain, tag) = state.rsplit_once('.').ok_or_else(forged)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| forged())?;
        self.mac(plain).verify_slice(&tag).map_err(|_| forged())?;
        let (letters, until) = plain.split_once('.').ok_or_else(forged)?;
        let until: u64 = until.parse().map_err(|_| forged())?;
        if now_ms > until {
            return Err(invalid(
                "requestState has expired; call asks again without it",
            ));
        }
        letters
            .chars()
            .map(|c| match c {
                'e' => Ok(Question::Elicitation),
                's' => Ok(Question::Sampling),
                _ => Err(forged()),
            })
            .collect()
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn invalid(message: &str) -> Error {
    Error::new(
        ErrorCode::InvalidParams,
        format!("invalid params: {message}"),
    )
}

/// A 2026-07-28 call of `asks`: `input_required` first, the answers' text on the retry.
pub(crate) fn modern(
    signer: &Signer,
    params: &CallToolRequestParams,
) -> Result<Box<RawValue>, Error> {
    let now = now_ms();
    let Some(state) = params.request_state.as_deref() else {
        if params.input_responses.is_some() {
            return Err(invalid(
                "inputResponses without the requestState they answer",
            ));
        }
        let capabilities = params
            .meta
            .as_ref()
            .and_then(|m| m.get(CLIENT_CAPABILITIES));
        let asked = questions(Generation::V2026_07_28, capabilities);
        if asked.is_empty() {
            return to_raw(&answered(&[]));
        }
        let requests = asked
            .iter()
            .map(|q| {
                let r = InputRequest::new(q.method(), q.params()).map_err(|e| {
                    Error::new(ErrorCode::InternalError, format!("internal error: {e}"))
                })?;
                Ok((q.key().to_owned(), r))
            })
            .collect::<Result<_, Error>>()?;
        let until = now.saturating_add(u64::try_from(ANSWER_WITHIN.as_millis()).unwrap_or(0));
        let state = signer.sign(&asked, until);
        return to_raw(&InputRequiredResult::new(Some(requests), Some(state)));
    };
    let asked = signer.verify(state, now)?;
    let empty = Map::new();
    let responses = params.input_responses.as_ref().unwrap_or(&empty);
    let answers = asked
        .into_iter()
        .map(|q| match responses.get(q.key()) {
            Some(r) => Ok((q, Ok(r.clone()))),
            None => Err(invalid(&format!(
                "inputResponses lacks the answer to \"{}\"",
                q.key()
            ))),
        })
        .collect::<Result<Vec<_>, Error>>()?;
    to_raw(&answered(&answers))
}

#[cfg(test)]
mod tests;
