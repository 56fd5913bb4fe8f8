//! The front door: how clients reach the gateway — HTTP (Streamable HTTP for both eras, the 2024-11-05
//! HTTP+SSE transport, the probes), `mcpgw serve --stdio`, TLS of the listener and the process's open-files
//! limit — and the operators' own listener, the admin view (`admin`). Each transport reads a request, hands it to the pipeline and writes the answer it gets back.
//!
//! It must not validate, route or shape anything itself: that is the pipeline's, through `protocol`.

pub mod admin;
#[cfg(test)]
mod fixtures;
pub mod http;
pub mod limits;
pub mod stdio;
