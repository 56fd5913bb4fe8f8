//! A Rust user's own tools served behind the gateway, in-process ([`ToolServer`]): a 2026-07-28 MCP server
//! answering `server/discover`, `ping`, `tools/list` and `tools/call` from async functions, called on the
//! request's own thread like the built-in mock. A handler's error is a tool error (`isError: true`, its
//! message the text), as the founding error model says. It must not know the gateway: it is a backend.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use handlers::{InProcessAnswer, InProcessServer};
use protocol::payload::{CallToolResult, Implementation, Tool};
use protocol::raw::RawObject;
use protocol::shape::{CachePolicy, Stamp, response_bytes, shape};
use protocol::{Error, ErrorCode, Generation, Method, Request};
use serde_json::{Map, Value, json};

const MODERN: Generation = Generation::V2026_07_28;

type Handler = Arc<
    dyn Fn(Map<String, Value>) -> Pin<Box<dyn Future<Output = Result<CallToolResult, Error>> + Send>>
        + Send
        + Sync,
>;

/// Tools served in-process: add it with `Builder::backend(name, server)`.
///
/// ```
/// use mcpgw::{CallToolResult, Error, ErrorCode, ToolServer};
/// use serde_json::json;
///
/// let server = ToolServer::new("greeter", "1.0.0").tool(
///     "greet",
///     "Greets someone by name.",
///     json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
///     |args| async move {
///         let name = args.get("name").and_then(|n| n.as_str())
///             .ok_or_else(|| Error::new(ErrorCode::InvalidParams, "name must be a string"))?;
///         Ok(CallToolResult::text(format!("Hello, {name}!")))
///     },
/// );
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct ToolServer(Arc<Inner>);

struct Inner {
    info: Implementation,
    stamp: Stamp,
    tools: Vec<Tool>,
    handlers: BTreeMap<String, Handler>,
}

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.0.info.name)
            .field("tools", &self.0.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolServer {
    /// A server named `name` (its `serverInfo`), with no tool yet.
    pub fn new(name: &str, version: &str) -> ToolServer {
        let info = Implementation {
            name: name.to_owned(),
            version: version.to_owned(),
            ..Implementation::default()
        };
        ToolServer(Arc::new(Inner {
            stamp: Stamp::new(&info, CachePolicy::NONE),
            info,
            tools: Vec::new(),
            handlers: BTreeMap::new(),
        }))
    }

    /// Adds tool `name`: `input_schema` is the JSON Schema of its arguments (an object schema), `handler`
    /// answers a call with its arguments. A tool of the same name is replaced.
    pub fn tool<F, Fut>(
        self,
        name: &str,
        description: &str,
        input_schema: Value,
        handler: F,
    ) -> ToolServer
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, Error>> + Send + 'static,
    {
        let tool: Tool = match serde_json::from_value(json!({
            "name": name,
            "description": description,
            "inputSchema": input_schema,
        })) {
            Ok(tool) => tool,
            Err(_) => return self,
        };
        let mut inner = Arc::try_unwrap(self.0).unwrap_or_else(|shared| Inner {
            info: shared.info.clone(),
            stamp: Stamp::new(&shared.info, CachePolicy::NONE),
            tools: shared.tools.clone(),
            handlers: shared.handlers.clone(),
        });
        inner.tools.retain(|t| t.name != name);
        inner.tools.push(tool);
        inner.handlers.insert(
            name.to_owned(),
            Arc::new(move |args| Box::pin(handler(args))),
        );
        ToolServer(Arc::new(inner))
    }
}

impl InProcessServer for ToolServer {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let inner = Arc::clone(&self.0);
        handlers::answer_requests(message, move |request| async move {
            inner.answer(&request).await
        })
    }
}

fn error(id: &Option<protocol::RequestId>, err: Error) -> Vec<u8> {
    response_bytes(&protocol::Response::error(id.clone(), err), MODERN)
}

impl Inner {
    async fn answer(&self, request: &Request) -> Vec<u8> {
        let id = Some(request.id.clone());
        let method = match Method::parse(&request.method).filter(|m| m.exists_in(MODERN)) {
            Some(m @ (Method::ServerDiscover | Method::Ping | Method::ToolsList | Method::ToolsCall)) => m,
            _ => {
                return error(
                    &id,
                    Error::new(
                        ErrorCode::MethodNotFound,
                        format!("method not found: {} (this server serves tools)", request.method),
                    ),
                );
            }
        };
        let result = match method {
            Method::ServerDiscover => json!({
                "supportedVersions": [MODERN.as_str()],
                "capabilities": {"tools": {}},
                "serverInfo": self.info,
            }),
            Method::ToolsList => json!({"tools": self.tools}),
            Method::ToolsCall => match self.call(request).await {
                Ok(result) => result,
                Err(e) => return error(&id, e),
            },
            _ => json!({}),
        };
        match serde_json::value::to_raw_value(&result) {
            Ok(raw) => shape(&request.id, method, MODERN, Ok(&raw), &self.stamp).body,
            Err(e) => error(&id, Error::new(ErrorCode::InternalError, e.to_string())),
        }
    }

    /// A `tools/call`: an unknown tool or arguments that are not an object are the request's fault
    /// (-32602); the handler's error is the tool's (`isError: true`).
    async fn call(&self, request: &Request) -> Result<Value, Error> {
        let params = request
            .params
            .as_deref()
            .and_then(RawObject::parse)
            .ok_or_else(|| Error::new(ErrorCode::InvalidParams, "tools/call needs params"))?;
        let name: String = params
            .get("name")
            .and_then(|n| serde_json::from_str(n.get()).ok())
            .ok_or_else(|| Error::new(ErrorCode::InvalidParams, "tools/call needs a name"))?;
        let handler = self.handlers.get(&name).ok_or_else(|| {
            Error::new(ErrorCode::InvalidParams, format!("unknown tool: {name}"))
        })?;
        let arguments: Map<String, Value> = match params.get("arguments") {
            None => Map::new(),
            Some(raw) => serde_json::from_str(raw.get()).map_err(|_| {
                Error::new(ErrorCode::InvalidParams, "arguments must be an object")
            })?,
        };
        let result = match handler(arguments).await {
            Ok(result) => result,
            Err(e) => CallToolResult::error(e.message()),
        };
        serde_json::to_value(result).map_err(|e| Error::new(ErrorCode::InternalError, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(server: &ToolServer, line: Value) -> Value {
        let bytes = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(server.handle(line.to_string().into_bytes()))
            .expect("an answer");
        serde_json::from_slice(&bytes).expect("JSON")
    }

    fn server() -> ToolServer {
        ToolServer::new("t", "1").tool(
            "half",
            "Halves an even number.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            |args| async move {
                let n = args.get("n").and_then(Value::as_i64).unwrap_or(0);
                if n % 2 != 0 {
                    return Err(Error::new(ErrorCode::InvalidParams, format!("{n} is odd")));
                }
                Ok(CallToolResult::json(json!({"half": n / 2})))
            },
        )
    }

    fn call(name: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": arguments,
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    }

    #[test]
    fn tools_are_discovered_listed_and_called_and_a_handler_error_is_a_tool_error() {
        let s = server();
        let discover = answer(
            &s,
            json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}),
        );
        assert_eq!(discover["result"]["supportedVersions"], json!(["2026-07-28"]));
        let list = answer(
            &s,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
        );
        assert_eq!(list["result"]["tools"][0]["name"], "half");
        assert_eq!(list["result"]["tools"][0]["inputSchema"]["type"], "object");
        let ok = answer(&s, call("half", json!({"n": 8})));
        assert_eq!(ok["result"]["structuredContent"], json!({"half": 4}));
        let odd = answer(&s, call("half", json!({"n": 3})));
        assert_eq!(odd["result"]["isError"], true, "{odd}");
        assert_eq!(odd["result"]["content"][0]["text"], "3 is odd");
    }

    #[test]
    fn what_the_request_gets_wrong_is_a_json_rpc_error() {
        let s = server();
        let cases = [
            (call("nope", json!({})), -32602),
            (call("half", json!([1])), -32602),
            (
                json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list", "params": {}}),
                -32601,
            ),
        ];
        for (line, code) in cases {
            let got = answer(&s, line.clone());
            assert_eq!(got["error"]["code"], code, "{line} → {got}");
        }
    }
}
