//! Handler actors of mcpgw: one actix actor per backend MCP server, owning its connection, and
//! [`BackendHandle`], the only way the gateway talks to it.
//!
//! A backend is a child process over stdio (one process per backend, shared by every client request, with
//! request ids rewritten to backend-unique integers), a Streamable HTTP endpoint, or a 2024-11-05 HTTP+SSE
//! endpoint, over `http://` or `https://` (rustls with the ring provider). Its era is found once by the spec's probe (`server/discover`, falling back to `initialize`)
//! and remembered; each request's `_meta` is then stamped (modern) or cleaned (legacy) for it. The actor
//! restarts a dead child or reconnects an unreachable server with exponential backoff, and reports `Ready`,
//! `Down` and the backend's notifications as [`BackendEvent`]s. It also keeps the backend subscribed to the
//! resource updates and list changes the gateway asks for ([`BackendHandle::listen`]), re-subscribing
//! after every reconnect.
//!
//! Guarantees: every request gets an answer (a result or a [`protocol::shape::Failure`]) within its
//! deadline; nothing queues without bound (permits answer `Overloaded`, queues are bounded and `try_send`
//! answers a full one); no lock is held across an `.await` and nothing blocks the arbiter.
//!
//! This crate must not know HTTP serving, client sessions, routing or configuration files (that is
//! `gateway`), must not forward anything of the client's hop (headers, ids, tokens), and must not shape wire
//! errors: failures go back as `Failure`, which `protocol::shape` turns into the client's answer.

mod actor;
mod backoff;
mod callers;
mod circuit;
mod config;
mod credential;
mod description;
mod events;
mod handle;
mod handshake;
mod http;
#[cfg(test)]
mod import_graph;
mod in_process;
mod inbound;
#[cfg(test)]
mod layering;
mod link;
mod listen;
mod meta;
mod outbox;
mod pending;
mod related;
mod request;
mod retry;
mod share;
mod shared;
mod stdio;
mod trace;
mod wire;

pub use circuit::{CircuitConfig, CircuitState, counts_against};
pub use config::{
    BackendConfig, EraPin, InProcess, InProcessAnswer, InProcessServer, TlsClient, Transport,
};
pub use credential::Credential;
pub use description::{ServerDescription, TransportKind};
pub use events::BackendEvent;
pub use handle::{BackendHandle, BackendState, BackendStatus};
pub use http::edge::{shown_url, shown_url_text};
pub use http::tls::{
    check as check_tls, install_provider as install_tls_provider, plain as plain_tls_config,
    provider as tls_provider,
};
pub use http::{chain as error_chain, outbound_client, outbound_client_with, rest_client};
pub use in_process::answer_requests;
pub use listen::ListenFilter;
pub use protocol::Generation;
pub use related::{Related, RelatedSink, notifications_dropped};
pub use request::BackendRequest;
pub use share::{Caller, share_of};
pub use shared::CONTROL_PERMITS;
pub use stdio::{STOP_BOUND, processes_ended};
pub use trace::{TRACEPARENT, TRACESTATE, TraceContext};
