//! Input from legacy clients: a 2026-07-28 backend's `input_required` result becomes real server-to-client
//! requests (sampling, elicitation, roots) on the legacy client's stream, and the client's answers become
//! the `inputResponses` of the retried backend request ([`ask`]); a legacy backend's own request while
//! serving the client's request goes to the client on the same stream with the gateway's id, and the
//! client's answer back to the backend ([`relay`]). Both ask only what the client declared it can answer.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use protocol::validate::Call;
use protocol::{Error, ErrorCode, Generation, Message, Method, Request};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::session::Session;

/// Rounds of questions one request may take (the TypeScript SDK's legacy shim uses the same).
pub const MAX_ROUNDS: usize = 8;
/// How long a client gets to answer one round, or one relayed backend request.
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

impl AskedRequest {
    /// The method asked.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Its params.
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// The method asked and its params, to judge (and redact) before the client is asked.
    pub fn parts_mut(&mut self) -> (&str, Option<&mut Value>) {
        (&self.method, self.params.as_mut())
    }

    /// Asks with other params (a URL elicitation's, given the `elicitationId` a legacy client needs).
    pub fn set_params(&mut self, params: Value) {
        self.params = Some(params);
    }
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
pub async fn request_input(
    session: &Session,
    stream: &mpsc::Sender<Vec<u8>>,
    requests: BTreeMap<String, AskedRequest>,
) -> Result<BTreeMap<String, Box<RawValue>>, String> {
    let mut waiting = Vec::with_capacity(requests.len());
    for (key, asked) in requests {
        let ask = session.input_requests().open().map_err(|e| e.to_string())?;
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

/// Where the answer to a backend's request goes (see [`handlers::Related::InputRequest`]).
pub type Reply = oneshot::Sender<Result<Box<RawValue>, Error>>;

/// Relays a legacy backend's request to the client of the request it belongs to: on a legacy session that
/// declared the capability the method needs, it is sent on the request's `stream` with an id the gateway
/// minted, and the client's answer (result or error) goes to `reply`; otherwise `reply` gets an error at
/// once. Bounded by [`ROUND_TIMEOUT`]; ends early when the backend side stops waiting.
pub async fn relay_input_request(
    session: Option<&Session>,
    stream: &mpsc::Sender<Vec<u8>>,
    request: Request,
    mut reply: Reply,
) {
    let method = request.method.clone();
    let answer = match session {
        None => Err(Error::new(
            ErrorCode::MethodNotFound,
            format!(
                "mcpgw cannot relay {method} to a {} client here: only tools/call, prompts/get and \
                 resources/read can ask through input_required",
                Generation::V2026_07_28
            ),
        )),
        Some(session) => match undeclared(session, &request) {
            Some(error) => Err(error),
            None => {
                let asked =
                    tokio::time::timeout(ROUND_TIMEOUT, request_one(session, stream, request));
                tokio::select! {
                    answer = asked => answer.unwrap_or_else(|_| Err(Error::new(
                        ErrorCode::InternalError,
                        format!("the client did not answer {method} within {} s", ROUND_TIMEOUT.as_secs()),
                    ))),
                    () = reply.closed() => {
                        tracing::debug!(%method, "the backend stopped waiting for the client's answer");
                        return;
                    }
                }
            }
        },
    };
    if let Err(e) = &answer {
        tracing::debug!(%method, error = %e, "a backend request was answered with an error");
    }
    let _ = reply.send(answer);
}

/// The error for a request whose capability the client did not declare (-32021 naming it), or that mcpgw
/// does not relay.
fn undeclared(session: &Session, request: &Request) -> Option<Error> {
    let Some(capability) = request.known_method().and_then(Method::client_capability) else {
        return Some(Error::new(
            ErrorCode::MethodNotFound,
            format!("mcpgw does not relay {} to clients", request.method),
        ));
    };
    let declared = session
        .client_capabilities
        .get(capability)
        .is_some_and(|c| !c.is_null());
    (!declared).then(|| {
        Error::missing_client_capability(
            capability,
            format!("the client did not declare the {capability} capability"),
        )
    })
}

/// Asks the client one request on its stream under a fresh id and waits for its answer (unbounded here).
async fn request_one(
    session: &Session,
    stream: &mpsc::Sender<Vec<u8>>,
    mut request: Request,
) -> Result<Box<RawValue>, Error> {
    let internal = |why: String| Error::new(ErrorCode::InternalError, why);
    let method = request.method.clone();
    let mut ask = session
        .input_requests()
        .open()
        .map_err(|e| internal(format!("cannot ask the client {method}: {e}")))?;
    request.id = ask.id.clone();
    stream
        .send(Message::Request(request).to_bytes())
        .await
        .map_err(|_| internal("the client's stream closed".to_owned()))?;
    match (&mut ask.answer).await {
        Ok(answer) => answer,
        Err(_) => Err(internal(format!(
            "the session ended before the client answered {method}"
        ))),
    }
}

/// The call again, with `inputResponses` and the backend's `requestState` in its params.
pub fn retry(
    call: &Call,
    responses: BTreeMap<String, Box<RawValue>>,
    state: Option<Box<RawValue>>,
) -> Call {
    call.retry(responses, state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SessionStore, Transport};
    use protocol::Response;
    use serde_json::json;
    use std::sync::Arc;

    fn session(store: &SessionStore, capabilities: Value) -> Arc<Session> {
        let params = serde_json::from_value(json!({"protocolVersion": "2025-06-18",
            "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}))
        .unwrap();
        store
            .create(
                None,
                Generation::V2025_06_18,
                &params,
                Transport::StreamableHttp,
                Duration::from_secs(60),
                None,
            )
            .unwrap()
    }

    fn backend_request(method: &str) -> Request {
        let id: protocol::RequestId = serde_json::from_str("7").unwrap();
        Request::new(id, method, Some(&json!({"maxTokens": 5})))
    }

    #[actix_rt::test]
    async fn a_backend_request_is_asked_on_the_stream_and_the_answer_relayed() {
        let store = SessionStore::new(4, Default::default());
        let s = session(&store, json!({"sampling": {}}));
        let (tx, mut stream) = mpsc::channel(4);
        let (reply, replied) = oneshot::channel();
        let relaying = relay_input_request(
            Some(&s),
            &tx,
            backend_request("sampling/createMessage"),
            reply,
        );
        let client = async {
            let sent: Value = serde_json::from_slice(&stream.recv().await.unwrap()).unwrap();
            assert_eq!(sent["method"], "sampling/createMessage");
            assert_eq!(sent["params"], json!({"maxTokens": 5}));
            let id = sent["id"].as_str().unwrap().to_owned();
            assert!(id.starts_with("mcpgw-ask-"), "the gateway's own id: {id}");
            let result = RawValue::from_string(r#"{"model":"m"}"#.into()).unwrap();
            assert!(
                s.input_requests()
                    .answer(Response::result(protocol::RequestId::string(&id), result))
            );
        };
        tokio::join!(relaying, client);
        assert_eq!(replied.await.unwrap().unwrap().get(), r#"{"model":"m"}"#);
    }

    #[actix_rt::test]
    async fn undeclared_capabilities_and_modern_clients_get_an_error_at_once() {
        let store = SessionStore::new(4, Default::default());
        let s = session(&store, json!({"roots": {}}));
        let (tx, mut stream) = mpsc::channel(4);
        // (session, method, code, what the message says)
        let cases = [
            (
                Some(&*s),
                "sampling/createMessage",
                ErrorCode::MissingRequiredClientCapability,
                "the client did not declare the sampling capability",
            ),
            (
                Some(&*s),
                "elicitation/create",
                ErrorCode::MissingRequiredClientCapability,
                "the client did not declare the elicitation capability",
            ),
            (
                Some(&*s),
                "tasks/get",
                ErrorCode::MethodNotFound,
                "mcpgw does not relay tasks/get to clients",
            ),
            (
                None,
                "roots/list",
                ErrorCode::MethodNotFound,
                "can ask through input_required",
            ),
        ];
        for (session, method, code, says) in cases {
            let (reply, replied) = oneshot::channel();
            relay_input_request(session, &tx, backend_request(method), reply).await;
            let error = replied.await.unwrap().unwrap_err();
            assert_eq!(error.code(), code, "{method}");
            if code == ErrorCode::MissingRequiredClientCapability {
                let capability = method.split('/').next().unwrap();
                assert_eq!(
                    error.data(),
                    Some(&json!({"requiredCapabilities": {capability: {}}})),
                    "{method}"
                );
            }
            assert!(
                error.message().contains(says),
                "{method}: {}",
                error.message()
            );
        }
        assert!(stream.try_recv().is_err(), "nothing was asked");
    }

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
