//! A minimal actix-web JSON echo handler: the ceiling of HTTP on this machine for `bench/run.sh` (b).
//!
//! `POST /mcp` parses the body as JSON (as any JSON-RPC server must) and answers a JSON-RPC result carrying
//! the request's id, with just enough MCP for `mcpgw load --era modern` to drive it: `server/discover` lists
//! 2026-07-28, `tools/list` one tool `echo`, and any other method (`tools/call`) echoes the call's
//! `arguments.text` back as a text content item with `resultType: "complete"`. No validation, no routing,
//! no backend: what is left is actix-web, serde_json and the TCP loopback.
//!
//! Usage: `mcpgw-bench-echo [ADDR]` (default 127.0.0.1:0); prints `echo listening on http://ADDR/mcp`
//! on standard error. One worker per core, like mcpgw.

use actix_web::{App, HttpResponse, HttpServer, web};
use serde_json::{Value, json};

async fn mcp(body: web::Bytes) -> HttpResponse {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => {
            return HttpResponse::Ok().content_type("application/json").body(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            );
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let result = match method {
        "server/discover" => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench-echo", "version": "0.1.0"}
        }),
        "tools/list" => json!({
            "resultType": "complete",
            "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]
        }),
        _ => {
            let text = request
                .pointer("/params/arguments/text")
                .cloned()
                .unwrap_or(Value::Null);
            json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
        }
    };
    let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
    HttpResponse::Ok()
        .content_type("application/json")
        .body(serde_json::to_vec(&response).unwrap_or_default())
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    actix_web::rt::System::new().block_on(async move {
        let server =
            HttpServer::new(|| App::new().route("/mcp", web::post().to(mcp))).bind(&addr)?;
        for a in server.addrs() {
            eprintln!("echo listening on http://{a}/mcp");
        }
        server.run().await
    })
}
