//! `mcpgw`, the gateway binary: the library's command line, with nothing added.

use std::process::ExitCode;

/// mimalloc: see the dependency's note in Cargo.toml (measured by bench/run.sh).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    mcpgw::Gateway::builder().main()
}
