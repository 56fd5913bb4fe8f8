//! The openapi backend's server against a real HTTP API started by the test (actix-web on a loopback port
//! chosen at run time): the document read from a file and from a URL, its operations listed as tools, calls
//! that reach the API (path, query, body; the credential sent; an `Authorization` argument never), a 404
//! and a 500 as tool errors, a redirect to another origin not followed and one to the same origin followed,
//! an answer over the bound refused, a document that cannot be had failing the connection; and the
//! docs' example config (docs/src/openapi.md).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use handlers::{Credential, InProcessServer, TlsClient};
use serde_json::{Value, json};

use super::{MAX_RESPONSE_BYTES, OpenApiBackend, OpenApiServer};

/// What the API saw: each request's method, path and query, and its headers.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

const DOCUMENT: &str = r##"{
  "openapi": "3.1.0",
  "info": {"title": "Shop", "version": "2.0.0"},
  "paths": {
    "/items/{id}": {
      "get": {
        "operationId": "get_item",
        "summary": "Get an item",
        "parameters": [
          {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "verbose", "in": "query", "schema": {"type": "boolean"}}
        ],
        "responses": {"200": {"description": "the item", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}}}
      }
    },
    "/items": {
      "post": {
        "operationId": "create_item",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}},
        "responses": {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}}}
      }
    },
    "/fail": {"get": {"operationId": "fail", "responses": {"200": {"description": "never"}}}},
    "/moved": {"get": {"operationId": "moved", "responses": {"200": {"description": "never"}}}},
    "/hop": {"get": {"operationId": "hop", "responses": {"200": {"description": "ok"}}}},
    "/big": {"get": {"operationId": "big", "responses": {"200": {"description": "big"}}}}
  },
  "components": {"schemas": {"Item": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}}}
}"##;

/// The API: the document at `/openapi.json`, and the routes it describes.
async fn api(seen: Seen) -> (std::net::SocketAddr, actix_web::dev::ServerHandle) {
    let record = move |req: &HttpRequest| {
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        seen.lock()
            .unwrap()
            .push((format!("{} {}", req.method(), req.uri()), headers));
    };
    let server = HttpServer::new(move || {
        let record = record.clone();
        App::new()
            .wrap_fn(move |req, srv| {
                record(req.request());
                actix_web::dev::Service::call(srv, req)
            })
            .route(
                "/openapi.json",
                web::get().to(|| async {
                    HttpResponse::Ok()
                        .content_type("application/json")
                        .body(DOCUMENT)
                }),
            )
            .route(
                "/items/{id}",
                web::get().to(|id: web::Path<String>| async move {
                    if id.as_str() == "nope" {
                        HttpResponse::NotFound().json(json!({"detail": "no such item"}))
                    } else {
                        HttpResponse::Ok().json(json!({"id": id.into_inner(), "name": "lamp"}))
                    }
                }),
            )
            .route(
                "/items",
                web::post().to(|body: web::Json<Value>| async move {
                    HttpResponse::Created().json(json!({"id": "7", "name": body["name"]}))
                }),
            )
            .route(
                "/fail",
                web::get().to(|| async {
                    HttpResponse::InternalServerError().body("the database is down")
                }),
            )
            .route(
                "/moved",
                web::get().to(|req: HttpRequest| async move {
                    // Another origin: the same host by another name.
                    let port = req.app_config().local_addr().port();
                    HttpResponse::Found()
                        .insert_header((
                            "Location",
                            format!("http://localhost:{port}/items/1?signature=PRESIGNED-SECRET"),
                        ))
                        .finish()
                }),
            )
            .route(
                "/hop",
                web::get().to(|| async {
                    HttpResponse::Found()
                        .insert_header(("Location", "/items/hopped"))
                        .finish()
                }),
            )
            .route(
                "/big",
                web::get()
                    .to(|| async { HttpResponse::Ok().body(vec![b'x'; MAX_RESPONSE_BYTES + 1]) }),
            )
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (addr, handle)
}

fn backend(document: String, base: &str) -> OpenApiServer {
    OpenApiServer::new(OpenApiBackend {
        name: "shop".into(),
        document,
        base_url: base.to_owned(),
        operations: None,
        tls: TlsClient::default(),
        credential: Credential::fixed("Authorization", "Bearer gateway-own-token").unwrap(),
        connect_timeout: Duration::from_secs(5),
        egress: Default::default(),
    })
}

async fn ask(server: &OpenApiServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = server.handle(body.to_string().into_bytes()).await.unwrap();
    serde_json::from_slice(&answer).unwrap()
}

async fn call(server: &OpenApiServer, name: &str, arguments: Value) -> Value {
    ask(
        server,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
    .get("result")
    .cloned()
    .unwrap_or_else(|| panic!("{name}: no result"))
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[actix_rt::test]
async fn a_documents_operations_are_tools_whose_calls_reach_the_api() {
    let seen = Seen::default();
    let (addr, handle) = api(seen.clone()).await;
    let base = format!("http://{addr}");
    let dir = std::env::temp_dir().join(format!("mcpgw-openapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shop.json");
    std::fs::write(&file, DOCUMENT).unwrap();
    for document in [format!("{base}/openapi.json"), file.display().to_string()] {
        let server = backend(document.clone(), &base);
        let discover = ask(&server, "server/discover", json!({})).await;
        assert_eq!(
            discover["result"]["supportedVersions"][0], "2026-07-28",
            "{discover}"
        );
        let list = ask(&server, "tools/list", json!({})).await;
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        for name in ["get_item", "create_item", "fail", "moved", "hop", "big"] {
            assert!(names.contains(&name), "{document}: {names:?}");
        }

        let item = call(&server, "get_item", json!({"id": "a b/c", "verbose": true})).await;
        assert_eq!(item["structuredContent"]["id"], "a b/c", "{item}");
        assert_ne!(item["isError"], true);
        let created = call(&server, "create_item", json!({"body": {"name": "desk"}})).await;
        assert_eq!(
            created["structuredContent"],
            json!({"id": "7", "name": "desk"}),
            "{created}"
        );
        let missing = call(&server, "get_item", json!({"id": "nope"})).await;
        assert_eq!(missing["isError"], true, "{missing}");
        assert!(text(&missing).starts_with("HTTP 404"), "{missing}");
        assert!(text(&missing).contains("no such item"), "{missing}");
        // An argument the operation does not take (here one trying to set a credential) is refused.
        let smuggled = call(
            &server,
            "get_item",
            json!({"id": "1", "Authorization": "Bearer stolen"}),
        )
        .await;
        assert_eq!(smuggled["isError"], true, "{smuggled}");
        let failed = call(&server, "fail", json!({})).await;
        assert_eq!(failed["isError"], true);
        assert!(
            text(&failed).starts_with("HTTP 500") && text(&failed).contains("the database is down"),
            "{failed}"
        );
    }
    let seen = seen.lock().unwrap().clone();
    let (request, headers) = seen
        .iter()
        .find(|(r, _)| r.starts_with("GET /items/a%20b%2Fc"))
        .unwrap_or_else(|| panic!("the path parameter, percent-encoded: {seen:?}"));
    assert!(request.ends_with("?verbose=true"), "{request}");
    let authorization: Vec<&str> = headers
        .iter()
        .filter(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        authorization,
        ["Bearer gateway-own-token"],
        "only the backend's credential"
    );
    assert!(
        !seen
            .iter()
            .flat_map(|(_, h)| h)
            .any(|(_, v)| v.contains("stolen")),
        "an argument reached the API as a header: {seen:?}"
    );
    handle.stop(false).await;
}

#[actix_rt::test]
async fn redirects_stay_on_the_apis_origin_and_answers_are_bounded() {
    let (addr, handle) = api(Seen::default()).await;
    let base = format!("http://{addr}");
    let server = backend(format!("{base}/openapi.json"), &base);
    ask(&server, "server/discover", json!({})).await;
    let moved = call(&server, "moved", json!({})).await;
    assert_eq!(moved["isError"], true, "{moved}");
    assert!(text(&moved).contains("not followed"), "{moved}");
    // Only the host it pointed at is said: a presigned URL's query is a credential.
    assert!(text(&moved).contains("redirect to localhost "), "{moved}");
    assert!(!text(&moved).contains("PRESIGNED-SECRET"), "{moved}");
    let hopped = call(&server, "hop", json!({})).await;
    assert_eq!(hopped["structuredContent"]["id"], "hopped", "{hopped}");
    let big = call(&server, "big", json!({})).await;
    assert_eq!(big["isError"], true, "{big}");
    assert!(text(&big).contains("larger than"), "{big}");
    handle.stop(false).await;
}

#[actix_rt::test]
async fn a_document_that_cannot_be_had_fails_the_connection() {
    let server = backend("/nonexistent/openapi.json".into(), "http://127.0.0.1:9");
    let discover = ask(&server, "server/discover", json!({})).await;
    let message = discover["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("/nonexistent/openapi.json"), "{discover}");
}

#[test]
fn the_docs_openapi_example_is_a_valid_config() {
    let block = crate::docs_blocks::block("openapi-backend", "toml");
    let config = crate::config::Config::from_toml_str(&block, Path::new("openapi.md")).unwrap();
    let b = &config.backends[0];
    assert_eq!(
        b.openapi.as_deref(),
        Some("http://127.0.0.1:8000/openapi.json")
    );
    assert!(
        b.operations
            .as_ref()
            .is_some_and(|o| !o.selects("delete_item"))
    );
    // base_url is required with openapi, and applies to nothing else.
    let without = block.replace("base_url = \"http://127.0.0.1:8000\"\n", "");
    let err = crate::config::Config::from_toml_str(&without, Path::new("r.toml")).unwrap_err();
    assert!(err.to_string().contains("backend[0].base_url"), "{err}");
}

#[actix_rt::test]
async fn an_openapi_document_is_fetched_under_the_egress_rule() {
    let seen = Seen::default();
    let (addr, handle) = api(seen.clone()).await;
    let egress = crate::egress::Egress::from_config(&crate::config::EgressConfig {
        deny_networks: vec!["127.0.0.0/8".into(), "::1/128".into()],
        ..Default::default()
    });
    let server = OpenApiServer::new(OpenApiBackend {
        name: "shop".into(),
        document: format!("http://localhost:{}/openapi.json", addr.port()),
        base_url: format!("http://{addr}"),
        operations: None,
        tls: TlsClient::default(),
        credential: Credential::default(),
        connect_timeout: Duration::from_secs(5),
        egress: std::sync::Arc::new(egress),
    });
    let discover = ask(&server, "server/discover", json!({})).await;
    let message = discover["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("egress refused"), "{discover}");
    assert!(seen.lock().unwrap().is_empty(), "the API saw no request");
    handle.stop(false).await;
}
