//! The legacy fake's `sample` tool: a request asked on the response stream, answered by the client in a
//! separate POST, before the call's result.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{Fake, result, sse, text};
use actix_web::HttpResponse;

/// Asks `sampling/createMessage` on the response stream, then answers the call with the model's text once
/// the client's answer arrived (or "no answer" after 10 s).
pub(super) fn sample(fake: &Fake, id: &Value, n: usize) -> HttpResponse {
    let asked = format!("srv-sample-{n}");
    let (tx, rx) = oneshot::channel();
    fake.answers.lock().unwrap().insert(asked.clone(), tx);
    let ask = json!({"jsonrpc": "2.0", "id": asked, "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 5}});
    let first = sse(&ask);
    let id = id.clone();
    let last = async move {
        let answer = tokio::time::timeout(Duration::from_secs(10), rx).await;
        let said = match answer {
            Ok(Ok(a)) => match a["result"]["content"]["text"].as_str() {
                Some(t) => format!("sampled: {t}"),
                None => format!("refused: {}", a["error"]),
            },
            _ => "no answer".to_owned(),
        };
        Ok::<_, actix_web::Error>(sse(&result(&id, text(&said))))
    };
    let body = futures_util::stream::once(async move { Ok::<_, actix_web::Error>(first) })
        .chain(futures_util::stream::once(last));
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}
