//! The `asks` tool for a legacy session over HTTP: the call is answered with an SSE stream on which each
//! question (`asking`) goes out as a JSON-RPC request, one after the other; the client POSTs each answer with
//! its `Mcp-Session-Id` (202), and the call's result follows on the stream once every answer is in.
//!
//! Questions waiting for an answer sit in the session's [`Pending`] table, at most [`MAX_PENDING`] of them
//! (more: the call is a tool error). Nothing waits forever: a question unanswered within the state's
//! `answer_within` makes the call a tool error, and a client that hangs up ends the wait at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::HttpResponse;
use actix_web::http::header;
use bytes::Bytes;
use protocol::method::Method;
use protocol::payload::CallToolResponse;
use protocol::validate::Accepts;
use protocol::{Generation, Request, Response};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{State, sse_event};
use crate::asking::{self, Question};
use crate::tools::to_raw;

/// Questions of one session waiting for an answer, at most.
pub(super) const MAX_PENDING: usize = 64;

/// A legacy session's questions waiting for their answers, by the raw JSON of their request ids.
#[derive(Debug, Default)]
pub(super) struct Pending {
    waiting: Mutex<HashMap<String, oneshot::Sender<Response>>>,
    next: AtomicU64,
}

impl Pending {
    /// A new question id (a JSON string) and the receiver of its answer; `None` when the table is full.
    pub(super) fn ask(&self) -> Option<(String, oneshot::Receiver<Response>)> {
        let id = format!("\"asks-{}\"", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if waiting.len() >= MAX_PENDING {
            return None;
        }
        waiting.insert(id.clone(), tx);
        Some((id, rx))
    }

    /// Hands `response` to the question it answers; false when none waits for it.
    pub(super) fn answer(&self, response: Response) -> bool {
        let Some(id) = response.id.as_ref().map(|i| i.raw().to_owned()) else {
            return false;
        };
        let tx = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        tx.is_some_and(|tx| tx.send(response).is_ok())
    }

    /// Stops waiting for question `id`.
    fn forget(&self, id: &str) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Questions waiting now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// How the questions went.
enum Asked {
    /// Every answer, in order.
    Answered(Vec<(Question, Result<Value, String>)>),
    /// The call ends as a tool error with this message.
    Failed(String),
    /// The client hung up: nothing more to send.
    Gone,
}

impl State {
    /// A legacy `tools/call` of `asks` (`request`) in a session speaking `g` that declared `capabilities`.
    pub(super) async fn ask_legacy(
        &self,
        g: Generation,
        request: &Request,
        capabilities: &Value,
        pending: Arc<Pending>,
        accepts: Accepts,
    ) -> HttpResponse {
        let id = request.id.clone();
        let finish = |outcome| self.mock.reply(g, Method::ToolsCall, &id, outcome);
        if let Some(injected) = self.mock.faults_before("asks").await {
            return self.respond(finish(injected), accepts, None).await;
        }
        let questions = asking::questions(g, Some(capabilities));
        if questions.is_empty() || !accepts.sse {
            let result = if questions.is_empty() {
                asking::answered(&[])
            } else {
                CallToolResponse::error(
                    "asks sends its questions on the call's stream: accept text/event-stream",
                )
            };
            return self.respond(finish(to_raw(&result)), accepts, None).await;
        }
        if self.count().await.is_none() {
            return HttpResponse::ServiceUnavailable().finish();
        }
        let (tx, rx) = mpsc::channel::<Bytes>(2);
        let mock = self.mock.clone();
        let deadline = Instant::now() + self.answer_within;
        tokio::spawn(async move {
            let result = match ask_each(&questions, &pending, &tx, deadline).await {
                Asked::Answered(answers) => asking::answered(&answers),
                Asked::Failed(why) => CallToolResponse::error(why),
                Asked::Gone => return,
            };
            let reply = mock.reply(g, Method::ToolsCall, &id, to_raw(&result));
            let _ = tx.send(Bytes::from(sse_event(&reply.body))).await;
        });
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            let chunk = rx.recv().await?;
            Some((Ok::<Bytes, actix_web::Error>(chunk), rx))
        });
        HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .insert_header(("X-Accel-Buffering", "no"))
            .streaming(events)
    }
}

/// Sends each question on `tx` and waits for its answer, all by `deadline`.
async fn ask_each(
    questions: &[Question],
    pending: &Pending,
    tx: &mpsc::Sender<Bytes>,
    deadline: Instant,
) -> Asked {
    let mut answers = Vec::with_capacity(questions.len());
    for &q in questions {
        let Some((id, answer)) = pending.ask() else {
            return Asked::Failed(format!(
                "asks cannot ask more: {MAX_PENDING} questions of this session already wait for answers"
            ));
        };
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}","params":{}}}"#,
            q.method(),
            q.params()
        );
        let answered = tokio::select! {
            sent = tx.send(Bytes::from(sse_event(request.as_bytes()))) => match sent {
                Ok(()) => tokio::select! {
                    a = answer => a.ok(),
                    () = tx.closed() => None,
                    () = tokio::time::sleep_until(deadline) => {
                        pending.forget(&id);
                        return Asked::Failed(format!(
                            "no answer to the {} question ({}) in time", q.key(), q.method()
                        ));
                    }
                },
                Err(_) => None,
            },
            () = tokio::time::sleep_until(deadline) => None,
        };
        let Some(response) = answered else {
            pending.forget(&id);
            return Asked::Gone;
        };
        let answer = match response.body {
            Ok(raw) => Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
            Err(e) => Err(e.message().to_owned()),
        };
        answers.push((q, answer));
    }
    Asked::Answered(answers)
}

#[cfg(test)]
mod tests;
