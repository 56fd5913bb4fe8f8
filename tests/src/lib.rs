//! The integration test crate of mcpgw: one test binary that starts real processes (the `mcpgw` binary,
//! real MCP clients and servers, the conformance fixture backend) and talks to them over loopback only.
//!
//! It must not hold product code: anything a user runs lives in `gateway` or `handlers`. Fixtures it starts
//! (the conformance fixture backend, small SDK servers) live under `tests/fixtures` once the gateway-core
//! issue brings them.

pub use protocol::Generation;
