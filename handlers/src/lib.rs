//! Handler actors of mcpgw: one actor per backend MCP server, owning its connection (a child process over
//! stdio, or an HTTP client for Streamable HTTP and the 2024-11-05 HTTP+SSE transport), the backend's era,
//! the request-id multiplexing table, health, restarts and concurrency permits. In-process handlers (the
//! gateway's built-in tools) implement the same interface.
//!
//! This crate must not know HTTP serving, client sessions or configuration files (that is `gateway`), and it
//! must not shape wire errors itself: outcomes go back to the response actor, which shapes them through
//! `protocol`. It is filled in by the gateway-core issue; today it only re-exports what it will build on.

pub use protocol::Generation;
