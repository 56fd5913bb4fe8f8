//! `[[rate_limit]]` across replicas: two replicas sharing one Redis lease from one bucket, so a burst of
//! calls split between them admits the limit once (at most `burst + rate × (t + 0.25 s)` in `t` seconds,
//! the bound the README states), while two replicas without Redis each admit their own burst. The calls
//! come from one API-key principal — or, without authentication, from one client address, whose bucket is
//! shared the same way; each answer is read (a result, or the rate-limited tool error).

use std::time::Instant;

use serde_json::{Value, json};

use super::cluster::{Redis, Replica, have};
use crate::auth::api_keys::digest_of;
use crate::support::{TempDir, modern_request};

const KEY: &str = "rl-alice-key-5c1e9a7b3d2f8e4a6c0b";
const BURST: usize = 10;
const RATE: f64 = 1.0;
/// How long leased tokens stay usable (`limit::lease::LEASE_TTL_US`).
const LEASE_SECS: f64 = 0.25;

/// Who makes the calls: alice by her API key, or an unauthenticated client known by its address.
#[derive(Clone, Copy, PartialEq)]
enum Caller {
    Alice,
    Address,
}

fn config(redis: Option<&Redis>, caller: Caller) -> String {
    let cluster = redis.map_or(String::new(), |r| {
        format!("[cluster]\nredis = {:?}\n\n", r.url())
    });
    let auth = match caller {
        Caller::Alice => format!(
            "[auth]\n\n[[auth.api_key]]\nprincipal = \"alice\"\ndigest = \"{}\"\n\n",
            digest_of(KEY)
        ),
        Caller::Address => String::new(),
    };
    format!(
        "{cluster}[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n\n{auth}\
         [[rate_limit]]\nname = \"shared\"\nper = [\"principal\"]\nrate = {RATE:?}\nburst = {BURST}\nmethods = [\"tools/call\"]\n"
    )
}

fn two_replicas(dir: &TempDir, redis: Option<&Redis>, caller: Caller) -> (Replica, Replica) {
    let config = dir.file("mcpgw.toml", &config(redis, caller));
    let ring = format!("{}\n", super::three::new_key());
    let mut a = Replica::new(&config, Some(&ring));
    let mut b = a.sibling();
    a.start();
    b.start();
    (a, b)
}

/// 40 calls, alternating between the replicas: (admitted, refused, seconds from first to last).
fn forty_calls(a: &Replica, b: &Replica, caller: Caller) -> (usize, usize, f64) {
    let bearer = format!("Bearer {KEY}");
    let headers: &[(&str, &str)] = match caller {
        Caller::Alice => &[("Authorization", bearer.as_str())],
        Caller::Address => &[],
    };
    let started = Instant::now();
    let (mut admitted, mut refused) = (0, 0);
    for i in 0..40 {
        let replica = if i % 2 == 0 { a } else { b };
        let reply = modern_request(
            &format!("{}/mcp", replica.base()),
            "tools/call",
            json!({"name": "m__echo", "arguments": {"text": format!("c{i}")}}),
            headers,
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let v = reply.json();
        if v["result"]["isError"] == Value::Bool(true) {
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.starts_with("rate limited: retry after "), "{v}");
            assert!(
                v["result"]["_meta"]["retryAfterMs"]
                    .as_u64()
                    .is_some_and(|ms| ms >= 1),
                "{v}"
            );
            refused += 1;
        } else {
            assert_eq!(v["result"]["content"][0]["text"], format!("c{i}"), "{v}");
            admitted += 1;
        }
    }
    (admitted, refused, started.elapsed().as_secs_f64())
}

/// Two replicas sharing `redis` admit the limit once between them: (admitted, seconds).
fn shared(dir: &TempDir, redis: &Redis, caller: Caller) -> (usize, f64) {
    let (a, b) = two_replicas(dir, Some(redis), caller);
    let (admitted, refused, secs) = forty_calls(&a, &b, caller);
    // The README's bound: burst + rate × (t + the lease time), whatever the replicas and workers.
    let bound = BURST as f64 + RATE * (secs + LEASE_SECS);
    assert!(
        admitted as f64 <= bound.floor(),
        "{admitted} admitted in {secs:.2} s across two replicas: above the bound {bound:.2}"
    );
    assert!(
        admitted >= BURST,
        "only {admitted} admitted: the burst is {BURST}"
    );
    assert_eq!(admitted + refused, 40);
    let buckets = redis.cli(&["KEYS", "mcpgw:rl:*"]);
    assert!(
        buckets.contains("mcpgw:rl:"),
        "no bucket in redis: {buckets:?}"
    );
    (admitted, secs)
}

#[test]
fn two_replicas_sharing_redis_admit_one_limit_between_them_and_without_redis_each_its_own() {
    assert!(
        have("redis-server"),
        "redis-server is needed (Debian's package; .ci/run installs it)"
    );
    let dir = TempDir::new("limits-shared");
    let redis = Redis::start(&dir);
    let (admitted, secs) = shared(&dir, &redis, Caller::Alice);

    // The control: the same two replicas without Redis each keep their own bucket.
    let dir = TempDir::new("limits-apart");
    let (a, b) = two_replicas(&dir, None, Caller::Alice);
    let (apart, _, apart_secs) = forty_calls(&a, &b, Caller::Alice);
    assert!(
        apart >= 2 * BURST,
        "{apart} admitted by two replicas apart: each has its own burst of {BURST}"
    );
    assert!(
        admitted < apart,
        "sharing redis admitted {admitted} in {secs:.2} s, apart {apart} in {apart_secs:.2} s"
    );
}

/// Without authentication a client is counted by its address: the same bucket on both replicas (the
/// regression: the address was a digest keyed per process, so each replica had a bucket of its own).
#[test]
fn an_unauthenticated_clients_address_bucket_is_shared_by_replicas_through_redis() {
    assert!(
        have("redis-server"),
        "redis-server is needed (Debian's package; .ci/run installs it)"
    );
    let dir = TempDir::new("limits-address");
    let redis = Redis::start(&dir);
    let (admitted, secs) = shared(&dir, &redis, Caller::Address);
    assert!(
        admitted < 2 * BURST,
        "{admitted} admitted in {secs:.2} s: each replica had its own bucket"
    );
    let buckets = redis.cli(&["KEYS", "mcpgw:rl:*"]);
    assert!(
        buckets.contains("a:127.0.0.1"),
        "the bucket is the address's: {buckets:?}"
    );
}
