//! Interop with real MCP peers (issues 3 §8 and 9): real SDK clients in front of `mcpgw`, real SDK servers
//! behind it.
//!
//! - `matrix`: the Python (`py_client.py`), TypeScript (`ts_client.mjs`) and Rust (`rmcp`) SDK clients, each
//!   in legacy, auto and 2026-07-28 mode, through one gateway fronting seven real backends at once
//!   (`stack`); one test per (client, mode), the answers' content checked.
//! - `lenient`: what real SDK servers send off the spec's happy path (requests on a 2026-07-28 response
//!   stream, several messages in one JSON body, `roots/list` outside any request), and what a client that
//!   cannot answer sees.
//! - `python`, `rust_sdk`: the clients straight to the Python SDK server, no gateway, to tell a broken peer
//!   from a gateway bug.
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
