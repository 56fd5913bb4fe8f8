//! The interop matrix: every real SDK client, in each of its three modes, through one `mcpgw` fronting seven
//! real backends at once ([`Stack`]). Each client lists the tools, calls one tool of every backend, reads a
//! resource of each backend that has some and gets a prompt of each that has some, and the answers' content
//! is checked ([`stack::check`]): the sum, the time in Tokyo, git's branch, the echo, the memory server's
//! entity read back (by tool and as a resource), the file's text, the readme, the prompt's text.
//!
//! One test per (client, mode), each with its own stack, named `{client}_{mode}` so that a failure says which.
//! Clients: the Python SDK `mcp` (`py_client.py`), the TypeScript SDK `@modelcontextprotocol/client`
//! (`ts_client.mjs`) and the Rust SDK `rmcp`. Modes: legacy (the `initialize` handshake: each SDK offers
//! 2025-11-25, or rmcp 2026-07-28, which the gateway answers with 2025-11-25), auto (probe `server/discover`,
//! fall back to `initialize`: must stay on 2026-07-28) and 2026-07-28 (no handshake, no fallback).

use std::time::Instant;

use super::peers::{self, ScriptClient};
use super::rust_sdk;
use super::stack::{self, Stack};

/// The script clients' `--mode` values and the version each must end up with against the dual-era gateway.
pub const SCRIPT_MODES: [(&str, &str); 3] = [
    ("legacy", "2025-11-25"),
    ("auto", "2026-07-28"),
    ("2026-07-28", "2026-07-28"),
];

/// Which client a matrix test drives.
#[derive(Debug, Clone, Copy)]
enum Client {
    Script(ScriptClient),
    Rmcp,
}

impl Client {
    fn label(self) -> &'static str {
        match self {
            Client::Script(ScriptClient::Python) => "python",
            Client::Script(ScriptClient::TypeScript) => "typescript",
            Client::Rmcp => "rmcp",
        }
    }
}

/// Runs one cell of the matrix: `mode` is an index into the modes (legacy, auto, 2026-07-28).
fn cell(client: Client, mode: usize) {
    let test = format!("matrix {} mode {}", client.label(), SCRIPT_MODES[mode].0);
    let Some(deps) = peers::deps(&test) else {
        return;
    };
    let stack = Stack::start(&deps, &format!("{}-{mode}", client.label()));
    let started = Instant::now();
    let (mode_label, plan, expected, report) = match client {
        Client::Script(script) => {
            let (m, version) = SCRIPT_MODES[mode];
            let plan = stack.plan(client.label(), m);
            let report = peers::script_client(&deps, script, stack.url(), m, &plan.script_args());
            (m.to_owned(), plan, version, report)
        }
        Client::Rmcp => {
            // rust_sdk::modes() is (Initialize, Discover, Auto): reorder to (legacy, auto, 2026-07-28)
            let index = [0, 2, 1][mode];
            let (label, lifecycle, version) = rust_sdk::modes().swap_remove(index);
            let plan = stack.plan(client.label(), label);
            let report =
                rust_sdk::runtime().block_on(rust_sdk::report(stack.url(), lifecycle, &plan));
            (label.to_owned(), plan, version, report)
        }
    };
    let problems = match report {
        Ok(report) => stack::check(&report, &plan, expected),
        Err(e) => vec![e],
    };
    eprintln!(
        "{} mode={mode_label}: {} problem(s), client run {:?}",
        client.label(),
        problems.len(),
        started.elapsed()
    );
    assert!(
        problems.is_empty(),
        "{} client (mode {mode_label}) through mcpgw:\n  {}\n{}",
        client.label(),
        problems.join("\n  "),
        stack.logs()
    );
}

const PY: Client = Client::Script(ScriptClient::Python);
const TS: Client = Client::Script(ScriptClient::TypeScript);

#[test]
fn python_legacy() {
    cell(PY, 0);
}

#[test]
fn python_auto() {
    cell(PY, 1);
}

#[test]
fn python_2026_07_28() {
    cell(PY, 2);
}

#[test]
fn typescript_legacy() {
    cell(TS, 0);
}

#[test]
fn typescript_auto() {
    cell(TS, 1);
}

#[test]
fn typescript_2026_07_28() {
    cell(TS, 2);
}

#[test]
fn rmcp_legacy() {
    cell(Client::Rmcp, 0);
}

#[test]
fn rmcp_auto() {
    cell(Client::Rmcp, 1);
}

#[test]
fn rmcp_2026_07_28() {
    cell(Client::Rmcp, 2);
}
