//! Tests of the HTTP transport, in process through actix-web's test service, and once on a real socket
//! bound to 127.0.0.1:0: legacy sessions, modern requests and their rejections, eras, batches, SSE and
//! `--crash-after`.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::{App, test, web};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{State, routes, start};
use crate::dispatch::Mock;
use crate::faults::Rng;
use crate::tests::parse;

/// Every wait in these tests is bounded by this.
const BOUND: Duration = Duration::from_secs(5);
const ACCEPT_BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn state(words: &[&str]) -> (web::Data<State>, Arc<AtomicBool>) {
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(words);
    let mock = Arc::new(Mock::with_rng(&parse(&all), Rng::with_seed(9)));
    let crashed = Arc::new(AtomicBool::new(false));
    let flag = crashed.clone();
    let on_crash = Box::new(move || flag.store(true, Ordering::SeqCst));
    (web::Data::new(State::new(mock, on_crash)), crashed)
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn exchange<S, R, B>(app: &S, req: R) -> Answer
where
    S: Service<R, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = tokio::time::timeout(BOUND, test::call_service(app, req))
        .await
        .expect("an answer in time");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = tokio::time::timeout(BOUND, test::read_body(resp))
        .await
        .expect("a body in time")
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

fn post(headers: &[(&str, &str)], body: &str) -> test::TestRequest {
    let mut req = test::TestRequest::post().uri("/mcp").insert_header(JSON);
    for h in headers {
        req = req.insert_header(*h);
    }
    req.set_payload(body.to_owned())
}

fn initialize(version: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
}

fn modern(id: u32, method: &str, params: &str) -> String {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let sep = if params.is_empty() { "" } else { "," };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{sep}{meta}}}}}"#)
}

#[actix_web::test]
async fn legacy_session_lifecycle() {
    let (data, _) = state(&[]);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let init = exchange(
        &app,
        post(&[ACCEPT_BOTH], &initialize("2025-06-18")).to_request(),
    )
    .await;
    assert_eq!(init.status, 200);
    assert_eq!(init.header("content-type"), Some("application/json"));
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(sid.len(), 32);
    assert!(sid.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-06-18");

    let in_session = [
        ACCEPT_BOTH,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(
        exchange(&app, post(&in_session, note).to_request())
            .await
            .status,
        202
    );
    let list = exchange(
        &app,
        post(
            &in_session,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        )
        .to_request(),
    )
    .await;
    assert_eq!(list.status, 200);
    assert_eq!(list.json()["result"]["tools"].as_array().unwrap().len(), 12);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"regional","arguments":{"region":"us","text":"t"}}}"#;
    let call = exchange(&app, post(&in_session, call).to_request()).await;
    assert_eq!(
        call.json()["result"]["content"][0]["text"],
        "region=us text=t"
    );
    let missing =
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"mock://missing"}}"#;
    let missing = exchange(&app, post(&in_session, missing).to_request())
        .await
        .json();
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(missing["error"]["data"]["uri"], "mock://missing");

    // the standalone stream sends keep-alive comments until the session ends
    let get = test::TestRequest::get()
        .uri("/mcp")
        .insert_header(("Accept", "text/event-stream"))
        .insert_header(("Mcp-Session-Id", sid.as_str()))
        .to_request();
    let stream = test::call_service(&app, get).await;
    assert_eq!(stream.status().as_u16(), 200);
    assert_eq!(
        stream.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut body = Box::pin(stream.into_body());
    let first = tokio::time::timeout(BOUND, poll_fn(|cx| body.as_mut().poll_next(cx)))
        .await
        .unwrap();
    assert_eq!(&first.unwrap().unwrap()[..], b": keep-alive\n\n");

    let delete = test::TestRequest::delete()
        .uri("/mcp")
        .insert_header(("Mcp-Session-Id", sid.as_str()))
        .to_request();
    assert_eq!(exchange(&app, delete).await.status, 200);
    let end = tokio::time::timeout(BOUND, poll_fn(|cx| body.as_mut().poll_next(cx)))
        .await
        .unwrap();
    assert!(end.is_none(), "the stream ends with the session");
    let gone = exchange(
        &app,
        post(&in_session, r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).to_request(),
    )
    .await;
    assert_eq!(gone.status, 404);
}

#[actix_web::test]
async fn modern_requests_and_rejections() {
    let (data, _) = state(&[]);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let v = ("MCP-Protocol-Version", "2026-07-28");
    let regional = modern(
        1,
        "tools/call",
        r#""name":"regional","arguments":{"region":"eu","text":"hi"}"#,
    );
    let missing_uri = modern(2, "resources/read", r#""uri":"mock://missing""#);
    let unknown_tool = modern(3, "tools/call", r#""name":"nope""#);
    let discover = modern(4, "server/discover", "");
    let future = discover.replace("2026-07-28", "2099-01-01");
    let unknown_method = modern(5, "foo/bar", "");
    /// (headers, body, status, check)
    type Row<'a> = (Vec<(&'a str, &'a str)>, &'a str, u16, fn(&Answer));
    let table: Vec<Row<'_>> = vec![
        (
            vec![
                ACCEPT_BOTH,
                v,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "regional"),
                ("Mcp-Param-Region", "eu"),
            ],
            &regional,
            200,
            |a| {
                let r = a.json();
                assert_eq!(r["result"]["content"][0]["text"], "region=eu text=hi");
                assert_eq!(r["result"]["resultType"], "complete");
                assert_eq!(
                    r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                    "mock-backend"
                );
            },
        ),
        (
            vec![
                ACCEPT_BOTH,
                v,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "regional"),
            ],
            &regional,
            400,
            |a| assert_eq!(a.json()["error"]["code"], -32020),
        ),
        (
            vec![
                ACCEPT_BOTH,
                v,
                ("Mcp-Method", "resources/read"),
                ("Mcp-Name", "mock://missing"),
            ],
            &missing_uri,
            200,
            |a| {
                assert_eq!(a.json()["error"]["code"], -32602);
                assert_eq!(a.json()["error"]["data"]["uri"], "mock://missing");
            },
        ),
        (
            vec![
                ACCEPT_BOTH,
                v,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "nope"),
            ],
            &unknown_tool,
            200,
            |a| assert_eq!(a.json()["error"]["code"], -32602),
        ),
        (
            vec![ACCEPT_BOTH, v, ("Mcp-Method", "server/discover")],
            &discover,
            200,
            |a| {
                let r = a.json();
                assert_eq!(
                    r["result"]["supportedVersions"].as_array().unwrap().len(),
                    5
                );
                assert_eq!(r["result"]["cacheScope"], "private");
            },
        ),
        (
            vec![
                ACCEPT_BOTH,
                ("MCP-Protocol-Version", "2099-01-01"),
                ("Mcp-Method", "server/discover"),
            ],
            &future,
            400,
            |a| assert_eq!(a.json()["error"]["code"], -32022),
        ),
        (
            vec![ACCEPT_BOTH, v, ("Mcp-Method", "foo/bar")],
            &unknown_method,
            404,
            |a| assert_eq!(a.json()["error"]["code"], -32601),
        ),
        (
            vec![ACCEPT_BOTH, v],
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            202,
            |a| assert!(a.body.is_empty()),
        ),
        (vec![ACCEPT_BOTH], "{not json", 200, |a| {
            assert_eq!(a.json()["error"]["code"], -32700);
            assert_eq!(a.json()["id"], Value::Null);
        }),
        (
            vec![
                ("Accept", "text/event-stream"),
                v,
                ("Mcp-Method", "server/discover"),
            ],
            &discover,
            200,
            |a| {
                assert_eq!(a.header("content-type"), Some("text/event-stream"));
                let text = String::from_utf8(a.body.clone()).unwrap();
                let data = text.strip_prefix("event: message\ndata: ").unwrap();
                let data = data.strip_suffix("\n\n").unwrap();
                let r: Value = serde_json::from_str(data).unwrap();
                assert_eq!(r["id"], 4);
            },
        ),
    ];
    for (headers, body, status, check) in table {
        let answer = exchange(&app, post(&headers, body).to_request()).await;
        assert_eq!(
            answer.status,
            status,
            "{body}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        check(&answer);
    }
    let get = test::TestRequest::get().uri("/mcp").to_request();
    let get = exchange(&app, get).await;
    assert_eq!((get.status, get.header("allow")), (405, Some("POST")));
    let unknown = exchange(
        &app,
        post(
            &[ACCEPT_BOTH, ("Mcp-Session-Id", "feed")],
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )
        .to_request(),
    )
    .await;
    assert_eq!(unknown.status, 404);
}

#[actix_web::test]
async fn era_modes_and_batches() {
    let discover = modern(1, "server/discover", "");
    let modern_headers = [
        ACCEPT_BOTH,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];

    let (legacy, _) = state(&["--era", "legacy"]);
    let app = test::init_service(App::new().app_data(legacy.clone()).configure(routes)).await;
    let probe = exchange(&app, post(&modern_headers, &discover).to_request()).await;
    assert_eq!(probe.status, 400);
    assert_eq!(
        probe.json()["error"]["code"],
        -32600,
        "a legacy server never answers a modern error"
    );
    let init = exchange(
        &app,
        post(&[ACCEPT_BOTH], &initialize("2026-07-28")).to_request(),
    )
    .await;
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-11-25");

    let (modern_only, _) = state(&["--era", "modern"]);
    let app = test::init_service(App::new().app_data(modern_only.clone()).configure(routes)).await;
    let refused = exchange(
        &app,
        post(&[ACCEPT_BOTH], &initialize("2025-06-18")).to_request(),
    )
    .await;
    assert_eq!(refused.status, 400);
    let err = &refused.json()["error"];
    assert_eq!(err["code"], -32602);
    assert_eq!(
        err["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
    );
    assert_eq!(
        exchange(&app, post(&modern_headers, &discover).to_request())
            .await
            .status,
        200
    );

    let (dual, _) = state(&[]);
    let app = test::init_service(App::new().app_data(dual.clone()).configure(routes)).await;
    let init = exchange(
        &app,
        post(&[ACCEPT_BOTH], &initialize("2025-03-26")).to_request(),
    )
    .await;
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Bo"}}}]"#;
    let answers = exchange(
        &app,
        post(&[ACCEPT_BOTH, ("Mcp-Session-Id", sid.as_str())], batch).to_request(),
    )
    .await;
    assert_eq!(answers.status, 200);
    let answers = answers.json();
    assert_eq!(answers.as_array().unwrap().len(), 2, "{answers}");
    assert_eq!(
        answers[1]["result"]["messages"][0]["content"]["text"],
        "Hello, Bo!"
    );
    let notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    let notes = exchange(
        &app,
        post(&[ACCEPT_BOTH, ("Mcp-Session-Id", sid.as_str())], notes).to_request(),
    )
    .await;
    assert_eq!(notes.status, 202);
}

#[actix_web::test]
async fn crash_after_counts_answers() {
    let (data, crashed) = state(&["--crash-after", "2"]);
    let app = test::init_service(App::new().app_data(data.clone()).configure(routes)).await;
    let init = exchange(
        &app,
        post(&[ACCEPT_BOTH], &initialize("2025-11-25")).to_request(),
    )
    .await;
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    assert!(!crashed.load(Ordering::SeqCst));
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    exchange(
        &app,
        post(&[ACCEPT_BOTH, ("Mcp-Session-Id", sid.as_str())], note).to_request(),
    )
    .await;
    assert!(
        !crashed.load(Ordering::SeqCst),
        "notifications are not answers"
    );
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let last = exchange(
        &app,
        post(&[ACCEPT_BOTH, ("Mcp-Session-Id", sid.as_str())], ping).to_request(),
    )
    .await;
    assert_eq!(last.json()["result"], json!({}));
    assert!(crashed.load(Ordering::SeqCst));
}

#[actix_web::test]
async fn serves_on_a_real_loopback_socket() {
    let (data, _) = state(&[]);
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (server, addrs) = start(data, addr, 1, None).unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let body = modern(7, "server/discover", "");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut socket = tokio::net::TcpStream::connect(addrs[0]).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        response
    };
    let response = tokio::time::timeout(BOUND, exchange)
        .await
        .expect("an answer in time");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    let json = response.split("\r\n\r\n").nth(1).unwrap();
    let json: Value = serde_json::from_str(json).unwrap();
    assert_eq!(json["id"], 7);
    assert_eq!(json["result"]["supportedVersions"][0], "2026-07-28");
    tokio::time::timeout(BOUND, handle.stop(false))
        .await
        .unwrap();
}
