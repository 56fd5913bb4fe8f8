//! Issue 38 §3, size limits per backend: `[[backend]] max_message_bytes` bounds what is read from a real
//! backend (the mock over stdio and over Streamable HTTP); an answer beyond it fails its request at once in
//! the shape of its method — a tool error for `tools/call`, a JSON-RPC error for `resources/read` — and
//! the backend keeps serving (its circuit does not count it).

use serde_json::json;

use crate::support::{
    ADMIN, LegacyClient, TempDir, admin_base, call_tool, client, gateway, http_mock,
    modern_request, stdio_mock_command,
};

#[test]
fn an_answer_over_a_backends_max_message_bytes_fails_its_request_in_its_methods_shape() {
    let dir = TempDir::new("size-limits");
    let http = http_mock(&[]);
    // A deadline far beyond the test's: an answer skipped and left waiting would fail it.
    let config = format!(
        "[[backend]]\nname = \"s\"\ncommand = {}\nmax_message_bytes = 16384\ntimeout_ms = 120000\n\n\
         [[backend]]\nname = \"h\"\nurl = \"{}\"\nmax_message_bytes = 16384\ntimeout_ms = 120000\n\
         [backend.circuit]\nfailures = 2\n{ADMIN}",
        stdio_mock_command(&["--name", "stdio-mock"]),
        http.url
    );
    let gw = gateway(&config, &dir);
    for backend in ["s", "h"] {
        let fits = call_tool(&gw.url, &format!("{backend}__big"), json!({"bytes": 1000}));
        assert_eq!(
            fits["result"]["content"][0]["text"].as_str().map(str::len),
            Some(1000),
            "{backend}: {fits}"
        );
        // Three over-large answers in a row: each a tool error saying why, none opening the circuit.
        for _ in 0..3 {
            let big = call_tool(
                &gw.url,
                &format!("{backend}__big"),
                json!({"bytes": 40_000}),
            );
            assert_eq!(big["result"]["isError"], true, "{backend}: {big}");
            let text = big["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(
                text.contains(&format!(
                    "backend {backend}'s answer is larger than the gateway accepts"
                )) && text.contains("more than 16384 bytes in one message"),
                "{backend}: {text}"
            );
        }
        let echoed = call_tool(
            &gw.url,
            &format!("{backend}__echo"),
            json!({"text": "still up"}),
        );
        assert_eq!(
            echoed["result"]["content"][0]["text"], "still up",
            "{backend}: {echoed}"
        );
    }
    // Counted as what they are over either transport (stdio's were `backend_error`s: the skipped line's
    // request was failed with a JSON-RPC error instead of the failure).
    let metrics = client()
        .get(format!("{}/metrics", admin_base(&gw)))
        .send()
        .expect("metrics")
        .text()
        .expect("text");
    for backend in ["s", "h"] {
        let line =
            format!(r#"mcpgw_backend_requests_total{{backend="{backend}",outcome="too_large"}} 3"#);
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line:?} in:\n{metrics}"
        );
        assert!(
            !metrics.contains(&format!(r#"backend="{backend}",outcome="backend_error""#)),
            "{metrics}"
        );
    }

    // A resource read too large is a JSON-RPC error, for a legacy session too.
    let long_id = "i".repeat(9000);
    let uri = format!("mock://mock-backend/items/{long_id}");
    let read = modern_request(&gw.url, "resources/read", json!({"uri": uri}), &[]).json();
    assert_eq!(read["error"]["code"], -32603, "{read}");
    assert!(
        read["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("more than 16384 bytes")),
        "{read}"
    );
    let mut legacy = LegacyClient::connect(&gw.url, "2025-06-18");
    let big = legacy
        .request(
            "tools/call",
            json!({"name": "h__big", "arguments": {"bytes": 40_000}}),
        )
        .json();
    assert_eq!(big["result"]["isError"], true, "{big}");
}

#[test]
fn size_bounds_out_of_range_are_config_errors() {
    // The page's example sets both keys (gateway/src/config/tests.rs validates it whole).
    let example = crate::support::doc_block("config-size-limits", "toml");
    assert!(example.contains("max_message_bytes") && example.contains("max_stream_bytes"));
    let dir = TempDir::new("size-limits-config");
    for (keys, field) in [
        ("max_message_bytes = 100", "max_message_bytes"),
        ("max_stream_bytes = 2000000000", "max_stream_bytes"),
        (
            "max_message_bytes = 4096\nmax_stream_bytes = 2048",
            "max_stream_bytes",
        ),
    ] {
        let path = dir.file(
            "bad.toml",
            &format!("[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n{keys}\n"),
        );
        let out = std::process::Command::new(crate::support::mcpgw())
            .args(["check", "--config"])
            .arg(&path)
            .output()
            .expect("check runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{keys}");
        assert!(stderr.contains(field), "{keys}: {stderr}");
    }
}
