//! A small dual-era MCP server over HTTP/1.1 on a loopback port, for the ask tests: raw tokio sockets, one
//! behaviour per tool.
//!
//! - `asks`: legacy, an SSE answer carrying a progress notification, a `ping` (not answered by a host) and an
//!   `elicitation/create` (name: string, age: integer), the result once the elicitation's answer is in ("hello NAME, AGE"; `isError` if the answer is not the
//!   expected one); 2026-07-28, `input_required` with an elicitation, a sampling and a roots request and the
//!   state `st-1`, then the result when the retry carries the expected `inputResponses` and that state.
//! - `refused`: legacy, the question's answer POST is refused with 403.
//! - `silent`: the question is asked (legacy: its answer accepted; 2026-07-28: the retry taken) and nothing
//!   more is ever sent.
//! - `forever`: 2026-07-28, `input_required` every time.
//! - `odd`: 2026-07-28, `input_required` with an input request of an unknown method (`tasks/get`).
//! - `streams`: 2026-07-28, an SSE answer carrying a server request (against the spec), then nothing.
//! - `echo`: a plain result.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The session id the fake gives every legacy session.
pub(crate) const SESSION: &str = "fake-session";

/// An answer POST: its body, and its `mcp-session-id` and `mcp-protocol-version` headers.
pub(crate) type AnswerPost = (Value, Option<String>, Option<String>);

/// What the fake saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Every POST body, in order.
    pub(crate) posts: Mutex<Vec<Value>>,
    /// Each answer POST.
    pub(crate) answers: Mutex<Vec<AnswerPost>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    refuse: Mutex<HashSet<String>>,
    questions: AtomicU64,
}

impl Seen {
    /// The `tools/call` POSTs of `tool`.
    pub(crate) fn calls_of(&self, tool: &str) -> Vec<Value> {
        let posts = self.posts.lock().unwrap();
        posts
            .iter()
            .filter(|p| p["method"] == "tools/call" && p["params"]["name"] == tool)
            .cloned()
            .collect()
    }
}

/// Starts the fake on a free loopback port, on a thread of its own; its `/mcp` URL and what it sees.
pub(crate) fn start() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let shared = seen.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(connection(socket, shared.clone()));
            }
        });
    });
    (format!("http://{addr}/mcp"), seen)
}

/// One request's head and body.
struct Http {
    method: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Http> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    buf.drain(..head_end + 4);
    while buf.len() < length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf.drain(..length).collect();
    Some(Http {
        method,
        headers,
        body,
    })
}

async fn respond(socket: &mut TcpStream, status: &str, extra: &str, body: &str) -> bool {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    );
    socket.write_all(text.as_bytes()).await.is_ok()
}

async fn connection(mut socket: TcpStream, seen: Arc<Seen>) {
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut socket, &mut buf).await {
        if req.method == "DELETE" {
            if !respond(&mut socket, "200 OK", "", "").await {
                return;
            }
            continue;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&req.body) else {
            return;
        };
        seen.posts.lock().unwrap().push(msg.clone());
        let modern = msg["params"]["_meta"].is_object();
        let result = |r: Value| {
            let mut r = r;
            if modern {
                r["resultType"] = json!("complete");
            }
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": r}).to_string()
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let ok = match method {
            "initialize" => {
                let r = result(
                    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "1"}}),
                );
                respond(
                    &mut socket,
                    "200 OK",
                    &format!("Mcp-Session-Id: {SESSION}\r\n"),
                    &r,
                )
                .await
            }
            "server/discover" => {
                let r = result(
                    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                    "ttlMs": 0, "cacheScope": "private"}),
                );
                respond(&mut socket, "200 OK", "", &r).await
            }
            "tools/list" => {
                let tools: Vec<Value> = [
                    "echo", "asks", "refused", "silent", "forever", "odd", "streams",
                ]
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
                let r = result(json!({"tools": tools, "ttlMs": 0, "cacheScope": "private"}));
                respond(&mut socket, "200 OK", "", &r).await
            }
            "tools/call" if modern => modern_call(&mut socket, &msg, &result).await,
            "tools/call" => return legacy_call(socket, msg, seen).await,
            "" if msg.get("id").is_some() => {
                let id = msg["id"].as_str().unwrap_or_default().to_owned();
                let header = |k: &str| req.headers.get(k).cloned();
                seen.answers.lock().unwrap().push((
                    msg.clone(),
                    header("mcp-session-id"),
                    header("mcp-protocol-version"),
                ));
                if seen.refuse.lock().unwrap().contains(&id) {
                    respond(&mut socket, "403 Forbidden", "", "").await
                } else {
                    if let Some(tx) = seen.waiting.lock().unwrap().remove(&id) {
                        let _ = tx.send(msg.clone());
                    }
                    respond(&mut socket, "202 Accepted", "", "").await
                }
            }
            _ => respond(&mut socket, "202 Accepted", "", "").await,
        };
        if !ok {
            return;
        }
    }
}

async fn modern_call(
    socket: &mut TcpStream,
    msg: &Value,
    result: &impl Fn(Value) -> String,
) -> bool {
    let params = &msg["params"];
    let retried = params.get("inputResponses").is_some();
    let input_required = |state: &str| {
        let requests = json!({
            "who": {"method": "elicitation/create", "params": {"message": "Who?", "requestedSchema":
                {"type": "object", "properties": {"name": {"type": "string"}}}}},
            "line": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "dirs": {"method": "roots/list"},
        });
        json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "input_required",
            "inputRequests": requests, "requestState": state}})
        .to_string()
    };
    let body = match params["name"].as_str().unwrap_or_default() {
        "asks" if !retried => input_required("st-1"),
        "asks" => {
            let r = &params["inputResponses"];
            let answered = params["requestState"] == "st-1"
                && r["who"] == json!({"action": "accept", "content": {"name": "mcpgw load"}})
                && r["line"]["role"] == "assistant"
                && r["dirs"] == json!({"roots": []});
            result(json!({"content": [{"type": "text", "text": "thanks"}], "isError": !answered}))
        }
        "forever" => input_required("again"),
        "silent" if retried => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return false;
        }
        "silent" => input_required("st-1"),
        "odd" => {
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "input_required",
            "inputRequests": {"t": {"method": "tasks/get", "params": {}}}}})
            .to_string()
        }
        "streams" => {
            let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"});
            let text = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {ask}\n\n"
            );
            let _ = socket.write_all(text.as_bytes()).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
            return false;
        }
        _ => result(json!({"content": [{"type": "text", "text": "echo"}]})),
    };
    respond(socket, "200 OK", "", &body).await
}

/// A legacy `tools/call`: `echo` answered as JSON, the askers on an SSE stream that ends the connection.
async fn legacy_call(mut socket: TcpStream, msg: Value, seen: Arc<Seen>) {
    let tool = msg["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if tool == "echo" {
        let r = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": []}});
        let _ = respond(&mut socket, "200 OK", "", &r.to_string()).await;
        return;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let qid = format!("q-{}", seen.questions.fetch_add(1, Ordering::Relaxed));
    let (tx, rx) = oneshot::channel();
    seen.waiting.lock().unwrap().insert(qid.clone(), tx);
    if tool == "refused" {
        seen.refuse.lock().unwrap().insert(qid.clone());
    }
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 1}});
    let question = json!({"jsonrpc": "2.0", "id": qid, "method": "elicitation/create", "params": {
        "message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}}});
    let ping = json!({"jsonrpc": "2.0", "id": format!("ping-{qid}"), "method": "ping"});
    let events = format!(
        ": hi\n\nevent: message\ndata: {progress}\n\ndata: {ping}\n\nevent: message\ndata: {question}\n\n"
    );
    if socket.write_all(head.as_bytes()).await.is_err()
        || socket.write_all(events.as_bytes()).await.is_err()
    {
        return;
    }
    let answer = tokio::time::timeout(Duration::from_secs(10), rx).await;
    if tool == "silent" {
        tokio::time::sleep(Duration::from_secs(30)).await;
        return;
    }
    let Ok(Ok(answer)) = answer else { return };
    let content = &answer["result"]["content"];
    let fine = answer["result"]["action"] == "accept"
        && content["name"] == "mcpgw load"
        && content["age"] == 1;
    let text = format!("hello {}, {}", content["name"], content["age"]);
    let done = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
        "content": [{"type": "text", "text": text}], "isError": !fine}});
    let _ = socket
        .write_all(format!("event: message\ndata: {done}\n\n").as_bytes())
        .await;
}
