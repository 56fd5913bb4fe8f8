//! The `ask` operation (`--mix …,ask=N`, `--ask-tool NAME`, `--ask-args JSON`): a `tools/call` of a tool
//! whose server asks the client questions while it runs — `elicitation/create`, `sampling/createMessage`,
//! `roots/list` — answered as a host would (`answer`). Sessions that may ask declare those capabilities
//! (legacy: in `initialize`; 2026-07-28: in the ask's `_meta`).
//!
//! Legacy: the call is POSTed accepting an SSE answer and the stream is read as it comes (`events`). A server
//! request on it is answered by a POST of the JSON-RPC response with the session's `Mcp-Session-Id` and
//! `MCP-Protocol-Version`, which must be accepted with 202 (otherwise the ask ends at once, an `http_error`
//! with that answer's status, counted as refused); then the stream is read on to the call's own response.
//!
//! 2026-07-28: an `input_required` result (`inputRequests`, `requestState`) is followed up by the same call
//! with a new id, `inputResponses` (the answer to each entry of `inputRequests`, under its key) and the
//! `requestState` echoed, at most [`MAX_ROUNDS`] times; still `input_required` after them is `incomplete`. A
//! server request on a 2026-07-28 stream, or an input request of an unknown method, breaks the protocol.
//!
//! One deadline (`--timeout`, from the first POST) bounds every read and POST of an ask: it never hangs. Its
//! latency is the whole exchange.

mod answer;
mod counts;
pub(crate) mod events;

#[cfg(test)]
pub(crate) mod tests;

use std::time::Instant;

use bytes::Bytes;
use protocol::headers::ParamHeader;
use protocol::message::Request;
use serde_json::{Map, Value, json};

pub(crate) use counts::Tally;
pub use counts::{AskEras, AskReport, EraAsks};

use super::request::{
    LegacyHeaders, Template, answer_headers, answering_capabilities, call_params, modern_meta,
};
use super::stats::Outcome;
use super::wire::{Answer, Expect, Failure, Opened, Wire, classify};
use answer::{Reply, reply, response};
use events::{Events, Incoming, incoming};

/// Most `input_required` results of one 2026-07-28 ask that are followed up.
pub(crate) const MAX_ROUNDS: u64 = 4;

/// How a request ended: the HTTP status of the answer that decided it, and the outcome.
type Ended = (Option<u16>, Outcome);

/// The ask of one era, built once per run.
#[derive(Debug, Clone)]
pub(crate) struct AskCall {
    /// The first request.
    first: Template,
    /// 2026-07-28: its `params` (with `_meta`), to which a retry adds `inputResponses` and `requestState`.
    params: Map<String, Value>,
}

impl AskCall {
    /// `tools/call` of `tool` with `args` in a legacy session.
    pub(crate) fn legacy(tool: &str, args: &Map<String, Value>) -> AskCall {
        let params = call_params(tool, args);
        AskCall {
            first: Template::legacy("tools/call", params.clone()),
            params,
        }
    }

    /// `tools/call` of `tool` with `args` from a 2026-07-28 client that answers questions; `headers` are the
    /// tool's `x-mcp-header` annotations.
    pub(crate) fn modern(
        tool: &str,
        args: &Map<String, Value>,
        headers: &[ParamHeader],
    ) -> AskCall {
        let params = call_params(tool, args);
        let first = Template::modern_with(
            "tools/call",
            params.clone(),
            Some(tool),
            headers,
            answering_capabilities(),
        );
        let mut params = params;
        params.insert("_meta".into(), modern_meta(answering_capabilities()));
        AskCall { first, params }
    }

    /// The retry with request id `id`: the call again with `inputResponses` and `requestState`.
    fn retry(&self, id: u64, responses: Map<String, Value>, state: Option<&str>) -> Bytes {
        let mut params = self.params.clone();
        params.insert("inputResponses".into(), Value::Object(responses));
        if let Some(s) = state {
            params.insert("requestState".into(), Value::from(s));
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        Bytes::from(body.to_string())
    }
}

/// How an ask ended, and what it did on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) status: Option<u16>,
    pub(crate) outcome: Outcome,
    pub(crate) tally: Tally,
}

/// A legacy session's ask with request id `id`.
pub(crate) async fn legacy(wire: &Wire, call: &AskCall, session: &LegacyHeaders, id: u64) -> Asked {
    let deadline = Instant::now() + wire.timeout();
    let mut tally = Tally::default();
    let (status, outcome) =
        match legacy_exchange(wire, call, session, id, deadline, &mut tally).await {
            Ok(ended) | Err(ended) => ended,
        };
    Asked {
        status,
        outcome,
        tally,
    }
}

async fn legacy_exchange(
    wire: &Wire,
    call: &AskCall,
    session: &LegacyHeaders,
    id: u64,
    deadline: Instant,
    tally: &mut Tally,
) -> Result<Ended, Ended> {
    let opened = wire
        .open(
            call.first.headers(Some(session)),
            call.first.body(id),
            deadline,
        )
        .await
        .map_err(failed)?;
    let mut stream = Stream::new(opened, id);
    loop {
        match stream.next(deadline).await? {
            Step::Answered(a) => {
                return Ok((Some(a.status), classify(&a, Expect { id, modern: false })));
            }
            Step::Asked(request) => {
                let answer = question(&request);
                let body = response(&request.id, &request.method, &answer);
                let answered = wire
                    .post_by(answer_headers(session), body, deadline)
                    .await
                    .map_err(failed)?;
                if answered.status != 202 {
                    tally.refused += 1;
                    return Err((Some(answered.status), Outcome::HttpError));
                }
                match answer {
                    Reply::Result(_) => tally.questions += 1,
                    Reply::Unknown => tally.declined += 1,
                }
            }
        }
    }
}

/// A 2026-07-28 ask; each of its requests gets an id from `next_id`.
pub(crate) async fn modern(wire: &Wire, call: &AskCall, mut next_id: impl FnMut() -> u64) -> Asked {
    let deadline = Instant::now() + wire.timeout();
    let mut tally = Tally::default();
    let (status, outcome) =
        match modern_exchange(wire, call, &mut next_id, deadline, &mut tally).await {
            Ok(ended) | Err(ended) => ended,
        };
    Asked {
        status,
        outcome,
        tally,
    }
}

async fn modern_exchange(
    wire: &Wire,
    call: &AskCall,
    next_id: &mut impl FnMut() -> u64,
    deadline: Instant,
    tally: &mut Tally,
) -> Result<Ended, Ended> {
    let mut id = next_id();
    let mut body = call.first.body(id);
    loop {
        let opened = wire
            .open(call.first.headers(None), body, deadline)
            .await
            .map_err(failed)?;
        let status = Some(opened.status);
        let answer = match Stream::new(opened, id).next(deadline).await? {
            Step::Answered(a) => a,
            Step::Asked(_) => {
                return Err((
                    status,
                    Outcome::Invalid("a server request on a 2026-07-28 stream"),
                ));
            }
        };
        let outcome = classify(&answer, Expect { id, modern: true });
        if outcome != Outcome::Incomplete {
            return Ok((status, outcome));
        }
        let Some((requests, state)) = input_required(&answer) else {
            return Ok((status, Outcome::Incomplete)); // another kind of result (a task): not followed up
        };
        if tally.rounds >= MAX_ROUNDS {
            return Ok((status, Outcome::Incomplete));
        }
        let mut responses = Map::new();
        for (key, asked) in &requests {
            let method = asked
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match reply(method, asked.get("params")) {
                Reply::Result(r) => {
                    responses.insert(key.clone(), r);
                }
                Reply::Unknown => {
                    return Err((
                        status,
                        Outcome::Invalid("an input request of an unknown method"),
                    ));
                }
            }
        }
        tally.rounds += 1;
        tally.questions += responses.len() as u64;
        id = next_id();
        body = call.retry(id, responses, state.as_deref());
    }
}

/// The `inputRequests` (empty when absent) and `requestState` of an `input_required` result.
fn input_required(answer: &Answer) -> Option<(Map<String, Value>, Option<String>)> {
    let message: Value = serde_json::from_slice(&answer.body).ok()?;
    let result = message.get("result")?;
    if result.get("resultType")?.as_str()? != "input_required" {
        return None;
    }
    let requests = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let state = result
        .get("requestState")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((requests, state))
}

/// The answer to a server's request.
fn question(request: &Request) -> Reply {
    let params: Option<Value> = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok());
    reply(&request.method, params.as_ref())
}

fn failed(f: Failure) -> Ended {
    (None, f.outcome())
}

/// What a response stream brings next.
enum Step {
    /// The response (as a JSON answer with the stream's status).
    Answered(Answer),
    /// A request of the server.
    Asked(Request),
}

/// The answer to request `id`, read as it comes: a JSON body whole, an SSE body event by event.
struct Stream {
    opened: Option<Opened>,
    status: u16,
    event_stream: bool,
    events: Events,
    ended: bool,
    id: u64,
}

impl Stream {
    fn new(opened: Opened, id: u64) -> Stream {
        Stream {
            status: opened.status,
            event_stream: opened.event_stream,
            opened: Some(opened),
            events: Events::default(),
            ended: false,
            id,
        }
    }

    /// The next step, by `deadline`; the end of the stream without a response is an invalid answer.
    async fn next(&mut self, deadline: Instant) -> Result<Step, Ended> {
        if !self.event_stream {
            let opened = self
                .opened
                .take()
                .ok_or((Some(self.status), Outcome::Invalid("no json-rpc response")))?;
            let whole = opened.read_to_end(deadline).await.map_err(failed)?;
            return Ok(Step::Answered(whole));
        }
        loop {
            while let Some(data) = self.events.next_event() {
                match incoming(&data, self.id) {
                    Incoming::Response => {
                        return Ok(Step::Answered(Answer::message(self.status, data.into())));
                    }
                    Incoming::Request(r) => return Ok(Step::Asked(r)),
                    Incoming::Other => {}
                }
            }
            let no_response = (
                Some(self.status),
                Outcome::Invalid("no response in the event stream"),
            );
            if self.ended {
                return Err(no_response);
            }
            let opened = self.opened.as_mut().ok_or(no_response)?;
            match opened.chunk(deadline).await {
                Ok(Some(bytes)) => self.events.feed(&bytes),
                Ok(None) => {
                    self.events.finish();
                    self.ended = true;
                }
                Err(f) => return Err(failed(f)),
            }
        }
    }
}
