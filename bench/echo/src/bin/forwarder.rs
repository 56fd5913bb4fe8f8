//! The design card's stack doing nothing but forwarding: the baseline of `bench/run.sh` (n) between nginx
//! and mcpgw. An actix-web handler takes `POST /mcp` and sends its body to one upstream with a hyper
//! HTTP/1.1 client (one keep-alive pool per worker thread, as mcpgw's exchange has), copying the request's
//! `Content-Type`, `Accept` and `Mcp-*` headers there and the answer's status, `Content-Type` and `Mcp-*`
//! headers back. No MCP: no parse, no validation, no `_meta`, no log line. What it costs is actix-web,
//! hyper and the two loopback exchanges; mcpgw minus this is what MCP's work costs.
//!
//! Usage: `forwarder UPSTREAM_URL [ADDR]` (ADDR default 127.0.0.1:0); prints
//! `forwarder listening on http://ADDR/mcp` on standard error. One worker per core, like mcpgw.

use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

type Upstream = Client<HttpConnector, Full<Bytes>>;

fn copied(name: &str) -> bool {
    name.starts_with("mcp-") || name == "content-type" || name == "accept"
}

async fn mcp(
    request: HttpRequest,
    body: web::Bytes,
    client: web::Data<Upstream>,
    url: web::Data<hyper::Uri>,
) -> HttpResponse {
    let mut out = hyper::Request::post(url.get_ref().clone());
    for (name, value) in request.headers() {
        if copied(name.as_str()) {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    let Ok(out) = out.body(Full::new(body)) else {
        return HttpResponse::BadRequest().finish();
    };
    let Ok(answer) = client.request(out).await else {
        return HttpResponse::BadGateway().finish();
    };
    let (head, body) = answer.into_parts();
    let Ok(body) = body.collect().await else {
        return HttpResponse::BadGateway().finish();
    };
    let status = StatusCode::from_u16(head.status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    for (name, value) in &head.headers {
        if copied(name.as_str()) {
            response.insert_header((name.as_str(), value.as_bytes()));
        }
    }
    response.body(body.to_bytes())
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let upstream: hyper::Uri = args
        .next()
        .and_then(|u| u.parse().ok())
        .expect("usage: forwarder UPSTREAM_URL [ADDR]");
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            // Built per worker: each thread keeps its own connections to the upstream.
            let client: Upstream = Client::builder(TokioExecutor::new()).build_http();
            App::new()
                .app_data(web::Data::new(client))
                .app_data(web::Data::new(upstream.clone()))
                .route("/mcp", web::post().to(mcp))
        })
        .bind(&addr)?;
        for a in server.addrs() {
            eprintln!("forwarder listening on http://{a}/mcp");
        }
        server.run().await
    })
}
