//! `mcpgw serve`, `check`, `call` and the rest: the command line of the `mcpgw` binary, and of any binary a
//! library user builds with their own middlewares and servers ([`super::Builder::main`]). It must not hold
//! what the subcommands do, only how they are asked for and printed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use crate::config::{Config, LogFormat, demo_config, from_mcp_json};
use crate::reload::config::ConfigSource;
use crate::tls::{ServerTls, TlsFiles};

use super::builder::Builder;

/// An actor-based, multi-session gateway for the Model Context Protocol.
#[derive(Debug, Parser)]
#[command(name = "mcpgw", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP clients (HTTP by default; --stdio for a local host). With no config: the built-in demo.
    Serve(ServeArgs),
    /// Validate a config, start each backend once, report what each offers; non-zero on any problem.
    Check(CheckArgs),
    /// A synthetic MCP server for tests, demos and load tests.
    MockBackend(mock::MockArgs),
    /// Drive MCP sessions against a server and report latency and outcomes.
    Load(load::LoadArgs),
    /// What replicas share: `mcpgw cluster new-key` prints a fresh key ring line.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Identity: `mcpgw auth hash-key` reads an API key on standard input and prints its digest for
    /// `[[auth.api_key]] digest`.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// List the tools of a running gateway (or any MCP server): names, descriptions, arguments.
    Tools(ToolsArgs),
    /// Call one tool of a running gateway (or any MCP server) and print its answer:
    /// `mcpgw call demo__add '{"a": 2, "b": 40}'`. Exit 1 on a tool error or a failure.
    Call(CallArgs),
    /// GET a plain-HTTP URL (a health probe: `mcpgw probe http://127.0.0.1:7800/healthz`); exit 0 on
    /// 200, 1 otherwise. For images without curl (the Dockerfile's HEALTHCHECK).
    Probe(ProbeArgs),
}

#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Print a fresh key ring line, `ID:BASE64` of 32 random bytes, for `[cluster] keys_file` or
    /// `MCPGW_SESSION_KEYS`.
    NewKey,
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Read an API key on standard input (one line; at least 24 characters) and print its digest,
    /// `sha256:HEX`: the config holds only that.
    HashKey,
}

/// Where `mcpgw tools` and `mcpgw call` go, and how.
#[derive(Debug, Args)]
struct ClientArgs {
    /// The MCP endpoint.
    #[arg(long, env = "MCPGW_URL", default_value = "http://127.0.0.1:7800/mcp")]
    url: String,
    /// The generation to speak: found by the era probe (`auto`), or `legacy` (an `initialize` session) or
    /// `modern` (2026-07-28, stateless).
    #[arg(long, value_enum, default_value = "auto")]
    era: crate::config::BackendEra,
    /// A file holding the token sent as `Authorization: Bearer TOKEN` (an API key or a JWT); never given on
    /// the command line.
    #[arg(long)]
    bearer_file: Option<PathBuf>,
    /// The deadline of the connection and of the request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    timeout_ms: u64,
    /// Print the JSON the server answered instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool's name, as `mcpgw tools` lists it.
    name: String,
    /// Its arguments: a JSON object (`'{"text": "hi"}'`); none when left out.
    #[arg(default_value = "")]
    arguments: String,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, Args)]
struct ProbeArgs {
    /// `http://HOST:PORT/PATH`.
    url: String,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// TOML config file.
    #[arg(long, conflicts_with = "mcp_json")]
    config: Option<PathBuf>,
    /// An `mcpServers` JSON file, as MCP hosts write them.
    #[arg(long)]
    mcp_json: Option<PathBuf>,
    /// Listen address, overriding the config's `[server] listen`: PORT (on 127.0.0.1), localhost:PORT or
    /// IP:PORT.
    #[arg(long, value_parser = crate::config::parse_listen)]
    listen: Option<SocketAddr>,
    /// Serve one client over standard input and output instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// How log lines are written on standard error (overrides the config's `[server] log_format`).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
    /// Reload the config whenever its file changes (as SIGHUP does).
    #[arg(long)]
    watch: bool,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// TOML config file.
    #[arg(long, conflicts_with = "mcp_json")]
    config: Option<PathBuf>,
    /// An `mcpServers` JSON file, as MCP hosts write them.
    #[arg(long)]
    mcp_json: Option<PathBuf>,
}

impl Builder {
    /// The `mcpgw` command line (`serve`, `check`, `call`, `mock-backend`, …) with what was added: for a
    /// binary's `main`. Its config comes from the command line (`--config`), not from the builder.
    pub fn main(self) -> ExitCode {
        main(self)
    }
}

/// Parses the command line and runs what it asks, with what a library user added.
fn main(builder: Builder) -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args, builder),
        Command::Check(args) => return check(&args, &builder),
        Command::MockBackend(args) => {
            let _logging = init_logging("warn");
            run_mock(args).context("mock-backend")
        }
        Command::Load(args) => {
            let _logging = init_logging("warn");
            // Every session may hold a connection (a stream, or a request in flight): as `serve` does.
            if let Err(e) = crate::front::limits::raise_open_files() {
                tracing::warn!("{e}");
            }
            load::run(args).map(drop).context("load")
        }
        Command::Auth(AuthCommand::HashKey) => hash_key(),
        Command::Cluster(ClusterCommand::NewKey) => {
            println!("{}", crate::cluster::keys::new_key_line());
            Ok(())
        }
        Command::Tools(args) => return tools(&args),
        Command::Call(args) => return call(&args),
        Command::Probe(args) => {
            return match crate::probe::get(
                &args.url,
                std::time::Duration::from_millis(args.timeout_ms),
            ) {
                Ok(200) => ExitCode::SUCCESS,
                Ok(status) => {
                    eprintln!("mcpgw probe: {} answered {status}", args.url);
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("mcpgw probe: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::telemetry::logs::flush();
            eprintln!("mcpgw: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs, builder: Builder) -> anyhow::Result<()> {
    let mut config = match (&args.config, &args.mcp_json) {
        (Some(path), _) => Config::from_toml_file(path)?,
        (None, Some(path)) => from_mcp_json(path)?,
        (None, None) => demo()?,
    };
    if let Some(format) = args.log_format {
        config.server.log_format = format;
    }
    // Kept until the process ends: dropping it writes out the lines still queued.
    let _logging = crate::telemetry::logs::init(
        config.server.log_format,
        config.server.log_level.as_deref(),
        "info",
    );
    if args.config.is_none() && args.mcp_json.is_none() {
        crate::telemetry::logs::announce(
            tracing::Level::INFO,
            "mcpgw: no --config given: serving the built-in demo backend",
            serde_json::json!({}),
        );
    }
    if let Some(listen) = args.listen {
        config.server.listen = listen;
    }
    let source = match (args.config, args.mcp_json) {
        (Some(path), _) => Some(ConfigSource::Toml(path)),
        (None, Some(path)) => Some(ConfigSource::McpJson(path)),
        (None, None) => None,
    };
    if args.watch && source.is_none() {
        anyhow::bail!(
            "--watch needs --config or --mcp-json (the demo config has no file to watch)"
        );
    }
    let reloading = crate::serve::Reloading {
        source,
        watch: args.watch,
    };
    builder.with_stdio(args.stdio).serve_loaded(config, reloading)?;
    Ok(())
}

/// The target of `mcpgw tools` / `mcpgw call`; the token read from its file.
fn target(args: &ClientArgs) -> anyhow::Result<crate::client::Target> {
    let bearer = match &args.bearer_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --bearer-file {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    Ok(crate::client::Target {
        url: args.url.clone(),
        era: args.era,
        bearer,
        timeout: std::time::Duration::from_millis(args.timeout_ms.max(1)),
    })
}

/// `mcpgw tools`: the tools, as text or as the JSON listed. Logs only when `RUST_LOG` asks.
fn tools(args: &ToolsArgs) -> ExitCode {
    let _logging = init_logging("off");
    let listed = target(&args.client).and_then(|t| Ok(crate::client::tools(&t)?));
    match listed {
        Ok(tools) if args.client.json => {
            println!("{}", serde_json::json!({ "tools": tools }));
            ExitCode::SUCCESS
        }
        Ok(tools) => {
            print!("{}", crate::client::render_tools(&tools));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcpgw tools: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `mcpgw call`: the answer on standard output (a tool error on standard error), exit 1 unless it
/// succeeded.
fn call(args: &CallArgs) -> ExitCode {
    let _logging = init_logging("off");
    let answered = target(&args.client)
        .and_then(|t| Ok(crate::client::call(&t, &args.name, &args.arguments)?));
    let result = match answered {
        Ok(result) => result,
        Err(e) => {
            eprintln!("mcpgw call: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let (text, is_error) = crate::client::render_result(&result);
    if args.client.json {
        println!("{result}");
    } else if is_error {
        eprintln!(
            "mcpgw call: {} answered with a tool error:\n{text}",
            args.name
        );
    } else {
        println!("{text}");
    }
    if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `mcpgw auth hash-key`: the digest of the key on standard input.
fn hash_key() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("auth hash-key: reading standard input")?;
    let key = line.trim_end_matches(['\r', '\n']);
    if key.len() < crate::auth::api_key::MIN_KEY_LEN || key.trim() != key {
        anyhow::bail!(
            "auth hash-key: a key must be at least {} characters with no surrounding spaces (try `openssl rand -base64 32`)",
            crate::auth::api_key::MIN_KEY_LEN
        );
    }
    println!("{}", crate::auth::api_key::digest_text(key));
    Ok(())
}

/// `mcpgw mock-backend`: its HTTPS files (`--tls-cert`, `--tls-key`, `--tls-client-ca`) are read by the
/// gateway's own TLS loader, the one of the front door; the `mock` crate is handed the configuration.
fn run_mock(args: mock::MockArgs) -> anyhow::Result<()> {
    args.check()?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            ServerTls::load(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            })?
            .server_config(),
        ),
        _ => None,
    };
    Ok(mock::run(args, tls)?)
}

fn demo() -> anyhow::Result<Config> {
    let exe =
        std::env::current_exe().context("cannot find this executable for the demo backend")?;
    Ok(demo_config(&exe)?)
}

/// `mcpgw check`: the report on standard output, one line per problem on standard error, exit 1 on any.
/// Logs are off unless `RUST_LOG` asks (they would repeat the problems).
fn check(args: &CheckArgs, builder: &Builder) -> ExitCode {
    let _logging = init_logging("off");
    // A `ConfigError`'s message already holds its cause: printed once, without the source chain.
    let (loaded, source) = match (&args.config, &args.mcp_json) {
        (Some(path), _) => (
            Config::from_toml_file(path).map_err(|e| e.to_string()),
            format!("config {}", path.display()),
        ),
        (None, Some(path)) => (
            from_mcp_json(path).map_err(|e| e.to_string()),
            format!("mcp json {}", path.display()),
        ),
        (None, None) => (
            demo().map_err(|e| format!("{e:#}")),
            "the built-in demo config".to_owned(),
        ),
    };
    let problem = |line: &str| eprintln!("mcpgw check: {line}");
    let mut config = match loaded {
        Ok(config) => config,
        Err(e) => {
            problem(&crate::check::one_line(&e));
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = builder.add_backends(&mut config) {
        problem(&crate::check::one_line(&e.to_string()));
        return ExitCode::FAILURE;
    }
    for warning in crate::check::warnings(&config) {
        eprintln!("mcpgw check: warning: {warning}");
    }
    let report = crate::check::run(&config, source, builder.servers());
    print!("{}", report.render());
    let problems = report.problems();
    for p in &problems {
        problem(p);
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Logs go to standard error as text (standard output carries the protocol in stdio modes), through the
/// bounded writer `serve` uses; `RUST_LOG` overrides `default`. Colours only on a terminal.
fn init_logging(default: &str) -> crate::telemetry::logs::Logging {
    crate::telemetry::logs::init(LogFormat::Text, None, default)
}
