//! Fake HTTP MCP backends, served in-process by actix-web on 127.0.0.1 (port chosen at run time): a modern
//! (2026-07-28) server that validates the routing headers, a legacy Streamable HTTP server with sessions
//! (that can expire a session once, and whose `sample` tool asks `sampling/createMessage` on its response
//! stream and waits for the answer; `resumable` closes its response stream early and answers on the GET that
//! resumes it; `ask_on_get` asks on the session's GET stream), and a 2024-11-05 HTTP+SSE server. Each records what it received.
//! The modern server also asks `sampling/createMessage` on the response stream of `sample` (as SDK servers
//! do in their stateless mode) and answers `chatty` with several messages in one JSON body.
//! The modern server keeps `subscriptions/listen` streams open (acknowledgement first, then keep-alive
//! comments) and sends `notifications/resources/updated` on them when a test asks ([`Fake::update`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

#[path = "fake_http_sample.rs"]
mod sample;
#[path = "fake_http_streams.rs"]
mod streams;

/// Which backend a fake server plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 2026-07-28 Streamable HTTP.
    Modern,
    /// 2025-06-18 Streamable HTTP with sessions.
    Legacy,
    /// 2024-11-05 HTTP+SSE.
    HttpSse,
}

/// One request a fake server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub http_method: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// A fake server's state.
pub struct Fake {
    kind: Mutex<Kind>,
    received: Mutex<Vec<Received>>,
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicUsize,
    /// `initialize` requests answered.
    pub initializes: AtomicUsize,
    calls: AtomicUsize,
    /// Legacy: the session expires (404) on this `tools/call`, once.
    expire_on_call: Option<usize>,
    streams: Mutex<HashMap<String, mpsc::Sender<Bytes>>>,
    listeners: Mutex<Vec<Listener>>,
    /// The requests asked on response streams waiting for the client's answer, by id.
    answers: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Legacy: the `resumable` call whose response stream was closed early, waiting for the GET that
    /// resumes it.
    resumable: Mutex<Option<Value>>,
}

/// One open `subscriptions/listen` stream of the modern server.
struct Listener {
    id: Value,
    filter: Value,
    tx: mpsc::Sender<Bytes>,
}

impl Fake {
    /// Makes the server play another kind from now on (an upgrade or downgrade behind the same URL).
    pub fn become_kind(&self, kind: Kind) {
        *self.kind.lock().unwrap() = kind;
    }

    /// What it received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until a received request satisfies `f`; that request.
    pub async fn wait_for(&self, f: impl Fn(&Received) -> bool) -> Received {
        let deadline = tokio::time::Instant::now() + crate::support::WAIT;
        loop {
            if let Some(r) = self.received().into_iter().find(|r| f(r)) {
                return r;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out; received: {:#?}",
                self.received()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Modern: sends `notifications/resources/updated` for `uri` on every open listen stream subscribed to
    /// it; on how many.
    pub fn update(&self, uri: &str) -> usize {
        let listeners = self.listeners.lock().unwrap();
        let mut sent = 0;
        for l in listeners.iter().filter(|l| !l.tx.is_closed()) {
            let subscribed = l.filter["resourceSubscriptions"]
                .as_array()
                .is_some_and(|uris| uris.iter().any(|u| u == uri));
            if subscribed {
                let n = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": uri, "_meta": {"io.modelcontextprotocol/subscriptionId": l.id}}});
                if l.tx.try_send(sse(&n)).is_ok() {
                    sent += 1;
                }
            }
        }
        sent
    }

    /// Modern: how many listen streams the client still holds open.
    pub fn open_listeners(&self) -> usize {
        let mut listeners = self.listeners.lock().unwrap();
        listeners.retain(|l| !l.tx.is_closed());
        listeners.len()
    }

    /// Modern: ends every listen stream (as a server restarting its subscriptions would).
    pub fn end_listeners(&self) {
        self.listeners.lock().unwrap().clear();
    }

    /// The received JSON-RPC requests and notifications with this method.
    pub fn with_method(&self, method: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.json()["method"] == method)
            .collect()
    }
}

/// A running fake server; stopped on drop.
pub struct Server {
    pub url: String,
    pub fake: Arc<Fake>,
    handle: ServerHandle,
}

impl Server {
    /// Stops the server and waits until it stopped (its port is free again).
    pub async fn stop(&self) {
        self.handle.stop(false).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The stop command is sent at once; nobody needs to wait for it.
        drop(self.handle.stop(false));
    }
}

/// Starts a fake server of `kind` on a free port.
pub fn start(kind: Kind) -> Server {
    start_on(kind, 0, None)
}

/// Starts a legacy server whose session expires on the `n`th `tools/call`.
pub fn start_expiring(n: usize) -> Server {
    start_on(Kind::Legacy, 0, Some(n))
}

/// Starts a fake server of `kind` on `port` (0: any).
pub fn start_on(kind: Kind, port: u16, expire_on_call: Option<usize>) -> Server {
    let fake = Arc::new(Fake {
        kind: Mutex::new(kind),
        received: Mutex::new(Vec::new()),
        sessions: Mutex::new(HashSet::new()),
        next_session: AtomicUsize::new(0),
        initializes: AtomicUsize::new(0),
        calls: AtomicUsize::new(0),
        expire_on_call,
        streams: Mutex::new(HashMap::new()),
        listeners: Mutex::new(Vec::new()),
        answers: Mutex::new(HashMap::new()),
        resumable: Mutex::new(None),
    });
    let data = web::Data::from(Arc::clone(&fake));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(serve))
    })
    .workers(1)
    .disable_signals()
    .shutdown_timeout(0)
    .bind(("127.0.0.1", port))
    .expect("bind a loopback port");
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Server {
        url: format!("http://127.0.0.1:{port}/mcp"),
        fake,
        handle,
    }
}

async fn serve(req: HttpRequest, body: Bytes, fake: web::Data<Fake>) -> HttpResponse {
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let received = Received {
        http_method: req.method().as_str().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    fake.received.lock().unwrap().push(received.clone());
    let kind = *fake.kind.lock().unwrap();
    match (kind, req.method().as_str(), req.path()) {
        (Kind::Modern, "POST", "/mcp") => modern(&fake, &received).await,
        (Kind::Modern, _, _) => HttpResponse::MethodNotAllowed().finish(),
        (Kind::Legacy, "POST", "/mcp") => legacy(&fake, &received).await,
        (Kind::Legacy, "GET", "/mcp") => streams::get(&fake, &received),
        (Kind::Legacy, "DELETE", "/mcp") => {
            if let Some(s) = received.headers.get("mcp-session-id") {
                fake.sessions.lock().unwrap().remove(s);
            }
            HttpResponse::Ok().finish()
        }
        (Kind::HttpSse, "GET", "/mcp") => sse_open(&fake),
        (Kind::HttpSse, "POST", "/messages") => sse_message(&fake, &req, &received),
        _ => HttpResponse::MethodNotAllowed().finish(),
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn reply(status: StatusCode, body: &Value) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/json")
        .body(body.to_string())
}

fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

fn events(messages: &[Value]) -> HttpResponse {
    // A priming event (id, empty data) first, as 2025-11-25 servers send.
    let mut body = String::from("id: 0\ndata: \n\n");
    for m in messages {
        body.push_str(&format!("event: message\ndata: {m}\n\n"));
    }
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .body(body)
}

async fn modern(fake: &Fake, r: &Received) -> HttpResponse {
    let msg = r.json();
    let id = &msg["id"];
    let method = msg["method"].as_str().unwrap_or("");
    let mismatch = |why: &str| reply(StatusCode::BAD_REQUEST, &error(id, -32020, why));
    if msg.get("id").is_none() {
        return HttpResponse::Accepted().finish();
    }
    if msg.get("method").is_none() {
        // the client answering a request asked on a response stream (SDK servers in stateless mode)
        return answered(fake, &msg);
    }
    if r.headers.get("mcp-protocol-version").map(String::as_str) != Some("2026-07-28") {
        return mismatch("MCP-Protocol-Version missing or wrong");
    }
    if r.headers.get("mcp-method").map(String::as_str) != Some(method) {
        return mismatch("Mcp-Method does not match the body");
    }
    if msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
        return reply(StatusCode::BAD_REQUEST, &error(id, -32602, "missing _meta"));
    }
    match method {
        "server/discover" => reply(
            StatusCode::OK,
            &result(
                id,
                json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-http-modern", "version": "2"}},
                    "resultType": "complete", "ttlMs": 0, "cacheScope": "private"
                }),
            ),
        ),
        "subscriptions/listen" => listen(fake, id, &msg["params"]["notifications"]),
        "tools/call" => {
            let name = msg["params"]["name"].as_str().unwrap_or("");
            let header = r.headers.get("mcp-name").map(|v| {
                protocol::headers::decode_value(v.as_bytes())
                    .unwrap()
                    .into_owned()
            });
            if header.as_deref() != Some(name) {
                return mismatch("Mcp-Name does not match the body");
            }
            let args = &msg["params"]["arguments"];
            match name {
                "regional" => {
                    if r.headers.get("mcp-param-region").map(String::as_str)
                        != args["region"].as_str()
                    {
                        return mismatch("Mcp-Param-Region does not match the body");
                    }
                    reply(StatusCode::OK, &result(id, text(&r.body)))
                }
                "sample" => {
                    let n = fake.calls.fetch_add(1, Ordering::SeqCst) + 1;
                    sample::sample(fake, id, n)
                }
                // several messages in one JSON body, one per line, the response last
                "chatty" => HttpResponse::Ok()
                    .content_type("application/json")
                    .body(format!(
                        "{}\n{}\n{}\n",
                        json!({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "chatty"}}),
                        json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": msg["params"]["_meta"]["progressToken"],
                                      "progress": 1, "total": 1}}),
                        result(id, text("chatted")),
                    )),
                "stream" => events(&[
                    json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": 1, "progress": 0.5}}),
                    result(id, text("streamed")),
                ]),
                "sleep" => {
                    let ms = args["ms"].as_u64().unwrap_or(1000);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    reply(StatusCode::OK, &result(id, text("slept")))
                }
                _ => reply(StatusCode::OK, &result(id, text(&r.body))),
            }
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            &error(id, -32601, "method not found"),
        ),
    }
}

/// One SSE `message` event.
fn sse(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// A listen stream: the acknowledgement (echoing the filter), then what [`Fake::update`] sends, with a
/// keep-alive comment every 100 ms; it ends when the client drops it or [`Fake::end_listeners`] is called.
fn listen(fake: &Fake, id: &Value, filter: &Value) -> HttpResponse {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": filter, "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
    tx.try_send(sse(&ack)).unwrap();
    fake.listeners.lock().unwrap().push(Listener {
        id: id.clone(),
        filter: filter.clone(),
        tx,
    });
    let ticks = tokio::time::interval(Duration::from_millis(100));
    let body = futures_util::stream::unfold((rx, ticks), |(mut rx, mut ticks)| async move {
        let chunk = tokio::select! {
            m = rx.recv() => m?,
            _ = ticks.tick() => Bytes::from_static(b":\n\n"),
        };
        Some((Ok::<_, actix_web::Error>(chunk), (rx, ticks)))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body)
}

/// The client's answer to one of the requests asked on a response stream: handed to the stream waiting for
/// it.
fn answered(fake: &Fake, msg: &Value) -> HttpResponse {
    let waiting = msg["id"]
        .as_str()
        .and_then(|id| fake.answers.lock().unwrap().remove(id));
    if let Some(tx) = waiting {
        let _ = tx.send(msg.clone());
    }
    HttpResponse::Accepted().finish()
}

async fn legacy(fake: &Fake, r: &Received) -> HttpResponse {
    let msg = r.json();
    let id = &msg["id"];
    let Some(method) = msg["method"].as_str() else {
        return answered(fake, &msg);
    };
    if method == "server/discover" {
        return HttpResponse::BadRequest().body("Bad Request: No valid session ID provided");
    }
    if method == "initialize" {
        let n = fake.next_session.fetch_add(1, Ordering::SeqCst) + 1;
        let session = format!("session-{n}");
        fake.sessions.lock().unwrap().insert(session.clone());
        fake.initializes.fetch_add(1, Ordering::SeqCst);
        let body = result(
            id,
            json!({"protocolVersion": "2025-06-18",
                   "capabilities": {"tools": {}, "resources": {"subscribe": true}},
                   "serverInfo": {"name": "fake-http-legacy", "version": "1"}}),
        );
        return HttpResponse::Ok()
            .content_type("application/json")
            .insert_header(("Mcp-Session-Id", session))
            .body(body.to_string());
    }
    let Some(session) = r.headers.get("mcp-session-id") else {
        return HttpResponse::BadRequest().body("missing session");
    };
    if !fake.sessions.lock().unwrap().contains(session) {
        return HttpResponse::NotFound().body("session not found");
    }
    if r.headers.get("mcp-protocol-version").map(String::as_str) != Some("2025-06-18") {
        return HttpResponse::BadRequest().body("bad protocol version header");
    }
    if msg.get("id").is_none() {
        return HttpResponse::Accepted().finish();
    }
    match method {
        "tools/call" => {
            let n = fake.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if fake.expire_on_call == Some(n) {
                fake.sessions.lock().unwrap().remove(session);
                return HttpResponse::NotFound().body("session expired");
            }
            let args = &msg["params"]["arguments"];
            match msg["params"]["name"].as_str().unwrap_or("") {
                "sleep" => {
                    let ms = args["ms"].as_u64().unwrap_or(1000);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    reply(StatusCode::OK, &result(id, text("slept")))
                }
                "sample" => sample::sample(fake, id, n),
                "resumable" => streams::resumable(fake, id),
                "ask_on_get" => streams::ask_on_get(fake, session, id, n).await,
                "ask_client" => events(&[
                    json!({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"}),
                    result(id, text("asked")),
                ]),
                _ => reply(StatusCode::OK, &result(id, text(&r.body))),
            }
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            reply(StatusCode::OK, &result(id, json!({})))
        }
        _ => reply(StatusCode::OK, &error(id, -32601, "method not found")),
    }
}

fn sse_open(fake: &Fake) -> HttpResponse {
    let n = fake.next_session.fetch_add(1, Ordering::SeqCst) + 1;
    let session = format!("sse-{n}");
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    fake.streams.lock().unwrap().insert(session.clone(), tx);
    let endpoint = format!("event: endpoint\ndata: /messages?sessionId={session}\n\n");
    let messages = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, actix_web::Error>(b), rx))
    });
    let body =
        futures_util::stream::once(async move { Ok::<_, actix_web::Error>(Bytes::from(endpoint)) })
            .chain(messages);
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}

fn sse_message(fake: &Fake, req: &HttpRequest, r: &Received) -> HttpResponse {
    let session = req
        .query_string()
        .strip_prefix("sessionId=")
        .unwrap_or("")
        .to_owned();
    let Some(tx) = fake.streams.lock().unwrap().get(&session).cloned() else {
        return HttpResponse::NotFound().finish();
    };
    let msg = r.json();
    let id = &msg["id"];
    let mut out = Vec::new();
    match (msg["method"].as_str(), msg.get("id").is_some()) {
        (Some("initialize"), true) => {
            fake.initializes.fetch_add(1, Ordering::SeqCst);
            out.push(result(
                id,
                json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "fake-http-sse", "version": "0"}}),
            ));
        }
        (Some("tools/call"), true) => {
            if msg["params"]["name"] == "ask_client" {
                out.push(json!({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"}));
                out.push(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
            }
            out.push(result(id, text(&r.body)));
        }
        (Some(_), true) => out.push(error(id, -32601, "method not found")),
        // notifications, and the client's answers to our requests
        _ => {}
    }
    for m in out {
        let _ = tx.try_send(Bytes::from(format!("event: message\ndata: {m}\n\n")));
    }
    HttpResponse::Accepted().finish()
}
