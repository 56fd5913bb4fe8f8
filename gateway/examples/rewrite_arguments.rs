//! A middleware that rewrites a tool call's arguments before any backend sees them: every string argument
//! loses its surrounding whitespace, and a call whose arguments are not what it expects is refused with a
//! tool error the model can read. With the `mcpgw` command line:
//!
//! ```sh
//! cargo run -p gateway --example rewrite_arguments -- serve --config mcpgw.toml
//! ```

use mcpgw::{Error, ErrorCode, Gateway, Method, MwContext, Next, Response};
use serde_json::Value;

/// At most this many characters in one string argument.
const MAX_TEXT: usize = 10_000;

async fn trim_arguments(mut ctx: MwContext, next: Next) -> Response {
    if ctx.method() != Method::ToolsCall {
        return next(ctx).await;
    }
    match trimmed(&mut ctx) {
        Ok(()) => next(ctx).await,
        Err(e) => Response::tool_error(ctx.id(), e.message().to_owned(), None),
    }
}

/// `?` works through `Error`'s `From` conversions; the middleware turns the error into its answer.
fn trimmed(ctx: &mut MwContext) -> Result<(), Error> {
    let Some(mut arguments) = ctx.arguments() else {
        return Ok(());
    };
    for (name, value) in arguments.iter_mut() {
        if let Value::String(text) = value {
            if text.chars().count() > MAX_TEXT {
                return Err(Error::new(
                    ErrorCode::InvalidParams,
                    format!("argument {name} is longer than {MAX_TEXT} characters"),
                ));
            }
            *text = text.trim().to_owned();
        }
    }
    ctx.set_arguments(arguments)
}

fn main() -> std::process::ExitCode {
    Gateway::builder().middleware(trim_arguments).main()
}
