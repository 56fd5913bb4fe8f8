//! Legacy sessions (2024-11-05 … 2025-11-25): the store keyed by `Mcp-Session-Id`, the shared view each request
//! reads (negotiated generation, client capabilities, client info, log level), and the session actor that owns
//! the idle timer and the session's server-to-client stream.

mod actor;
mod by_key;
mod dormant;
mod in_flight;
mod input_requests;
mod overview;
mod pending;
mod reader;
mod replicas;
mod rest;
pub mod sealed;
mod shared;
mod slots;
mod sse;
mod store;
pub mod subscriptions;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use protocol::Generation;
use protocol::payload::{Implementation, LoggingLevel};
use serde_json::Value;

pub use actor::{SessionHandle, dropped, note_stream_dropped};
#[cfg(any(test, feature = "internals"))]
pub use actor::StreamClosed;
pub use in_flight::{InFlight};
#[cfg(any(test, feature = "internals"))]
pub use in_flight::Registered;
pub use input_requests::{InputRequests, asked_by};
#[cfg(any(test, feature = "internals"))]
pub use input_requests::InputRequestError;
#[cfg(any(test, feature = "internals"))]
pub use overview::Recent;
pub use pending::PendingStreams;
/// How logs name a session: its id is a bearer credential and never logged whole.
pub use protocol::session_id::ShortId;
pub use reader::Reader;
pub use replicas::key_text;
pub use sealed::SessionKey;
pub use shared::touch_every;
pub use sse::{sse_data, sse_event};
pub use store::{CreateError, Ending, SessionStore, StoreFull, StoreLimits};

/// How a client reaches the gateway (and a legacy session its client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (`/mcp`, with `Mcp-Session-Id` for a legacy session), either era.
    StreamableHttp,
    /// 2024-11-05 HTTP+SSE (`GET /sse` + `POST /messages`): every response travels on the session's stream.
    HttpSse,
    /// `mcpgw serve --stdio`: the process is the session.
    Stdio,
    /// The admin page's playground (`POST /admin/call`): one 2026-07-28 request at a time, no session.
    Admin,
}

impl From<Transport> for crate::metrics::Transport {
    fn from(t: Transport) -> Self {
        match t {
            Transport::StreamableHttp => crate::metrics::Transport::StreamableHttp,
            Transport::HttpSse => crate::metrics::Transport::HttpSse,
            Transport::Stdio => crate::metrics::Transport::Stdio,
            Transport::Admin => crate::metrics::Transport::Admin,
        }
    }
}

impl Transport {
    /// Its name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::HttpSse => "http_sse",
            Transport::Stdio => "stdio",
            Transport::Admin => "admin",
        }
    }
}

/// One legacy session, as every request of it sees it.
#[derive(Debug)]
pub struct Session {
    /// The unguessable id: a sealed session's state (Streamable HTTP), else 64 random hex digits. One
    /// allocation shared by the store's key, the session, its handle and its actor (a sealed id is ~150 bytes).
    pub id: Arc<str>,
    /// A sealed session's key (its records are kept under it).
    pub key: Option<SessionKey>,
    /// When it ends, seconds since the Unix epoch (`u64::MAX`: never).
    pub expires_at: u64,
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
    /// The last use published to the other replicas (Unix seconds; 0: none).
    published_use: AtomicU64,
    /// The key ring's version its id was last opened under (`ClusterKeys::version`).
    ring_version: AtomicU64,
    /// The principal it is bound to (`AuthContext::binding`), with `[auth]` on: presented with another
    /// principal's credentials (or none) it is unknown.
    pub bound_to: Option<[u8; 16]>,
    /// Who reads what is sent to it outside its requests (see [`Reader`]); none until a request said.
    reader: reader::ReaderCell,
}

const NO_LEVEL: u8 = u8::MAX;

impl Session {
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: Arc<str>,
        key: Option<SessionKey>,
        expires_at: u64,
        generation: Generation,
        client_capabilities: Value,
        client_info: Implementation,
        transport: Transport,
        handle: SessionHandle,
    ) -> Session {
        Session {
            id,
            key,
            expires_at,
            generation,
            client_capabilities,
            client_info,
            transport,
            handle,
            last_seen_ms: AtomicU64::new(0),
            initialized: AtomicBool::new(false),
            input_requests: InputRequests::default(),
            in_flight: InFlight::default(),
            log_level: AtomicU8::new(NO_LEVEL),
            epoch: Instant::now(),
            published_use: AtomicU64::new(0),
            ring_version: AtomicU64::new(0),
            bound_to: None,
            reader: reader::ReaderCell::default(),
        }
    }

    /// The same session, bound to a principal.
    fn bound(mut self, to: Option<[u8; 16]>) -> Session {
        self.bound_to = to;
        self
    }

    /// The session as a caller of backends, for requests of no principal (`[auth]` off): its requests
    /// count against one per-caller share.
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

    /// Who reads what the gateway sends this session outside its requests: its endpoint and principal, as
    /// its latest request presented them (`None` before any did, on this replica).
    pub fn reader(&self) -> Option<Arc<Reader>> {
        self.reader.get()
    }

    /// Records who this session's request came from (kept when it is the same reader).
    pub fn read_by(&self, endpoint: usize, principal: Option<&crate::auth::Principal>) {
        self.reader.set(endpoint, principal);
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
