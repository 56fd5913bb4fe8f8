//! The gateway's own tools in a searching view (`[catalog] search`): `find_tools` answered from the view's
//! index, and `call_tool` when it reaches dispatch (only when its arguments name no tool: a `call_tool`
//! that names one was made the direct call before validation, `pipeline::search`). Their failures are tool
//! errors (`isError: true`), as every tool's are.

use protocol::validate::{Call, Target};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Dispatch, raw};
use crate::catalog::GatewayTool;
use crate::catalog::search::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::pipeline::response::Outcome;

/// `find_tools`' arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Find {
    query: String,
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    limit: Option<u64>,
}

impl Dispatch<'_> {
    /// The gateway tool a validated `tools/call` names, in a searching view.
    pub(super) fn gateway_tool(&self, call: &Call) -> Option<GatewayTool> {
        match call.target()? {
            Target::Tool { route, .. } => self.snapshot.gateway_tool(*route),
            _ => None,
        }
    }

    /// Answers the gateway tool `call` names ([`Dispatch::gateway_tool`]).
    pub(super) fn answer_gateway_tool(&self, call: &Call) -> Outcome {
        let Some(tool) = self.gateway_tool(call) else {
            return tool_error("no such gateway tool");
        };
        #[derive(Deserialize)]
        struct Params {
            #[serde(default)]
            arguments: Option<Value>,
        }
        let arguments = call
            .request()
            .params_as::<Params>()
            .ok()
            .and_then(|p| p.arguments)
            .unwrap_or_else(|| json!({}));
        match tool {
            GatewayTool::CallTool => tool_error(
                "call_tool needs the exact name of a tool (a string \"name\", as find_tools returned it) and \
                 its \"arguments\" (an object)",
            ),
            GatewayTool::FindTools => {
                let find: Find = match serde_json::from_value(arguments) {
                    Ok(find) => find,
                    Err(e) => {
                        return tool_error(&format!(
                            "find_tools needs a string \"query\", and optionally \"backend\" and \"limit\" (1 to {MAX_LIMIT}): {e}"
                        ));
                    }
                };
                let limit = match find.limit {
                    None => DEFAULT_LIMIT,
                    Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
                    Some(n) => {
                        return tool_error(&format!(
                            "find_tools' limit must be between 1 and {MAX_LIMIT}, not {n}"
                        ));
                    }
                };
                if find.query.trim().is_empty() {
                    return tool_error(
                        "find_tools needs a query: words of what the tool should do",
                    );
                }
                match self
                    .snapshot
                    .find_tools(&find.query, find.backend.as_deref(), limit)
                {
                    Some(found) => raw(&found),
                    None => tool_error("find_tools is not offered here"),
                }
            }
        }
    }
}

/// A tool error result saying `why`.
fn tool_error(why: &str) -> Outcome {
    raw(&json!({
        "content": [{"type": "text", "text": why}],
        "isError": true,
    }))
}
