//! The founding document's middleware: a request without a principal is answered at once with an error, for
//! its own id, and never reaches a backend. Everything else is the `mcpgw` command line:
//!
//! ```sh
//! cargo run -p gateway --example auth_check -- serve --config mcpgw.toml
//! ```

use mcpgw::{Error, ErrorCode, Gateway, MwContext, Next, Response};

async fn auth_check(ctx: MwContext, next: Next) -> Response {
    if ctx.principal().is_none() {
        let err = Error::new(ErrorCode::InvalidParams, "Unauthorized");
        return Response::error(ctx.id(), err);
    }
    next(ctx).await
}

fn main() -> std::process::ExitCode {
    Gateway::builder().middleware(auth_check).main()
}
