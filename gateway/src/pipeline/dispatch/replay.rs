//! A backend's server-to-client questions for a 2026-07-28 client.
//!
//! A legacy backend asks (sampling, elicitation, roots) in the middle of a request, and so does a 2026-07-28
//! SDK server in its stateless mode, on the request's response stream; a 2026-07-28 client can only be
//! asked through an `input_required` result. So the gateway ends the client's request with that
//! result — the question under key `r{k}`, and a `requestState` it seals holding every answer given so far
//! and the ticket of the backend request, which this replica parks meanwhile (see `parked`). A retry that
//! reaches this replica in time answers the parked question and carries on with the same backend request.
//! Any other retry replays the original request to the backend, and the gateway answers the backend's
//! questions, in order, from the answers: no replica needs to remember anything, and a question the answers
//! do not cover starts the next round. Bounded: at most [`MAX_ROUNDS`] answers are carried.

use handlers::{BackendRequest, Related};
use protocol::raw::RawObject;
use protocol::shape::Failure;
use protocol::validate::Call;
use protocol::{Error, ErrorCode, Method};
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::bridge::parked::{BackendCall, Parked, Ticket};
use crate::pipeline::dispatch::{Dispatch, UrlAsk};
use crate::pipeline::response::Outcome;
use protocol::elicitation::UrlElicitation;

/// The key under which a replay state keeps its answers.
const REPLAY_KEY: &str = "mcpgw/replay";
/// Questions one request may take across rounds.
pub const MAX_ROUNDS: usize = 8;

/// One question answered by the client: the method it was and the client's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answered {
    /// The method the backend asked.
    pub m: String,
    /// The client's result.
    pub r: Box<RawValue>,
    /// For a URL-mode elicitation, the URL the client was asked to open: an answer replays only to the same
    /// URL (a backend asking another URL on the replay asks the client again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u: Option<String>,
}

/// The answers a retried request brings, in the order the backend asked, and the ticket of the backend
/// request parked for it, if one was.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    answers: Vec<Answered>,
    parked: Option<Ticket>,
}

#[derive(Serialize, Deserialize)]
struct State {
    #[serde(rename = "mcpgw/replay")]
    answers: Vec<Answered>,
    #[serde(
        rename = "mcpgw/parked",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    parked: Option<Ticket>,
    /// The URL of the question asked under the next key, when it was a URL-mode elicitation.
    #[serde(rename = "mcpgw/url", default, skip_serializing_if = "Option::is_none")]
    asking: Option<String>,
}

impl Replay {
    /// The replay a retry brings: the sealed state's answers plus the retry's `inputResponses` for the next
    /// keys, in order. `None` when the opened state is a backend's own state, not a replay.
    pub fn from_opened(state: &RawValue, input_responses: Option<&RawValue>) -> Option<Replay> {
        let state: State = serde_json::from_str(state.get()).ok()?;
        let mut answers = state.answers;
        let responses = input_responses
            .and_then(RawObject::parse)
            .unwrap_or_default();
        // The question of round k was asked under "r{k}"; its method is not repeated by the client, so the
        // answer is recorded for whatever the backend asks at that position.
        let mut asking = state.asking;
        while let Some(result) = responses.get(&format!("r{}", answers.len())) {
            answers.push(Answered {
                m: String::new(),
                r: result.to_owned(),
                u: asking.take(),
            });
            if answers.len() >= MAX_ROUNDS {
                break;
            }
        }
        Some(Replay {
            answers,
            parked: state.parked,
        })
    }
}

/// Sends a request to a backend on behalf of a 2026-07-28 client — or carries on with the one this
/// replica parked for the retry — answering the backend's questions from `replay` and turning the first
/// unanswered one into an `input_required` result, the backend request parked meanwhile (see `parked`).
pub async fn forward(
    d: &Dispatch<'_>,
    call: &Call,
    backend: &str,
    mut request: BackendRequest,
    replay: Replay,
) -> Outcome {
    let Some(handle) = d.gw.live().backend(backend).cloned() else {
        return Outcome::Failed(Failure::Unavailable {
            backend: backend.to_owned(),
            reason: "not configured any more".into(),
        });
    };
    let outer = request.related.take();
    let mut answers = replay.answers;
    let resumed = replay
        .parked
        .and_then(|ticket| d.gw.parked.take(&ticket, backend))
        .and_then(|p| {
            // The retry answers the parked question (else the parked request is dropped and replayed).
            let answer = answers.get_mut(p.asked)?;
            answer.m.clone_from(&p.method);
            let _ = p.question.send(Ok(answer.r.clone()));
            Some((p.call, p.related, p.asked + 1))
        });
    let (mut answering, mut related, mut asked) = match resumed {
        Some(resumed) => {
            tracing::debug!(%backend, "resuming the parked backend request");
            resumed
        }
        None => {
            let (sink, related) = mpsc::channel(16);
            request.related = Some(sink);
            let handle = handle.clone();
            let span = super::backend_span(backend, &mut request);
            // Counted when it ends, also when it ends parked, after the request that started it.
            let (metrics, at) = (d.gw.metrics.clone(), d.gw.metrics.backend_at(backend));
            let (method, tool) = (request.method, d.counted_tool(&request));
            let call: BackendCall = Box::pin(async move {
                let began = std::time::Instant::now();
                let result = handle.call(request).await;
                if let Some(span) = span {
                    span.end(result.as_ref().map(|_| ()).map_err(Failure::kind));
                }
                if let Some(at) = at {
                    let outcome = crate::pipeline::response::backend_outcome(method, &result);
                    metrics.backend_call_at(at, tool.as_deref(), outcome, began.elapsed());
                }
                result
            });
            (call, related, 0)
        }
    };
    let until = Instant::now() + d.gw.config.backend_timeout(backend);
    loop {
        let step = tokio::select! {
            result = &mut answering => Step::Answered(result),
            message = related.recv() => Step::Related(message),
        };
        match step {
            Step::Answered(result) => {
                // What the backend sent just before its answer is already queued: pass it on first.
                while let Ok(message) = related.try_recv() {
                    if let (Related::Notification(n), Some(outer)) = (message, &outer)
                        && n.method != "notifications/elicitation/complete"
                    {
                        let _ = outer.try_send(Related::Notification(n));
                    }
                }
                return answered(d, call, backend, result);
            }
            Step::Related(None) => return answered(d, call, backend, answering.await),
            // 2026-07-28 has no elicitation completion: the retry is how a client says it is done.
            Step::Related(Some(Related::Notification(n)))
                if n.method == "notifications/elicitation/complete" => {}
            Step::Related(Some(Related::Notification(n))) => {
                if let Some(outer) = &outer {
                    let _ = outer.try_send(Related::Notification(n));
                }
            }
            Step::Related(Some(Related::InputRequest { request, reply })) => {
                let request = match d.question(backend, request) {
                    Ok(request) => request,
                    Err(withheld) => {
                        let _ = reply.send(Err(withheld));
                        continue;
                    }
                };
                let url = match d.url_asked(call, backend, &request) {
                    UrlAsk::Refused {
                        to_backend,
                        to_client,
                    } => {
                        let _ = reply.send(Err(to_backend));
                        return to_client;
                    }
                    UrlAsk::Ask(url) => Some(url),
                    UrlAsk::Form => None,
                };
                if url.is_some()
                    && answers
                        .get(asked)
                        .is_some_and(|a| a.u.as_deref() != url.as_ref().map(|u| u.url.as_str()))
                {
                    // The backend asks another URL than the one the client opened: asked again.
                    answers.truncate(asked);
                }
                if let Some(answer) = answers.get_mut(asked) {
                    if answer.m.is_empty() {
                        answer.m.clone_from(&request.method);
                    }
                    if answer.m != request.method {
                        return Outcome::Error(Error::new(
                            ErrorCode::InvalidParams,
                            format!(
                                "invalid params: on replay the backend asked {} where {} was answered",
                                request.method, answer.m
                            ),
                        ));
                    }
                    let _ = reply.send(Ok(answer.r.clone()));
                    asked += 1;
                    continue;
                }
                if let Err(refused) = askable(call, &request.method, asked) {
                    return refused;
                }
                let ticket = d.gw.parked.park(Parked {
                    backend: backend.to_owned(),
                    call: answering,
                    related,
                    question: reply,
                    method: request.method.clone(),
                    asked,
                    until,
                    holder: d.holder.clone(),
                });
                return question(d, call, backend, asked, &request, url, answers, ticket);
            }
        }
    }
}

/// The backend's answer: a 2026-07-28 backend's own `input_required` gets its state sealed.
fn answered(
    d: &Dispatch<'_>,
    call: &Call,
    backend: &str,
    result: Result<Box<RawValue>, Failure>,
) -> Outcome {
    match result {
        Ok(raw) => d.seal_state(call, backend, Outcome::Result(raw)),
        Err(f) => Outcome::Failed(f),
    }
}

/// What woke the forwarding loop.
enum Step {
    Answered(Result<Box<RawValue>, Failure>),
    Related(Option<Related>),
}

/// Whether the client can be asked the backend's `k`th question: it declared the capability, and the rounds
/// are not used up.
fn askable(call: &Call, method: &str, k: usize) -> Result<(), Outcome> {
    let Some(capability) = Method::parse(method).and_then(Method::client_capability) else {
        return Err(Outcome::Failed(Failure::Internal {
            reason: format!("the backend asked {method}, which mcpgw does not relay to clients"),
        }));
    };
    let declared = call
        .meta()
        .client_capabilities
        .as_ref()
        .and_then(|c| c.get(capability))
        .is_some_and(|c| !c.is_null());
    if !declared {
        return Err(Outcome::Error(Error::missing_client_capability(
            capability,
            format!(
                "the backend needs the client's {capability} capability, which the request did not declare"
            ),
        )));
    }
    if k >= MAX_ROUNDS {
        return Err(Outcome::Failed(Failure::Internal {
            reason: format!("the backend still asked questions after {MAX_ROUNDS} answers"),
        }));
    }
    Ok(())
}

/// The `input_required` result asking the client the backend's question: its `requestState` holds the
/// answers so far and, when the backend request is parked, its ticket (and a URL-mode question's URL).
#[allow(clippy::too_many_arguments)] // one call site, each argument a different part of the question
fn question(
    d: &Dispatch<'_>,
    call: &Call,
    backend: &str,
    k: usize,
    request: &protocol::Request,
    url: Option<UrlElicitation>,
    answers: Vec<Answered>,
    parked: Option<Ticket>,
) -> Outcome {
    let asking = url.as_ref().map(|u| u.url.clone());
    let state = match serde_json::value::to_raw_value(&State {
        answers,
        parked,
        asking,
    }) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::Failed(Failure::Internal {
                reason: e.to_string(),
            });
        }
    };
    let sealed = d.seal(call, backend, &state);
    // The backend's params go to the client as they came (byte for byte, keys in their order), but a URL
    // elicitation's, which 2026-07-28 writes without `elicitationId`.
    let params = match &url {
        Some(url) => serde_json::value::to_raw_value(&url.modern_params()).ok(),
        None => request.params.clone(),
    };
    let result = json!({
        "resultType": "input_required",
        "inputRequests": { format!("r{k}"): { "method": request.method, "params": params } },
        "requestState": sealed,
    });
    match serde_json::value::to_raw_value(&result) {
        Ok(raw) => Outcome::Result(raw),
        Err(e) => Outcome::Failed(Failure::Internal {
            reason: e.to_string(),
        }),
    }
}

/// Whether an opened state is a replay (it carries the replay key).
pub fn is_replay(state: &RawValue) -> bool {
    RawObject::parse(state).is_some_and(|o| o.get(REPLAY_KEY).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_adds_its_answers_in_order() {
        let state: Box<RawValue> = serde_json::from_str(
            r#"{"mcpgw/replay":[{"m":"sampling/createMessage","r":{"a":1}}]}"#,
        )
        .unwrap();
        assert!(is_replay(&state));
        let responses: Box<RawValue> =
            serde_json::from_str(r#"{"r1":{"b":2},"r3":{"skipped":true}}"#).unwrap();
        let replay = Replay::from_opened(&state, Some(&responses)).unwrap();
        assert_eq!(replay.answers.len(), 2);
        assert_eq!(replay.answers[1].r.get(), r#"{"b":2}"#);
        let backend_state: Box<RawValue> = serde_json::from_str(r#""opaque""#).unwrap();
        assert!(!is_replay(&backend_state));
        assert!(Replay::from_opened(&backend_state, None).is_none());
    }
}
