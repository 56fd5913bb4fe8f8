//! API keys: `mcpgw auth hash-key` gives the digest the config holds; the key as a bearer token (or in
//! the header `api_key_header` names) authenticates its principal, any other key gets 401
//! `invalid_token`; a legacy session belongs to the principal that opened it (another principal's
//! request finds no such session, 404); `[server] strict` refuses to listen beyond loopback without
//! `[auth]`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{
    BACKEND, Gw, assert_echoed, bearer, challenge, echo_call, initialize, modern_echo,
    open_session, post,
};
use crate::interop::peers::run_bounded;
use crate::support::{Reply, TempDir, client, free_port, into_reply, mcpgw, start};

const ALICE_KEY: &str = "alice-key-7f3a9c2e4b8d1f6a0c5e9b3d";
const BOB_KEY: &str = "bob-key-2d8f4a6c0e1b9d7f3a5c8e2b4d";

/// `mcpgw auth hash-key` with `input` on its standard input (bounded): exit success, stdout, stderr.
fn hash_key_run(input: &str) -> (bool, String, String) {
    let mut child = Command::new(mcpgw())
        .args(["auth", "hash-key"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcpgw auth hash-key starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("mcpgw auth hash-key did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The digest `mcpgw auth hash-key` prints for `key`.
pub(crate) fn digest_of(key: &str) -> String {
    let (ok, out, err) = hash_key_run(&format!("{key}\n"));
    assert!(ok, "hash-key failed: {err}");
    let digest = out.trim().to_owned();
    let hex = digest
        .strip_prefix("sha256:")
        .unwrap_or_else(|| panic!("{digest:?}"));
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{digest:?}"
    );
    digest
}

/// `[[auth.api_key]]` for alice (group ops) and bob, and `extra` lines in `[auth]`.
fn keys_config(extra: &str) -> String {
    format!(
        "{BACKEND}\n[auth]\n{extra}\n\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\ngroups = [\"ops\"]\n\n\
         [[auth.api_key]]\nprincipal = \"bob\"\ndigest = \"{}\"\n",
        digest_of(ALICE_KEY),
        digest_of(BOB_KEY)
    )
}

/// A 401 with the challenge's `error` as given (`None`: none), and no metadata document (no OAuth).
fn assert_401_plain(r: &Reply, error: Option<&str>) {
    assert_eq!(r.status, 401, "{r:?}");
    let c = challenge(r);
    assert_eq!(c.get("error").map(String::as_str), error, "{r:?}");
    assert!(!c.contains_key("resource_metadata"), "{r:?}");
}

#[test]
fn a_key_hashed_by_hash_key_is_accepted_as_a_bearer_token_and_another_key_gets_401() {
    let gw = Gw::start("api-key-bearer", |_| keys_config(""));
    let alice = [bearer(ALICE_KEY)];
    let session = open_session(&gw.url(), &alice);
    assert_echoed(
        &post(&gw.url(), &alice, Some(&session), &echo_call(2, "legacy")),
        "legacy",
    );
    assert_echoed(&modern_echo(&gw, "modern", &alice), "modern");
    let wrong = [bearer("carol-key-0000000000000000000000")];
    assert_401_plain(&initialize(&gw.url(), &wrong), Some("invalid_token"));
    assert_401_plain(&modern_echo(&gw, "x", &wrong), Some("invalid_token"));
    // The digest itself is not a key.
    let digest = [bearer(&digest_of(ALICE_KEY))];
    assert_401_plain(&initialize(&gw.url(), &digest), Some("invalid_token"));
    assert_401_plain(&initialize(&gw.url(), &[]), None);
}

#[test]
fn with_api_key_header_set_the_key_is_accepted_in_that_header() {
    let gw = Gw::start("api-key-header", |_| {
        keys_config("api_key_header = \"X-Api-Key\"")
    });
    let alice = [("X-Api-Key".to_owned(), ALICE_KEY.to_owned())];
    let session = open_session(&gw.url(), &alice);
    assert_echoed(
        &post(&gw.url(), &alice, Some(&session), &echo_call(2, "legacy")),
        "legacy",
    );
    assert_echoed(&modern_echo(&gw, "modern", &alice), "modern");
    let wrong = [(
        "X-Api-Key".to_owned(),
        "carol-key-0000000000000000000000".to_owned(),
    )];
    assert_401_plain(&initialize(&gw.url(), &wrong), Some("invalid_token"));
    assert_401_plain(&initialize(&gw.url(), &[]), None);
}

#[test]
fn hash_key_refuses_a_short_key_with_a_non_zero_exit() {
    for short in ["short\n", "0123456789abcdef\n", "\n"] {
        let (ok, out, err) = hash_key_run(short);
        assert!(!ok, "{short:?} was hashed: {out}");
        assert!(!out.contains("sha256:"), "{short:?}: {out}");
        assert!(err.contains("at least"), "{short:?}: {err}");
    }
}

#[test]
fn a_session_opened_with_alices_key_is_unknown_to_bobs_key_and_needs_a_credential() {
    let gw = Gw::start("api-key-sessions", |_| keys_config(""));
    let (alice, bob) = ([bearer(ALICE_KEY)], [bearer(BOB_KEY)]);
    let session = open_session(&gw.url(), &alice);
    // Bob's answer for alice's session is the answer for a session that does not exist.
    let as_bob = post(&gw.url(), &bob, Some(&session), &echo_call(5, "bob"));
    let unknown = post(
        &gw.url(),
        &bob,
        Some("no-such-session-0123456789"),
        &echo_call(5, "bob"),
    );
    assert_eq!(as_bob.status, 404, "{as_bob:?}");
    assert_eq!(
        (as_bob.status, as_bob.json()),
        (unknown.status, unknown.json())
    );
    // Nor can bob open its stream or end it.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = into_reply(
            client()
                .request(method.clone(), gw.url())
                .header("Accept", "text/event-stream")
                .header("Mcp-Session-Id", &session)
                .header("MCP-Protocol-Version", super::LEGACY)
                .header("Authorization", format!("Bearer {BOB_KEY}"))
                .send()
                .unwrap(),
        );
        assert_eq!(r.status, 404, "{method} as bob: {r:?}");
    }
    let none = post(&gw.url(), &[], Some(&session), &echo_call(6, "nobody"));
    assert_401_plain(&none, None);
    // Alice's session is untouched by all of that.
    assert_echoed(
        &post(&gw.url(), &alice, Some(&session), &echo_call(7, "alice")),
        "alice",
    );
    // Bob's own session is his, and not alice's.
    let bobs = open_session(&gw.url(), &bob);
    assert_echoed(
        &post(&gw.url(), &bob, Some(&bobs), &echo_call(8, "bob")),
        "bob",
    );
    let r = post(&gw.url(), &alice, Some(&bobs), &echo_call(9, "alice"));
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn strict_refuses_to_listen_beyond_loopback_without_auth_and_names_server_strict() {
    let dir = TempDir::new("auth-strict-off");
    let config = dir.file(
        "mcpgw.toml",
        &format!("[server]\nstrict = true\n\n{BACKEND}"),
    );
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("0.0.0.0:{}", free_port())]);
    let (ok, _, stderr) = run_bounded(cmd, Duration::from_secs(30));
    assert!(!ok, "mcpgw serve started: {stderr}");
    assert!(stderr.contains("server.strict"), "{stderr}");
    assert!(!stderr.contains("mcpgw listening on"), "{stderr}");
}

#[test]
fn strict_listens_beyond_loopback_with_auth_configured() {
    let dir = TempDir::new("auth-strict-on");
    let config = dir.file(
        "mcpgw.toml",
        &format!("[server]\nstrict = true\n\n{}", keys_config("")),
    );
    let port = free_port();
    let mut cmd = Command::new(mcpgw());
    cmd.args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("0.0.0.0:{port}")]);
    let _gw = start(cmd, "mcpgw listening on ");
    let url = format!("http://127.0.0.1:{port}/mcp");
    crate::support::wait_ready(&format!("http://127.0.0.1:{port}"));
    assert_401_plain(&initialize(&url, &[]), None);
    let alice = [bearer(ALICE_KEY)];
    let session = open_session(&url, &alice);
    assert_echoed(
        &post(&url, &alice, Some(&session), &echo_call(2, "strict")),
        "strict",
    );
}

/// The lines of an SSE response as they arrive, read on a thread of their own.
fn sse_lines(resp: reqwest::blocking::Response) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(resp).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Fails today: an HTTP+SSE stream waiting for its `initialize` is not bound to the principal that opened it
/// (`front::http::http_sse::post` takes the pending stream for any principal), so bob, knowing the
/// sessionId, initializes alice's stream (202; the answer goes to alice's stream) and alice gets 404.
#[test]
fn an_http_sse_stream_opened_with_alices_key_cannot_be_initialized_with_bobs() {
    let gw = Gw::start("api-key-sse", |_| keys_config(""));
    let stream = client()
        .get(format!("{}/sse", gw.base()))
        .header("Accept", "text/event-stream")
        .header("Authorization", format!("Bearer {ALICE_KEY}"))
        .send()
        .unwrap();
    assert_eq!(stream.status(), 200);
    let lines = sse_lines(stream);
    let endpoint = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(10))
            .expect("the endpoint event");
        if let Some(path) = line.strip_prefix("data: ") {
            break path.to_owned();
        }
    };
    let messages = format!("{}{endpoint}", gw.base());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}})
    .to_string();
    let as_bob = post(&messages, &[bearer(BOB_KEY)], None, &init);
    let unknown = post(
        &format!(
            "{}/messages?sessionId=no-such-session-0123456789",
            gw.base()
        ),
        &[bearer(BOB_KEY)],
        None,
        &init,
    );
    assert_eq!(
        (as_bob.status, as_bob.text.clone()),
        (unknown.status, unknown.text.clone()),
        "bob's initialize of alice's stream"
    );
    let as_alice = post(&messages, &[bearer(ALICE_KEY)], None, &init);
    assert_eq!(as_alice.status, 202, "{as_alice:?}");
}

/// `mcpgw load` against a gateway behind API keys: with `--bearer-file` (a key mounted from a secret, as
/// deploy/'s load Job does) or `--header` (the gateway's `api_key_header`) every request is served; without
/// a credential the probe is refused and the run says so, exiting non-zero.
#[test]
fn the_load_generator_loads_a_gateway_behind_api_keys_with_a_bearer_file_or_a_header() {
    let dir = TempDir::new("load-bearer");
    let key_file = dir.0.join("key");
    std::fs::write(&key_file, format!("{ALICE_KEY}\n")).unwrap();
    let load = |url: &str, credential: &[&str]| {
        let out = Command::new(mcpgw())
            .args(["load", "--url", url, "--era", "mixed", "--sessions", "2"])
            .args(["--requests", "20", "--no-progress", "--timeout", "5s"])
            .args(credential)
            .output()
            .unwrap();
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains(ALICE_KEY), "the key was printed:\n{text}");
        (out.status.success(), text)
    };

    let gw = Gw::start("load-bearer", |_| keys_config(""));
    let key_path = key_file.display().to_string();
    let (ok, text) = load(&gw.url(), &["--bearer-file", &key_path]);
    assert!(ok && text.contains("errors 0 (0.00%)"), "{text}");
    let (ok, text) = load(&gw.url(), &[]);
    assert!(!ok && text.contains("401"), "{text}");

    let gw = Gw::start("load-header", |_| {
        keys_config("api_key_header = \"X-Api-Key\"")
    });
    let header = format!("X-Api-Key: {ALICE_KEY}");
    let (ok, text) = load(&gw.url(), &["--header", &header]);
    assert!(ok && text.contains("errors 0 (0.00%)"), "{text}");
}
