//! Legacy sessions (2024-11-05 … 2025-11-25): the store keyed by `Mcp-Session-Id`, the shared view each request
//! reads (negotiated generation, client capabilities, client info, log level), and the session actor that owns
//! the idle timer and the session's server-to-client stream.

mod actor;
mod in_flight;
mod input_requests;
mod sse;
pub mod subscriptions;

use subscriptions::Subscriptions;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use protocol::Generation;
use protocol::payload::{Implementation, InitializeRequestParams, LoggingLevel};
use serde_json::Value;

pub use actor::{SessionHandle, StreamClosed, dropped, note_stream_dropped};
pub use in_flight::{InFlight, Registered};
pub use input_requests::{InputRequestError, InputRequests};
/// How logs name a session: its id is a bearer credential and never logged whole.
pub use protocol::session_id::ShortId;
pub use sse::sse_event;

/// How a client reaches the gateway (and a legacy session its client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (`/mcp`, with `Mcp-Session-Id` for a legacy session), either era.
    StreamableHttp,
    /// 2024-11-05 HTTP+SSE (`GET /sse` + `POST /messages`): every response travels on the session's stream.
    HttpSse,
    /// `mcpgw serve --stdio`: the process is the session.
    Stdio,
}

impl Transport {
    /// Its name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::HttpSse => "http_sse",
            Transport::Stdio => "stdio",
        }
    }
}

/// One legacy session, as every request of it sees it.
#[derive(Debug)]
pub struct Session {
    /// The unguessable id (64 hex digits).
    pub id: String,
    /// The negotiated generation.
    pub generation: Generation,
    /// The client's declared capabilities.
    pub client_capabilities: Value,
    /// The client's `clientInfo`.
    pub client_info: Implementation,
    /// How the session reaches its client.
    pub transport: Transport,
    /// The actor behind it.
    pub handle: SessionHandle,
    last_seen_ms: AtomicU64,
    initialized: AtomicBool,
    /// Requests the gateway sent to the client (sampling, elicitation, roots) awaiting its answer.
    input_requests: InputRequests,
    /// The client's requests in flight, cancellable by `notifications/cancelled`.
    in_flight: InFlight,
    log_level: AtomicU8,
    epoch: Instant,
}

const NO_LEVEL: u8 = u8::MAX;

impl Session {
    /// The session as a caller of backends (its requests count against one per-caller share).
    pub fn caller(&self) -> handlers::Caller {
        handlers::Caller::new("session", self.id.as_bytes())
    }

    /// Marks the session used now (idle expiry counts from here).
    pub fn touch(&self) {
        self.last_seen_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// How long since it was last used.
    pub fn idle_for(&self) -> Duration {
        let now = self.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_seen_ms.load(Ordering::Relaxed)))
    }

    /// The client sent `notifications/initialized`.
    pub fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Whether `notifications/initialized` arrived.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// The level `logging/setLevel` chose, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        const LEVELS: [LoggingLevel; 8] = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        LEVELS
            .get(self.log_level.load(Ordering::Relaxed) as usize)
            .copied()
    }

    /// Records `logging/setLevel`.
    pub fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.store(level as u8, Ordering::Relaxed);
    }

    /// The requests this session's client has been asked and not answered yet.
    pub fn input_requests(&self) -> &InputRequests {
        &self.input_requests
    }

    /// The client's requests in flight.
    pub fn in_flight(&self) -> &InFlight {
        &self.in_flight
    }

    /// The view validation needs.
    pub fn validation_view(&self) -> protocol::validate::Session<'_> {
        protocol::validate::Session {
            generation: self.generation,
            client_capabilities: &self.client_capabilities,
        }
    }
}

/// The store is full: `initialize` is refused instead of growing without bound.
#[derive(Debug, thiserror::Error)]
#[error("the gateway holds its maximum of {0} sessions")]
pub struct StoreFull(pub usize);

/// Every live legacy session, by id. Guards are never held across an `.await`: callers get an `Arc` clone.
#[derive(Debug)]
pub struct SessionStore {
    sessions: Arc<Sessions>,
}

/// The sessions by id, and a count of slots taken: a slot is taken (compare-and-swap below the maximum)
/// before a session is inserted and given back when it is removed, so the map never holds more than the
/// maximum, however many `initialize`s race.
#[derive(Debug)]
struct Sessions {
    map: DashMap<String, Arc<Session>>,
    slots: Slots,
    subscriptions: Arc<Subscriptions>,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The client sent DELETE.
    Deleted,
    /// No request for `session_idle_secs`.
    Idle,
    /// `mcpgw serve --stdio`: standard input ended (or a new `initialize` replaced it).
    StdioClosed,
    /// 2024-11-05 HTTP+SSE: the client closed the session's stream.
    StreamClosed,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Deleted => "deleted by the client",
            Ending::Idle => "expired after being idle",
            Ending::StdioClosed => "standard input closed",
            Ending::StreamClosed => "its HTTP+SSE stream closed",
        }
    }
}

impl Sessions {
    /// The one way a session ends, whatever ends it: removed from the store (its slot given back), its
    /// actor stopped (its stream closes), its subscriptions dropped (the backends' own shrink when the
    /// change watcher wakes on `Subscriptions::shrunk`). Requests of it still in flight finish; answers to
    /// its open questions can no longer arrive (no session to send them on), so those questions end at
    /// their deadline.
    fn end(&self, id: &str, why: Ending) -> bool {
        let Some((_, session)) = self.map.remove(id) else {
            return false;
        };
        self.slots.give_back();
        self.subscriptions.end_session(id);
        session.handle.end();
        tracing::info!(session = %ShortId(id), why = why.as_str(), "session ended");
        true
    }
}

/// At most `max` slots taken at once.
#[derive(Debug)]
struct Slots {
    taken: AtomicUsize,
    max: usize,
}

impl Slots {
    fn new(max: usize) -> Slots {
        Slots {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes a slot if one is free; it is given back when the returned guard drops, unless kept.
    fn take(&self) -> Option<Slot<'_>> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Some(self)))
    }

    fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A slot taken and not yet kept: given back on drop (a session that was not inserted after all).
struct Slot<'a>(Option<&'a Slots>);

impl Slot<'_> {
    /// The slot now belongs to an entry in the map; the entry's removal gives it back.
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.0 {
            slots.give_back();
        }
    }
}

impl SessionStore {
    /// An empty store holding at most `max` sessions, whose subscriptions are kept in `subscriptions`.
    pub fn new(max: usize, subscriptions: Arc<Subscriptions>) -> SessionStore {
        SessionStore {
            sessions: Arc::new(Sessions {
                map: DashMap::new(),
                slots: Slots::new(max),
                subscriptions,
            }),
        }
    }

    /// Creates a session for an accepted `initialize` and starts its actor on the current arbiter. `id` is
    /// given when the transport minted it already (HTTP+SSE names it in its endpoint event).
    pub fn create(
        &self,
        id: Option<String>,
        generation: Generation,
        params: &InitializeRequestParams,
        transport: Transport,
        idle_timeout: Duration,
    ) -> Result<Arc<Session>, StoreFull> {
        let slots = &self.sessions.slots;
        let slot = slots.take().ok_or(StoreFull(slots.max))?;
        let id = id.unwrap_or_else(new_session_id);
        let handle = SessionHandle::start(
            id.clone(),
            Arc::downgrade(&self.sessions),
            idle_timeout,
            transport == Transport::HttpSse,
        );
        let session = Arc::new(Session {
            id: id.clone(),
            generation,
            client_capabilities: serde_json::to_value(&params.capabilities)
                .unwrap_or_else(|_| Value::Object(Default::default())),
            client_info: params.client_info.clone(),
            transport,
            handle,
            last_seen_ms: AtomicU64::new(0),
            initialized: AtomicBool::new(false),
            input_requests: InputRequests::default(),
            in_flight: InFlight::default(),
            log_level: AtomicU8::new(NO_LEVEL),
            epoch: Instant::now(),
        });
        if let Some(replaced) = self.sessions.map.insert(id, session.clone()) {
            // An id given twice (never minted twice): the old session is gone, its slot is this one's.
            replaced.handle.end();
        } else {
            slot.keep();
        }
        Ok(session)
    }

    /// The live session with this id, marked used.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.sessions.map.get(id).map(|r| r.value().clone())?;
        session.touch();
        Some(session)
    }

    /// The live session with this id, without marking it used (deliveries must not keep a session alive).
    pub fn peek(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.map.get(id).map(|r| r.value().clone())
    }

    /// Ends a session and releases everything it holds (see [`Ending`]); `false` when no such session.
    pub fn end(&self, id: &str, why: Ending) -> bool {
        self.sessions.end(id, why)
    }

    /// Every live session (cloned out: no map guard is held by the caller).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.sessions
            .map
            .iter()
            .map(|r| r.value().clone())
            .collect()
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.map.len()
    }

    /// No sessions.
    pub fn is_empty(&self) -> bool {
        self.sessions.map.is_empty()
    }
}

/// 2024-11-05 HTTP+SSE streams opened with `GET /sse` whose session has not sent `initialize` yet, by the id
/// their endpoint event named. Bounded exactly, as sessions are (a slot taken before a stream is inserted,
/// given back when it is taken out); streams whose client went away are swept out when it is full.
#[derive(Debug)]
pub struct PendingStreams {
    map: DashMap<String, tokio::sync::mpsc::Sender<bytes::Bytes>>,
    slots: Slots,
}

impl PendingStreams {
    /// Holds at most `max` streams.
    pub fn new(max: usize) -> PendingStreams {
        PendingStreams {
            map: DashMap::new(),
            slots: Slots::new(max),
        }
    }

    /// Registers a new stream and returns its id; `None` when too many are open.
    pub fn open(&self, tx: tokio::sync::mpsc::Sender<bytes::Bytes>) -> Option<String> {
        let slot = match self.slots.take() {
            Some(slot) => slot,
            None => {
                self.map.retain(|_, tx| {
                    let open = !tx.is_closed();
                    if !open {
                        self.slots.give_back();
                    }
                    open
                });
                self.slots.take()?
            }
        };
        let id = new_session_id();
        self.map.insert(id.clone(), tx);
        slot.keep();
        Some(id)
    }

    /// Takes the stream out (to become a session's, or to be put back).
    pub fn take(&self, id: &str) -> Option<tokio::sync::mpsc::Sender<bytes::Bytes>> {
        let (_, tx) = self.map.remove(id)?;
        self.slots.give_back();
        Some(tx).filter(|tx| !tx.is_closed())
    }

    /// Puts a stream back after a message that did not start the session. When its slot went to another
    /// stream meanwhile, it is dropped instead (its client sees the stream end).
    pub fn put_back(&self, id: &str, tx: tokio::sync::mpsc::Sender<bytes::Bytes>) {
        if tx.is_closed() {
            return;
        }
        let Some(slot) = self.slots.take() else {
            tracing::warn!("HTTP+SSE stream closed: too many open SSE connections to put it back");
            return;
        };
        if self.map.insert(id.to_owned(), tx).is_none() {
            slot.keep();
        }
    }

    /// Streams held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No streams held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// 32 bytes from the operating system's CSPRNG, as 64 lower-case hex digits (visible ASCII, as the spec asks).
fn new_session_id() -> String {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source is a broken machine; a session id must never be guessable, so refuse loudly.
        panic!("the operating system's random number generator is unavailable");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
