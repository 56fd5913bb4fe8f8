//! One step of a script on the wire, for one session: its request built for the session's era (templated
//! values filled), sent and checked as every request is. A `tools/call` goes the `ask` way, so that a
//! server's questions are answered; `subscriptions/listen` opens its stream, checks it and holds it.
//!
//! It must not record anything nor wait past its bounds: the request deadline for every exchange, and a
//! held stream ends when `stop` is cancelled (the run's duration) or its `hold` has passed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protocol::headers::ParamHeader;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::template::Fill;
use super::{Action, Reference};
use crate::ask::events::{Events, Incoming, incoming};
use crate::ask::{AskCall, Tally};
use crate::request::{ACCEPT, Template, page_params, read_params};
use crate::session::{Ctx, Ended, Session};
use crate::stats::Outcome;
use crate::wire::{Answer, Expect, Opened, classify, classify_bare};

/// What a step came to: how it ended, its latency (a held stream: until it was open and acknowledged),
/// and for a call what its questions came to.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) ended: Ended,
    pub(crate) latency: Duration,
    pub(crate) tally: Option<Tally>,
}

/// The `x-mcp-header` annotations of the tools the scenario calls (2026-07-28 requests mirror them).
pub(crate) type Annotations = HashMap<String, Vec<ParamHeader>>;

/// Runs `action` for `session`.
pub(crate) async fn perform(
    ctx: &Ctx,
    session: &Session,
    action: &Action,
    fill: &mut Fill<'_>,
    annotations: &Annotations,
    stop: &CancellationToken,
) -> Done {
    let start = Instant::now();
    let modern = session.is_modern();
    let template = |method: &'static str, params: Map<String, Value>, name: Option<&str>| {
        if modern {
            Template::modern(method, params, name, &[])
        } else {
            Template::legacy(method, params)
        }
    };
    let done = |ended: Ended| Done {
        ended,
        latency: start.elapsed(),
        tally: None,
    };
    match action {
        Action::Handshake => done(session.churn(ctx).await),
        Action::ToolsList => {
            let t = template("tools/list", page_params(None), None);
            done(session.send(ctx, &t).await)
        }
        Action::ResourcesRead { uri } => {
            let uri = text(uri.fill(fill));
            let t = template("resources/read", read_params(&uri), Some(&uri));
            done(session.send(ctx, &t).await)
        }
        Action::PromptsGet { prompt, arguments } => {
            let mut params = Map::new();
            params.insert("name".into(), Value::from(prompt.as_str()));
            params.insert("arguments".into(), arguments.fill(fill));
            let t = template("prompts/get", params, Some(prompt));
            done(session.send(ctx, &t).await)
        }
        Action::Complete {
            reference,
            argument,
            value,
        } => {
            let reference = match reference {
                Reference::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
                Reference::Resource(uri) => json!({"type": "ref/resource", "uri": uri}),
            };
            let mut params = Map::new();
            params.insert("ref".into(), reference);
            let value = text(value.fill(fill));
            params.insert("argument".into(), json!({"name": argument, "value": value}));
            let t = template("completion/complete", params, None);
            done(session.send(ctx, &t).await)
        }
        Action::ToolsCall { tool, arguments } => {
            let args = match arguments.fill(fill) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let call = if modern {
                let headers = annotations.get(tool).map_or(&[][..], Vec::as_slice);
                AskCall::modern(tool, &args, headers)
            } else {
                AskCall::legacy(tool, &args)
            };
            let asked = session.ask_with(ctx, &call).await;
            Done {
                ended: (asked.status, asked.outcome),
                latency: start.elapsed(),
                tally: Some(asked.tally),
            }
        }
        Action::Listen { hold } => {
            let until = hold.map(|h| start + h);
            let (ended, opened) = if modern {
                listen_modern(ctx, session).await
            } else {
                listen_legacy(ctx, session).await
            };
            let latency = start.elapsed();
            if let Some(stream) = opened {
                held(stream, until, stop).await;
            }
            Done {
                ended,
                latency,
                tally: None,
            }
        }
    }
}

/// A string value as it is, anything else as JSON text.
fn text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// Legacy: the session's standalone stream, `GET` accepting `text/event-stream`.
async fn listen_legacy(ctx: &Ctx, session: &Session) -> (Ended, Option<Opened>) {
    let session_headers = match session.legacy_headers(ctx).await {
        Ok(h) => h,
        Err(ended) => return (ended, None),
    };
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_static("accept"),
        HeaderValue::from_static("text/event-stream"),
    );
    session_headers.apply(&mut h);
    let deadline = Instant::now() + ctx.wire.timeout();
    match ctx.wire.get(h, deadline).await {
        Err(f) => ((None, f.outcome()), None),
        Ok(o) if o.status != 200 => ((Some(o.status), classify_bare(o.status, &[])), None),
        Ok(o) if !o.event_stream => (
            (
                Some(o.status),
                Outcome::Invalid("listen: not an event stream"),
            ),
            None,
        ),
        Ok(o) => ((Some(o.status), Outcome::Ok), Some(o)),
    }
}

/// 2026-07-28: `subscriptions/listen` for every list change; open once its first message, the
/// acknowledgement tagged with the request's id, is in.
async fn listen_modern(ctx: &Ctx, session: &Session) -> (Ended, Option<Opened>) {
    let mut params = Map::new();
    params.insert(
        "notifications".into(),
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
    );
    let t = Template::modern("subscriptions/listen", params, None, &[]);
    let id = session.id();
    let expect = Expect { id, modern: true };
    let deadline = Instant::now() + ctx.wire.timeout();
    let mut h = t.headers(None);
    h.insert(
        HeaderName::from_static("accept"),
        HeaderValue::from_static(ACCEPT),
    );
    let mut opened = match ctx.wire.open(h, t.body(id), deadline).await {
        Ok(o) => o,
        Err(f) => return ((None, f.outcome()), None),
    };
    let status = Some(opened.status);
    if !opened.event_stream {
        // An error (or a result ending the subscription at once): checked as an answer.
        return match opened.read_to_end(deadline).await {
            Ok(a) => ((status, classify(&a, expect)), None),
            Err(f) => ((status, f.outcome()), None),
        };
    }
    let mut events = Events::default();
    loop {
        if let Some(data) = events.next_event() {
            if let Incoming::Response = incoming(&data, id) {
                let a = Answer::message(opened.status, data.into());
                return ((status, classify(&a, expect)), None);
            }
            let ended = if acknowledges(&data, id) {
                Outcome::Ok
            } else {
                Outcome::Invalid(
                    "listen: the first message is not notifications/subscriptions/acknowledged for it",
                )
            };
            let ok = ended == Outcome::Ok;
            return ((status, ended), ok.then_some(opened));
        }
        match opened.chunk(deadline).await {
            Ok(Some(bytes)) => events.feed(&bytes),
            Ok(None) => {
                return (
                    (
                        status,
                        Outcome::Invalid("listen: the stream ended before its acknowledgement"),
                    ),
                    None,
                );
            }
            Err(f) => return ((status, f.outcome()), None),
        }
    }
}

/// Whether `data` is `notifications/subscriptions/acknowledged` for subscription `id`.
fn acknowledges(data: &str, id: u64) -> bool {
    let Ok(m) = serde_json::from_str::<Value>(data) else {
        return false;
    };
    m.get("method").and_then(Value::as_str) == Some("notifications/subscriptions/acknowledged")
        && m.pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId")
            .is_some_and(|s| s.as_u64() == Some(id) || s.as_str() == Some(&id.to_string()))
}

/// Reads (and drops) what a held stream brings until `until`, `stop`, or its end.
async fn held(mut stream: Opened, until: Option<Instant>, stop: &CancellationToken) {
    // `chunk` needs a deadline: the hold's, else far enough that `stop` ends it first.
    let deadline = until.unwrap_or_else(|| Instant::now() + Duration::from_secs(7 * 86_400));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            next = stream.chunk(deadline) => match next {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acknowledgement_must_carry_the_listen_id() {
        let ack = |sid: Value| {
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": {}, "_meta": {"io.modelcontextprotocol/subscriptionId": sid}}})
            .to_string()
        };
        assert!(acknowledges(&ack(json!(7)), 7));
        assert!(acknowledges(&ack(json!("7")), 7));
        assert!(!acknowledges(&ack(json!(8)), 7));
        let other =
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string();
        assert!(!acknowledges(&other, 7));
        assert!(!acknowledges("not json", 7));
    }
}
