//! What backends send outside any request reaches only the readers whose view shows it: two builtin mocks,
//! `a` and `b` (each able to grow a tool and a prompt, as a backend whose lists change), behind a
//! `[[policy]]` that lets `alice` use everything and `bob` only `a` (and not `a`'s grown tool). The
//! backends' notifications go in on the gateway's backend event channel, exactly as a backend's actor
//! reports them; the legacy sessions' GET streams and the listen streams are read as the client would.
//!
//! No wait is timed: a message that must not arrive is shown absent by one that was sent after it arriving
//! first (the watcher handles events in order, and each stream is written in order).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use handlers::{
    BackendConfig, BackendEvent, BackendHandle, InProcess, InProcessAnswer, InProcessServer,
};
use protocol::Notification;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::fixtures::{json_of, modern_request, principal};
use super::{Exchange, InProcessGateway, header_map};
use crate::config::Config;

const CONFIG: &str = r#"
# The rules name principals: they apply only with [auth] (the tests give each request its principal).
[[auth.api_key]]
principal = "tester"
digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[backend]]
name = "a"
builtin = ["mock-backend", "--name", "a"]

[[backend]]
name = "b"
builtin = ["mock-backend", "--name", "b"]

[[policy]]
principal = "alice"
allow = ["*"]

[[policy]]
principal = "bob"
allow = ["backend:a"]
deny = ["tool:a__grown"]
"#;

/// The mock, with a tool and a prompt named `grown` added to its lists on demand.
struct Growing {
    mock: mock::InProcessMock,
    tool: AtomicBool,
    prompt: AtomicBool,
}

impl InProcessServer for Growing {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let method = serde_json::from_slice::<Value>(&message)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned));
        let grown = match method.as_deref() {
            Some("tools/list") if self.tool.load(Ordering::SeqCst) => Some((
                "tools",
                json!({"name": "grown", "inputSchema": {"type": "object"}}),
            )),
            Some("prompts/list") if self.prompt.load(Ordering::SeqCst) => {
                Some(("prompts", json!({"name": "grown"})))
            }
            _ => None,
        };
        let answer = self.mock.handle(message);
        Box::pin(async move {
            let bytes = answer.await?;
            let Some((field, item)) = grown else {
                return Some(bytes);
            };
            let mut v: Value = serde_json::from_slice(&bytes).ok()?;
            v["result"][field].as_array_mut()?.push(item);
            serde_json::to_vec(&v).ok()
        })
    }
}

struct Setup {
    gw: InProcessGateway,
    events: mpsc::Sender<BackendEvent>,
    a: Arc<Growing>,
    b: Arc<Growing>,
}

impl Setup {
    async fn start(toml: &str) -> Setup {
        let config = Config::from_toml_str(toml, Path::new("notify.toml")).unwrap();
        let (events, rx) = mpsc::channel(64);
        let mut servers = BTreeMap::new();
        let mut backends = BTreeMap::new();
        for name in ["a", "b"] {
            let server = Arc::new(Growing {
                mock: mock::InProcessMock::from_words(&["--name".to_owned(), name.to_owned()])
                    .unwrap(),
                tool: AtomicBool::new(false),
                prompt: AtomicBool::new(false),
            });
            let mut bc = BackendConfig::new(
                name,
                handlers::Transport::InProcess(InProcess(server.clone())),
            );
            bc.client_info = crate::state::server_info();
            backends.insert(name.to_owned(), BackendHandle::start(bc, events.clone()));
            servers.insert(name, server);
        }
        let gw = InProcessGateway::start_with_backends_and_events(
            config,
            backends,
            (events.clone(), rx),
        )
        .await
        .unwrap();
        Setup {
            gw,
            events,
            a: servers.remove("a").unwrap(),
            b: servers.remove("b").unwrap(),
        }
    }

    /// `backend` sends `method` with `params` outside any request.
    async fn announce(&self, backend: &str, method: &str, params: Option<Value>) {
        let notification = Notification::new(method, params.as_ref());
        self.events
            .send(BackendEvent::Notification {
                backend: backend.to_owned(),
                notification,
            })
            .await
            .unwrap();
    }

    /// A legacy session of `who` that asked for every log message, and its GET stream.
    async fn session(&self, who: &str) -> Session {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": who, "version": "1"}}});
        let answer = self.post(who, None, &init).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let id = answer.header("mcp-session-id").unwrap().to_owned();
        let initialized = self
            .post(
                who,
                Some(&id),
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(initialized.status, 202, "{initialized:?}");
        let level = json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
            "params": {"level": "debug"}});
        let answer = self.post(who, Some(&id), &level).await;
        assert_eq!(json_of(&answer)["result"], json!({}), "{answer:?}");
        let (tx, stream) = mpsc::channel(64);
        let session = self.gw.gateway().sessions.peek(&id).unwrap();
        session.handle.attach_stream(tx).unwrap();
        Session { id, stream }
    }

    async fn post(&self, who: &str, session: Option<&str>, body: &Value) -> Exchange {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(id) = session {
            headers.push(("Mcp-Session-Id", id));
            headers.push(("MCP-Protocol-Version", "2025-06-18"));
        }
        self.gw
            .post_as(
                principal(who, &[], &[]),
                header_map(&headers).unwrap(),
                Bytes::from(body.to_string()),
            )
            .await
    }

    /// A 2026-07-28 `subscriptions/listen` stream of `who` for `notifications`, past its acknowledgement.
    async fn listen(&self, who: &str, notifications: Value) -> mpsc::Receiver<Vec<u8>> {
        let (headers, body) = modern_request(
            "subscriptions/listen",
            json!({"notifications": notifications}),
            &[],
        );
        let mut rx = self
            .gw
            .open_stream_at("/mcp", principal(who, &[], &[]), headers, body)
            .await
            .unwrap();
        let ack = next_message(&mut rx).await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        rx
    }
}

struct Session {
    id: String,
    stream: mpsc::Receiver<Bytes>,
}

impl Session {
    /// The next message on the session's GET stream (an SSE event), within a generous bound.
    async fn next(&mut self) -> Value {
        let event = tokio::time::timeout(Duration::from_secs(20), self.stream.recv())
            .await
            .expect("a message within 20 s")
            .expect("the stream is open");
        let text = String::from_utf8_lossy(&event);
        let data = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("an SSE event: {text}"));
        serde_json::from_str(data).unwrap()
    }
}

/// The next message of a listen stream (keep-alives skipped), within a generous bound.
async fn next_message(rx: &mut mpsc::Receiver<Vec<u8>>) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a message within 20 s")
            .expect("the stream is open");
        if !message.is_empty() {
            return serde_json::from_slice(&message).unwrap();
        }
    }
}

fn log(data: &str) -> Option<Value> {
    Some(json!({"level": "warning", "logger": "calls", "data": data}))
}

#[actix_rt::test]
async fn a_backend_log_outside_a_request_reaches_only_sessions_whose_view_shows_the_backend() {
    let s = Setup::start(CONFIG).await;
    let mut alice = s.session("alice").await;
    let mut bob = s.session("bob").await;

    s.announce("b", "notifications/message", log("b: alice called b__echo"))
        .await;
    s.announce(
        "a",
        "notifications/message",
        log("a: someone called a__add"),
    )
    .await;

    let first = alice.next().await;
    assert_eq!(
        first["params"]["data"], "b: alice called b__echo",
        "{first}"
    );
    assert_eq!(
        alice.next().await["params"]["data"],
        "a: someone called a__add"
    );
    // Bob's view does not show `b`: the first log he hears is `a`'s, sent after `b`'s.
    let first = bob.next().await;
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(
        first["params"]["data"], "a: someone called a__add",
        "{first}"
    );
    assert!(!bob.id.is_empty());
}

#[actix_rt::test]
async fn list_changed_reaches_only_sessions_whose_view_changed() {
    let s = Setup::start(CONFIG).await;
    let mut alice = s.session("alice").await;
    let mut bob = s.session("bob").await;
    let mut alice_listens = s
        .listen(
            "alice",
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;
    let mut bob_listens = s
        .listen(
            "bob",
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;

    // A backend bob's view does not show changes its tools.
    s.b.tool.store(true, Ordering::SeqCst);
    s.announce("b", "notifications/tools/list_changed", None)
        .await;
    assert_eq!(
        alice.next().await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next_message(&mut alice_listens).await["method"],
        "notifications/tools/list_changed"
    );
    // A tool bob's policy hides appears on a backend his view shows.
    s.a.tool.store(true, Ordering::SeqCst);
    s.announce("a", "notifications/tools/list_changed", None)
        .await;
    assert_eq!(
        alice.next().await["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next_message(&mut alice_listens).await["method"],
        "notifications/tools/list_changed"
    );
    // A prompt bob may see appears.
    s.a.prompt.store(true, Ordering::SeqCst);
    s.announce("a", "notifications/prompts/list_changed", None)
        .await;
    assert_eq!(
        alice.next().await["method"],
        "notifications/prompts/list_changed"
    );
    assert_eq!(
        next_message(&mut alice_listens).await["method"],
        "notifications/prompts/list_changed"
    );
    // Bob hears only of the change his view shows, on his session and on his listen stream.
    let first = next_message(&mut bob_listens).await;
    assert_eq!(
        first["method"], "notifications/prompts/list_changed",
        "{first}"
    );
    let first = bob.next().await;
    assert_eq!(
        first["method"], "notifications/prompts/list_changed",
        "{first}"
    );
    // An announcement that changes no list of a view is not passed on: a change of `b`'s again, then one
    // that changes alice's view only.
    s.announce("b", "notifications/tools/list_changed", None)
        .await;
    s.b.prompt.store(true, Ordering::SeqCst);
    s.announce("b", "notifications/prompts/list_changed", None)
        .await;
    let next = alice.next().await;
    assert_eq!(
        next["method"], "notifications/prompts/list_changed",
        "{next}"
    );
}

#[actix_rt::test]
async fn a_resource_update_reaches_only_subscribers_whose_view_shows_its_backend() {
    let s = Setup::start(CONFIG).await;
    let mut alice = s.session("alice").await;
    let mut bob = s.session("bob").await;
    for who in [("alice", &alice.id), ("bob", &bob.id)] {
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
            "params": {"uri": "mock://a/readme"}});
        let answer = s.post(who.0, Some(who.1), &subscribe).await;
        assert_eq!(json_of(&answer)["result"], json!({}), "{answer:?}");
    }
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "mock://b/readme"}});
    let answer = s.post("alice", Some(&alice.id), &subscribe).await;
    assert_eq!(json_of(&answer)["result"], json!({}), "{answer:?}");
    let mut bob_listens = s
        .listen("bob", json!({"resourceSubscriptions": ["mock://a/readme"]}))
        .await;

    // `b` claims an update of a URI the views route to `a`: no subscriber's view shows it there.
    let spoofed = Some(json!({"uri": "mock://a/readme", "title": "from b"}));
    s.announce("b", "notifications/resources/updated", spoofed)
        .await;
    // `b`'s own URI: alice's view routes it to `b`.
    let own = Some(json!({"uri": "mock://b/readme", "title": "from b"}));
    s.announce("b", "notifications/resources/updated", own)
        .await;
    // `a`'s update of its URI reaches both.
    let real = Some(json!({"uri": "mock://a/readme", "title": "from a"}));
    s.announce("a", "notifications/resources/updated", real)
        .await;

    let first = alice.next().await;
    assert_eq!(first["params"]["uri"], "mock://b/readme", "{first}");
    assert_eq!(alice.next().await["params"]["title"], "from a");
    for first in [bob.next().await, next_message(&mut bob_listens).await] {
        assert_eq!(
            first["method"], "notifications/resources/updated",
            "{first}"
        );
        assert_eq!(first["params"]["title"], "from a", "{first}");
    }
}

#[actix_rt::test]
async fn a_resource_the_view_does_not_show_cannot_be_subscribed_to() {
    let s = Setup::start(CONFIG).await;
    let bob = s.session("bob").await;
    let alice = s.session("alice").await;
    let subscribe = |uri: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}});
    let denied = s
        .post("bob", Some(&bob.id), &subscribe("mock://b/readme"))
        .await;
    let nobody = s
        .post("bob", Some(&bob.id), &subscribe("mock://nobody/readme"))
        .await;
    assert_eq!(denied.status, nobody.status, "{denied:?}");
    let (denied, nobody) = (json_of(&denied), json_of(&nobody));
    assert!(denied["error"]["code"].is_i64(), "{denied}");
    assert_eq!(denied["error"]["code"], nobody["error"]["code"], "{denied}");
    let allowed = s
        .post("alice", Some(&alice.id), &subscribe("mock://b/readme"))
        .await;
    assert_eq!(json_of(&allowed)["result"], json!({}), "{allowed:?}");
    assert_eq!(
        s.gw.gateway().subscriptions.count_of(&bob.id),
        0,
        "nothing recorded for bob"
    );
}

#[actix_rt::test]
async fn a_reload_tells_only_the_sessions_whose_view_it_changed() {
    let s = Setup::start(CONFIG).await;
    let mut alice = s.session("alice").await;
    let mut bob = s.session("bob").await;
    // The policy alone changes: alice loses a tool of `b`, bob a prompt of `a`; the catalog is the same.
    let reloaded = CONFIG
        .replace(
            "allow = [\"*\"]\n",
            "allow = [\"*\"]\ndeny = [\"tool:b__echo\"]\n",
        )
        .replace(
            "deny = [\"tool:a__grown\"]",
            "deny = [\"tool:a__grown\", \"prompt:a__greet\"]",
        );
    let config = Config::from_toml_str(&reloaded, Path::new("notify.toml")).unwrap();
    let applied = crate::reload::config::apply(s.gw.gateway(), config)
        .await
        .unwrap();
    assert!(
        applied.policy && applied.lists_changed.is_empty(),
        "{applied:?}"
    );
    s.announce("a", "notifications/message", log("after the reload"))
        .await;

    let first = alice.next().await;
    assert_eq!(
        first["method"], "notifications/tools/list_changed",
        "{first}"
    );
    assert_eq!(alice.next().await["params"]["data"], "after the reload");
    let first = bob.next().await;
    assert_eq!(
        first["method"], "notifications/prompts/list_changed",
        "{first}"
    );
    assert_eq!(bob.next().await["params"]["data"], "after the reload");
}

#[actix_rt::test]
async fn a_backend_log_outside_a_request_is_redacted_or_withheld_before_anyone_hears_it() {
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    // `b` is scanned, `a` is not.
    let s = Setup::start(&format!("{CONFIG}\n[redaction]\nbackends = [\"b\"]\n")).await;
    let mut alice = s.session("alice").await;
    s.announce("b", "notifications/message", log(&format!("b: {token}")))
        .await;
    s.announce("a", "notifications/message", log(&format!("a: {token}")))
        .await;
    assert_eq!(
        alice.next().await["params"]["data"],
        "b: [redacted: github_token]"
    );
    assert_eq!(alice.next().await["params"]["data"], format!("a: {token}"));

    // `refuse`: withheld from everyone; the plain message sent after it is the first heard.
    let s = Setup::start(&format!("{CONFIG}\n[redaction]\nmode = \"refuse\"\n")).await;
    let mut alice = s.session("alice").await;
    s.announce("b", "notifications/message", log(&format!("b: {token}")))
        .await;
    s.announce("b", "notifications/message", log("b: plain"))
        .await;
    assert_eq!(alice.next().await["params"]["data"], "b: plain");
}
