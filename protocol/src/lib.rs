//! The MCP wire protocol as mcpgw speaks it, for all five generations (2024-11-05 … 2026-07-28): JSON-RPC
//! messages with byte-exact request ids, [`Generation`] and the questions each generation answers, the
//! founding error model ([`Error`], [`ErrorCode`]), typed payloads that keep unknown fields, the one request
//! validator that emits every infrastructure error ([`validate::validate`], the only way to a
//! [`ValidRequest`]), and the one response shaper ([`shape`]).
//!
//! This crate does no I/O and knows no actix, tokio or HTTP library: HTTP requests arrive as plain parts
//! (method, headers, body bytes) and leave as a status and bytes. It must stay pure, allocation-light and
//! panic-free on any input: it sits on the hot path of every request.

pub mod elicitation;
pub mod error;
pub mod generation;
pub mod headers;
pub mod id;
pub mod message;
pub mod meta;
pub mod method;
pub mod payload;
pub mod raw;
#[cfg(test)]
pub(crate) mod schema_check;
pub mod session_id;
pub mod shape;
pub mod validate;

pub use error::{Error, ErrorCode};
pub use generation::{Era, Generation, GenerationSet};
pub use id::RequestId;
pub use message::{Message, Notification, Request, Response};
pub use method::{HandlerKind, Method};
pub use payload::CallToolResponse;
pub use validate::{Rejection, ValidRequest};
