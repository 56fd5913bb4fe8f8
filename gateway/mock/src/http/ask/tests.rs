//! The `asks` tool over HTTP: legacy questions on the call's stream answered by POSTs, an unanswered question
//! ending as a tool error, the pending table's bound, and the 2026-07-28 rounds with a forged state refused.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::ServiceResponse;
use actix_web::{App, test, web};
use protocol::{RequestId, Response};
use serde_json::{Value, json};

use super::{MAX_PENDING, Pending};
use crate::dispatch::Mock;
use crate::faults::Rng;
use crate::http::{State, routes};
use crate::tests::parse;

const BOUND: Duration = Duration::from_secs(5);
const ACCEPT_BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");
const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"asks"}}"#;

fn state(answer_within: Duration) -> web::Data<State> {
    let mock = Arc::new(Mock::with_rng(
        &parse(&["--listen", "127.0.0.1:0"]),
        Rng::with_seed(3),
    ));
    web::Data::new(State::new(mock, Box::new(|| {})).answering_within(answer_within))
}

fn post(headers: &[(&str, &str)], body: &str) -> test::TestRequest {
    let mut req = test::TestRequest::post().uri("/mcp").insert_header(JSON);
    for h in headers {
        req = req.insert_header(*h);
    }
    req.set_payload(body.to_owned())
}

/// The service's answer to a `TestRequest`, in time.
macro_rules! call {
    ($app:expr, $req:expr) => {
        tokio::time::timeout(BOUND, test::call_service($app, $req.to_request()))
            .await
            .expect("an answer in time")
    };
}

/// A legacy session of `version` declaring `capabilities`: its id.
macro_rules! session {
    ($app:expr, $version:expr, $capabilities:expr) => {{
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": $version, "capabilities": $capabilities,
            "clientInfo": {"name": "t", "version": "1"}}});
        let resp = call!($app, post(&[ACCEPT_BOTH], &init.to_string()));
        resp.headers()
            .get("mcp-session-id")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }};
}

/// Reads SSE events from a streamed body.
struct Events<B> {
    body: Pin<Box<B>>,
    buf: Vec<u8>,
}

impl<B: MessageBody> Events<B>
where
    B::Error: std::fmt::Debug,
{
    fn new(resp: ServiceResponse<B>) -> Events<B> {
        assert_eq!(
            resp.headers().get("content-type").unwrap(),
            "text/event-stream"
        );
        Events {
            body: Box::pin(resp.into_body()),
            buf: Vec::new(),
        }
    }

    /// The next event's data as JSON; `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..i + 2).collect();
                let text = String::from_utf8(event).unwrap();
                let data: String = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                return Some(serde_json::from_str(&data).unwrap());
            }
            let chunk = tokio::time::timeout(BOUND, poll_fn(|cx| self.body.as_mut().poll_next(cx)))
                .await
                .expect("an event in time")?;
            self.buf.extend_from_slice(&chunk.unwrap());
        }
    }
}

#[actix_web::test]
async fn a_legacy_call_asks_on_its_stream_and_answers_with_the_answers() {
    let data = state(BOUND);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let sid = session!(
        &app,
        "2025-11-25",
        json!({"elicitation": {}, "sampling": {}})
    );
    let in_session = [
        ACCEPT_BOTH,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let mut events = Events::new(call!(&app, post(&in_session, CALL)));
    let answers = [
        json!({"action": "accept", "content": {"name": "n"}}),
        json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
    ];
    for (method, answer) in ["elicitation/create", "sampling/createMessage"]
        .iter()
        .zip(&answers)
    {
        let asked = events.next().await.expect("a question");
        assert_eq!(asked["method"], *method, "{asked}");
        let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer});
        let posted = call!(&app, post(&in_session, &reply.to_string()));
        assert_eq!(posted.status().as_u16(), 202);
    }
    let done = events.next().await.expect("the result");
    assert_eq!(done["id"], 7);
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("elicitation: {}\nsampling: {}", answers[0], answers[1])
    );
    assert!(done["result"].get("isError").is_none(), "{done}");
    assert!(
        events.next().await.is_none(),
        "the stream ends with the result"
    );
    let entry = data.sessions.get(&sid).map(|e| e.pending.clone()).unwrap();
    assert_eq!(entry.len(), 0);
}

#[actix_web::test]
async fn an_unanswered_question_ends_the_call_with_a_tool_error() {
    let data = state(Duration::from_millis(50));
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let sid = session!(&app, "2025-06-18", json!({"elicitation": {}}));
    let in_session = [
        ACCEPT_BOTH,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let mut events = Events::new(call!(&app, post(&in_session, CALL)));
    assert_eq!(events.next().await.unwrap()["method"], "elicitation/create");
    let done = events.next().await.expect("the result");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "no answer to the elicitation question (elicitation/create) in time"
    );
    let entry = data.sessions.get(&sid).map(|e| e.pending.clone()).unwrap();
    assert_eq!(entry.len(), 0, "the question is forgotten");
}

#[actix_web::test]
async fn what_a_legacy_session_declared_decides_what_is_asked() {
    let data = state(BOUND);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    // Nothing declared: a plain JSON result saying so.
    let sid = session!(&app, "2025-11-25", json!({"roots": {}}));
    let h = [
        ACCEPT_BOTH,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let resp = call!(&app, post(&h, CALL));
    let body: Value = serde_json::from_slice(&test::read_body(resp).await).unwrap();
    assert_eq!(
        body["result"]["content"][0]["text"],
        "nothing asked: the client declared neither elicitation nor sampling"
    );
    // 2025-03-26 has no elicitation: only the sampling question.
    let sid = session!(
        &app,
        "2025-03-26",
        json!({"elicitation": {}, "sampling": {}})
    );
    let h = [
        ACCEPT_BOTH,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-03-26"),
    ];
    let mut events = Events::new(call!(&app, post(&h, CALL)));
    let asked = events.next().await.unwrap();
    assert_eq!(asked["method"], "sampling/createMessage");
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "no"}});
    assert_eq!(
        call!(&app, post(&h, &reply.to_string())).status().as_u16(),
        202
    );
    let done = events.next().await.unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"],
        "sampling: refused: no"
    );
    // A client that accepts only JSON cannot be asked.
    let json_only = [("Accept", "application/json"), h[1], h[2]];
    let resp = call!(&app, post(&json_only, CALL));
    let body: Value = serde_json::from_slice(&test::read_body(resp).await).unwrap();
    assert_eq!(body["result"]["isError"], true, "{body}");
}

#[actix_web::test]
async fn the_pending_table_is_bounded_and_answers_reach_their_question() {
    let pending = Pending::default();
    let mut asked: Vec<_> = (0..MAX_PENDING)
        .map(|_| pending.ask().expect("room"))
        .collect();
    assert!(
        pending.ask().is_none(),
        "the table refuses question {}",
        MAX_PENDING + 1
    );
    let (id, mut rx) = asked.remove(0);
    let id =
        RequestId::from_boxed_raw(serde_json::value::RawValue::from_string(id).unwrap()).unwrap();
    let result = serde_json::value::RawValue::from_string("{}".into()).unwrap();
    assert!(pending.answer(Response::result(id.clone(), result.clone())));
    assert!(rx.try_recv().is_ok());
    assert!(
        !pending.answer(Response::result(id, result)),
        "answered once"
    );
    assert!(pending.ask().is_some(), "room again");
}

#[actix_web::test]
async fn a_modern_call_takes_two_rounds_and_refuses_a_forged_state() {
    let data = state(BOUND);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}});
    let h = [
        ACCEPT_BOTH,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "asks"),
    ];
    let body = |id: u64, extra: Value| {
        let mut params = json!({"name": "asks", "_meta": meta});
        if let Value::Object(m) = extra {
            params.as_object_mut().unwrap().extend(m);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    macro_rules! read {
        ($resp:expr) => {{
            let resp = $resp;
            let status = resp.status().as_u16();
            let v: Value = serde_json::from_slice(&test::read_body(resp).await).unwrap();
            (status, v)
        }};
    }
    let (status, first) = read!(call!(&app, post(&h, &body(1, json!({})))));
    assert_eq!(status, 200, "{first}");
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let state = r["requestState"].as_str().unwrap();
    let responses = json!({"elicitation": {"action": "decline"}, "sampling": {"role": "assistant",
        "content": {"type": "text", "text": "t"}, "model": "m"}});
    let retry = json!({"inputResponses": responses, "requestState": state});
    let (_, done) = read!(call!(&app, post(&h, &body(2, retry))));
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("elicitation: {\"action\":\"decline\"}\nsampling: "),
        "{text}"
    );
    let forged = json!({"inputResponses": responses, "requestState": format!("{state}x")});
    let (_, refused) = read!(call!(&app, post(&h, &body(3, forged))));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("forged or garbled"),
        "{refused}"
    );
}
