//! Session drivers, one per era. A legacy session runs `initialize` + `notifications/initialized`, sends its
//! calls with `Mcp-Session-Id` and the negotiated `MCP-Protocol-Version`, starts over when the server
//! forgets it (404), and ends with `DELETE`. A modern (2026-07-28) session calls `server/discover` first,
//! then sends self-describing stateless requests.
//!
//! In open loop one session has several requests in flight; a legacy session's current connection is an
//! `Arc<Conn>` swapped under a short `std::sync::Mutex` (never held across `.await`); set-up is serialised
//! by an async mutex, and a churned-out session is deleted only once its requests in flight are answered
//! (each holds a read guard of the old connection's async `RwLock`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use protocol::Generation;
use serde_json::Value;

use super::ask::{self, AskCall, Asked, Tally};
use super::progress::Live;
use super::request::{INITIALIZED, LegacyHeaders, Template};
use super::stats::{Op, Outcome, Shards};
use super::wire::{Expect, Wire, classify, classify_bare, result_of};

/// The requests of one era.
#[derive(Debug, Clone)]
pub(crate) struct EraCalls {
    pub(crate) tools_list: Template,
    pub(crate) tools_call: Option<Template>,
    pub(crate) resources_read: Option<Template>,
    /// `ask`: a call of `--ask-tool`.
    pub(crate) ask: Option<AskCall>,
    /// `initialize` (legacy) or `server/discover` (modern).
    pub(crate) handshake: Template,
}

impl EraCalls {
    fn template(&self, op: Op) -> Option<&Template> {
        match op {
            Op::ToolsList => Some(&self.tools_list),
            Op::ToolsCall => self.tools_call.as_ref(),
            Op::ResourcesRead => self.resources_read.as_ref(),
            _ => None,
        }
    }
}

/// Everything the sessions share.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) wire: Wire,
    pub(crate) legacy: Option<EraCalls>,
    pub(crate) modern: Option<EraCalls>,
    pub(crate) stats: Shards,
    pub(crate) live: Live,
}

impl Ctx {
    /// Records one request of session `key`; measured ones also feed the progress line.
    pub(crate) fn record(
        &self,
        key: usize,
        op: Op,
        status: Option<u16>,
        outcome: &Outcome,
        latency: Option<std::time::Duration>,
    ) {
        self.stats.record(key, op, status, outcome, latency);
        if op.measured() {
            self.live.completed.fetch_add(1, Ordering::Relaxed);
            if outcome.is_error() {
                self.live.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// How a request ended: the HTTP status when there was one, and the outcome.
pub(crate) type Ended = (Option<u16>, Outcome);

/// A legacy session as established by `initialize`.
#[derive(Debug)]
struct Conn {
    headers: LegacyHeaders,
    /// Read-held by each request in flight; write-held to delete the session.
    in_use: Arc<tokio::sync::RwLock<()>>,
}

/// One client session.
#[derive(Debug)]
pub(crate) struct Session {
    index: usize,
    modern: bool,
    next_id: AtomicU64,
    conn: Mutex<Option<Arc<Conn>>>,
    setup: tokio::sync::Mutex<()>,
}

impl Session {
    pub(crate) fn new(index: usize, modern: bool) -> Session {
        Session {
            index,
            modern,
            next_id: AtomicU64::new(1),
            conn: Mutex::new(None),
            setup: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn calls<'a>(&self, ctx: &'a Ctx) -> Option<&'a EraCalls> {
        if self.modern {
            ctx.modern.as_ref()
        } else {
            ctx.legacy.as_ref()
        }
    }

    /// Set-up before the load: `server/discover` (modern) or a legacy session. Recorded as set-up.
    pub(crate) async fn open(&self, ctx: &Ctx) -> bool {
        let start = Instant::now();
        if self.modern {
            let (status, outcome) = self.discover(ctx).await;
            let ok = outcome == Outcome::Ok;
            ctx.record(
                self.index,
                Op::Discover,
                status,
                &outcome,
                Some(start.elapsed()),
            );
            ok
        } else {
            self.conn(ctx).await.is_ok()
        }
    }

    /// One measured request, its latency counted from `scheduled` (its planned send time in open loop).
    pub(crate) async fn perform(&self, ctx: &Ctx, op: Op, scheduled: Instant) {
        ctx.live.in_flight.fetch_add(1, Ordering::Relaxed);
        let (status, outcome) = match op {
            Op::Churn => self.churn(ctx).await,
            Op::Ask => {
                let a = self.ask(ctx).await;
                let ok = a.outcome == Outcome::Ok;
                ctx.stats.record_ask(self.index, self.modern, &a.tally, ok);
                (a.status, a.outcome)
            }
            _ => self.call(ctx, op).await,
        };
        ctx.live.in_flight.fetch_sub(1, Ordering::Relaxed);
        ctx.record(self.index, op, status, &outcome, Some(scheduled.elapsed()));
    }

    async fn call(&self, ctx: &Ctx, op: Op) -> Ended {
        let Some(t) = self.calls(ctx).and_then(|c| c.template(op)) else {
            return (None, Outcome::Invalid("operation not prepared"));
        };
        self.send(ctx, t).await
    }

    /// Whether it speaks 2026-07-28.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern
    }

    /// A request of this session's era (`t`, built for it), checked (a scenario's step).
    pub(crate) async fn send(&self, ctx: &Ctx, t: &Template) -> Ended {
        let id = self.id();
        let expect = Expect {
            id,
            modern: self.modern,
        };
        if self.modern {
            return match ctx.wire.post(t.headers(None), t.body(id)).await {
                Ok(a) => (Some(a.status), classify(&a, expect)),
                Err(f) => (None, f.outcome()),
            };
        }
        let (conn, _in_use) = match self.in_use(ctx).await {
            Ok(c) => c,
            Err(ended) => return ended,
        };
        match ctx
            .wire
            .post(t.headers(Some(&conn.headers)), t.body(id))
            .await
        {
            Ok(a) => {
                if a.status == 404 {
                    // The server forgot the session: the next request starts a new one (spec: MUST).
                    self.forget(&conn);
                }
                (Some(a.status), classify(&a, expect))
            }
            Err(f) => (None, f.outcome()),
        }
    }

    /// A call of `--ask-tool`, the server's questions answered (see `ask`).
    async fn ask(&self, ctx: &Ctx) -> Asked {
        let unasked = |(status, outcome)| Asked {
            status,
            outcome,
            tally: Tally::default(),
        };
        let Some(call) = self.calls(ctx).and_then(|c| c.ask.as_ref()) else {
            return unasked((None, Outcome::Invalid("operation not prepared")));
        };
        self.ask_with(ctx, call).await
    }

    /// A call whose server may ask (`call`, built for this session's era), each question answered.
    pub(crate) async fn ask_with(&self, ctx: &Ctx, call: &AskCall) -> Asked {
        let unasked = |(status, outcome)| Asked {
            status,
            outcome,
            tally: Tally::default(),
        };
        if self.modern {
            return ask::modern(&ctx.wire, call, || self.id()).await;
        }
        let (conn, _in_use) = match self.in_use(ctx).await {
            Ok(c) => c,
            Err(ended) => return unasked(ended),
        };
        let asked = ask::legacy(&ctx.wire, call, &conn.headers, self.id()).await;
        if asked.status == Some(404) {
            // The server forgot the session (on the call or on an answer): the next request starts a new one.
            self.forget(&conn);
        }
        asked
    }

    /// The current legacy session, held in use. One being churned out (its deletion waiting for the
    /// requests in flight) is not used: the next current one is.
    async fn in_use(
        &self,
        ctx: &Ctx,
    ) -> Result<(Arc<Conn>, tokio::sync::OwnedRwLockReadGuard<()>), Ended> {
        for _ in 0..3 {
            let conn = self.conn(ctx).await?;
            if let Ok(guard) = conn.in_use.clone().try_read_owned() {
                return Ok((conn, guard));
            }
            tokio::task::yield_now().await;
        }
        let conn = self.conn(ctx).await?;
        let guard = conn.in_use.clone().read_owned().await;
        Ok((conn, guard))
    }

    /// The current legacy session, established first when there is none (recorded as set-up).
    async fn conn(&self, ctx: &Ctx) -> Result<Arc<Conn>, Ended> {
        if let Some(c) = self.current() {
            return Ok(c);
        }
        let _setup = self.setup.lock().await;
        if let Some(c) = self.current() {
            return Ok(c);
        }
        let start = Instant::now();
        match self.initialize(ctx).await {
            Ok((c, status)) => {
                ctx.record(
                    self.index,
                    Op::Initialize,
                    status,
                    &Outcome::Ok,
                    Some(start.elapsed()),
                );
                *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
                Ok(c)
            }
            Err((status, outcome)) => {
                ctx.record(
                    self.index,
                    Op::Initialize,
                    status,
                    &outcome,
                    Some(start.elapsed()),
                );
                Err((status, outcome))
            }
        }
    }

    /// The headers of the current legacy session (established first when there is none).
    pub(crate) async fn legacy_headers(&self, ctx: &Ctx) -> Result<LegacyHeaders, Ended> {
        self.conn(ctx).await.map(|c| c.headers.clone())
    }

    fn current(&self) -> Option<Arc<Conn>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn forget(&self, conn: &Arc<Conn>) {
        let mut cur = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *cur = None;
        }
    }

    /// `initialize` then `notifications/initialized`.
    async fn initialize(&self, ctx: &Ctx) -> Result<(Arc<Conn>, Option<u16>), Ended> {
        let Some(calls) = ctx.legacy.as_ref() else {
            return Err((None, Outcome::Invalid("operation not prepared")));
        };
        let (headers, status) = handshake(&ctx.wire, &calls.handshake, self.id()).await?;
        Ok((
            Arc::new(Conn {
                headers,
                in_use: Arc::new(tokio::sync::RwLock::new(())),
            }),
            Some(status),
        ))
    }

    async fn discover(&self, ctx: &Ctx) -> Ended {
        let Some(calls) = ctx.modern.as_ref() else {
            return (None, Outcome::Invalid("operation not prepared"));
        };
        match discover(&ctx.wire, &calls.handshake, self.id()).await {
            Ok(_) => (Some(200), Outcome::Ok),
            Err((status, outcome, _)) => (status, outcome),
        }
    }

    /// Legacy: a new session replaces the current one, which is deleted once its requests are answered.
    /// Modern: `server/discover` again.
    pub(crate) async fn churn(&self, ctx: &Ctx) -> Ended {
        if self.modern {
            return self.discover(ctx).await;
        }
        let (new, status) = {
            let _setup = self.setup.lock().await;
            match self.initialize(ctx).await {
                Ok(r) => r,
                Err(ended) => return ended,
            }
        };
        let old = self
            .conn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(new);
        if let Some(old) = old {
            self.delete(ctx, &old).await;
        }
        (status, Outcome::Ok)
    }

    /// Ends the legacy session, if any (`DELETE`; 405 means the server keeps sessions until they expire).
    pub(crate) async fn close(&self, ctx: &Ctx) {
        let old = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(old) = old {
            self.delete(ctx, &old).await;
        }
    }

    async fn delete(&self, ctx: &Ctx, conn: &Conn) {
        if !conn.headers.has_session() {
            return;
        }
        let start = Instant::now();
        // Wait for its requests in flight (each bounded by the request deadline, so this is too).
        let _all = tokio::time::timeout(ctx.wire.timeout(), conn.in_use.write()).await;
        let mut h = reqwest::header::HeaderMap::new();
        conn.headers.apply(&mut h);
        let (status, outcome) = match ctx.wire.delete(h).await {
            Ok(a) => (Some(a.status), classify_bare(a.status, &[405])),
            Err(f) => (None, f.outcome()),
        };
        ctx.record(
            self.index,
            Op::Delete,
            status,
            &outcome,
            Some(start.elapsed()),
        );
    }
}

/// Why a handshake failed: status, outcome and a readable reason.
pub(crate) type HandshakeError = (Option<u16>, Outcome, String);

/// A legacy handshake with request id `id`: `initialize` (its HTTP status is returned), a version this
/// client speaks, then `notifications/initialized` accepted.
pub(crate) async fn handshake(
    wire: &Wire,
    initialize: &Template,
    id: u64,
) -> Result<(LegacyHeaders, u16), Ended> {
    legacy_handshake(wire, initialize, id)
        .await
        .map_err(|(s, o, _)| (s, o))
}

/// [`handshake`] with a readable reason on failure.
pub(crate) async fn legacy_handshake(
    wire: &Wire,
    initialize: &Template,
    id: u64,
) -> Result<(LegacyHeaders, u16), HandshakeError> {
    let expect = Expect { id, modern: false };
    let a = wire
        .post(initialize.headers(None), initialize.body(id))
        .await
        .map_err(|f| (None, f.outcome(), format!("initialize: {f}")))?;
    let outcome = classify(&a, expect);
    if outcome != Outcome::Ok {
        let why = format!(
            "initialize: HTTP {}, {outcome:?}: {}",
            a.status,
            snippet(&a.body)
        );
        return Err((Some(a.status), outcome, why));
    }
    let result = result_of(&a, expect)
        .map_err(|e| (Some(a.status), Outcome::Invalid("bad initialize result"), e))?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .and_then(|v| Generation::parse(v).ok())
        .filter(|g| !g.is_modern())
        .ok_or_else(|| {
            let why = format!("initialize: the server chose no legacy version: {result}");
            (
                Some(a.status),
                Outcome::Invalid("unusable protocolVersion"),
                why,
            )
        })?;
    let headers = LegacyHeaders::new(a.session_id.as_deref(), version);
    let mut h = initialize.headers(None);
    headers.apply(&mut h);
    match wire.post(h, bytes::Bytes::from_static(INITIALIZED)).await {
        Ok(n) if classify_bare(n.status, &[]) == Outcome::Ok => Ok((headers, a.status)),
        Ok(n) => Err((
            Some(n.status),
            Outcome::HttpError,
            format!("notifications/initialized: HTTP {}", n.status),
        )),
        Err(f) => Err((None, f.outcome(), format!("notifications/initialized: {f}"))),
    }
}

/// `server/discover` with request id `id`; the result must list 2026-07-28.
pub(crate) async fn discover(
    wire: &Wire,
    discover: &Template,
    id: u64,
) -> Result<Value, HandshakeError> {
    let expect = Expect { id, modern: true };
    let a = wire
        .post(discover.headers(None), discover.body(id))
        .await
        .map_err(|f| (None, f.outcome(), format!("server/discover: {f}")))?;
    let outcome = classify(&a, expect);
    if outcome != Outcome::Ok {
        let why = format!(
            "server/discover: HTTP {}, {outcome:?}: {}",
            a.status,
            snippet(&a.body)
        );
        return Err((Some(a.status), outcome, why));
    }
    let result = result_of(&a, expect)
        .map_err(|e| (Some(a.status), Outcome::Invalid("bad discover result"), e))?;
    let supported = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|s| s == Generation::V2026_07_28.as_str()));
    if supported {
        Ok(result)
    } else {
        let why = format!(
            "server/discover: 2026-07-28 is not among the supported versions {}",
            result.get("supportedVersions").unwrap_or(&Value::Null)
        );
        Err((
            Some(a.status),
            Outcome::Invalid("2026-07-28 not supported"),
            why,
        ))
    }
}

/// The start of a body, for error messages.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    text.trim().to_owned()
}
