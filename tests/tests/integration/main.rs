//! The integration test binary: starts real `mcpgw` processes (and real backends) and talks to them over
//! loopback only, on ports chosen at run time. Every wait is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod auth;
mod backend_asks;
mod backend_credentials;
mod bad_input;
mod bridging;
mod busy_backend;
mod caching;
mod changes;
mod check;
mod circuit;
mod client_cli;
mod clients_doc;
mod connections;
mod cors;
mod deadlines;
mod deploy;
mod docs;
#[path = "../../../gateway/src/docs_blocks.rs"]
#[allow(dead_code)]
mod docs_blocks;
mod docs_check;
mod down_backends;
mod drain;
mod eras;
mod errors;
mod fairness;
mod hardening;
mod interceptors;
mod interop;
mod library;
mod load_asks;
mod load_example;
mod load_limits;
mod load_merge;
mod load_report;
mod logs;
mod openapi;
mod operations;
mod pipeline;
mod rate_limits;
mod redaction;
mod release;
mod reload;
mod replicas;
mod resilience;
mod size_limits;
mod slow_consumers;
mod startup;
mod support;
mod tls;
mod token_exchange;
mod traces;
mod url_elicitation;
mod user_authorization;
