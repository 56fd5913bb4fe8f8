//! mcpgw: a gateway for the Model Context Protocol, as a library. One endpoint serves many MCP clients of
//! every protocol generation (legacy `initialize` sessions and stateless 2026-07-28 requests) and fronts many
//! backend MCP servers; the `mcpgw` binary is [`Gateway::builder`]`().main()`.
//!
//! A Rust user builds their own gateway with it: the founding document's middleware
//! (`async fn mw(ctx: MwContext, next: Next) -> Response`, answering with [`Response::error`], a result, a
//! tool error or a refusal, or going on with `next(ctx).await`), their own tools served in-process
//! ([`ToolServer`]), and everything `mcpgw serve` does from a [`Config`]:
//!
//! ```no_run
//! use mcpgw::{Error, ErrorCode, Gateway, MwContext, Next, Response};
//!
//! async fn auth_check(ctx: MwContext, next: Next) -> Response {
//!     if ctx.principal().is_none() {
//!         let err = Error::new(ErrorCode::InvalidParams, "Unauthorized");
//!         return Response::error(ctx.id(), err);
//!     }
//!     next(ctx).await
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     Gateway::builder().middleware(auth_check).main()
//! }
//! ```
//!
//! The crate root is the public surface; the domains behind it (HTTP and stdio fronts, the pipeline, the
//! catalog, sessions, authentication, policy, …) are private, and public only with the `internals`
//! feature, which mcpgw's own benchmarks use and which is not a stable API. It must not re-implement wire
//! rules: every request is validated by `protocol::validate` and every response shaped by
//! `protocol::shape`; and it must not talk to backends except through `handlers::BackendHandle`.

/// The domains, private (`pub(crate)`), or public with the `internals` feature (mcpgw's benchmarks).
macro_rules! domains {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(feature = "internals")]
            #[doc(hidden)]
            pub mod $name;
            #[cfg(not(feature = "internals"))]
            pub(crate) mod $name;
        )*
    };
}

domains!(
    auth,
    auth_context,
    bridge,
    cache,
    catalog,
    check,
    client,
    cluster,
    config,
    drain,
    egress,
    endpoint,
    front,
    glob,
    intercept,
    limit,
    metrics,
    notify,
    oauth,
    openapi,
    pipeline,
    policy,
    probe,
    redaction,
    reload,
    reloadable,
    serve,
    session,
    state,
    telemetry,
    tls,
    tool_server,
);

#[cfg(test)]
mod docs_blocks;
#[cfg(test)]
mod layering;

pub use config::{Config, ConfigError};
pub use handlers::{InProcessAnswer, InProcessServer};
pub use pipeline::{Middleware, MwContext, Next, Principal, Response, Summary, Transport};
pub use protocol::payload::CallToolResult;
pub use protocol::{Error, ErrorCode, Generation, Method, RequestId};
pub use serve::ServeError;
pub use serve::builder::{Builder, Gateway};
pub use tool_server::ToolServer;
