//! The Streamable HTTP transport: actix-web at `/mcp` (POST, GET, DELETE), both eras side by side.
//! Every request goes through `protocol::validate::validate` against the mock's own catalog and a small
//! legacy session table (`initialize` mints a random `Mcp-Session-Id`; an unknown one is 404; DELETE ends
//! it; GET opens an SSE stream of `: keep-alive` comments every 15 s). Rejections go out as validation
//! shaped them (405 with `Allow`), notifications get 202, answers are `application/json` unless the
//! client's `Accept` lacks JSON, then one `text/event-stream` event. A legacy session's call of the `asks`
//! tool is answered by `ask`: its questions on the call's stream, their answers POSTed back (202).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::{StatusCode, header};
use actix_web::{App, HttpResponse, HttpServer, web};

use bytes::Bytes;
use dashmap::DashMap;
use futures_util::StreamExt;
use futures_util::future::join_all;
use protocol::method::Method;
use protocol::shape::response_bytes;
use protocol::validate::{
    self, Accepts, Config, Headers, HttpMethod, Rejection, Session, UnknownToolCode, ValidKind,
};
use protocol::{Error, ErrorCode, Generation, Request, RequestId, Response};
use rustls::ServerConfig;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::EraMode;
use super::asking::ANSWER_WITHIN;
use super::dispatch::{Mock, Reply};
use super::faults::Verdict;
use ask::Pending;

/// The largest request body accepted (413 above).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Live legacy sessions at most; `initialize` beyond that is refused with 503.
const MAX_SESSIONS: usize = 100_000;
/// Interval of `: keep-alive` comments on a GET stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Time for the last answer to reach the socket before `--crash-after` exits the process.
const CRASH_GRACE: Duration = Duration::from_millis(100);
/// How long an answer past the crash point is held (the process exits long before).
const WITHHELD_FOR: Duration = Duration::from_secs(30);

/// What a legacy session established at `initialize`.
#[derive(Debug)]
struct SessionEntry {
    generation: Generation,
    capabilities: Arc<Value>,
    /// Cancelled when the session ends, closing its GET streams.
    closed: CancellationToken,
    /// Its questions waiting for answers (`asks`).
    pending: Arc<Pending>,
}

/// Shared by every worker: the mock, the session table, validation settings and the crash action.
pub(crate) struct State {
    mock: Arc<Mock>,
    sessions: DashMap<String, SessionEntry>,
    config: Config,
    on_crash: Box<dyn Fn() + Send + Sync>,
    /// How long `asks` waits for each session's answers.
    answer_within: Duration,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl State {
    /// State for `mock`; `on_crash` runs once, when the `--crash-after` answer has been handed to actix.
    pub(crate) fn new(mock: Arc<Mock>, on_crash: Box<dyn Fn() + Send + Sync>) -> State {
        let config = Config {
            served: mock.served(),
            unknown_tool: UnknownToolCode::InvalidParams,
            max_batch: protocol::validate::Config::default().max_batch,
            max_body_bytes: MAX_BODY_BYTES,
        };
        State {
            mock,
            sessions: DashMap::new(),
            config,
            on_crash,
            answer_within: ANSWER_WITHIN,
        }
    }

    /// The same, with `asks` waiting `answer_within` for answers (tests).
    #[cfg(test)]
    pub(crate) fn answering_within(mut self, answer_within: Duration) -> State {
        self.answer_within = answer_within;
        self
    }
}

/// Runs the HTTP mock on `addr` (HTTPS with `tls`) until the process is stopped.
pub(crate) fn run(mock: Arc<Mock>, addr: SocketAddr, tls: Option<ServerConfig>) -> io::Result<()> {
    actix_rt::System::new().block_on(async move {
        let state = web::Data::new(State::new(mock, Box::new(exit_soon)));
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (server, addrs) = start(state, addr, workers, tls)?;
        for a in addrs {
            eprintln!("mock-backend listening on {scheme}://{a}/mcp");
        }
        server.await
    })
}

fn exit_soon() {
    std::thread::spawn(|| {
        std::thread::sleep(CRASH_GRACE);
        tracing::warn!("mock-backend: --crash-after reached, exiting with status 1");
        std::process::exit(1);
    });
}

/// Binds the server (inside an actix System) and returns it, not yet awaited, with its bound addresses.
pub(crate) fn start(
    state: web::Data<State>,
    addr: SocketAddr,
    workers: usize,
    tls: Option<ServerConfig>,
) -> io::Result<(actix_web::dev::Server, Vec<SocketAddr>)> {
    let server = HttpServer::new(move || App::new().app_data(state.clone()).configure(routes))
        .workers(workers);
    let server = match tls {
        Some(tls) => server.bind_rustls_0_23(addr, tls)?,
        // HTTP/1.1, and HTTP/2 with prior knowledge (h2c) on the same port: backends that speak h2c are measured
        // with it (bench/run.sh (n)).
        None => server.bind_auto_h2c(addr)?,
    };
    let addrs = server.addrs();
    Ok((server.run(), addrs))
}

/// The `/mcp` resource, every HTTP method to one handler (validation answers 405 itself).
pub(crate) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PayloadConfig::new(MAX_BODY_BYTES + 1))
        .service(web::resource("/mcp").route(web::route().to(mcp)));
}

/// actix's header map as validation reads headers.
struct HeaderSource<'a>(&'a header::HeaderMap);

impl Headers for HeaderSource<'_> {
    fn for_each<'b>(&'b self, f: &mut dyn FnMut(&'b str, &'b [u8])) {
        for (name, value) in self.0.iter() {
            f(name.as_str(), value.as_bytes());
        }
    }
}

async fn mcp(req: actix_web::HttpRequest, body: Bytes, state: web::Data<State>) -> HttpResponse {
    let verb = match *req.method() {
        actix_web::http::Method::POST => HttpMethod::Post,
        actix_web::http::Method::GET => HttpMethod::Get,
        actix_web::http::Method::DELETE => HttpMethod::Delete,
        _ => HttpMethod::Other,
    };
    let session_id = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Copied out, so that no map guard lives past this statement.
    let session = session_id.as_deref().and_then(|id| {
        state.sessions.get(id).map(|e| {
            let p = e.pending.clone();
            (e.generation, e.capabilities.clone(), e.closed.clone(), p)
        })
    });
    let view = session.as_ref().map(|(g, caps, _, _)| Session {
        generation: *g,
        client_capabilities: caps,
    });
    let headers = HeaderSource(req.headers());
    let parts = validate::HttpRequest {
        method: verb,
        headers: &headers,
        body: &body,
    };
    let valid = match validate::validate(&parts, &state.config, &*state.mock, view.as_ref()) {
        Ok(v) => v,
        Err(r) => return state.rejected(r, verb).await,
    };
    let (g, accepts) = (valid.generation(), valid.accepts());
    match valid.into_kind() {
        ValidKind::Initialize { id, params } => {
            let caps = serde_json::to_value(&params.capabilities).unwrap_or_default();
            state.initialize(g, id, caps, accepts).await
        }
        ValidKind::Call(call)
            if !g.is_modern()
                && call.method() == Method::ToolsCall
                && state.mock.is_asking(call.request()) =>
        {
            let Some((_, caps, _, pending)) = session else {
                return HttpResponse::NotFound().finish();
            };
            state
                .ask_legacy(g, call.request(), &caps, pending, accepts)
                .await
        }
        ValidKind::Call(call) => {
            let reply = state
                .mock
                .answer_method(g, call.method(), call.request())
                .await;
            state.respond(reply, accepts, None).await
        }
        ValidKind::ClientResponse(response) => {
            if let Some((_, _, _, pending)) = &session {
                pending.answer(response);
            }
            HttpResponse::Accepted().finish()
        }
        ValidKind::Notification(_) => HttpResponse::Accepted().finish(),
        ValidKind::Batch(items) => state.batch(g, items, accepts).await,
        ValidKind::OpenStream => match session {
            Some((_, _, closed, _)) => keep_alive_stream(closed),
            None => HttpResponse::NotFound().finish(),
        },
        ValidKind::EndSession => {
            if let Some((_, entry)) = session_id.and_then(|id| state.sessions.remove(&id)) {
                entry.closed.cancel();
            }
            HttpResponse::Ok().finish()
        }
    }
}

impl State {
    /// A rejection as validation shaped it. A legacy-only mock never answers with a 2026-07-28 error
    /// (-32020/-32021/-32022 would tell a probing client it is modern): it says a session is needed.
    async fn rejected(&self, r: Rejection, verb: HttpMethod) -> HttpResponse {
        let (status, body) = if self.mock.era() == EraMode::Legacy
            && r.generation.is_some_and(Generation::is_modern)
        {
            let err = Error::new(
                ErrorCode::InvalidRequest,
                "bad request: no Mcp-Session-Id; this server speaks only initialize-based protocol versions, send initialize first",
            );
            let body = response_bytes(&Response::error(r.id.clone(), err), Generation::V2025_06_18);
            (400, body)
        } else {
            (r.status, r.body())
        };
        // Only POSTs carry JSON-RPC messages, so only their answers count for --crash-after.
        if verb == HttpMethod::Post && self.count().await.is_none() {
            return HttpResponse::ServiceUnavailable().finish();
        }
        let mut b = HttpResponse::build(status_of(status));
        if let Some(allow) = r.allow {
            b.insert_header((header::ALLOW, allow));
        }
        b.content_type("application/json").body(body)
    }

    /// `initialize`: a new session speaking `g`, and its result with the `Mcp-Session-Id` header.
    async fn initialize(
        &self,
        g: Generation,
        id: RequestId,
        capabilities: Value,
        accepts: Accepts,
    ) -> HttpResponse {
        let refuse = |status: u16, msg: &'static str| Reply {
            status,
            body: response_bytes(
                &Response::error(id.clone(), Error::new(ErrorCode::InternalError, msg)),
                g,
            ),
        };
        if self.sessions.len() >= MAX_SESSIONS {
            let reply = refuse(503, "internal error: too many sessions; DELETE unused ones");
            return self.respond(reply, accepts, None).await;
        }
        let Some(sid) = new_session_id() else {
            let reply = refuse(500, "internal error: no randomness for a session id");
            return self.respond(reply, accepts, None).await;
        };
        let request = Request::new(id, Method::Initialize.as_str(), None);
        let reply = self
            .mock
            .answer_method(g, Method::Initialize, &request)
            .await;
        self.sessions.insert(
            sid.clone(),
            SessionEntry {
                generation: g,
                capabilities: Arc::new(capabilities),
                closed: CancellationToken::new(),
                pending: Arc::default(),
            },
        );
        self.respond(reply, accepts, Some(&sid)).await
    }

    /// A 2025-03-26 batch: entries answered concurrently, one array back (202 when nothing needs one).
    async fn batch(
        &self,
        g: Generation,
        items: Vec<Result<ValidKind, Rejection>>,
        accepts: Accepts,
    ) -> HttpResponse {
        let answers = items.into_iter().map(|item| async move {
            match item {
                Ok(ValidKind::Call(c)) => Some(
                    self.mock
                        .answer_method(g, c.method(), c.request())
                        .await
                        .body,
                ),
                Err(r) => Some(r.body()),
                Ok(_) => None,
            }
        });
        let parts: Vec<Vec<u8>> = join_all(answers).await.into_iter().flatten().collect();
        if parts.is_empty() {
            return HttpResponse::Accepted().finish();
        }
        let mut body = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2);
        body.push(b'[');
        body.extend_from_slice(&parts.join(&b','));
        body.push(b']');
        self.respond(Reply { status: 200, body }, accepts, None)
            .await
    }

    /// Counts the answer for `--crash-after`; `None` when it must be withheld (past the crash point).
    async fn count(&self) -> Option<()> {
        match self.mock.crash.record() {
            Verdict::Answer => Some(()),
            Verdict::AnswerThenCrash => {
                (self.on_crash)();
                Some(())
            }
            Verdict::Withhold => {
                tokio::time::sleep(WITHHELD_FOR).await;
                None
            }
        }
    }

    /// An answer: JSON, or one SSE event when the client does not accept JSON.
    async fn respond(&self, reply: Reply, accepts: Accepts, session: Option<&str>) -> HttpResponse {
        if self.count().await.is_none() {
            return HttpResponse::ServiceUnavailable().finish();
        }
        let mut b = HttpResponse::build(status_of(reply.status));
        if let Some(sid) = session {
            b.insert_header(("Mcp-Session-Id", sid));
        }
        if accepts.json {
            return b.content_type("application/json").body(reply.body);
        }
        b.content_type("text/event-stream")
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .insert_header(("X-Accel-Buffering", "no"))
            .body(sse_event(&reply.body))
    }
}

fn status_of(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// One SSE `message` event carrying `body` (a line of `data:` per line of the body).
fn sse_event(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    out.extend_from_slice(b"event: message\n");
    for line in body.split(|&b| b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
    out
}

/// A legacy session's standalone stream: `: keep-alive` at once and every 15 s, until the session ends.
fn keep_alive_stream(closed: CancellationToken) -> HttpResponse {
    let ticks = futures_util::stream::unfold(tokio::time::interval(KEEP_ALIVE), |mut iv| async {
        iv.tick().await;
        Some((
            Ok::<Bytes, actix_web::Error>(Bytes::from_static(b": keep-alive\n\n")),
            iv,
        ))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(ticks.take_until(closed.cancelled_owned()))
}

/// 128 random bits as 32 lowercase hex digits.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

mod ask;
#[cfg(test)]
mod tests;
