//! The mock backend behind `mcpgw mock-backend`: a synthetic MCP server for tests, demos and load tests,
//! correct for all five generations. It serves newline-delimited JSON-RPC on stdin/stdout (`--stdio`) or
//! Streamable HTTP at `/mcp` (`--listen ADDR`), legacy (`initialize`) and modern (2026-07-28, per-request
//! `_meta`) side by side unless `--era` narrows it, with latency, error and crash injection. It also runs
//! inside other processes: the gateway's, as [`InProcessMock`] (a `builtin` backend), and the load
//! generator's, on a loopback port (`mcpgw load --self-test`).
//!
//! It must not depend on the gateway (the gateway and `load` depend on it): wire rules come from
//! `protocol` (every request validated, every response shaped there) and the in-process link's types from
//! `handlers`. It reads no certificate: HTTPS is served with the `rustls::ServerConfig` its caller loaded
//! (the `mcpgw` binary, through the gateway's `tls` module) and handed to [`run`].
//!
//! Files: [`MockArgs`] and [`run`] here; `dispatch` (request → response, shared by both transports),
//! `lifecycle` (negotiation, capabilities, discover), `tools`, `asking` (the `asks` tool's questions and its
//! 2026-07-28 rounds; legacy ones are asked by `http`), `resources`, `prompts` (and completion),
//! `pagination` (cursors), `faults` (latency, errors, crash), `stdio` and `http` (the transports), and
//! `in_process` (the mock inside the gateway's own process, a `builtin` backend).

mod asking;
mod dispatch;
mod faults;
mod http;
mod in_process;
mod lifecycle;
mod pagination;
mod prompts;
mod resources;
mod stdio;
mod tools;

use std::io;
use std::sync::Arc;

use protocol::{Generation, GenerationSet, Method};

use dispatch::Mock;
pub use in_process::InProcessMock;

/// How the injected latency is distributed around `--latency-ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LatencyDist {
    /// Exactly `--latency-ms`.
    Fixed,
    /// Uniform between 0 and 2 × `--latency-ms`.
    Uniform,
    /// Exponential with mean `--latency-ms`.
    Exponential,
}

/// Which generations the mock serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EraMode {
    /// All five: `initialize` sessions and 2026-07-28 requests side by side.
    Dual,
    /// 2024-11-05 … 2025-11-25 only: `initialize` is required, `server/discover` is unknown.
    Legacy,
    /// 2026-07-28 only: `initialize` is refused with the supported versions.
    Modern,
}

impl EraMode {
    /// The generations this mode serves.
    pub(crate) fn served(self) -> GenerationSet {
        let legacy = Generation::ALL.into_iter().filter(|g| !g.is_modern());
        match self {
            EraMode::Dual => GenerationSet::ALL,
            EraMode::Legacy => legacy.fold(GenerationSet::EMPTY, GenerationSet::with),
            EraMode::Modern => GenerationSet::EMPTY.with(Generation::V2026_07_28),
        }
    }
}

/// The command line of `mcpgw mock-backend`.
#[derive(Debug, Clone, clap::Args)]
pub struct MockArgs {
    /// Serve on stdin/stdout (newline-delimited JSON-RPC).
    #[arg(long, conflicts_with = "listen")]
    pub stdio: bool,
    /// Serve Streamable HTTP on ADDR at /mcp.
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Synthetic tools tool_0..tool_{N-1}, in addition to the fixed ones.
    #[arg(long, default_value_t = 3)]
    pub tools: usize,
    /// Latency injected before every tools/call answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Distribution of the injected latency.
    #[arg(long, value_enum, default_value = "fixed")]
    pub latency_dist: LatencyDist,
    /// Size of the text each synthetic tool returns, in bytes.
    #[arg(long, default_value_t = 0)]
    pub payload_bytes: usize,
    /// Fraction of tools/call answered as errors: half isError results, half JSON-RPC errors (-32603).
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// Exit with status 1 after answering N requests (0 behaves as 1).
    #[arg(long)]
    pub crash_after: Option<u64>,
    /// serverInfo.name.
    #[arg(long, default_value = "mock-backend")]
    pub name: String,
    /// Which generations it serves.
    #[arg(long, value_enum, default_value = "dual")]
    pub era: EraMode,
    /// `ttlMs` of its cacheable 2026-07-28 results (0: `ttlMs: 0`, `cacheScope: "private"`, nothing may be
    /// reused).
    #[arg(long, default_value_t = 0)]
    pub ttl_ms: u64,
    /// `cacheScope` of its cacheable 2026-07-28 results when `--ttl-ms` is above 0.
    #[arg(long, value_enum, default_value = "public")]
    pub cache_scope: Scope,
    /// Answer METHOD "method not found" (-32601) though its capability is declared, as hand-written servers
    /// that declare `resources` without `resources/templates/list` do (repeatable).
    #[arg(long = "unimplemented", value_name = "METHOD")]
    pub unimplemented: Vec<String>,
    /// Answer METHOD with an internal error (-32603) every time (repeatable).
    #[arg(long = "failing", value_name = "METHOD")]
    pub failing: Vec<String>,
    /// With --listen: serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key", requires = "listen")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Require client certificates issued by these CAs (PEM); needs --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_client_ca: Option<std::path::PathBuf>,
}

/// Who may reuse the mock's cacheable results (`--cache-scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Anyone, shared caches included.
    Public,
    /// The same authorization context only.
    Private,
}

impl MockArgs {
    /// Refuses values out of range (`--error-rate`), before anything is started or read.
    pub fn check(&self) -> io::Result<()> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "--error-rate must be between 0 and 1, not {}",
                    self.error_rate
                ),
            ));
        }
        for (flag, names) in [
            ("--unimplemented", &self.unimplemented),
            ("--failing", &self.failing),
        ] {
            if let Some(name) = names.iter().find(|n| Method::parse(n).is_none()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{flag} {name:?}: not an MCP method"),
                ));
            }
        }
        Ok(())
    }

    /// The methods of `--unimplemented` and of `--failing`.
    pub(crate) fn refused(&self) -> (Vec<Method>, Vec<Method>) {
        let parse = |names: &[String]| names.iter().filter_map(|n| Method::parse(n)).collect();
        (parse(&self.unimplemented), parse(&self.failing))
    }
}

/// Runs the mock backend: until stdin closes (`--stdio`) or until the process is killed (`--listen`).
/// Builds its own runtime: tokio current-thread for stdio, an actix System for HTTP. `--crash-after`
/// exits the process with status 1.
///
/// `tls` is the HTTPS configuration of `--listen`: the caller builds it from `--tls-cert`, `--tls-key` and
/// `--tls-client-ca` (the `mcpgw` binary with the gateway's own TLS loader); this crate reads no
/// certificate. `--tls-cert` without it is refused rather than served as plain HTTP.
pub fn run(args: MockArgs, tls: Option<rustls::ServerConfig>) -> io::Result<()> {
    args.check()?;
    let mock = Arc::new(Mock::new(&args));
    if let Some(addr) = args.listen {
        if args.tls_cert.is_some() && tls.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--tls-cert given but no TLS configuration was loaded from it",
            ));
        }
        return http::run(mock, addr, tls);
    }
    if !args.stdio {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "mock-backend needs --stdio or --listen ADDR",
        ));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let end = runtime.block_on(stdio::serve(mock, tokio::io::stdin(), tokio::io::stdout()))?;
    match end {
        stdio::End::InputClosed => Ok(()),
        stdio::End::Crashed => {
            tracing::warn!("mock-backend: --crash-after reached, exiting with status 1");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Parsing `MockArgs` the way the CLI will, for tests.
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: super::MockArgs,
    }

    /// `MockArgs` from command-line words (without the program name).
    pub(crate) fn parse(words: &[&str]) -> super::MockArgs {
        Cli::parse_from(std::iter::once("mock-backend").chain(words.iter().copied())).args
    }

    #[test]
    fn defaults_and_conflicts() {
        let a = parse(&["--stdio"]);
        assert!(a.stdio && a.listen.is_none());
        assert_eq!((a.tools, a.latency_ms, a.payload_bytes), (3, 0, 0));
        assert_eq!(a.latency_dist, super::LatencyDist::Fixed);
        assert_eq!(a.era, super::EraMode::Dual);
        assert_eq!(a.name, "mock-backend");
        let a = parse(&[
            "--listen",
            "127.0.0.1:0",
            "--era",
            "modern",
            "--latency-dist",
            "exponential",
        ]);
        assert_eq!(a.era, super::EraMode::Modern);
        assert_eq!(a.latency_dist, super::LatencyDist::Exponential);
        let both = Cli::try_parse_from(["m", "--stdio", "--listen", "127.0.0.1:1"]);
        assert!(both.is_err());
    }

    #[test]
    fn eras_serve_their_generations() {
        use protocol::Generation::*;
        assert_eq!(super::EraMode::Dual.served().iter().count(), 5);
        let legacy = super::EraMode::Legacy.served();
        assert!(legacy.contains(V2024_11_05) && !legacy.contains(V2026_07_28));
        assert_eq!(legacy.iter().count(), 4);
        let modern = super::EraMode::Modern.served();
        assert_eq!(modern.version_strings(), vec!["2026-07-28"]);
    }

    #[test]
    fn run_refuses_bad_arguments() {
        let mut a = parse(&["--stdio", "--error-rate", "1.5"]);
        assert_eq!(
            super::run(a.clone(), None).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
        a.error_rate = 0.0;
        a.stdio = false;
        assert_eq!(
            super::run(a, None).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    }
}
