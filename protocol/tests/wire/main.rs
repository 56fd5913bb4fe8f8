//! The protocol crate's integration tests, one binary: the official 2026-07-28 example messages
//! (`../shared/spec/schema/2026-07-28/examples/`) against the crate's types, parser and validator, and
//! property tests that arbitrary input never panics anything on the hot path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod messages;
mod payload;
mod robustness;
