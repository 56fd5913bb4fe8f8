//! A tool of one's own, served in-process behind the gateway as backend `greeter` (its tools listed as
//! `greeter__greet` beside the config's backends), with the `mcpgw` command line:
//!
//! ```sh
//! cargo run -p gateway --example in_process_tool -- serve --config mcpgw.toml
//! ```
//!
//! A handler's error is a tool error (`isError: true`) the model reads; the gateway's policy, limits,
//! middlewares and logs apply to it as to any backend.

use mcpgw::{CallToolResult, Error, ErrorCode, Gateway, ToolServer};
use serde_json::json;

fn greeter() -> ToolServer {
    ToolServer::new("greeter", "1.0.0").tool(
        "greet",
        "Greets someone by name.",
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "who to greet"}},
            "required": ["name"],
        }),
        |args| async move {
            let name = args
                .get("name")
                .and_then(|n| n.as_str())
                .filter(|n| !n.trim().is_empty())
                .ok_or_else(|| {
                    Error::new(ErrorCode::InvalidParams, "name must be a non-empty string")
                })?;
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        },
    )
}

fn main() -> std::process::ExitCode {
    Gateway::builder().backend("greeter", greeter()).main()
}
