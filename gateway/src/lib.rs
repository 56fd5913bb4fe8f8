//! The mcpgw gateway: everything that knows HTTP, SSE, stdio serving, configuration and the command line.
//! The HTTP front door (Streamable HTTP for both eras, 2024-11-05 HTTP+SSE), `mcpgw serve --stdio`, the
//! session actors (one per legacy session), the routing actors (validation and catalog lookups, one per
//! worker), the response actor (shaping and writing), the aggregated catalog, and the `mcpgw` command line.
//! The mock backend (`mcpgw mock-backend`, also run in-process as a `builtin` backend) and the load
//! generator (`mcpgw load`) are crates of their own beside it, `mock` and `load` (gateway/mock/,
//! gateway/load/); the binary's subcommands call them.
//!
//! It must not re-implement wire rules: every request is validated by `protocol::validate` and every response
//! shaped by `protocol::shape`; and it must not talk to backends except through `handlers::BackendHandle`.

pub mod auth;
pub mod auth_context;
pub mod bridge;
pub mod cache;
pub mod catalog;
pub mod check;
pub mod client;
pub mod cluster;
pub mod config;
#[cfg(test)]
mod docs_blocks;
pub mod drain;
pub mod egress;
pub mod endpoint;
pub mod front;
pub mod glob;
#[cfg(test)]
mod layering;
pub mod limit;
pub mod metrics;
pub mod notify;
pub mod oauth;
pub mod openapi;
pub mod pipeline;
pub mod policy;
pub mod probe;
pub mod reload;
pub mod reloadable;
pub mod serve;
pub mod session;
pub mod state;
pub mod telemetry;
pub mod tls;
