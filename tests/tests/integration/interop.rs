//! Interop with real MCP peers (issue 3 §8): real SDK clients in front of `mcpgw`, real SDK servers behind it.
//!
//! Clients: the Rust SDK `rmcp` (a dev-dependency) in its three lifecycle modes, and the Python SDK `mcp` in
//! its three connect modes (`tests/fixtures/interop/py_client.py`). Backends behind one gateway: the Python
//! SDK's Streamable HTTP server (`py_server.py`, dual-era, tool `py_add`), `mcp-server-time` over stdio
//! (dual-era) and `@modelcontextprotocol/server-everything` over stdio (legacy only, so modern clients reach
//! it only through the gateway's translation). Every client lists the aggregated tools and calls one tool of
//! each backend, and the answers' real content is checked.
//!
//! The peers are installed by `tests/fixtures/interop/setup.sh`; without them these tests fail and say so,
//! unless `MCPGW_SKIP_INTEROP=1` is set. Loopback only, ports chosen at run time, every wait bounded, every
//! process killed on drop.

mod lenient;
mod matrix;
pub mod peers;
mod python;
mod rust_sdk;
mod stack;
