//! The outbound edge: a backend's redirect is refused, not followed (nothing reaches the host it points at,
//! neither the caller's arguments nor the gateway's credential); a backend's body never reaches the caller;
//! a key in the backend URL's query never reaches an error, the backend's status (what `/readyz` shows) or
//! a log above debug. Scripted actix-web servers on 127.0.0.1, ports chosen at run time.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use handlers::Credential;
use protocol::shape::Failure;
use serde_json::{Value, json};

use crate::support::{call, http_config, start};

/// What a scripted server answers: the request and its body in, the response out.
type Script = Arc<dyn Fn(&HttpRequest, &Value) -> HttpResponse + Send + Sync>;

/// One request a scripted server received.
#[derive(Debug, Clone)]
struct Hit {
    headers: String,
    body: String,
}

/// A scripted server on a free loopback port; stopped on drop.
struct Scripted {
    /// `http://127.0.0.1:port`.
    base: String,
    hits: Arc<Mutex<Vec<Hit>>>,
    handle: ServerHandle,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

impl Scripted {
    fn start(
        script: impl Fn(&HttpRequest, &Value) -> HttpResponse + Send + Sync + 'static,
    ) -> Self {
        let script: Script = Arc::new(script);
        let hits = Arc::new(Mutex::new(Vec::new()));
        let state = web::Data::new((Arc::clone(&script), Arc::clone(&hits)));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .default_service(web::to(serve))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0)
        .bind(("127.0.0.1", 0))
        .expect("bind a loopback port");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Scripted {
            base: format!("http://127.0.0.1:{port}"),
            hits,
            handle,
        }
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

async fn serve(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<(Script, Arc<Mutex<Vec<Hit>>>)>,
) -> HttpResponse {
    let (script, hits) = &**state;
    hits.lock().unwrap().push(Hit {
        headers: format!("{:?}", req.headers()),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script(&req, &message)
}

/// A 2026-07-28 backend's answer to `server/discover`; `None` for any other request.
fn discover(message: &Value) -> Option<HttpResponse> {
    (message["method"] == "server/discover").then(|| {
        HttpResponse::Ok().content_type("application/json").body(
            json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private"
            }})
            .to_string(),
        )
    })
}

/// What the failure of a call says, every field of it.
fn said(failure: &Failure) -> String {
    format!("{failure} {failure:?}")
}

#[actix_rt::test]
async fn a_backend_307_is_refused_and_replays_nothing_to_another_host() {
    let elsewhere = Scripted::start(|_, message| {
        HttpResponse::Ok().content_type("application/json").body(
            json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}).to_string(),
        )
    });
    let target = format!("{}/collect?stolen=1", elsewhere.base);
    let backend = Scripted::start(move |_, message| {
        discover(message).unwrap_or_else(|| {
            HttpResponse::TemporaryRedirect()
                .insert_header(("location", target.as_str()))
                .finish()
        })
    });
    let mut config = http_config("web", &format!("{}/mcp", backend.base));
    config.credential = Credential::fixed("authorization", "Bearer GATEWAY-CREDENTIAL").unwrap();
    let (handle, mut events) = start(config);
    events.ready().await;

    let failure = handle
        .call(call("transfer", r#"{"secret": "ARGUMENT-SECRET"}"#))
        .await
        .unwrap_err();
    let text = said(&failure);
    assert!(matches!(failure, Failure::Unavailable { .. }), "{text}");
    let port = elsewhere.base.trim_start_matches("http://");
    assert!(
        text.contains("redirect (307)") && text.contains(port) && text.contains("not followed"),
        "{text}"
    );
    assert!(
        !text.contains("collect") && !text.contains("stolen"),
        "{text}"
    );
    // The call and the credential reached the backend, and nothing reached the host it pointed at.
    assert!(backend.hits().iter().any(|h| h.body.contains("ARGUMENT-SECRET")
        && h.headers.contains("GATEWAY-CREDENTIAL")));
    assert!(elsewhere.hits().is_empty(), "{:#?}", elsewhere.hits());
    handle.shutdown();
}

#[actix_rt::test]
async fn a_backend_303_to_an_internal_service_never_reaches_the_client() {
    let internal = Scripted::start(|_, _| {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(r#"{"internal": "INTERNAL-SERVICE-ANSWER"}"#)
    });
    let target = format!("{}/admin/keys", internal.base);
    let backend = Scripted::start(move |_, message| {
        discover(message).unwrap_or_else(|| {
            HttpResponse::SeeOther()
                .insert_header(("location", target.as_str()))
                .finish()
        })
    });
    let (handle, mut events) = start(http_config("web", &format!("{}/mcp", backend.base)));
    events.ready().await;
    let failure = handle.call(call("look", "{}")).await.unwrap_err();
    let text = said(&failure);
    assert!(text.contains("redirect (303)"), "{text}");
    assert!(!text.contains("INTERNAL-SERVICE-ANSWER"), "{text}");
    assert!(internal.hits().is_empty(), "{:#?}", internal.hits());
    handle.shutdown();
}

#[actix_rt::test]
async fn a_backend_error_body_never_reaches_the_client() {
    let logs = Logs::capture();
    let backend = Scripted::start(|_, message| {
        discover(message).unwrap_or_else(|| {
            // A 200 whose body is no JSON-RPC response: what an internal page or a proxy's error says.
            HttpResponse::Ok()
                .content_type("application/json")
                .body(r#"{"page": "BACKEND-BODY-SECRET"}"#)
        })
    });
    let (handle, mut events) = start(http_config("web", &format!("{}/mcp", backend.base)));
    events.ready().await;
    let failure = handle.call(call("look", "{}")).await.unwrap_err();
    let text = said(&failure);
    assert!(
        text.contains("not the json-rpc response expected"),
        "{text}"
    );
    assert!(!text.contains("BACKEND-BODY-SECRET"), "{text}");
    assert!(backend.hits().len() >= 2, "{:#?}", backend.hits());
    logs.assert_never("BACKEND-BODY-SECRET");
    handle.shutdown();
}

#[actix_rt::test]
async fn a_backend_url_query_key_never_appears_in_errors_or_readyz() {
    let logs = Logs::capture();
    // A port that was free a moment ago: nothing listens there now.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("http://user:USERINFO-SECRET@127.0.0.1:{port}/mcp?key=QUERY-SECRET");
    let (handle, mut events) = start(http_config("hosted", &url));
    let reason = events.down().await;
    let status = handle.status();
    let failure = handle.call(call("look", "{}")).await.unwrap_err();
    let shown = [
        reason.clone(),
        format!("{:?}", status.last_error),
        said(&failure),
    ];
    for text in &shown {
        assert!(
            !text.contains("QUERY-SECRET") && !text.contains("USERINFO-SECRET"),
            "{text}"
        );
    }
    // The reason still says where: the URL without its userinfo and query.
    assert!(
        reason.contains(&format!("http://127.0.0.1:{port}/mcp")),
        "{reason}"
    );
    logs.assert_never("QUERY-SECRET");
    logs.assert_never("USERINFO-SECRET");
    handle.shutdown();
}

/// What the process logged above debug, for every test of this binary (one subscriber per process): a test
/// looks only for the secrets it made up.
struct Logs(&'static Mutex<Vec<u8>>);

impl Logs {
    fn capture() -> Logs {
        static LINES: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
        let lines = *LINES.get_or_init(|| {
            let lines: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_writer(move || Writer(lines))
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            lines
        });
        Logs(lines)
    }

    fn assert_never(&self, secret: &str) {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        assert!(
            !text.contains(secret),
            "{secret} logged above debug:\n{text}"
        );
    }
}

struct Writer(&'static Mutex<Vec<u8>>);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
