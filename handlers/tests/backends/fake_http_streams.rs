//! The legacy fake's GET streams: the session's standalone stream (a `list_changed` first, then whatever
//! `ask_on_get` sends), and the resumption of the `resumable` tool's response stream, which the server
//! closes after a priming event (`id: ev-1`, `retry: 300`) and answers on the GET that carries
//! `Last-Event-ID: ev-1` (2025-11-25, SEP-1699).

use std::time::Duration;

use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::{Fake, Received, reply, result, sse, text};

/// The `resumable` tool: a priming event, then the stream ends without the response.
pub(super) fn resumable(fake: &Fake, id: &Value) -> HttpResponse {
    *fake.resumable.lock().unwrap() = Some(id.clone());
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .body("id: ev-1\nretry: 300\ndata: \n\n")
}

/// A GET: resumes the `resumable` call's stream when it names `ev-1`, else opens the session's stream.
pub(super) fn get(fake: &Fake, r: &Received) -> HttpResponse {
    let Some(session) = r
        .headers
        .get("mcp-session-id")
        .filter(|s| fake.sessions.lock().unwrap().contains(*s))
    else {
        return HttpResponse::NotFound().finish();
    };
    if r.headers.get("last-event-id").map(String::as_str) == Some("ev-1") {
        let Some(id) = fake.resumable.lock().unwrap().take() else {
            return HttpResponse::NotFound().finish();
        };
        let answer = result(&id, text("resumed"));
        return HttpResponse::Ok()
            .content_type("text/event-stream")
            .body(format!("id: ev-2\ndata: {answer}\n\n"));
    }
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    fake.streams.lock().unwrap().insert(session.clone(), tx);
    let first = format!(
        "data: {}\n\n",
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    let later = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, actix_web::Error>(b), rx))
    });
    let body =
        futures_util::stream::once(async move { Ok::<_, actix_web::Error>(Bytes::from(first)) })
            .chain(later);
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}

/// The `ask_on_get` tool: asks `sampling/createMessage` on the session's GET stream (as SDK servers do for
/// a request made without a related request id), then answers the call with what the client said.
pub(super) async fn ask_on_get(fake: &Fake, session: &str, id: &Value, n: usize) -> HttpResponse {
    let asked = format!("srv-get-{n}");
    let (tx, rx) = oneshot::channel();
    fake.answers.lock().unwrap().insert(asked.clone(), tx);
    let ask = json!({"jsonrpc": "2.0", "id": asked, "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 5}});
    let stream = fake.streams.lock().unwrap().get(session).cloned();
    let said = match stream {
        Some(get) if get.send(sse(&ask)).await.is_ok() => {
            match tokio::time::timeout(Duration::from_secs(10), rx).await {
                Ok(Ok(a)) => match a["result"]["content"]["text"].as_str() {
                    Some(t) => format!("sampled on get: {t}"),
                    None => format!("refused: {}", a["error"]),
                },
                _ => "no answer".to_owned(),
            }
        }
        _ => "no get stream".to_owned(),
    };
    reply(actix_web::http::StatusCode::OK, &result(id, text(&said)))
}
