//! Integration tests of the backend actors against fake MCP servers: Python stdio fixtures
//! (`tests/fixtures/fake_mcp_server.py`) and in-process actix-web HTTP servers on loopback, ports chosen at
//! run time. One test binary; every test bounds its own waits.

// Test fixtures and helpers fail loudly: a panic is the assertion.
#![allow(clippy::unwrap_used)]

#[path = "backends/support.rs"]
mod support;

#[path = "backends/stdio.rs"]
mod stdio;

#[path = "backends/fake_http.rs"]
mod fake_http;

#[path = "backends/http.rs"]
mod http;

#[path = "backends/listen.rs"]
mod listen;

#[path = "backends/asks.rs"]
mod asks;

#[path = "backends/shares.rs"]
mod shares;

#[path = "backends/circuit.rs"]
mod circuit;

#[path = "backends/edge.rs"]
mod edge;

#[path = "backends/exchange.rs"]
mod exchange;
