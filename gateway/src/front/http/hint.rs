//! `GET /` on the front door: a person (or a client pointed at the bare address) is told where the MCP
//! endpoint is and how to try it. It says only what every client of the listener may know: the default
//! endpoint's path, never the `[[endpoint]]` paths (an endpoint's access rules may hide it), the backends,
//! or anything from the request (no `Host` echoed back).

use actix_web::HttpResponse;

/// The hint's text: the MCP endpoint and a first command.
pub(super) fn text() -> String {
    format!(
        "mcpgw {version}: a gateway for the Model Context Protocol.\n\
         The MCP endpoint is /mcp on this address: point an MCP client at it (Streamable HTTP, every \
         protocol generation).\n\
         Try: mcpgw tools --url http://HOST:PORT/mcp\n",
        version = env!("CARGO_PKG_VERSION")
    )
}

pub(super) async fn root() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(text())
}
