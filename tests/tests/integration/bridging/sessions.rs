//! The fan-out test's sessions: legacy sessions with GET streams and 2026-07-28 clients with listen streams,
//! driven by a bounded pool of workers, and the checks of what each heard.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub(super) const WAIT: Duration = Duration::from_secs(20);

/// Legacy sessions (each with a GET stream) and 2026-07-28 clients (each with a listen stream).
pub(super) const LEGACY: usize = 500;
pub(super) const MODERN: usize = 500;
/// Requests in flight at once.
pub(super) const WORKERS: usize = 48;
/// Progress notifications the backend sends per call.
pub(super) const STEPS: u64 = 3;
/// How long the backend waits between a call's last progress and its response. Not zero: a progress
/// notification that leaves back to back with its response may be lost for 2026-07-28 clients (see
/// `a_2026_client_hears_the_progress_sent_just_before_its_response`); this test is about who hears what.
pub(super) const SETTLE_MS: u64 = 50;
/// The legacy protocol versions the sessions cycle through.
pub(super) const VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The SSE messages a stream delivered so far.
pub(super) type Inbox = Arc<Mutex<Vec<Value>>>;

/// The `data:` messages of an SSE body.
pub(super) fn sse_data(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Reads an SSE response into `inbox` until it ends (or the runtime stops).
async fn collect_stream(mut resp: reqwest::Response, inbox: Inbox) {
    let mut buf: Vec<u8> = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                if let Ok(v) = serde_json::from_str(data.trim()) {
                    inbox.lock().unwrap().push(v);
                }
            }
        }
    }
}

/// Session `i`'s progress token: strings and integers, all distinct.
pub(super) fn token(modern: bool, i: usize) -> Value {
    let base = if modern { 2_000_000 } else { 1_000_000 };
    if i % 2 == 0 {
        json!(format!("{}-{i}", if modern { "modern" } else { "legacy" }))
    } else {
        json!(base + i)
    }
}

/// Checks one call's streamed answer: only its own progress, 1..=STEPS in order, then its own response; with
/// `lossy`, the progress may stop short of STEPS (the 2026-07-28 loss that
/// `a_2026_client_hears_the_progress_sent_just_before_its_response` pins down). The progress heard.
pub(super) fn check_call(
    who: &str,
    token: &Value,
    tag: &str,
    id: &Value,
    messages: &[Value],
    lossy: bool,
) -> Result<usize, String> {
    let mut progress = Vec::new();
    let mut response = None;
    for m in messages {
        match m["method"].as_str() {
            Some("notifications/progress") => {
                let p = &m["params"];
                if p["progressToken"] != *token {
                    return Err(format!(
                        "{who} (token {token}) heard someone else's progress: {m}"
                    ));
                }
                let mine = p["message"]
                    .as_str()
                    .is_some_and(|s| s.starts_with(&format!("{tag} ")));
                if !mine {
                    return Err(format!(
                        "{who} heard progress of another call under its token: {m}"
                    ));
                }
                if response.is_some() {
                    return Err(format!("{who}: progress after the response: {m}"));
                }
                progress.push(p["progress"].as_u64().unwrap_or(0));
            }
            Some(_) => {
                return Err(format!(
                    "{who}: unexpected message on the call's stream: {m}"
                ));
            }
            None if response.is_none() => response = Some(m),
            None => return Err(format!("{who}: a second response: {m}")),
        }
    }
    let expected: Vec<u64> = (1..=STEPS).collect();
    let in_order = if lossy {
        expected.starts_with(&progress)
    } else {
        progress == expected
    };
    if !in_order {
        return Err(format!(
            "{who}: progress {progress:?}, expected {expected:?}: {messages:?}"
        ));
    }
    let Some(response) = response else {
        return Err(format!("{who}: no response: {messages:?}"));
    };
    let text = &response["result"]["content"][0]["text"];
    if response["id"] != *id
        || *text != format!("done {tag}")
        || response["result"]["isError"] == true
    {
        return Err(format!("{who}: not its own answer: {response}"));
    }
    Ok(progress.len())
}

/// A legacy session with its GET stream.
pub(super) struct LegacySession {
    pub(super) session: String,
    pub(super) version: &'static str,
    pub(super) get: Inbox,
}

/// A 2026-07-28 client with its listen stream.
pub(super) struct ModernClient {
    pub(super) listen_id: String,
    pub(super) listen: Inbox,
}

pub(super) struct Fanout {
    pub(super) url: String,
    pub(super) http: reqwest::Client,
    pub(super) workers: Arc<tokio::sync::Semaphore>,
}

pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Fanout {
    pub(super) fn legacy_post(&self, s: &LegacySession, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", &s.session)
            .body(body.to_string());
        if s.version >= "2025-06-18" {
            req = req.header("MCP-Protocol-Version", s.version);
        }
        req
    }

    pub(super) fn modern_post(
        &self,
        method: &str,
        name: Option<&str>,
        accept: &str,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", accept)
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method)
            .body(body.to_string());
        if let Some(name) = name {
            req = req.header("Mcp-Name", name);
        }
        req
    }

    /// initialize, initialized, and the session's GET stream.
    pub(super) async fn open_legacy(self: Arc<Self>, i: usize) -> Result<LegacySession, String> {
        let _permit = self.workers.acquire().await.map_err(|e| e.to_string())?;
        let version = VERSIONS[i % VERSIONS.len()];
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": format!("fanout-{i}"), "version": "1"}}});
        let resp = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(init.to_string())
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("legacy {i}: initialize: {e}"))?;
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("legacy {i}: no session id (HTTP {})", resp.status()))?
            .to_owned();
        let _ = resp.text().await;
        let s = LegacySession {
            session,
            version,
            get: Inbox::default(),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = self
            .legacy_post(&s, &initialized)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("legacy {i}: initialized: {e}"))?;
        if r.status().as_u16() != 202 {
            return Err(format!(
                "legacy {i}: initialized answered HTTP {}",
                r.status()
            ));
        }
        let mut get = self
            .http
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &s.session);
        if version >= "2025-06-18" {
            get = get.header("MCP-Protocol-Version", version);
        }
        let stream = tokio::time::timeout(REQUEST_TIMEOUT, get.send())
            .await
            .map_err(|_| format!("legacy {i}: the GET stream did not open"))?
            .map_err(|e| format!("legacy {i}: GET: {e}"))?;
        if stream.status().as_u16() != 200 {
            return Err(format!("legacy {i}: GET answered HTTP {}", stream.status()));
        }
        tokio::spawn(collect_stream(stream, s.get.clone()));
        Ok(s)
    }

    /// A `subscriptions/listen` stream for tool list changes, acknowledged.
    pub(super) async fn open_modern(self: Arc<Self>, i: usize) -> Result<ModernClient, String> {
        let _permit = self.workers.acquire().await.map_err(|e| e.to_string())?;
        let listen_id = format!("listen-{i}");
        let body = json!({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}},
            "notifications": {"toolsListChanged": true}}});
        let resp = tokio::time::timeout(
            REQUEST_TIMEOUT,
            self.modern_post("subscriptions/listen", None, "text/event-stream", &body)
                .send(),
        )
        .await
        .map_err(|_| format!("modern {i}: the listen stream did not open"))?
        .map_err(|e| format!("modern {i}: listen: {e}"))?;
        if resp.status().as_u16() != 200 {
            return Err(format!(
                "modern {i}: listen answered HTTP {}",
                resp.status()
            ));
        }
        let listen = Inbox::default();
        tokio::spawn(collect_stream(resp, listen.clone()));
        let deadline = Instant::now() + WAIT;
        loop {
            let acked = listen.lock().unwrap().iter().any(|m| {
                m["method"] == "notifications/subscriptions/acknowledged"
                    && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == *listen_id
            });
            if acked {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "modern {i}: the listen stream was not acknowledged: {:?}",
                    listen.lock().unwrap()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(ModernClient { listen_id, listen })
    }

    /// A legacy session's `work` call with its own progress token, read to its end.
    pub(super) async fn legacy_call(
        self: Arc<Self>,
        s: Arc<LegacySession>,
        i: usize,
    ) -> Result<(), String> {
        let _permit = self.workers.acquire().await.map_err(|e| e.to_string())?;
        let (token, tag, id) = (token(false, i), format!("L{i}"), json!(1000 + i));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "_meta": {"progressToken": token}, "name": "work", "arguments": {"tag": tag, "steps": STEPS, "settle_ms": SETTLE_MS}}});
        let who = format!("legacy session {i} ({})", s.version);
        let text = self.read_call(self.legacy_post(&s, &body), &who).await?;
        check_call(&who, &token, &tag, &id, &sse_data(&text), false).map(|_| ())
    }

    /// A 2026-07-28 client's `work` call with its own progress token, read to its end; whether it heard every
    /// progress notification (see [`check_call`]).
    pub(super) async fn modern_call(self: Arc<Self>, i: usize) -> Result<bool, String> {
        let _permit = self.workers.acquire().await.map_err(|e| e.to_string())?;
        let (token, tag, id) = (token(true, i), format!("M{i}"), json!(format!("call-{i}")));
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "progressToken": token},
            "name": "work", "arguments": {"tag": tag, "steps": STEPS, "settle_ms": SETTLE_MS}}});
        let who = format!("2026-07-28 client {i}");
        let req = self.modern_post(
            "tools/call",
            Some("work"),
            "application/json, text/event-stream",
            &body,
        );
        let text = self.read_call(req, &who).await?;
        let messages = sse_data(&text);
        let heard = check_call(&who, &token, &tag, &id, &messages, false)?;
        let last = messages.last().cloned().unwrap_or_default();
        if last["result"]["resultType"] != "complete" {
            return Err(format!(
                "{who}: a 2026-07-28 result without resultType complete: {last}"
            ));
        }
        Ok(heard == STEPS as usize)
    }

    /// Sends a call that must be answered as an SSE stream and reads it to its end.
    pub(super) async fn read_call(
        &self,
        req: reqwest::RequestBuilder,
        who: &str,
    ) -> Result<String, String> {
        let resp = req
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{who}: {e}"))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = resp
            .text()
            .await
            .map_err(|e| format!("{who}: reading the answer: {e}"))?;
        if status != 200 || !content_type.starts_with("text/event-stream") {
            return Err(format!("{who}: HTTP {status} {content_type}: {text}"));
        }
        Ok(text)
    }
}

/// The list changes a stream received.
pub(super) fn list_changes(inbox: &Inbox) -> Vec<Value> {
    inbox
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .cloned()
        .collect()
}

/// How many problems there were, and the first dozen.
pub(super) fn summary(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(12).map(String::as_str).collect();
    format!(
        "{} problem(s), the first:\n  {}",
        problems.len(),
        shown.join("\n  ")
    )
}
