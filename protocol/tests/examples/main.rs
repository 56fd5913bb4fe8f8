//! The official 2026-07-28 example messages (`../shared/spec/schema/2026-07-28/examples/`) against this
//! crate: every payload reads into its type and writes back equal; every full JSON-RPC message parses and
//! re-serializes equal; every example request passes validation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod messages;
mod payload;
