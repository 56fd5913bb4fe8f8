//! The checks of answers: results, errors, broken answers, SSE bodies.

use super::*;

fn json(status: u16, body: &str) -> Answer {
    Answer {
        status,
        session_id: None,
        event_stream: false,
        body: Bytes::from(body.to_owned()),
    }
}

fn sse(body: &str) -> Answer {
    Answer {
        event_stream: true,
        ..json(200, body)
    }
}

const LEGACY: Expect = Expect {
    id: 7,
    modern: false,
};
const MODERN: Expect = Expect {
    id: 7,
    modern: true,
};

#[test]
fn results_and_errors() {
    let ok = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
    assert_eq!(classify(&json(200, ok), LEGACY), Outcome::Ok);
    assert_eq!(
        classify(&json(200, ok), MODERN),
        Outcome::Invalid("no resultType")
    );
    let modern = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[]}}"#;
    assert_eq!(classify(&json(200, modern), MODERN), Outcome::Ok);
    let tool_err = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","isError":true,"content":[]}}"#;
    assert_eq!(classify(&json(200, tool_err), MODERN), Outcome::ToolError);
    let input = r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required"}}"#;
    assert_eq!(classify(&json(200, input), MODERN), Outcome::Incomplete);
    let err = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}}"#;
    assert_eq!(classify(&json(200, err), MODERN), Outcome::RpcError(-32603));
    let hdr = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"mismatch"}}"#;
    assert_eq!(classify(&json(400, hdr), MODERN), Outcome::RpcError(-32020));
    let parse = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#;
    assert_eq!(
        classify(&json(200, parse), MODERN),
        Outcome::RpcError(-32700)
    );
}

#[test]
fn broken_answers() {
    let other_id = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
    assert_eq!(
        classify(&json(200, other_id), LEGACY),
        Outcome::Invalid("id mismatch")
    );
    let string_id = r#"{"jsonrpc":"2.0","id":"7","result":{}}"#;
    assert_eq!(
        classify(&json(200, string_id), LEGACY),
        Outcome::Invalid("id mismatch")
    );
    let err_other = r#"{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":""}}"#;
    assert_eq!(
        classify(&json(200, err_other), LEGACY),
        Outcome::Invalid("id mismatch")
    );
    let v1 = r#"{"jsonrpc":"1.0","id":7,"result":{}}"#;
    assert!(matches!(
        classify(&json(200, v1), LEGACY),
        Outcome::Invalid(_)
    ));
    let neither = r#"{"jsonrpc":"2.0","id":7}"#;
    assert!(matches!(
        classify(&json(200, neither), LEGACY),
        Outcome::Invalid(_)
    ));
    let array = r#"{"jsonrpc":"2.0","id":7,"result":[1]}"#;
    assert!(matches!(
        classify(&json(200, array), LEGACY),
        Outcome::Invalid(_)
    ));
    assert!(matches!(
        classify(&json(200, "hello"), LEGACY),
        Outcome::Invalid("not json")
    ));
    assert!(matches!(
        classify(&json(202, ""), LEGACY),
        Outcome::Invalid(_)
    ));
    assert_eq!(classify(&json(404, ""), LEGACY), Outcome::HttpError);
    assert_eq!(classify(&json(503, "busy"), LEGACY), Outcome::HttpError);
    let ok = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
    assert_eq!(classify(&json(500, ok), LEGACY), Outcome::HttpError);
}

#[test]
fn sse_answers_skip_notifications() {
    let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                : comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n\
                data: \"result\":{\"isError\":true}}\n\n";
    assert_eq!(classify(&sse(body), LEGACY), Outcome::ToolError);
    let none = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n";
    assert_eq!(
        classify(&sse(none), LEGACY),
        Outcome::Invalid("no response in the event stream")
    );
    let unterminated = "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}";
    assert_eq!(classify(&sse(unterminated), LEGACY), Outcome::Ok);
}

#[test]
fn bare_answers_and_results() {
    assert_eq!(classify_bare(202, &[]), Outcome::Ok);
    assert_eq!(classify_bare(405, &[405]), Outcome::Ok);
    assert_eq!(classify_bare(404, &[405]), Outcome::HttpError);
    let ok = r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#;
    assert_eq!(
        result_of(&json(200, ok), LEGACY).unwrap()["tools"],
        serde_json::json!([])
    );
    let err = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#;
    assert!(
        result_of(&json(404, err), LEGACY)
            .unwrap_err()
            .contains("-32601")
    );
}

/// A server on a free loopback port whose connection number `n` (from 0) answers `answered(n)` requests
/// (keep-alive), or every request when that is `None`, and then is reset as its next request arrives (unread:
/// the kernel sends RST). What a load balancer's reload does to a client's idle keep-alive connection.
fn resetting_server(answered: fn(usize) -> Option<usize>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 36\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut left = answered(n);
                while left != Some(0) && matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    if conn.write_all(ok.as_bytes()).is_err() {
                        return;
                    }
                    left = left.map(|l| l - 1);
                }
                // The next request arrives and is never read: dropping the socket resets it.
                let _ = conn.peek(&mut buf);
                std::thread::sleep(Duration::from_millis(20));
            });
        }
    });
    format!("http://{addr}/mcp")
}

fn exchange(url: &str, posts: usize) -> (Vec<Result<u16, Failure>>, u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let target = crate::target::check(url, false).unwrap();
        let wire = Wire::new(&target, 1, Duration::from_secs(5), &[], &Default::default()).unwrap();
        let mut out = Vec::new();
        for _ in 0..posts {
            let answer = wire.post(HeaderMap::new(), Bytes::from_static(b"{}")).await;
            out.push(answer.map(|a| a.status));
        }
        (out, wire.resent())
    })
}

#[test]
fn a_request_whose_keep_alive_connection_is_reset_before_any_answer_is_sent_once_more() {
    let (answers, resent) = exchange(&resetting_server(|n| (n == 0).then_some(1)), 3);
    assert_eq!(answers, vec![Ok(200), Ok(200), Ok(200)]);
    assert_eq!(resent, 1);
}

#[test]
fn a_request_reset_on_every_new_connection_is_given_up_after_max_resends() {
    let (answers, resent) = exchange(&resetting_server(|_| Some(0)), 1);
    assert!(
        matches!(
            answers[0],
            Err(Failure::Transport("closed before any answer", _))
        ),
        "{answers:?}"
    );
    assert_eq!(resent, super::MAX_RESENDS as u64);
}

/// Regression: a rolling restart behind nginx counted a transport error, the request's new connection having
/// been accepted by a worker the reload was stopping, which closed it unread as well.
#[test]
fn a_request_whose_new_connection_is_closed_unread_too_is_sent_on_another() {
    // The first connection answers once, then is reset as its next request arrives; the second is reset as
    // its first request arrives; later ones answer.
    let url = resetting_server(|n| match n {
        0 => Some(1),
        1 => Some(0),
        _ => None,
    });
    let (answers, resent) = exchange(&url, 2);
    assert_eq!(answers, vec![Ok(200), Ok(200)]);
    assert_eq!(resent, 2);
}

/// Regression: a rolling restart behind nginx counted a transport error although the request had been sent
/// again, because it was sent again on another pooled connection that the same reload had closed.
#[test]
fn a_request_is_sent_again_on_a_new_connection_not_on_another_pooled_one_the_reload_closed() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The first two connections answer once each and are reset as their next request arrives (a reload
    // closing every idle keep-alive connection at once); later ones answer every request.
    let url = resetting_server(|n| (n < 2).then_some(1));
    let (first, then, resent) = rt.block_on(async {
        let target = crate::target::check(&url, false).unwrap();
        let wire = Wire::new(&target, 2, Duration::from_secs(5), &[], &Default::default()).unwrap();
        let post = || wire.post(HeaderMap::new(), Bytes::from_static(b"{}"));
        // Two at once: two pooled keep-alive connections.
        let (a, b) = tokio::join!(post(), post());
        let first = [a.map(|a| a.status), b.map(|a| a.status)];
        let then = post().await.map(|a| a.status);
        (first, then, wire.resent())
    });
    assert_eq!(first, [Ok(200), Ok(200)]);
    assert_eq!(then, Ok(200));
    assert_eq!(resent, 1);
}

#[test]
fn requests_are_spread_over_the_source_addresses() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen_tx, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 36\r\nconnection: close\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = seen_tx.send(conn.peer_addr().unwrap().ip());
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(ok.as_bytes());
        }
    });
    let sources = crate::source::parse_source_addrs("127.0.0.2-127.0.0.4").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let statuses = rt.block_on(async {
        let target = crate::target::check(&url, false).unwrap();
        let wire = Wire::new(
            &target,
            3,
            Duration::from_secs(5),
            &sources,
            &Default::default(),
        )
        .unwrap();
        let mut out = Vec::new();
        for _ in 0..6 {
            let a = wire.post(HeaderMap::new(), Bytes::from_static(b"{}")).await;
            out.push(a.map(|a| a.status));
        }
        out
    });
    assert_eq!(statuses, vec![Ok(200); 6]);
    let mut from: Vec<std::net::IpAddr> = seen.try_iter().collect();
    assert_eq!(
        from.len(),
        6,
        "one connection per request (the server closes each)"
    );
    from.sort();
    from.dedup();
    assert_eq!(from, sources);
}
