//! Tests of the stdio loop, driven through in-memory pipes: lifecycle per era, garbage lines, concurrency
//! and cancellation of `tools/call`, batches, `--crash-after`, and the line decoder.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::Decoder;

use super::{End, Frame, Lines, serve};
use crate::dispatch::Mock;
use crate::faults::Rng;
use crate::tests::parse;

/// Every wait in these tests is bounded by this.
const BOUND: Duration = Duration::from_secs(5);

struct Client {
    input: WriteHalf<DuplexStream>,
    output: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    server: JoinHandle<std::io::Result<End>>,
}

fn start(words: &[&str]) -> Client {
    let mut all = vec!["--stdio"];
    all.extend_from_slice(words);
    let mock = Arc::new(Mock::with_rng(&parse(&all), Rng::with_seed(5)));
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server);
    let (client_out, client_in) = tokio::io::split(client);
    Client {
        input: client_in,
        output: BufReader::new(client_out).lines(),
        server: tokio::spawn(serve(mock, server_in, server_out)),
    }
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

impl Client {
    async fn send(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(BOUND, self.output.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("an answer, not the end of output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    async fn ask(&mut self, line: &str) -> Value {
        self.send(line).await;
        self.recv().await
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":"init","method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        );
        let answer = self.ask(&line).await;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        answer
    }

    /// Closes the input and waits for the server to end.
    async fn close(mut self) -> End {
        self.input.shutdown().await.unwrap();
        drop(self.input);
        tokio::time::timeout(BOUND, self.server)
            .await
            .expect("the server ends in time")
            .unwrap()
            .unwrap()
    }
}

#[tokio::test]
async fn legacy_lifecycle_garbage_and_a_modern_request_in_one_process() {
    let mut c = start(&[]);
    let early = c
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let ping = c.ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(ping, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));

    let init = c.initialize("2025-06-18").await;
    assert_eq!(init["id"], "init");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}));

    let list = c
        .ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#)
        .await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 12);
    assert!(list["result"].get("resultType").is_none());

    let garbage = c.ask("this is not json").await;
    assert_eq!(garbage["error"]["code"], -32700);
    assert_eq!(garbage["id"], Value::Null);
    assert!(garbage.as_object().unwrap().contains_key("id"));
    let not_rpc = c.ask(r#"{"hello":1}"#).await;
    assert_eq!(not_rpc["error"]["code"], -32600);
    c.send("").await; // blank lines are ignored

    let call = c
        .ask(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#)
        .await;
    assert_eq!(call["result"]["content"][0]["text"], "hi");

    // a modern request in the same process is served statelessly as 2026-07-28
    let discover = c
        .ask(&format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{{{META}}}}}"#
        ))
        .await;
    assert_eq!(discover["result"]["resultType"], "complete");
    assert_eq!(
        discover["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(discover["result"]["ttlMs"], 0);
    let setlevel = c
        .ask(r#"{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"info"}}"#)
        .await;
    assert_eq!(setlevel["result"], json!({}));
    assert_eq!(c.close().await, End::InputClosed);
}

#[tokio::test]
async fn era_modes_table() {
    let modern_list =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
    let discover =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let no_caps = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let future = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern_ping = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{META}}}}}"#);
    let modern_call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"regional","arguments":{{"region":"eu"}},{META}}}}}"#
    );
    /// (era, request line, expected: Ok(result key = value) or Err(error code))
    type Row<'a> = (&'a str, &'a str, Result<(&'a str, Value), i64>);
    let table: [Row<'_>; 12] = [
        ("dual", init, Ok(("protocolVersion", json!("2025-11-25")))),
        ("dual", &discover, Ok(("resultType", json!("complete")))),
        (
            "dual",
            r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#,
            Err(-32602),
        ),
        ("dual", future, Err(-32022)),
        ("dual", no_caps, Err(-32602)),
        (
            "dual",
            &modern_call,
            Ok((
                "content",
                json!([{"type": "text", "text": "region=eu text="}]),
            )),
        ),
        ("legacy", &discover, Err(-32601)),
        ("legacy", &modern_list, Err(-32600)),
        ("legacy", init, Ok(("protocolVersion", json!("2025-11-25")))),
        ("modern", init, Err(-32602)),
        (
            "modern",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            Err(-32602),
        ),
        ("modern", &modern_ping, Err(-32601)),
    ];
    for (era, line, want) in table {
        let mut c = start(&["--era", era]);
        let answer = c.ask(line).await;
        match want {
            Ok((key, value)) => assert_eq!(answer["result"][key], value, "{era}: {line}: {answer}"),
            Err(code) => assert_eq!(answer["error"]["code"], code, "{era}: {line}: {answer}"),
        }
        assert_eq!(c.close().await, End::InputClosed);
    }
    // a modern-only server names what it supports when refusing initialize
    let mut c = start(&["--era", "modern"]);
    let refused = c.ask(init).await;
    assert_eq!(
        refused["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})
    );
    let unsupported = c.ask(future).await;
    assert_eq!(
        unsupported["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
    assert_eq!(unsupported["error"]["data"]["requested"], "2099-01-01");
    c.close().await;
}

#[tokio::test]
async fn slow_calls_do_not_block_others_and_can_be_cancelled() {
    let mut c = start(&["--era", "modern"]);
    let started = Instant::now();
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":30000}},{META}}}}}"#
    ))
    .await;
    let fast = c
        .ask(&format!(
            r#"{{"jsonrpc":"2.0","id":"fast","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},{META}}}}}"#
        ))
        .await;
    assert_eq!(fast["id"], "fast");
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"test"}}"#)
        .await;
    // the cancelled call is never answered, so closing the input ends the server at once
    assert_eq!(c.close().await, End::InputClosed);
    assert!(started.elapsed() < BOUND);
}

#[tokio::test]
async fn pending_calls_are_answered_after_the_input_closes() {
    let mut c = start(&["--era", "modern"]);
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":20}},{META}}}}}"#
    ))
    .await;
    c.input.shutdown().await.unwrap();
    let answer = c.recv().await;
    assert_eq!(answer["result"]["content"][0]["text"], "slept 20 ms");
    assert_eq!(c.close().await, End::InputClosed);
}

#[tokio::test]
async fn crash_after_writes_the_last_answer_then_ends() {
    let mut c = start(&["--crash-after", "2"]);
    c.initialize("2025-11-25").await;
    let list = c
        .ask(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#)
        .await;
    assert_eq!(list["result"]["prompts"][0]["name"], "greet");
    let end = tokio::time::timeout(BOUND, &mut c.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(end, End::Crashed);
}

#[tokio::test]
async fn batches_only_on_2025_03_26() {
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}},{"jsonrpc":"1.0","id":4,"method":"ping"}]"#;
    let mut c = start(&[]);
    c.initialize("2025-03-26").await;
    let answers = c.ask(batch).await;
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 4, "{answers:?}");
    let by_id = |id: i64| answers.iter().find(|a| a["id"] == id).unwrap();
    // 2025-03-26 has no structured output: the sum stays text only
    assert_eq!(
        by_id(1)["result"],
        json!({"content": [{"type": "text", "text": "{\"sum\":3}"}]})
    );
    assert_eq!(by_id(2)["result"], json!({}));
    assert_eq!(by_id(3)["error"]["code"], -32600);
    assert_eq!(by_id(4)["error"]["code"], -32600);
    c.close().await;

    let mut c = start(&[]);
    c.initialize("2025-06-18").await;
    let refused = c.ask(batch).await;
    assert_eq!(refused["error"]["code"], -32600);
    c.close().await;
}

#[test]
fn line_decoder_splits_skips_and_never_fails_on_content() {
    let mut d = Lines::new(8);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let push = |d: &mut Lines, buf: &mut BytesMut, chunk: &[u8], frames: &mut Vec<String>| {
        buf.extend_from_slice(chunk);
        while let Some(f) = d.decode(buf).unwrap() {
            frames.push(match f {
                Frame::Line(l) => String::from_utf8_lossy(&l).into_owned(),
                Frame::TooLong => "<too long>".to_owned(),
            });
        }
    };
    push(&mut d, &mut buf, b"ab", &mut frames);
    push(&mut d, &mut buf, b"c\r\n\xff\xfe\n", &mut frames);
    push(&mut d, &mut buf, b"0123456789", &mut frames);
    push(&mut d, &mut buf, b"abcdefghij\nok\n", &mut frames);
    push(&mut d, &mut buf, b"tail", &mut frames);
    assert_eq!(frames, ["abc", "\u{fffd}\u{fffd}", "<too long>", "ok"]);
    match d.decode_eof(&mut buf).unwrap() {
        Some(Frame::Line(l)) => assert_eq!(&l[..], b"tail"),
        other => panic!("{other:?}"),
    }
    assert!(d.decode_eof(&mut buf).unwrap().is_none());
}
