//! [`ServerDescription`]: what a backend said about itself at its handshake.

use protocol::Generation;
use protocol::meta::SERVER_INFO;
use protocol::payload::{DiscoverResult, Implementation, InitializeResult, ServerCapabilities};

/// What a backend said at its handshake (`server/discover` or `initialize`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerDescription {
    /// The negotiated generation (legacy), or the modern generation the backend serves.
    pub generation: Generation,
    /// What the backend can do.
    pub capabilities: ServerCapabilities,
    /// Who the backend says it is (self-reported; never a basis for decisions).
    pub server_info: Option<Implementation>,
    /// Usage hints for the model.
    pub instructions: Option<String>,
    /// The transport the backend was found to speak.
    pub transport: TransportKind,
}

/// The transport a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// A child process, newline-delimited JSON-RPC.
    Stdio,
    /// Streamable HTTP (2025-03-26 and later, both eras).
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport (an event stream plus a POST endpoint).
    HttpSse,
    /// A server inside the gateway process.
    InProcess,
}

impl TransportKind {
    /// `"stdio"`, `"streamable_http"`, `"http_sse"` or `"in_process"`.
    pub fn label(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::StreamableHttp => "streamable_http",
            TransportKind::HttpSse => "http_sse",
            TransportKind::InProcess => "in_process",
        }
    }
}

impl ServerDescription {
    /// A modern backend's description, from its `DiscoverResult`.
    pub(crate) fn from_discover(d: DiscoverResult, transport: TransportKind) -> ServerDescription {
        let server_info = d
            .meta
            .as_ref()
            .and_then(|m| m.get(SERVER_INFO))
            // Drafts of 2026-07-28 put serverInfo at the top level; accept it from such backends.
            .or_else(|| d.extra.get("serverInfo"))
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        ServerDescription {
            generation: Generation::V2026_07_28,
            capabilities: d.capabilities,
            server_info,
            instructions: d.instructions,
            transport,
        }
    }

    /// A legacy backend's description, from its `InitializeResult` and the generation it negotiated.
    pub(crate) fn from_initialize(
        r: InitializeResult,
        generation: Generation,
        transport: TransportKind,
    ) -> ServerDescription {
        ServerDescription {
            generation,
            capabilities: r.capabilities,
            server_info: Some(r.server_info),
            instructions: r.instructions,
            transport,
        }
    }
}
