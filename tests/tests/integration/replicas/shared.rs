//! What two replicas sharing a key ring and a real Redis share after `initialize`: an established session's
//! calls cost no Redis command (counted by Redis itself), a DELETE on one is a 404 on the other within a
//! second (also when it was made while Redis was down: published when it is back; also when the other
//! replica was not subscribed at the moment: read back from the events stream), a resource subscription
//! made on one replica brings updates to the session's GET stream on the other.

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cluster::{Redis, Replica, have};
use crate::support::{ADMIN, LegacyClient, TempDir, client};

fn replicas(dir: &TempDir, redis: &Redis, backend: &str) -> (Replica, Replica) {
    replicas_with(dir, redis, backend, &[])
}

fn replicas_with(
    dir: &TempDir,
    redis: &Redis,
    backend: &str,
    env: &[(&str, &str)],
) -> (Replica, Replica) {
    let config = dir.file(
        "mcpgw.toml",
        &format!("[cluster]\nredis = {:?}\n{backend}", redis.url()),
    );
    let ring = format!("{}\n", super::three::new_key());
    let mut a = Replica::new(&config, Some(&ring));
    let mut b = Replica::new(&config, Some(&ring));
    for r in [&mut a, &mut b] {
        r.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
    }
    a.start();
    b.start();
    (a, b)
}

const MOCK: &str = "[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";

fn needs_redis() {
    assert!(
        have("redis-server"),
        "redis-server is needed (Debian's package; .ci/run installs it)"
    );
}

/// The same session, addressed to another replica.
fn on(session: &LegacyClient, replica: &Replica) -> LegacyClient {
    let mut other = LegacyClient::connect(&format!("{}/mcp", replica.base()), &session.version);
    other.session = session.session.clone();
    other
}

fn echo(session: &mut LegacyClient, text: &str) -> u16 {
    let r = session.request(
        "tools/call",
        json!({"name": "m__echo", "arguments": {"text": text}}),
    );
    if r.status == 200 {
        assert_eq!(r.json()["result"]["content"][0]["text"], text, "{r:?}");
    }
    r.status
}

fn commands(redis: &Redis) -> u64 {
    redis.commands()
}

#[test]
fn an_established_sessions_tool_call_costs_no_redis_command() {
    needs_redis();
    let dir = TempDir::new("replicas-commands");
    let redis = Redis::start(&dir);
    let (a, b) = replicas(&dir, &redis, MOCK);
    let mut here = LegacyClient::connect(&format!("{}/mcp", a.base()), "2025-11-25");
    assert_eq!(echo(&mut here, "first"), 200);
    let mut there = on(&here, &b);

    // The first request on a replica that holds no actor for the session: one round trip (its record).
    let reads = |r: &Redis| r.command_calls().get("hgetall").copied().unwrap_or(0);
    let before = reads(&redis);
    assert_eq!(echo(&mut there, "rebuilt"), 200);
    assert_eq!(reads(&redis), before + 1, "one read rebuilds the session");

    // From then on: 200 calls on the two replicas, no command. (Each replica publishes last uses every
    // 30 s, one pipeline: allow one such batch per replica, not one command per call.)
    let before = commands(&redis);
    let reads_before = reads(&redis);
    for i in 0..100 {
        assert_eq!(echo(&mut here, &format!("a{i}")), 200);
        assert_eq!(echo(&mut there, &format!("b{i}")), 200);
    }
    let sent = commands(&redis) - before;
    assert!(
        sent <= 2 * 4,
        "200 calls of established sessions sent {sent} commands to redis: {:?}",
        redis.command_calls()
    );
    assert_eq!(reads(&redis), reads_before, "no read either");
}

fn delete(session: &LegacyClient) -> u16 {
    client()
        .delete(&session.url)
        .header("Mcp-Session-Id", &session.session)
        .send()
        .unwrap()
        .status()
        .as_u16()
}

/// Polls `session` with calls until one is 404 (bounded by `within`); how long it took.
fn ended_within(session: &mut LegacyClient, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        match echo(session, "still?") {
            404 => return Some(started.elapsed()),
            200 => std::thread::sleep(Duration::from_millis(20)),
            other => panic!("a call answered {other}"),
        }
    }
    None
}

#[test]
fn a_delete_on_one_replica_is_a_404_on_the_other_within_a_second_and_one_made_while_redis_was_down_when_it_is_back()
 {
    needs_redis();
    let dir = TempDir::new("replicas-delete");
    let mut redis = Redis::start(&dir);
    // The admin listener's `/readyz` counts Redis's failures.
    let (a, b) = replicas(&dir, &redis, &format!("{MOCK}{ADMIN}"));
    let url_a = format!("{}/mcp", a.base());

    // Both replicas hold the session's actor; a DELETE on one ends it on the other within a second.
    let mut here = LegacyClient::connect(&url_a, "2025-11-25");
    let mut there = on(&here, &b);
    assert_eq!(echo(&mut there, "both"), 200);
    assert_eq!(delete(&here), 204);
    let took = ended_within(&mut there, Duration::from_secs(1));
    assert!(
        took.is_some(),
        "the DELETE did not reach the other replica in 1 s"
    );
    assert_eq!(echo(&mut here, "gone"), 404);

    // A replica that never held the session refuses it too (the revocation is kept where no actor was).
    let mut third = LegacyClient::connect(&url_a, "2025-11-25");
    let mut third_there = on(&third, &b);
    assert_eq!(delete(&third), 204);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(echo(&mut third_there, "never held here"), 404);
    let _ = &mut third;

    // Redis down: established sessions go on, a DELETE is applied where it was made and kept.
    let mut kept = LegacyClient::connect(&url_a, "2025-11-25");
    let mut kept_there = on(&kept, &b);
    assert_eq!(echo(&mut kept_there, "before"), 200);
    redis.kill();
    for i in 0..20 {
        assert_eq!(echo(&mut kept, &format!("down {i}")), 200, "fail open");
        assert_eq!(echo(&mut kept_there, &format!("down {i}")), 200);
    }
    let fresh = LegacyClient::connect(&url_a, "2025-11-25");
    let mut fresh_there = on(&fresh, &b);
    assert_eq!(
        echo(&mut fresh_there, "rebuilt without redis"),
        200,
        "a session first seen while redis is down is rebuilt from its id"
    );
    assert_eq!(
        delete(&kept),
        204,
        "a DELETE while redis is down is applied"
    );
    assert_eq!(echo(&mut kept, "deleted here"), 404);
    assert_eq!(echo(&mut kept_there, "not yet there"), 200);
    let ready = a.ready_body();
    assert!(
        ready["redis"]["failures"].as_u64().unwrap() > 0,
        "the admin listener's /readyz counts what failed while redis was down: {ready}"
    );
    assert_eq!(
        ready["ready"], true,
        "redis down does not make a replica unready"
    );
    redis.restart();
    // Within the next publication of last uses (every 30 s) at the latest: a DELETE whose first attempt
    // was still waiting on its deadline as Redis came back is published with them.
    let took = ended_within(&mut kept_there, Duration::from_secs(35));
    assert!(
        took.is_some(),
        "the DELETE kept while redis was down reached the other replica once it was back"
    );
}

/// Regression: a DELETE published while another replica's subscription was gone (it was resubscribing
/// after Redis restarted, and the replica that kept the DELETE published it first) never reached it:
/// pub/sub delivers only to whoever is subscribed at the moment. Made certain here: B is stopped, its
/// subscription killed, the DELETE published, B continued; it reads what it missed from the events stream.
#[test]
fn a_delete_published_while_a_replica_was_not_subscribed_reaches_it_when_it_subscribes_again() {
    needs_redis();
    let dir = TempDir::new("replicas-gap");
    let redis = Redis::start(&dir);
    let (a, b) = replicas(&dir, &redis, MOCK);
    let here = LegacyClient::connect(&format!("{}/mcp", a.base()), "2025-11-25");
    let mut there = on(&here, &b);
    assert_eq!(echo(&mut there, "held on b"), 200);

    let b_process = b.process.as_ref().expect("b runs");
    b_process.signal("STOP");
    let killed = redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert!(
        killed.trim().parse::<u64>().unwrap_or(0) >= 2,
        "both replicas' subscriptions were killed: {killed}"
    );
    assert_eq!(delete(&here), 204);
    // The DELETE is published in the background: wait until Redis has it.
    let started = Instant::now();
    while redis.cli(&["XLEN", "mcpgw:events"]).trim() == "0" {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the DELETE was not published within 5 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    b_process.signal("CONT");
    assert!(
        ended_within(&mut there, Duration::from_secs(5)).is_some(),
        "the replica whose subscription had a gap never learnt of the DELETE"
    );
}

fn get_stream(replica: &Replica, session: &str) -> Receiver<Value> {
    crate::changes::get_stream(&format!("{}/mcp", replica.base()), session)
}

fn updated(rx: &Receiver<Value>, within: Duration) -> Option<Value> {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(v) if v["method"] == "notifications/resources/updated" => return Some(v),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Calls the backend's `touch` of `uri` through `session` until `stream` gets the update (bounded: 10 s).
fn touched_until_updated(
    session: &mut LegacyClient,
    stream: &Receiver<Value>,
    uri: &str,
) -> Option<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let touched = session.request(
            "tools/call",
            json!({"name": "touch", "arguments": {"uri": uri}}),
        );
        assert_eq!(touched.status, 200, "{touched:?}");
        if let Some(got) = updated(stream, Duration::from_millis(300)) {
            return Some(got);
        }
    }
    None
}

#[test]
fn a_subscription_made_on_one_replica_brings_updates_to_the_stream_on_another() {
    needs_redis();
    let dir = TempDir::new("replicas-subscribe");
    let redis = Redis::start(&dir);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/subscribing_server.py");
    let backend = format!(
        "[[backend]]\nname = \"memo\"\nprefix = \"\"\ncommand = [\"python3\", {:?}]\n",
        script.to_string_lossy()
    );
    let (a, b) = replicas(&dir, &redis, &backend);
    let mut here = LegacyClient::connect(&format!("{}/mcp", a.base()), "2025-06-18");
    let stream = get_stream(&a, &here.session);
    let mut there = on(&here, &b);
    let r = there.request("resources/subscribe", json!({"uri": "memo://one"}));
    assert_eq!(r.status, 200, "{r:?}");
    // The backend of the replica that holds the stream is subscribed (through Redis) and announces it.
    let got = touched_until_updated(&mut here, &stream, "memo://one")
        .expect("the update reached the GET stream on the other replica");
    assert_eq!(got["params"]["uri"], "memo://one");

    // A replica started later rebuilds the session with its subscriptions, read from Redis: its own
    // backend announces the update on the stream the client opens there.
    let mut c = a.sibling();
    c.start();
    let stream = get_stream(&c, &here.session);
    let mut third = on(&here, &c);
    assert!(
        touched_until_updated(&mut third, &stream, "memo://one").is_some(),
        "a replica that rebuilt the session took its subscription from redis"
    );
    // Never subscribed: no update.
    let touched = third.request(
        "tools/call",
        json!({"name": "touch", "arguments": {"uri": "memo://two"}}),
    );
    assert_eq!(
        touched.json()["result"]["content"][0]["text"],
        "not subscribed"
    );
}

#[test]
fn replicas_share_a_redis_over_tls_with_a_password() {
    needs_redis();
    let dir = TempDir::new("replicas-rediss");
    let authority = crate::tls::Authority::new(&dir, "redis-ca");
    let (cert, key) = authority.issue(&dir, "redis", &["localhost", "127.0.0.1"]);
    let redis = Redis::start_with(
        &dir,
        Some([cert, key, authority.ca.clone()]),
        Some("s3cret"),
    );
    assert!(
        redis.url().starts_with("rediss://:s3cret@"),
        "{}",
        redis.url()
    );
    // The replicas trust the test's CA through SSL_CERT_FILE (the system's trust store otherwise).
    let ca = authority.ca.display().to_string();
    let (a, b) = replicas_with(&dir, &redis, MOCK, &[("SSL_CERT_FILE", &ca)]);
    let mut here = LegacyClient::connect(&format!("{}/mcp", a.base()), "2025-11-25");
    let mut there = on(&here, &b);
    assert_eq!(echo(&mut there, "both"), 200);
    let before = redis.command_calls().get("hgetall").copied().unwrap_or(0);
    assert!(
        before >= 1,
        "the rebuild read redis over TLS: {:?}",
        redis.command_calls()
    );
    assert_eq!(delete(&here), 204);
    assert!(
        ended_within(&mut there, Duration::from_secs(2)).is_some(),
        "the DELETE crossed over TLS with AUTH"
    );
    let _ = &mut here;
}

#[test]
fn a_session_busy_on_one_replica_is_not_idle_on_another_and_one_idle_everywhere_is_404_everywhere()
{
    needs_redis();
    let dir = TempDir::new("replicas-idle");
    let redis = Redis::start(&dir);
    let idle = format!("[server]\nsession_idle_secs = 2\n{MOCK}");
    let (a, b) = replicas(&dir, &redis, &idle);
    let mut here = LegacyClient::connect(&format!("{}/mcp", a.base()), "2025-11-25");
    assert_eq!(echo(&mut here, "first"), 200);
    let mut there = on(&here, &b);
    // Busy on the other replica for longer than the idle time: this one's actor idles out meanwhile.
    let until = Instant::now() + Duration::from_millis(3500);
    while Instant::now() < until {
        assert_eq!(echo(&mut there, "busy there"), 200);
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        echo(&mut here, "still live"),
        200,
        "a session busy on another replica is not idle here"
    );
    // Idle everywhere past session_idle_secs: 404 on both.
    std::thread::sleep(Duration::from_millis(3000));
    assert_eq!(echo(&mut here, "idle"), 404);
    assert_eq!(echo(&mut there, "idle"), 404);
}

/// A 2026-07-28 `tools/call` with `params` (the client declares elicitation).
fn modern_call(url: &str, id: u64, mut params: Value) -> crate::support::Reply {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    let name = params["name"].as_str().unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let mut headers: Vec<(&str, &str)> = crate::support::JSON_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", "2026-07-28"));
    headers.push(("Mcp-Method", "tools/call"));
    headers.push(("Mcp-Name", &name));
    crate::support::post_raw(url, &headers, body.to_string())
}

#[test]
fn a_request_state_used_on_one_replica_is_refused_on_another() {
    needs_redis();
    let Some(deps) = crate::interop::peers::deps("replicas::shared::request_state") else {
        return;
    };
    let mut py = std::process::Command::new(&deps.python);
    py.arg(deps.dir.join("py_asking_server.py"))
        .args(["--host", "127.0.0.1", "--port", "0", "--max-seconds", "300"])
        .env("PYTHONUNBUFFERED", "1");
    let py = crate::interop::peers::Proc::start(py, "py_asking_server listening on ");
    let dir = TempDir::new("replicas-request-state");
    let redis = Redis::start(&dir);
    let backend = format!(
        "[[backend]]\nname = \"asker\"\nprefix = \"ask\"\nurl = {}\n",
        serde_json::to_string(&py.url).unwrap()
    );
    let (a, b) = replicas(&dir, &redis, &backend);
    for r in [&a, &b] {
        crate::interop::peers::wait_for_tools(r.process.as_ref().unwrap(), &["ask__py_ask_name"]);
    }
    let (url_a, url_b) = (format!("{}/mcp", a.base()), format!("{}/mcp", b.base()));
    let call = json!({"name": "ask__py_ask_name", "arguments": {"greeting": "hi"}});
    let first = modern_call(&url_a, 1, call.clone()).json();
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let keys: Vec<String> = result["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    let answers: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            (
                k.clone(),
                json!({"action": "accept", "content": {"name": "Ada"}}),
            )
        })
        .collect();
    let mut retry = call.clone();
    retry["inputResponses"] = Value::Object(answers);
    retry["requestState"] = result["requestState"].clone();

    // Answered on another replica than the one that asked: the sealed state carries what it needs.
    let answered = modern_call(&url_b, 2, retry.clone()).json();
    assert_eq!(
        answered["result"]["content"][0]["text"], "hi, Ada!",
        "{answered}"
    );
    // The same state again, on the replica that sealed it: used once already, on the other.
    let replayed = modern_call(&url_a, 3, retry).json();
    let text = replayed.to_string();
    assert!(
        replayed["result"]["content"][0]["text"] != "hi, Ada!" && text.contains("requestState"),
        "a requestState used on one replica is refused on another: {replayed}"
    );
}
