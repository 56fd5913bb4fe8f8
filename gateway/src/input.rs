//! Multi-round input for legacy clients: a 2026-07-28 backend's `input_required` result becomes real
//! server-to-client requests (sampling, elicitation, roots) on the legacy client's stream; the client's
//! answers become the `inputResponses` of the retried backend request.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use protocol::raw::RawObject;
use protocol::validate::Call;
use protocol::{Message, Request};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::session::Session;

/// Rounds of questions one request may take (the TypeScript SDK's legacy shim uses the same).
pub const MAX_ROUNDS: usize = 8;
/// How long a client gets to answer one round.
const ROUND_TIMEOUT: Duration = Duration::from_secs(120);

/// What the backend asked: keyed requests and its opaque state.
#[derive(Debug)]
pub struct Question {
    /// `inputRequests`: key → `{method, params}`.
    pub requests: BTreeMap<String, AskedRequest>,
    /// `requestState`, echoed byte for byte on the retry.
    pub request_state: Option<Box<RawValue>>,
}

/// One server-to-client request the backend needs answered.
#[derive(Debug, Deserialize)]
pub struct AskedRequest {
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

#[derive(Deserialize)]
struct InputRequired {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(rename = "inputRequests", default)]
    input_requests: BTreeMap<String, AskedRequest>,
    #[serde(rename = "requestState", default)]
    request_state: Option<Box<RawValue>>,
}

impl Question {
    /// Reads an `input_required` result; `None` for any other result.
    pub fn read(raw: &RawValue) -> Option<Question> {
        let ir: InputRequired = serde_json::from_str(raw.get()).ok()?;
        (ir.result_type == "input_required").then_some(Question {
            requests: ir.input_requests,
            request_state: ir.request_state,
        })
    }
}

/// Asks the client every request of one round on its stream and waits (bounded) for all answers.
pub async fn ask(
    session: &Session,
    stream: &mpsc::Sender<Vec<u8>>,
    requests: BTreeMap<String, AskedRequest>,
) -> Result<BTreeMap<String, Box<RawValue>>, String> {
    let mut waiting = Vec::with_capacity(requests.len());
    for (key, asked) in requests {
        let ask = session.asks().open().map_err(|e| e.to_string())?;
        let request = Request::new(ask.id.clone(), asked.method.clone(), asked.params.as_ref());
        stream
            .send(Message::Request(request).to_bytes())
            .await
            .map_err(|_| "the client's stream closed".to_owned())?;
        waiting.push((key, asked.method, ask));
    }
    let answers = join_all(
        waiting
            .into_iter()
            .map(|(key, method, mut ask)| async move {
                match tokio::time::timeout(ROUND_TIMEOUT, &mut ask.answer).await {
                    Ok(Ok(Ok(result))) => Ok((key, result)),
                    Ok(Ok(Err(e))) => Err(format!(
                        "the client answered {method} with an error: {}",
                        e.message()
                    )),
                    Ok(Err(_)) => Err(format!(
                        "the session ended before the client answered {method}"
                    )),
                    Err(_) => Err(format!(
                        "the client did not answer {method} within {} s",
                        ROUND_TIMEOUT.as_secs()
                    )),
                }
            }),
    );
    tokio::select! {
        answers = answers => answers.into_iter().collect(),
        () = stream.closed() => Err("the client's stream closed".to_owned()),
    }
}

/// The call again, with `inputResponses` and the backend's `requestState` in its params.
pub fn retry(
    call: &Call,
    responses: BTreeMap<String, Box<RawValue>>,
    state: Option<Box<RawValue>>,
) -> Call {
    let params = {
        let mut object =
            RawObject::parse_or_empty(call.request.params.as_deref()).unwrap_or_default();
        let mut answers = RawObject::default();
        for (key, result) in responses {
            answers.set(&key, result);
        }
        object.set("inputResponses", answers.to_raw());
        match state {
            Some(state) => object.set("requestState", state),
            None => {
                object.remove("requestState");
            }
        }
        object.to_raw()
    };
    Call {
        request: Request {
            id: call.request.id.clone(),
            method: call.request.method.clone(),
            params: Some(params),
        },
        method: call.method,
        meta: call.meta.clone(),
        target: call.target.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_required_is_recognised_and_complete_is_not() {
        let raw: Box<RawValue> = serde_json::from_str(
            r#"{"resultType":"input_required","inputRequests":{"q":{"method":"sampling/createMessage","params":{"maxTokens":5}}},"requestState":"s1"}"#,
        )
        .unwrap();
        let q = Question::read(&raw).unwrap();
        assert_eq!(q.requests["q"].method, "sampling/createMessage");
        assert_eq!(q.request_state.unwrap().get(), r#""s1""#);
        let done: Box<RawValue> =
            serde_json::from_str(r#"{"resultType":"complete","content":[]}"#).unwrap();
        assert!(Question::read(&done).is_none());
    }
}
