//! What the gateway tells a backend actor: the backend's name, how to reach it, its deadlines and its
//! concurrency limit.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use protocol::payload::Implementation;

/// How one backend MCP server is reached, and the limits the gateway keeps towards it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendConfig {
    /// The backend's configured name (unique within the gateway; used in failures, events and logs).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The deadline of one request, from [`crate::BackendHandle::call`] to the backend's answer.
    pub request_timeout: Duration,
    /// The largest message read from the backend (a JSON body, one event's data, one stdio line), in bytes;
    /// a larger answer to a request fails it (`Failure::TooLarge`), a larger message on a shared stream is
    /// skipped.
    pub max_message_bytes: usize,
    /// The most one request's response stream may carry in all (its notifications, the backend's
    /// questions, then the response), in bytes; `None`: only the deadline bounds it.
    pub max_stream_bytes: Option<usize>,
    /// The deadline of a handshake (era probe, `initialize`, the HTTP+SSE `endpoint` event).
    pub connect_timeout: Duration,
    /// HTTP/2 with prior knowledge (h2c) to an `http://` backend; `https://` ones negotiate it by ALPN.
    pub http2: bool,
    /// How many requests may be in flight at once; one more is answered `Overloaded` at once.
    pub max_in_flight: usize,
    /// Each caller's share of those (a principal, a session, or a client address); `None`: a quarter of
    /// `max_in_flight` (at least one). Beyond it a caller takes a free permit only while a share's worth
    /// stays free, else it is answered `OverShare` at once (see `crate::share`).
    pub max_in_flight_per_caller: Option<usize>,
    /// When the backend's circuit breaker opens, and for how long.
    pub circuit: crate::CircuitConfig,
    /// What the gateway calls itself towards backends (`clientInfo`).
    pub client_info: Implementation,
    /// TLS towards an `https://` backend.
    pub tls: TlsClient,
    /// The gateway's own credential towards an HTTP backend (none by default).
    pub credential: crate::Credential,
    /// Root URIs (`file://...`) the gateway answers the backend's `roots/list` with, whoever's request it
    /// arrives in; empty: `roots/list` goes to the client of the request it belongs to, and is answered with
    /// no roots when it belongs to none.
    pub roots: Vec<String>,
    /// The generation the gateway speaks to the backend: found by the era probe (the default), or pinned.
    pub era: EraPin,
}

/// Which generation the gateway speaks to a backend (`[[backend]] era`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EraPin {
    /// Probe with `server/discover` and fall back to `initialize` (HTTP: then to HTTP+SSE); the era found
    /// is remembered across reconnects.
    #[default]
    Auto,
    /// Always the `initialize` handshake, never the probe: for a dual-era server whose legacy path offers
    /// what its stateless one lacks.
    Legacy,
    /// Always 2026-07-28: a backend that does not answer `server/discover` is down, never initialized.
    Modern,
}

impl EraPin {
    /// The word the config uses.
    pub fn label(self) -> &'static str {
        match self {
            EraPin::Auto => "auto",
            EraPin::Legacy => "legacy",
            EraPin::Modern => "modern",
        }
    }
}

/// How the gateway verifies an `https://` backend and proves itself to it. By default the platform's roots
/// are trusted and the URL's host is verified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsClient {
    /// Extra roots (PEM), trusted beside the platform's.
    pub ca_file: Option<PathBuf>,
    /// The gateway's certificate chain (PEM) for a backend that requires client certificates; with
    /// `client_key_file`.
    pub client_cert_file: Option<PathBuf>,
    /// The key (PEM) of `client_cert_file`.
    pub client_key_file: Option<PathBuf>,
    /// The name sent as SNI (and as `Host`) and verified in the certificate instead of the URL's host, which
    /// is still the address connected to.
    pub server_name: Option<String>,
    /// No verification of the backend's certificate at all (the gateway warns at start).
    pub insecure_skip_verify: bool,
}

/// How a backend is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin and stdout.
    Stdio {
        /// Program and arguments.
        command: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Working directory; the gateway's own when `None`.
        cwd: Option<PathBuf>,
    },
    /// An HTTP endpoint: Streamable HTTP (either era) or, as found by the era probe, 2024-11-05 HTTP+SSE.
    Http {
        /// The MCP endpoint URL (for HTTP+SSE backends, the URL of the event stream).
        url: String,
    },
    /// A server inside the gateway process, called directly (2026-07-28 only).
    InProcess(InProcess),
}

impl BackendConfig {
    /// Default [`BackendConfig::request_timeout`].
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`BackendConfig::max_message_bytes`]: 32 MiB.
    pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;
    /// Default [`BackendConfig::connect_timeout`].
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`BackendConfig::max_in_flight`].
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

    /// A configuration with the default deadlines and limit, introducing the gateway as `mcpgw`.
    pub fn new(name: impl Into<String>, transport: Transport) -> BackendConfig {
        BackendConfig {
            name: name.into(),
            transport,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            max_message_bytes: Self::DEFAULT_MAX_MESSAGE_BYTES,
            max_stream_bytes: None,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            http2: false,
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            max_in_flight_per_caller: None,
            circuit: crate::CircuitConfig::default(),
            client_info: Implementation {
                name: "mcpgw".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..Implementation::default()
            },
            tls: TlsClient::default(),
            credential: crate::Credential::default(),
            roots: Vec::new(),
            era: EraPin::Auto,
        }
    }
}

impl BackendConfig {
    /// The share of `max_in_flight` one caller may hold: the configured one, else a quarter (at least one),
    /// never more than `max_in_flight` itself.
    pub fn share(&self) -> usize {
        crate::share::share_of(self.max_in_flight, self.max_in_flight_per_caller)
    }
}

impl Transport {
    /// A stdio transport running `command` (program first) with no extra environment in the current directory.
    pub fn stdio<S: Into<String>>(command: impl IntoIterator<Item = S>) -> Transport {
        Transport::Stdio {
            command: command.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    /// An HTTP transport to `url`.
    pub fn http(url: impl Into<String>) -> Transport {
        Transport::Http { url: url.into() }
    }
}

/// The answer of an in-process server to one message.
pub type InProcessAnswer = Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send>>;

/// A backend served inside the gateway process.
pub trait InProcessServer: Send + Sync + 'static {
    /// Answers one 2026-07-28 JSON-RPC request (its bytes, `_meta` included) with the response's bytes; a
    /// notification gets `None`.
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer;
}

/// An in-process server as a [`crate::Transport`]: compared by identity.
#[derive(Clone)]
pub struct InProcess(pub Arc<dyn InProcessServer>);

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InProcess(..)")
    }
}

impl PartialEq for InProcess {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
