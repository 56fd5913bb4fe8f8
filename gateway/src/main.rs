//! `mcpgw`, the gateway binary: the command line over the `gateway` library.

use std::process::ExitCode;

fn main() -> ExitCode {
    let versions: Vec<&str> = protocol::Generation::ALL.iter().map(|g| g.as_str()).collect();
    println!(
        "mcpgw {}: the gateway is not built yet (protocol generations known: {})",
        env!("CARGO_PKG_VERSION"),
        versions.join(", ")
    );
    ExitCode::from(2)
}
