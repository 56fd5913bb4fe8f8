//! mcpgw as a library: [`Gateway::builder`] gives a [`Builder`], which takes a config, the user's own
//! middlewares (placed in the documented stage order with the built-ins) and servers built into the user's
//! binary, then serves — or runs the whole `mcpgw` command line with them (`Builder::main`, what the `mcpgw`
//! binary itself is). It must not serve differently from `mcpgw serve`: both go through `run_with`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use handlers::InProcessServer;

use super::additions::Additions;
use super::{Reloading, ServeError};
use crate::config::{BackendEntry, Config};
use crate::pipeline::{Added, Middleware, MwContext, Next, Response};
use crate::reload::config::ConfigSource;

/// A gateway built in Rust: the entry point of the library. See [`Builder`].
///
/// ```no_run
/// use mcpgw::{Gateway, MwContext, Next, Response};
///
/// async fn tag(ctx: MwContext, next: Next) -> Response {
///     tracing::info!(method = %ctx.method(), "seen");
///     next(ctx).await
/// }
///
/// fn main() -> std::process::ExitCode {
///     // `mcpgw serve`, `check`, `call` …: the mcpgw command line, with one middleware more.
///     Gateway::builder().middleware(tag).main()
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Gateway;

impl Gateway {
    /// A builder with nothing added: `Gateway::builder().main()` is the `mcpgw` binary.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// What a gateway is built from: a config, middlewares, in-process servers, readable headers.
///
/// Middlewares a `[[middleware]] kind = "library"` table names by their [`Middleware::name`] run where the
/// table stands; the others run after every `[[middleware]]` table, closest to the dispatch, in the order
/// added. The stages before them never move: authentication (the gate), the policy view (validation), the
/// scope check and the rate limits.
#[derive(Default)]
pub struct Builder {
    config: Option<Config>,
    source: Option<ConfigSource>,
    watch: bool,
    stdio: bool,
    middlewares: Vec<Arc<dyn Middleware>>,
    servers: crate::state::Builtins,
    /// Backends to add to the config unless it has one of the name.
    backends: Vec<String>,
    headers: Vec<http::HeaderName>,
    /// What was refused while building (said by `serve`).
    refused: Vec<String>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("middlewares", &self.middlewares.len())
            .field("servers", &self.servers)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// The config to serve (read it with [`Config::from_toml_str`] or [`Config::from_toml_file`]). A
    /// reload (SIGHUP, `POST /admin/reload`) needs [`Builder::config_file`] instead.
    pub fn config(mut self, config: Config) -> Builder {
        self.config = Some(config);
        self.source = None;
        self
    }

    /// The config file to serve, read again on SIGHUP and `POST /admin/reload` (and on change when
    /// `watch`). A file that does not load is said by [`Builder::serve`].
    pub fn config_file(mut self, path: impl AsRef<Path>, watch: bool) -> Builder {
        let path: PathBuf = path.as_ref().to_owned();
        match Config::from_toml_file(&path) {
            Ok(config) => self.config = Some(config),
            Err(e) => self.refused.push(e.to_string()),
        }
        self.source = Some(ConfigSource::Toml(path));
        self.watch = watch;
        self
    }

    /// Serves one client over standard input and output instead of HTTP.
    pub fn stdio(mut self, stdio: bool) -> Builder {
        self.stdio = stdio;
        self
    }

    /// Adds a middleware: any `async fn(MwContext, Next) -> Response`, or a type implementing
    /// [`Middleware`]. Named by [`Middleware::name`] (a function's own name).
    pub fn middleware(mut self, middleware: impl Middleware) -> Builder {
        self.middlewares.push(Arc::new(middleware));
        self
    }

    /// Adds a middleware under `name` (what a `[[middleware]] kind = "library"` table calls it).
    pub fn middleware_named<F, Fut>(self, name: &str, middleware: F) -> Builder
    where
        F: Fn(MwContext, Next) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Response> + 'static,
    {
        self.middleware(Named {
            name: name.to_owned(),
            middleware,
        })
    }

    /// Builds `server` into this binary as backend `name`: served in-process (2026-07-28, called on the
    /// request's own thread), a `[[backend]] name = NAME, builtin = [NAME]` added to the config unless it
    /// has a backend of that name already (which then sets its timeouts, policy and the rest).
    pub fn backend(mut self, name: &str, server: impl InProcessServer) -> Builder {
        self.servers.add(name.to_owned(), Arc::new(server));
        self.backends.push(name.to_owned());
        self
    }

    /// Builds `server` into this binary without a backend: a config's `builtin = [NAME]` serves it.
    pub fn server(mut self, name: &str, server: impl InProcessServer) -> Builder {
        self.servers.add(name.to_owned(), Arc::new(server));
        self
    }

    /// A request header middlewares may read ([`MwContext::header`]); none is kept otherwise. Headers that
    /// carry a credential or a session (`Authorization`, `Cookie`, `Mcp-Session-Id`, …) are refused.
    pub fn read_header(mut self, name: &str) -> Builder {
        match http::HeaderName::from_bytes(name.as_bytes()) {
            Ok(h) => self.headers.push(h),
            Err(_) => self
                .refused
                .push(format!("read_header: {name:?} is not a header name")),
        }
        self
    }

    /// Serves until stopped (Ctrl-C or SIGTERM; the end of standard input with `stdio`), logging to
    /// standard error as the config says. With no config, serves the backends added on the defaults
    /// (`127.0.0.1:7800`, no authentication: loopback only).
    pub fn serve(mut self) -> Result<(), ServeError> {
        if let Some(why) = self.refused.first() {
            return Err(ServeError::Additions(why.clone()));
        }
        let config = match self.config.take() {
            Some(config) => config,
            None => Config::from_toml_str("", Path::new("<no config>"))
                .map_err(|e| ServeError::Additions(e.to_string()))?,
        };
        let _logging = crate::telemetry::logs::init(
            config.server.log_format,
            config.server.log_level.as_deref(),
            "info",
        );
        let reloading = Reloading {
            source: self.source.take(),
            watch: self.watch,
        };
        self.serve_loaded(config, reloading)
    }

    /// Serves `config` (logging already set up), with the backends added, `[traces]` installed.
    pub(crate) fn serve_loaded(
        self,
        mut config: Config,
        reloading: Reloading,
    ) -> Result<(), ServeError> {
        let stdio = self.stdio;
        let additions = self.into_additions(&mut config)?;
        let traces = config
            .traces
            .as_ref()
            .map(crate::telemetry::traces::install)
            .transpose()
            .map_err(|e| ServeError::Additions(e.to_string()))?;
        let served = super::run_with(config, stdio, reloading, additions);
        if let Some(traces) = traces {
            traces.shutdown();
        }
        served
    }

    /// Sets whether to serve over stdio (the command line's `--stdio`).
    pub(crate) fn with_stdio(mut self, stdio: bool) -> Builder {
        self.stdio = stdio;
        self
    }

    /// The servers added (for `mcpgw check`).
    pub(crate) fn servers(&self) -> &crate::state::Builtins {
        &self.servers
    }

    /// Adds the backends added to `config` (each unless it names one already), and checks it again.
    pub(crate) fn add_backends(&self, config: &mut Config) -> Result<(), ServeError> {
        if let Some(why) = self.refused.first() {
            return Err(ServeError::Additions(why.clone()));
        }
        for name in &self.backends {
            if config.backends.iter().any(|b| &b.name == name) {
                continue;
            }
            config.backends.push(backend_entry(name)?);
        }
        config
            .validate()
            .map_err(|e| ServeError::Additions(e.to_string()))?;
        self.servers
            .check(config)
            .map_err(|e| ServeError::Additions(e.to_string()))?;
        let names: Vec<String> = self.middlewares.iter().map(|m| m.name().to_owned()).collect();
        match config.unknown_library(&names) {
            Some(why) => Err(ServeError::Additions(why)),
            None => Ok(()),
        }
    }

    /// The additions, the backends added to `config`.
    fn into_additions(self, config: &mut Config) -> Result<Additions, ServeError> {
        self.add_backends(config)?;
        Ok(Additions {
            middlewares: Added::new(self.middlewares),
            servers: self.servers,
            headers: self.headers.into(),
        })
    }
}

/// `[[backend]] name = NAME, builtin = [NAME]`, every other setting its default.
fn backend_entry(name: &str) -> Result<BackendEntry, ServeError> {
    let mut table = toml::Table::new();
    table.insert("name".into(), toml::Value::String(name.to_owned()));
    table.insert(
        "builtin".into(),
        toml::Value::Array(vec![toml::Value::String(name.to_owned())]),
    );
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| ServeError::Additions(format!("backend {name}: {e}")))
}

/// A middleware under a name of its own.
struct Named<F> {
    name: String,
    middleware: F,
}

impl<F, Fut> Middleware for Named<F>
where
    F: Fn(MwContext, Next) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response> + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn handle(&self, ctx: MwContext, next: Next) -> futures_util::future::LocalBoxFuture<'static, Response> {
        Box::pin((self.middleware)(ctx, next))
    }
}
